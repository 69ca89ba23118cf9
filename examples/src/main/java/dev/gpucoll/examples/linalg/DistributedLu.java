package dev.gpucoll.examples.linalg;

import dev.gpucoll.examples.ExampleSpark;
import dev.gpucoll.examples.linalg.Factorizations.Check;
import dev.gpucoll.examples.linalg.Factorizations.Config;
import dev.gpucoll.examples.linalg.Factorizations.RankResult;
import dev.gpucoll.examples.linalg.Factorizations.Routine;
import java.util.List;
import java.util.Map;

/**
 * LU with partial pivoting of an n × n block-cyclic matrix on a P × Q process grid in a barrier
 * stage: gpucoll-linalg's {@code Lu.getrf} / {@code getrs} on each rank's host part, or with
 * {@code --kernels gpu} its {@code DeviceSolver} on the rank's GPU (see {@link Factorizations}). A
 * singular matrix, or NaN or Inf in it, stops every rank with the same
 * {@code FactorizationException} naming the place; through Spark the stage fails with its message.
 *
 * <p>Run: {@code scripts/example.sh lu [--ranks 4] [--n 192] [--block 16] [--singular-column C]}.
 */
public final class DistributedLu {
  static final String USAGE = "lu [--ranks 4] [--n 192] [--block 16] [--seed 3] [--singular-column C]"
      + " [--kernels cpu|gpu] [--master local-cluster|local[N]]";

  private DistributedLu() {}

  public static void main(String[] args) {
    Map<String, String> o = ExampleSpark.options(args, USAGE);
    Config c = new Config(ExampleSpark.intOption(o, "ranks", 4), ExampleSpark.intOption(o, "n", 192),
        ExampleSpark.intOption(o, "block", 16), ExampleSpark.intOption(o, "seed", 3),
        ExampleSpark.intOption(o, "singular-column", -1), Factorizations.kernelsOption(o));
    System.out.println("LU with partial pivoting of a " + c.n() + " x " + c.n() + " matrix in " + c.blockSize() + " x "
        + c.blockSize() + " blocks on a " + c.gridName() + " process grid"
        + (c.defectColumn() >= 0 ? " (column " + c.defectColumn() + " zero: singular)" : ""));
    List<RankResult>[] runs = Factorizations.runTwice(Routine.LU, "gpucoll-example-lu", o.get("master"), c);
    Check check = Factorizations.check(Routine.LU, c, runs[0], runs[1]);
    System.out.printf("solve residual ||b - Ax||/(||A|| ||x|| n eps) = %.3f (one rank: %.3f; limit %.0f);"
        + " pivots %s the one-rank ones; largest factor difference %.1e%n", check.residual(),
        check.referenceResidual(), Factorizations.RESIDUAL_LIMIT, check.samePivots() ? "equal" : "DIFFER from",
        check.maxFactorDifference());
    Factorizations.exitOnFailure(check.passes());
  }
}
