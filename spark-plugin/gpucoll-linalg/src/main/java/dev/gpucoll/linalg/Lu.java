package dev.gpucoll.linalg;

import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.ProcessGrid;
import dev.gpucoll.linalg.FactorizationException.Reason;
import java.util.Arrays;
import java.util.List;

/**
 * LU with partial pivoting of a block-cyclic matrix (ScaLAPACK's pdgetrf and pdgetrs), on the host:
 * the steps of {@link FactorPlan#getrf}, right-looking. For each column of a panel, inside the
 * process column that holds it, one allGather down the column communicator brings every process
 * row's pivot candidate (its largest |value|, ties to the lowest row, as LAPACK's idamax), that
 * candidate's row and the diagonal row: every rank of the column picks the same pivot and exchanges
 * the two rows without a second call. The panel and its pivots go along each row communicator; the
 * interchanges reach the other columns ({@link RowInterchanges}); the process row of the diagonal
 * block solves U₁₂ = L₁₁⁻¹ A₁₂ and sends it down each column communicator; every rank updates
 * its trailing part, A₂₂ −= L₂₁ U₁₂.
 *
 * <p>Any M, N, RSRC, CSRC and grid; square blocks (MB = NB). A zero pivot, a NaN or an Inf in the
 * input, or an overflow during the elimination stops every rank at the same step with the same
 * {@link FactorizationException}.
 */
public final class Lu {
  private Lu() {}

  // The panel broadcast's trailer, after the pivots: the status, then the row and column it names.
  private static final int OK = 0;
  private static final int SINGULAR = 1;
  private static final int OVERFLOW = 2;

  // One process row's record in a pivot column's allGather: flag, |value|, global row, the
  // candidate's panel row, the diagonal row (from its owner).
  private static final int NONE = 0;
  private static final int CANDIDATE = 1;
  private static final int NOT_FINITE = 2;

  /**
   * Factors {@code a} in place into P A = L U (L unit lower, below the diagonal; U on and above it)
   * and returns the pivots, the same on every rank: for k in [0, min(M, N)), global row k was
   * interchanged with global row {@code pivots[k]} (LAPACK's IPIV, 0-based, for the whole matrix).
   * Collective over {@code grid}.
   */
  public static int[] getrf(ProcessGrid<? extends Communicator> grid, LocalMatrix a) {
    Descriptor d = a.descriptor();
    FactorPlan[] plan = new FactorPlan[1];
    GridCalls calls = GridCalls.open(grid, "getrf", List.of(d), () -> {
      plan[0] = FactorPlan.getrf(d);
      GridCalls.requireMine(grid, a, "A");
    }, List.of(FiniteInput.of("the input", a, false)));
    int p = calls.prow();
    int q = calls.pcol();
    int lld = d.lld();
    double[] data = a.data();
    int nb = d.nb();
    int[] pivots = new int[Math.min(d.m(), d.n())];
    double[] panel = new double[a.rows() * nb + nb + 3];
    double[] u12 = new double[nb * a.cols()];
    double[] record = new double[3 + 2 * nb];
    double[] records = new double[d.gridRows() * record.length];
    for (FactorPlan.Step s : plan[0].steps()) {
      int w = s.width();
      int r0 = s.panelLocalRows(p).from();
      int rows = a.rows() - r0;
      int trailer = rows * w;
      Arrays.fill(panel, trailer, trailer + w + 3, 0);
      IndexRange panelCols = s.panelLocalCols();
      if (q == s.panelCol()) {
        factorPanel(calls, a, s, record, records, panel, trailer);
        for (int jj = 0; jj < w; jj++) {
          System.arraycopy(data, r0 + (panelCols.from() + jj) * lld, panel, jj * rows, rows);
        }
      }
      calls.rowBroadcast(panel, trailer + w + 3, s.panelCol());
      int status = (int) panel[trailer + w];
      int row = (int) panel[trailer + w + 1];
      int column = (int) panel[trailer + w + 2];
      if (status == SINGULAR) {
        throw new FactorizationException(Reason.SINGULAR, column, column, "getrf: the matrix is singular: column "
            + column + " has no nonzero pivot (U(" + column + "," + column + ") = 0; 0-based)");
      }
      if (status == OVERFLOW) {
        throw new FactorizationException(Reason.OVERFLOW, row, column, "getrf: the elimination overflowed: column "
            + column + " holds a non-finite value at row " + row + " (0-based) although the input is finite;"
            + " scale the matrix");
      }
      for (int jj = 0; jj < w; jj++) {
        pivots[s.first() + jj] = (int) panel[trailer + jj];
      }
      List<IndexRange> others = q == s.panelCol()
          ? List.of(new IndexRange(0, panelCols.from()), new IndexRange(panelCols.to(), a.cols()))
          : List.of(new IndexRange(0, a.cols()));
      RowInterchanges.apply(calls, a, pivots, s.first(), s.end(), others);
      IndexRange right = s.trailingLocalCols(q);
      int c1 = right.from();
      int cols = right.size();
      boolean below = s.end() < d.m();
      if (cols == 0) {
        continue;
      }
      if (p == s.diagRow()) {
        HostKernels.solveLower(panel, 0, rows, true, data, r0 + c1 * lld, lld, w, cols);
        for (int jj = 0; jj < cols && below; jj++) {
          System.arraycopy(data, r0 + (c1 + jj) * lld, u12, jj * w, w);
        }
      }
      if (below) {
        calls.columnBroadcast(u12, w * cols, s.diagRow());
        IndexRange down = s.trailingLocalRows(p);
        HostKernels.subtractProduct(data, down.from() + c1 * lld, lld, down.size(), cols, panel, down.from() - r0,
            rows, u12, 0, w, w);
      }
    }
    return pivots;
  }

  /**
   * Step s's panel on its process column, unblocked (LAPACK's dgetf2 over the grid column); writes
   * the pivots and the status into {@code panel}'s trailer.
   */
  private static void factorPanel(GridCalls calls, LocalMatrix a, FactorPlan.Step s, double[] record,
      double[] records, double[] panel, int trailer) {
    Descriptor d = a.descriptor();
    int p = a.prow();
    int lld = d.lld();
    double[] data = a.data();
    int w = s.width();
    int pc0 = s.panelLocalCols().from();
    int size = 3 + 2 * w;
    for (int jj = 0; jj < w; jj++) {
      int j = s.first() + jj;
      int col = (pc0 + jj) * lld;
      Arrays.fill(record, 0, size, 0);
      double best = -1;
      int bestLi = -1;
      for (int li = d.localRowsBefore(j, p); li < a.rows(); li++) {
        double v = data[col + li];
        if (!Double.isFinite(v)) {
          record[0] = NOT_FINITE;
          record[2] = d.indxl2gRow(li, p);
          bestLi = -1;
          break;
        }
        if (Math.abs(v) > best) {
          best = Math.abs(v);
          bestLi = li;
        }
      }
      if (bestLi >= 0) {
        record[0] = CANDIDATE;
        record[1] = best;
        record[2] = d.indxl2gRow(bestLi, p);
        copyPanelRow(data, bestLi, pc0, lld, w, record, 3, true);
      }
      int ownerJ = d.indxg2pRow(j);
      if (ownerJ == p) {
        copyPanelRow(data, d.indxg2lRow(j), pc0, lld, w, record, 3 + w, true);
      }
      calls.columnAllGather(record, records, size);
      int winner = -1;
      int overflowRow = Integer.MAX_VALUE;
      for (int pr = 0; pr < d.gridRows(); pr++) {
        int at = pr * size;
        if (records[at] == NOT_FINITE) {
          overflowRow = Math.min(overflowRow, (int) records[at + 2]);
        } else if (records[at] == CANDIDATE && (winner < 0 || records[at + 1] > records[winner + 1]
            || (records[at + 1] == records[winner + 1] && records[at + 2] < records[winner + 2]))) {
          winner = at;
        }
      }
      if (overflowRow != Integer.MAX_VALUE) {
        setStatus(panel, trailer + w, OVERFLOW, overflowRow, j);
        return;
      }
      if (winner < 0 || records[winner + 1] == 0) {
        setStatus(panel, trailer + w, SINGULAR, j, j);
        return;
      }
      int r = (int) records[winner + 2];
      panel[trailer + jj] = r;
      int pivotRow = winner + 3; // in records: row r as it was, row j from now on
      if (r != j) {
        if (ownerJ == p) {
          copyPanelRow(data, d.indxg2lRow(j), pc0, lld, w, records, pivotRow, false);
        }
        if (d.indxg2pRow(r) == p) {
          copyPanelRow(data, d.indxg2lRow(r), pc0, lld, w, records, ownerJ * size + 3 + w, false);
        }
      }
      double pivot = records[pivotRow + jj];
      int from = d.localRowsBefore(j + 1, p);
      for (int li = from; li < a.rows(); li++) {
        data[col + li] /= pivot;
      }
      for (int cc = jj + 1; cc < w; cc++) {
        double u = records[pivotRow + cc];
        if (u == 0) {
          continue;
        }
        int c = (pc0 + cc) * lld;
        for (int li = from; li < a.rows(); li++) {
          data[c + li] -= data[col + li] * u;
        }
      }
    }
  }

  private static void copyPanelRow(double[] data, int li, int pc0, int lld, int w, double[] buf, int at,
      boolean out) {
    for (int cc = 0; cc < w; cc++) {
      if (out) {
        buf[at + cc] = data[li + (pc0 + cc) * lld];
      } else {
        data[li + (pc0 + cc) * lld] = buf[at + cc];
      }
    }
  }

  private static void setStatus(double[] panel, int at, int code, int row, int column) {
    panel[at] = code;
    panel[at + 1] = row;
    panel[at + 2] = column;
  }

  /**
   * Solves A X = B with the factors and pivots of {@link #getrf} (ScaLAPACK's pdgetrs, no
   * transpose): {@code b}, N × NRHS over the same grid with A's row blocks (MB and RSRC equal to
   * A's; NB and CSRC its own), is overwritten with X. Collective over {@code grid}.
   */
  public static void getrs(ProcessGrid<? extends Communicator> grid, LocalMatrix lu, int[] pivots, LocalMatrix b) {
    Descriptor d = lu.descriptor();
    FactorPlan[] plan = new FactorPlan[1];
    GridCalls calls = GridCalls.open(grid, "getrs", List.of(d, b.descriptor()), () -> {
      plan[0] = solvePlan(d, b.descriptor(), pivots);
      GridCalls.requireMine(grid, lu, "the factors");
      GridCalls.requireMine(grid, b, "B");
    }, List.of(FiniteInput.of("B", b, false)));
    RowInterchanges.apply(calls, b, pivots, 0, d.n(), List.of(new IndexRange(0, b.cols())));
    TriangularSolves.lower(calls, plan[0], lu, b, true);
    TriangularSolves.upper(calls, plan[0], lu, b);
  }

  /** getrs's checks of its arguments (on either kernel set), and the factors' plan. */
  static FactorPlan solvePlan(Descriptor a, Descriptor b, int[] pivots) {
    if (a.m() != a.n()) {
      throw new IllegalArgumentException("A must be square: M = " + a.m() + ", N = " + a.n());
    }
    FactorPlan plan = FactorPlan.getrf(a);
    TriangularSolves.requireRowsAligned(a, b);
    requirePivots(pivots, a.n());
    return plan;
  }

  /** Fails unless {@code pivots} could be getrf's for a square matrix of order n. */
  private static void requirePivots(int[] pivots, int n) {
    if (pivots == null || pivots.length != n) {
      throw new IllegalArgumentException("pivots must have N = " + n + " entries (getrf's result), not "
          + (pivots == null ? "null" : pivots.length));
    }
    for (int k = 0; k < pivots.length; k++) {
      if (pivots[k] < k || pivots[k] >= n) {
        throw new IllegalArgumentException("pivots[" + k + "] = " + pivots[k] + " is outside [" + k + ", "
            + n + "): not a pivot getrf returns");
      }
    }
  }
}
