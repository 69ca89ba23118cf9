package dev.gpucoll.linalg;

import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.ProcessGrid;
import dev.gpucoll.linalg.FactorizationException.Reason;
import java.util.List;

/**
 * Cholesky A = L Lᵀ of a symmetric positive definite block-cyclic matrix (ScaLAPACK's pdpotrf and
 * pdpotrs with UPLO = 'L'), on the host: the steps of {@link FactorPlan#potrf}, right-looking. The
 * rank of the diagonal block factors it and sends L₁₁ down its column communicator; that process
 * column solves L₂₁ = A₂₁ L₁₁⁻ᵀ and sends it along each row communicator; an allGather down each
 * column communicator gives every rank the rows of L₂₁ that match its columns; every rank updates
 * the lower triangle of its trailing part, A₂₂ −= L₂₁ L₂₁ᵀ. Only the lower triangle is read or
 * written (above the diagonal stays as it was, as LAPACK leaves it).
 *
 * <p>Any N, RSRC, CSRC and grid; square blocks (MB = NB). A pivot that is not positive, a NaN or an
 * Inf in the lower triangle, or an overflow stops every rank at the same step with the same
 * {@link FactorizationException}.
 */
public final class Cholesky {
  private Cholesky() {}

  /** Factors {@code a} in place: L on and below the diagonal. Collective over {@code grid}. */
  public static void potrf(ProcessGrid<? extends Communicator> grid, LocalMatrix a) {
    Descriptor d = a.descriptor();
    FactorPlan[] plan = new FactorPlan[1];
    GridCalls calls = GridCalls.open(grid, "potrf", List.of(d), () -> {
      plan[0] = FactorPlan.potrf(d);
      GridCalls.requireMine(grid, a, "A");
    }, List.of(FiniteInput.of("the input's lower triangle", a, true)));
    int p = calls.prow();
    int q = calls.pcol();
    int lld = d.lld();
    double[] data = a.data();
    int nb = d.nb();
    int mostRows = d.numrocRows(d.rsrc());
    double[] diag = new double[nb * nb + 2]; // L11, then the failing column + 1 (0: none) and its pivot
    double[] panel = new double[a.rows() * nb + 2];
    double[] mine = new double[mostRows * nb];
    double[] gathered = new double[d.gridRows() * mostRows * nb];
    double[] transposed = new double[nb * a.cols()];
    int[] from = new int[a.cols()];
    for (FactorPlan.Step s : plan[0].steps()) {
      int w = s.width();
      int r1 = s.trailingLocalRows(p).from();
      int rows = a.rows() - r1;
      int trailer = rows * w;
      int c0 = s.panelLocalCols().from();
      if (q == s.panelCol()) {
        if (p == s.diagRow()) {
          int r0 = s.diagLocalRows().from();
          int bad = HostKernels.choleskyLower(data, r0 + c0 * lld, lld, w);
          for (int jj = 0; jj < w; jj++) {
            System.arraycopy(data, r0 + (c0 + jj) * lld, diag, jj * w, w);
          }
          diag[w * w] = bad < 0 ? 0 : s.first() + bad + 1;
          diag[w * w + 1] = bad < 0 ? 0 : data[r0 + bad + (c0 + bad) * lld];
        }
        calls.columnBroadcast(diag, w * w + 2, s.diagRow());
        if (diag[w * w] == 0) {
          HostKernels.solveRightLowerTransposed(diag, 0, w, data, r1 + c0 * lld, lld, rows, w);
          for (int jj = 0; jj < w; jj++) {
            System.arraycopy(data, r1 + (c0 + jj) * lld, panel, jj * rows, rows);
          }
        }
        panel[trailer] = diag[w * w];
        panel[trailer + 1] = diag[w * w + 1];
      }
      calls.rowBroadcast(panel, trailer + 2, s.panelCol());
      if (panel[trailer] != 0) {
        int column = (int) panel[trailer] - 1;
        double pivot = panel[trailer + 1];
        if (!Double.isFinite(pivot)) {
          throw new FactorizationException(Reason.OVERFLOW, column, column, "potrf: the elimination overflowed:"
              + " the pivot of column " + column + " (0-based) is " + pivot + " although the input is finite;"
              + " scale the matrix");
        }
        throw new FactorizationException(Reason.NOT_POSITIVE_DEFINITE, column, column, "potrf: the matrix is not"
            + " positive definite: the pivot of column " + column + " (0-based) is " + pivot + ", not positive");
      }
      if (s.end() == d.n()) {
        continue;
      }
      // The rows of L21 that match this rank's trailing columns come from the process rows holding them.
      int most = 0;
      for (int pr = 0; pr < d.gridRows(); pr++) {
        most = Math.max(most, d.numrocRows(pr) - d.localRowsBefore(s.end(), pr));
      }
      for (int jj = 0; jj < w; jj++) {
        System.arraycopy(panel, jj * rows, mine, jj * most, rows);
      }
      calls.columnAllGather(mine, gathered, most * w);
      IndexRange right = s.trailingLocalCols(q);
      int c1 = right.from();
      for (int lj = c1; lj < right.to(); lj++) {
        int g = d.indxl2gCol(lj, q);
        int owner = d.indxg2pRow(g);
        int at = owner * most * w + d.indxg2lRow(g) - d.localRowsBefore(s.end(), owner);
        for (int t = 0; t < w; t++) {
          transposed[t + (lj - c1) * w] = gathered[at + t * most];
        }
        from[lj - c1] = d.localRowsBefore(g, p) - r1; // the rows on or below the diagonal
      }
      HostKernels.subtractProductFrom(data, r1 + c1 * lld, lld, rows, right.size(), from, panel, 0, rows,
          transposed, 0, w, w);
    }
  }

  /**
   * Solves A X = B with L from {@link #potrf}: {@code b}, N × NRHS over the same grid with A's row
   * blocks (MB and RSRC equal to A's), is overwritten with X. Collective over {@code grid}.
   */
  public static void potrs(ProcessGrid<? extends Communicator> grid, LocalMatrix l, LocalMatrix b) {
    Descriptor d = l.descriptor();
    FactorPlan[] plan = new FactorPlan[1];
    GridCalls calls = GridCalls.open(grid, "potrs", List.of(d, b.descriptor()), () -> {
      plan[0] = solvePlan(d, b.descriptor());
      GridCalls.requireMine(grid, l, "the factor");
      GridCalls.requireMine(grid, b, "B");
    }, List.of(FiniteInput.of("B", b, false)));
    TriangularSolves.lower(calls, plan[0], l, b, false);
    TriangularSolves.lowerTransposed(calls, plan[0], l, b);
  }

  /** potrs's checks of its arguments (on either kernel set), and the factor's plan. */
  static FactorPlan solvePlan(Descriptor a, Descriptor b) {
    FactorPlan plan = FactorPlan.potrf(a);
    TriangularSolves.requireRowsAligned(a, b);
    return plan;
  }
}
