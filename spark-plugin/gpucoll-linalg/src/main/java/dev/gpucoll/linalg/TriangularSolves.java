package dev.gpucoll.linalg;

import java.util.Arrays;

/**
 * The block triangular solves of getrs and potrs over the factors' {@link FactorPlan}: for each
 * panel step, the process column that holds the triangle's block column sends its part along each
 * row communicator; with L and U (forward, backward), the process row of the diagonal block solves
 * its block of B and sends it down each column communicator and every other rank updates its rows
 * of B; with Lᵀ, every rank sums its rows' part of the update, the sums meet down the column
 * communicator, and the diagonal process row solves. B's rows are A's (same MB and RSRC), so a
 * rank's rows of B are its rows of A.
 */
final class TriangularSolves {
  private TriangularSolves() {}

  static void requireRowsAligned(Descriptor a, Descriptor b) {
    if (b.m() != a.n() || b.mb() != a.mb() || b.rsrc() != a.rsrc()) {
      throw new IllegalArgumentException("B must have A's rows as A has them: M = " + a.n() + ", MB = "
          + a.mb() + ", RSRC = " + a.rsrc() + " (B has M = " + b.m() + ", MB = " + b.mb() + ", RSRC = " + b.rsrc()
          + ")");
    }
  }

  /** B = L⁻¹ B, L below (unit: and not on) the diagonal of {@code a}. */
  static void lower(GridCalls calls, FactorPlan plan, LocalMatrix a, LocalMatrix b, boolean unit) {
    int p = calls.prow();
    int nrhs = b.cols();
    int ldb = b.descriptor().lld();
    double[] x = new double[plan.descriptor().nb() * nrhs];
    for (FactorPlan.Step s : plan.steps()) {
      int w = s.width();
      int r0 = s.panelLocalRows(p).from();
      int rows = a.rows() - r0;
      double[] column = blockColumn(calls, a, s, r0, a.rows());
      if (p == s.diagRow()) {
        HostKernels.solveLower(column, 0, rows, unit, b.data(), r0, ldb, w, nrhs);
      }
      if (s.end() < plan.descriptor().m() && nrhs > 0) {
        if (p == s.diagRow()) {
          copyRows(b, r0, w, x);
        }
        calls.columnBroadcast(x, w * nrhs, s.diagRow());
        int r1 = s.trailingLocalRows(p).from();
        HostKernels.subtractProduct(b.data(), r1, ldb, a.rows() - r1, nrhs, column, r1 - r0, rows, x, 0, w, w);
      }
    }
  }

  /** B = U⁻¹ B, U on and above the diagonal of {@code a}. */
  static void upper(GridCalls calls, FactorPlan plan, LocalMatrix a, LocalMatrix b) {
    int p = calls.prow();
    int nrhs = b.cols();
    int ldb = b.descriptor().lld();
    double[] x = new double[plan.descriptor().nb() * nrhs];
    for (int k = plan.steps().size() - 1; k >= 0; k--) {
      FactorPlan.Step s = plan.steps().get(k);
      int w = s.width();
      int above = a.descriptor().localRowsBefore(s.first(), p);
      int rows = a.descriptor().localRowsBefore(s.end(), p);
      double[] column = blockColumn(calls, a, s, 0, rows);
      if (p == s.diagRow()) {
        HostKernels.solveUpper(column, above, rows, b.data(), above, ldb, w, nrhs);
      }
      if (s.first() > 0 && nrhs > 0) {
        if (p == s.diagRow()) {
          copyRows(b, above, w, x);
        }
        calls.columnBroadcast(x, w * nrhs, s.diagRow());
        HostKernels.subtractProduct(b.data(), 0, ldb, above, nrhs, column, 0, rows, x, 0, w, w);
      }
    }
  }

  /** B = L⁻ᵀ B, L on and below the diagonal of {@code a}. */
  static void lowerTransposed(GridCalls calls, FactorPlan plan, LocalMatrix a, LocalMatrix b) {
    int p = calls.prow();
    int nrhs = b.cols();
    int ldb = b.descriptor().lld();
    double[] sums = new double[plan.descriptor().nb() * nrhs];
    for (int k = plan.steps().size() - 1; k >= 0; k--) {
      FactorPlan.Step s = plan.steps().get(k);
      int w = s.width();
      int r0 = s.panelLocalRows(p).from();
      int rows = a.rows() - r0;
      double[] column = blockColumn(calls, a, s, r0, a.rows());
      if (s.end() < plan.descriptor().m() && nrhs > 0) {
        Arrays.fill(sums, 0, w * nrhs, 0);
        int r1 = s.trailingLocalRows(p).from();
        HostKernels.subtractTransposedProduct(sums, 0, w, w, nrhs, column, r1 - r0, rows, b.data(), r1, ldb,
            a.rows() - r1);
        calls.columnSum(sums, w * nrhs);
        if (p == s.diagRow()) {
          for (int j = 0; j < nrhs; j++) {
            for (int t = 0; t < w; t++) {
              b.data()[r0 + t + j * ldb] += sums[t + j * w];
            }
          }
        }
      }
      if (p == s.diagRow()) {
        HostKernels.solveLowerTransposed(column, 0, rows, b.data(), r0, ldb, w, nrhs);
      }
    }
  }

  /**
   * Local rows [from, to) of step s's block column of {@code a}, column-major with leading
   * dimension to − from, from the process column that holds it along each row communicator.
   */
  private static double[] blockColumn(GridCalls calls, LocalMatrix a, FactorPlan.Step s, int from, int to) {
    int rows = to - from;
    int w = s.width();
    double[] column = new double[rows * w];
    if (calls.pcol() == s.panelCol()) {
      int c0 = s.panelLocalCols().from();
      int lld = a.descriptor().lld();
      for (int jj = 0; jj < w; jj++) {
        System.arraycopy(a.data(), from + (c0 + jj) * lld, column, jj * rows, rows);
      }
    }
    if (rows > 0) {
      calls.rowBroadcast(column, rows * w, s.panelCol());
    }
    return column;
  }

  /** Rows [r, r + w) of b, every local column, into {@code buf} (w × NRHS, leading dimension w). */
  private static void copyRows(LocalMatrix b, int r, int w, double[] buf) {
    int ldb = b.descriptor().lld();
    for (int j = 0; j < b.cols(); j++) {
      System.arraycopy(b.data(), r + j * ldb, buf, j * w, w);
    }
  }
}
