package dev.gpucoll.examples.linalg;

import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.ProcessGrid;
import dev.gpucoll.examples.ExampleSpark;
import dev.gpucoll.examples.linalg.Factorizations.Config;
import java.io.Serializable;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.apache.spark.api.java.JavaSparkContext;

/**
 * Cholesky A = L Lᵀ of a symmetric positive definite block-cyclic matrix on a P × Q process grid in
 * a barrier stage, as ScaLAPACK's pdpotrf (right-looking, lower). For each block column k: the rank
 * holding the diagonal block factors it locally and broadcasts L₁₁ down its column communicator;
 * that grid column solves its panel, L₂₁ = A₂₁ L₁₁⁻ᵀ, and broadcasts it along each row
 * communicator; an allGather down each column communicator gives every rank the panel rows that
 * match its columns (the transposed panel); every rank updates the lower triangle of its part of
 * the trailing matrix, A₂₂ −= L₂₁ L₂₁ᵀ (a Java kernel here).
 *
 * <p>A matrix that is not positive definite (a diagonal pivot that is not positive, NaN included)
 * stops the factorization on every rank with the same {@link Factorizations.FactorizationException}
 * naming the column: the diagonal block's rank puts it in the broadcasts every rank waits on.
 *
 * <p>Run: {@code scripts/example.sh cholesky [--ranks 4] [--n 192] [--block 16] [--indefinite-column C]}.
 */
public final class DistributedCholesky {
  static final String USAGE = "cholesky [--ranks 4] [--n 192] [--block 16] [--seed 3] [--indefinite-column C]"
      + " [--kernels cpu|gpu] [--master local-cluster|local[N]]";

  private DistributedCholesky() {}

  /** One rank's part of L (on and below the diagonal; above it, what was there) and its times. */
  public record Result(int rank, int p, int q, double[] local, long factorNanos, long commNanos, String backend,
      String kernels) implements Serializable, Factorizations.RankTimes {}

  public static Result factorRank(Communicator comm, Config c) {
    BlockCyclicLayout lay = c.layout();
    try (ProcessGrid<Communicator> grid = ProcessGrid.of(comm, lay.gridRows(), lay.gridCols());
        FactorKernels kernels = c.kernels().open()) {
      int p = grid.myRow();
      int q = grid.myCol();
      double[] a = lay.local(p, q, (i, j) -> Factorizations.spd(c, i, j));
      comm.barrier();
      long t0 = System.nanoTime();
      long comms = factor(grid, lay, a, kernels);
      comm.barrier();
      return new Result(comm.rank(), p, q, a, System.nanoTime() - t0, comms, comm.backend(), kernels.name());
    }
  }

  /** Factors in place; returns the nanoseconds spent in collectives. */
  private static long factor(ProcessGrid<Communicator> grid, BlockCyclicLayout lay, double[] a, FactorKernels kernels) {
    Communicator row = grid.row();
    Communicator col = grid.column();
    int p = grid.myRow();
    int q = grid.myCol();
    int m = lay.localRows();
    int w = lay.localCols();
    int nb = lay.nb();
    long comms = 0;
    double[] diag = new double[nb * nb + 1]; // L11 and the first failing column + 1 (0: none)
    double[] panel = new double[m * nb + 1]; // this rank's rows of L21, and the same status
    double[] gathered = new double[lay.gridRows() * m * nb];
    double[] transposed = new double[nb * w];
    int[] limits = new int[m];
    for (int k = 0; k < lay.blocks(); k++) {
      int k0 = k * nb;
      int pk = k % lay.gridRows();
      int qk = k % lay.gridCols();
      int below = k0 + nb;
      int r1 = lay.localRowsBefore(p, below);
      int c1 = lay.localColsBefore(q, below);
      if (q == qk) {
        int lc0 = lay.localColsBefore(q, k0);
        if (p == pk) {
          int lr0 = lay.localRowsBefore(p, k0);
          int bad = kernels.choleskyLower(a, lr0 * w + lc0, w, nb);
          for (int i = 0; i < nb; i++) {
            System.arraycopy(a, (lr0 + i) * w + lc0, diag, i * nb, nb);
          }
          diag[nb * nb] = bad < 0 ? 0 : k0 + bad + 1;
        }
        long t = System.nanoTime();
        col.broadcast(CommBuffer.of(diag), CommBuffer.of(diag), diag.length, DataType.FLOAT64, pk);
        comms += System.nanoTime() - t;
        Arrays.fill(panel, 0);
        panel[m * nb] = diag[nb * nb];
        if (diag[nb * nb] == 0) {
          DenseKernels.solveLowerTransposed(diag, 0, nb, a, r1 * w + lc0, w, m - r1, nb);
          for (int li = r1; li < m; li++) {
            System.arraycopy(a, li * w + lc0, panel, li * nb, nb);
          }
        }
      }
      long t = System.nanoTime();
      row.broadcast(CommBuffer.of(panel), CommBuffer.of(panel), panel.length, DataType.FLOAT64, qk);
      comms += System.nanoTime() - t;
      if (panel[m * nb] != 0) {
        throw Factorizations.notPositiveDefinite((int) panel[m * nb] - 1);
      }
      // The panel rows matching this rank's columns: grid row r's rows come from rank r of the column.
      t = System.nanoTime();
      col.allGather(CommBuffer.of(panel), CommBuffer.of(gathered), (long) m * nb, DataType.FLOAT64);
      comms += System.nanoTime() - t;
      int right = w - c1;
      for (int lj = c1; lj < w; lj++) {
        int g = lay.globalCol(q, lj);
        int from = lay.rowOwner(g) * m * nb + lay.localRow(g) * nb;
        for (int tt = 0; tt < nb; tt++) {
          transposed[tt * right + lj - c1] = gathered[from + tt];
        }
      }
      // Lower triangle only: row i takes the local columns left of or at its global row.
      for (int li = r1; li < m; li++) {
        limits[li - r1] = lay.localColsBefore(q, lay.globalRow(p, li) + 1) - c1;
      }
      kernels.subtractLowerProduct(a, r1 * w + c1, w, m - r1, right, limits, panel, r1 * nb, nb, transposed, 0, right,
          nb);
    }
    return comms;
  }

  public static List<Result> runDistributed(JavaSparkContext jsc, Config c) {
    c.layout(); // bad sizes fail here, on the driver, before any task starts
    return Factorizations.onRanks(jsc, c.ranks(), (comm, rows) -> List.of(factorRank(comm, c)).iterator());
  }


  /** The distributed factor against the one-process factorization of the same matrix. */
  public record Check(double residual, double referenceResidual, double maxFactorDifference) {
    public boolean passes() {
      return residual < Factorizations.RESIDUAL_LIMIT && referenceResidual < Factorizations.RESIDUAL_LIMIT;
    }
  }

  public static Check check(Config c, List<Result> ranks) {
    BlockCyclicLayout lay = c.layout();
    int n = c.n();
    double[] a = Factorizations.spdMatrix(c);
    double[] ref = a.clone();
    double[] l = Factorizations.assemble(lay, ranks.stream().mapToInt(Result::p).toArray(),
        ranks.stream().mapToInt(Result::q).toArray(), ranks.stream().map(Result::local).toArray(double[][]::new));
    try (FactorKernels kernels = c.kernels().open()) {
      Factorizations.oneProcessCholesky(kernels, ref, n, c.blockSize());
      return new Check(Factorizations.choleskyResidual(a, l, n, kernels),
          Factorizations.choleskyResidual(a, ref, n, kernels), Factorizations.maxDifference(l, ref, n, true));
    }
  }

  public static void main(String[] args) {
    Map<String, String> o = ExampleSpark.options(args, USAGE);
    Config c = new Config(ExampleSpark.intOption(o, "ranks", 4), ExampleSpark.intOption(o, "n", 192),
        ExampleSpark.intOption(o, "block", 16), ExampleSpark.intOption(o, "seed", 3),
        ExampleSpark.intOption(o, "indefinite-column", -1), Factorizations.kernelsOption(o));
    BlockCyclicLayout lay = c.layout();
    System.out.println("Cholesky of a symmetric positive definite " + c.n() + " x " + c.n() + " matrix in " + lay.nb()
        + " x " + lay.nb() + " blocks on a " + lay.gridRows() + " x " + lay.gridCols() + " process grid"
        + (c.defectColumn() >= 0 ? " (diagonal " + c.defectColumn() + " negative: not positive definite)" : ""));
    List<Result> ranks = Factorizations.runExample("gpucoll-example-cholesky", o.get("master"), c.ranks(),
        jsc -> runDistributed(jsc, c));
    Check check = check(c, ranks);
    System.out.printf("scaled residual ||A - LL^T||/(||A|| n eps) = %.3f (one process: %.3f; limit %.0f);"
        + " largest difference from the one-process L %.1e%n", check.residual(), check.referenceResidual(),
        Factorizations.RESIDUAL_LIMIT, check.maxFactorDifference());
    Factorizations.exitOnFailure(check.passes());
  }
}
