package dev.gpucoll.examples.linalg;

import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.LocOp;
import dev.gpucoll.api.PairType;
import dev.gpucoll.api.ProcessGrid;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.examples.ExampleSpark;
import dev.gpucoll.examples.linalg.Factorizations.Config;
import java.io.Serializable;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.apache.spark.api.java.JavaSparkContext;

/**
 * LU with partial pivoting of a block-cyclic matrix on a P × Q process grid in a barrier stage,
 * as ScaLAPACK's pdgetrf (right-looking, one panel of nb columns at a time). For each column of
 * the panel, inside the grid column that owns it: the pivot is found with a MAXLOC allReduce of
 * (|value|, global row) down the column communicator (ties to the lowest row), the pivot row and
 * the diagonal row are exchanged with one allReduce, the column is scaled and the rest of the panel
 * updated. Then the panel (L) and its pivots are broadcast along each row communicator, every rank
 * applies the row swaps to its other columns, the grid row owning the diagonal block computes
 * U₁₂ = L₁₁⁻¹ A₁₂ and broadcasts it down each column communicator, and every rank updates its part
 * of the trailing matrix, A₂₂ −= L₂₁ U₁₂ (the GEMM: a Java kernel here).
 *
 * <p>A singular matrix (a column with no nonzero pivot) or a NaN met by the pivot search stops the
 * factorization on every rank with the same {@link Factorizations.FactorizationException} naming
 * the column: the grid column that finds it tells the others in the panel broadcast they wait on
 * anyway, so no rank is left waiting and no NaN reaches the factors.
 *
 * <p>Run: {@code scripts/example.sh lu [--ranks 4] [--n 192] [--block 16] [--singular-column C]}.
 */
public final class DistributedLu {
  static final String USAGE = "lu [--ranks 4] [--n 192] [--block 16] [--seed 3] [--singular-column C]"
      + " [--kernels cpu|gpu] [--master local-cluster|local[N]]";

  private DistributedLu() {}

  /** One rank's part of the factors, the pivots (every rank has all of them) and its times. */
  public record Result(int rank, int p, int q, double[] local, int[] pivots, long factorNanos, long commNanos,
      String backend, String kernels) implements Serializable, Factorizations.RankTimes {}

  // The panel broadcast's trailer: status code (0: none), column and row of the first problem.
  private static final int SINGULAR = 1;
  private static final int NAN = 2;

  /** This rank's part of the factorization; collective over {@code comm} (a grid of {@link Config#ranks}). */
  public static Result factorRank(Communicator comm, Config c) {
    BlockCyclicLayout lay = c.layout();
    try (ProcessGrid<Communicator> grid = ProcessGrid.of(comm, lay.gridRows(), lay.gridCols());
        FactorKernels kernels = c.kernels().open()) {
      int p = grid.myRow();
      int q = grid.myCol();
      double[] a = lay.local(p, q, (i, j) -> Factorizations.general(c, i, j));
      Timer time = new Timer();
      comm.barrier(); // every rank starts the clock together
      long t0 = System.nanoTime();
      int[] piv = factor(grid, lay, a, time, kernels);
      comm.barrier();
      return new Result(comm.rank(), p, q, a, piv, System.nanoTime() - t0, time.comm, comm.backend(), kernels.name());
    }
  }

  /** Time spent in collectives (waits included). */
  private static final class Timer {
    long comm;
  }

  private static int[] factor(ProcessGrid<Communicator> grid, BlockCyclicLayout lay, double[] a, Timer time,
      FactorKernels kernels) {
    Communicator row = grid.row();
    Communicator col = grid.column();
    int p = grid.myRow();
    int q = grid.myCol();
    int m = lay.localRows();
    int w = lay.localCols();
    int nb = lay.nb();
    int n = lay.n();
    int[] piv = new int[n];
    ByteBuffer pair = ByteBuffer.allocate(PairType.FLOAT64_INT64.byteSize()).order(ByteOrder.nativeOrder());
    double[] rows2 = new double[2 * Math.max(nb, w)];
    double[] panel = new double[m * nb + nb + 3];
    double[] u12 = new double[nb * w];
    for (int k = 0; k < lay.blocks(); k++) {
      int k0 = k * nb;
      int qk = k % lay.gridCols();
      int pk = k % lay.gridRows();
      int pc0 = lay.localColsBefore(q, k0); // the panel's first local column, on grid column qk
      Arrays.fill(panel, 0);
      if (q == qk) {
        factorPanel(col, lay, p, a, pc0, k0, pair, rows2, panel, time);
        for (int li = 0; li < m; li++) {
          System.arraycopy(a, li * w + pc0, panel, li * nb, nb);
        }
      }
      long t = System.nanoTime();
      row.broadcast(CommBuffer.of(panel), CommBuffer.of(panel), panel.length, DataType.FLOAT64, qk);
      time.comm += System.nanoTime() - t;
      int status = (int) panel[m * nb + nb];
      if (status == SINGULAR) {
        throw Factorizations.singular((int) panel[m * nb + nb + 1]);
      }
      if (status == NAN) {
        throw Factorizations.notANumber((int) panel[m * nb + nb + 1], (long) panel[m * nb + nb + 2]);
      }
      for (int jj = 0; jj < nb; jj++) {
        piv[k0 + jj] = (int) panel[m * nb + jj];
      }
      // The panel's row swaps on every other local column (the panel's own are done).
      int skipFrom = q == qk ? pc0 : w;
      int skipTo = q == qk ? pc0 + nb : w;
      for (int jj = 0; jj < nb; jj++) {
        swapRows(col, lay, p, a, k0 + jj, piv[k0 + jj], skipFrom, skipTo, rows2, time);
      }
      // U12 = L11^-1 A12 on grid row pk, then down every column.
      int c1 = lay.localColsBefore(q, k0 + nb);
      int right = w - c1;
      if (p == pk) {
        int lr0 = lay.localRowsBefore(p, k0);
        DenseKernels.unitLowerSolve(panel, lr0 * nb, nb, a, lr0 * w + c1, w, nb, right);
        for (int i = 0; i < nb; i++) {
          System.arraycopy(a, (lr0 + i) * w + c1, u12, i * right, right);
        }
      }
      if (right > 0) {
        t = System.nanoTime();
        col.broadcast(CommBuffer.of(u12), CommBuffer.of(u12), (long) nb * right, DataType.FLOAT64, pk);
        time.comm += System.nanoTime() - t;
        int r1 = lay.localRowsBefore(p, k0 + nb);
        kernels.subtractProduct(a, r1 * w + c1, w, m - r1, right, panel, r1 * nb, nb, u12, 0, right, nb);
      }
    }
    return piv;
  }

  /**
   * The panel's columns k0..k0+nb-1 on grid column qk: pivot search by MAXLOC, row exchange, scaling
   * and update inside the panel. Writes the pivots and the status into {@code panel}'s trailer.
   */
  private static void factorPanel(Communicator col, BlockCyclicLayout lay, int p, double[] a, int pc0, int k0,
      ByteBuffer pair, double[] rows2, double[] panel, Timer time) {
    int m = lay.localRows();
    int w = lay.localCols();
    int nb = lay.nb();
    int trailer = m * nb;
    for (int jj = 0; jj < nb; jj++) {
      int j = k0 + jj;
      int lc = pc0 + jj;
      double best = -1; // no candidate here: below any |value|
      long bestRow = Long.MAX_VALUE;
      for (int li = lay.localRowsBefore(p, j); li < m; li++) {
        double v = Math.abs(a[li * w + lc]);
        int g = lay.globalRow(p, li);
        if (Double.isNaN(v)) {
          // MAXLOC refuses NaN; +inf with an index below every row wins instead and says where
          best = Double.POSITIVE_INFINITY;
          bestRow = Long.MIN_VALUE + g;
          break;
        }
        if (v > best) {
          best = v;
          bestRow = g;
        }
      }
      pair.putDouble(0, best).putLong(8, bestRow);
      long t = System.nanoTime();
      col.allReduce(CommBuffer.of(pair), CommBuffer.of(pair), 1, PairType.FLOAT64_INT64, LocOp.MAXLOC);
      time.comm += System.nanoTime() - t;
      long r = pair.getLong(8);
      if (r < 0) {
        setStatus(panel, trailer + nb, NAN, j, r - Long.MIN_VALUE);
        return;
      }
      if (pair.getDouble(0) == 0) {
        setStatus(panel, trailer + nb, SINGULAR, j, j);
        return;
      }
      panel[trailer + jj] = r;
      // Rows j and r of the panel change places; every rank of the column gets the pivot row
      // (rows2[nb..2nb): row r as it was, now row j).
      swapSpan(col, lay, p, a, j, (int) r, pc0, pc0 + nb, rows2, time, true);
      double pivot = rows2[nb + jj];
      for (int li = lay.localRowsBefore(p, j + 1); li < m; li++) {
        int at = li * w + pc0;
        double l = a[at + jj] / pivot;
        a[at + jj] = l;
        for (int cc = jj + 1; cc < nb; cc++) {
          a[at + cc] -= l * rows2[nb + cc];
        }
      }
    }
  }

  private static void setStatus(double[] panel, int at, int code, int column, long row) {
    panel[at] = code;
    panel[at + 1] = column;
    panel[at + 2] = row;
  }

  /** Swaps global rows x and y in the local columns outside [skipFrom, skipTo). */
  private static void swapRows(Communicator col, BlockCyclicLayout lay, int p, double[] a, int x, int y,
      int skipFrom, int skipTo, double[] rows2, Timer time) {
    int w = lay.localCols();
    if (x == y) {
      return;
    }
    if (skipFrom > 0) {
      swapSpan(col, lay, p, a, x, y, 0, skipFrom, rows2, time, false);
    }
    if (skipTo < w) {
      swapSpan(col, lay, p, a, x, y, skipTo, w, rows2, time, false);
    }
  }

  /**
   * Rows x and y of local columns [from, to) change places. Both rows on one grid row: a local swap,
   * unless every rank of the column needs them; otherwise one allReduce SUM down the column of
   * [row x | row y], each half filled by its owner and zero elsewhere (adding zeros is exact).
   */
  private static void swapSpan(Communicator col, BlockCyclicLayout lay, int p, double[] a, int x, int y, int from,
      int to, double[] rows2, Timer time, boolean everyRankGetsTheRows) {
    int w = lay.localCols();
    int width = to - from;
    int ox = lay.rowOwner(x);
    int oy = lay.rowOwner(y);
    if (ox == oy && !everyRankGetsTheRows) {
      if (p == ox) {
        int ax = lay.localRow(x) * w;
        int ay = lay.localRow(y) * w;
        for (int cc = from; cc < to; cc++) {
          double t = a[ax + cc];
          a[ax + cc] = a[ay + cc];
          a[ay + cc] = t;
        }
      }
      return;
    }
    Arrays.fill(rows2, 0, 2 * width, 0);
    if (p == ox) {
      System.arraycopy(a, lay.localRow(x) * w + from, rows2, 0, width);
    }
    if (p == oy) {
      System.arraycopy(a, lay.localRow(y) * w + from, rows2, width, width);
    }
    long t = System.nanoTime();
    col.allReduce(CommBuffer.of(rows2), CommBuffer.of(rows2), 2L * width, DataType.FLOAT64, ReduceOp.SUM);
    time.comm += System.nanoTime() - t;
    if (p == ox) {
      System.arraycopy(rows2, width, a, lay.localRow(x) * w + from, width);
    }
    if (p == oy) {
      System.arraycopy(rows2, 0, a, lay.localRow(y) * w + from, width);
    }
  }

  public static List<Result> runDistributed(JavaSparkContext jsc, Config c) {
    c.layout(); // bad sizes fail here, on the driver, before any task starts
    return Factorizations.onRanks(jsc, c.ranks(), (comm, rows) -> List.of(factorRank(comm, c)).iterator());
  }


  /** The distributed factors against the one-process factorization of the same matrix. */
  public record Check(double residual, double referenceResidual, boolean samePivots, double maxFactorDifference,
      boolean exact) {
    /** Residuals below the limit; with the Java kernels on both sides, the one-process pivots too. */
    public boolean passes() {
      return residual < Factorizations.RESIDUAL_LIMIT && referenceResidual < Factorizations.RESIDUAL_LIMIT
          && (samePivots || !exact);
    }
  }

  public static Check check(Config c, List<Result> ranks) {
    BlockCyclicLayout lay = c.layout();
    int n = c.n();
    double[] a = Factorizations.generalMatrix(c);
    double[] ref = a.clone();
    double[] lu = Factorizations.assemble(lay, ranks.stream().mapToInt(Result::p).toArray(),
        ranks.stream().mapToInt(Result::q).toArray(), ranks.stream().map(Result::local).toArray(double[][]::new));
    int[] piv = ranks.get(0).pivots();
    try (FactorKernels kernels = c.kernels().open()) {
      int[] refPiv = Factorizations.oneProcessLu(kernels, ref, n, c.blockSize());
      boolean same = ranks.stream().allMatch(r -> Arrays.equals(r.pivots(), refPiv));
      return new Check(Factorizations.luResidual(a, lu, piv, n, kernels),
          Factorizations.luResidual(a, ref, refPiv, n, kernels), same, Factorizations.maxDifference(lu, ref, n, false),
          c.exact());
    }
  }

  public static void main(String[] args) {
    Map<String, String> o = ExampleSpark.options(args, USAGE);
    Config c = new Config(ExampleSpark.intOption(o, "ranks", 4), ExampleSpark.intOption(o, "n", 192),
        ExampleSpark.intOption(o, "block", 16), ExampleSpark.intOption(o, "seed", 3),
        ExampleSpark.intOption(o, "singular-column", -1), Factorizations.kernelsOption(o));
    BlockCyclicLayout lay = c.layout();
    System.out.println("LU with partial pivoting of a " + c.n() + " x " + c.n() + " matrix in " + lay.nb() + " x "
        + lay.nb() + " blocks on a " + lay.gridRows() + " x " + lay.gridCols() + " process grid"
        + (c.defectColumn() >= 0 ? " (column " + c.defectColumn() + " zero: singular)" : ""));
    List<Result> ranks = Factorizations.runExample("gpucoll-example-lu", o.get("master"), c.ranks(),
        jsc -> runDistributed(jsc, c));
    Check check = check(c, ranks);
    System.out.printf("scaled residual ||PA - LU||/(||A|| n eps) = %.3f (one process: %.3f; limit %.0f);"
        + " pivots %s the one-process ones; largest factor difference %.1e%n", check.residual(),
        check.referenceResidual(), Factorizations.RESIDUAL_LIMIT, check.samePivots() ? "equal" : "DIFFER from",
        check.maxFactorDifference());
    Factorizations.exitOnFailure(check.passes());
  }
}
