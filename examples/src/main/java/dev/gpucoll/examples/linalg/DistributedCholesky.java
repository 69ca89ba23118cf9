package dev.gpucoll.examples.linalg;

import dev.gpucoll.examples.ExampleSpark;
import dev.gpucoll.examples.linalg.Factorizations.Check;
import dev.gpucoll.examples.linalg.Factorizations.Config;
import dev.gpucoll.examples.linalg.Factorizations.RankResult;
import dev.gpucoll.examples.linalg.Factorizations.Routine;
import java.util.List;
import java.util.Map;

/**
 * Cholesky A = L Lᵀ of a symmetric positive definite n × n block-cyclic matrix on a P × Q process
 * grid in a barrier stage: gpucoll-linalg's {@code Cholesky.potrf} / {@code potrs} on each rank's
 * host part, or with {@code --kernels gpu} its {@code DeviceSolver} on the rank's GPU (see
 * {@link Factorizations}). A matrix that is not positive definite stops every rank with the same
 * {@code FactorizationException} naming the column; through Spark the stage fails with its message.
 *
 * <p>Run: {@code scripts/example.sh cholesky [--ranks 4] [--n 192] [--block 16] [--indefinite-column C]}.
 */
public final class DistributedCholesky {
  static final String USAGE = "cholesky [--ranks 4] [--n 192] [--block 16] [--seed 3] [--indefinite-column C]"
      + " [--kernels cpu|gpu] [--master local-cluster|local[N]]";

  private DistributedCholesky() {}

  public static void main(String[] args) {
    Map<String, String> o = ExampleSpark.options(args, USAGE);
    Config c = new Config(ExampleSpark.intOption(o, "ranks", 4), ExampleSpark.intOption(o, "n", 192),
        ExampleSpark.intOption(o, "block", 16), ExampleSpark.intOption(o, "seed", 3),
        ExampleSpark.intOption(o, "indefinite-column", -1), Factorizations.kernelsOption(o));
    System.out.println("Cholesky of a symmetric positive definite " + c.n() + " x " + c.n() + " matrix in "
        + c.blockSize() + " x " + c.blockSize() + " blocks on a " + c.gridName() + " process grid"
        + (c.defectColumn() >= 0 ? " (diagonal " + c.defectColumn() + " negative: not positive definite)" : ""));
    List<RankResult>[] runs = Factorizations.runTwice(Routine.CHOLESKY, "gpucoll-example-cholesky", o.get("master"),
        c);
    Check check = Factorizations.check(Routine.CHOLESKY, c, runs[0], runs[1]);
    System.out.printf("solve residual ||b - Ax||/(||A|| ||x|| n eps) = %.3f (one rank: %.3f; limit %.0f);"
        + " largest difference from the one-rank L %.1e%n", check.residual(), check.referenceResidual(),
        Factorizations.RESIDUAL_LIMIT, check.maxFactorDifference());
    Factorizations.exitOnFailure(check.passes());
  }
}
