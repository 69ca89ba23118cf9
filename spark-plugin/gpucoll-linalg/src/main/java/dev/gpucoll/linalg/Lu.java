package dev.gpucoll.linalg;

import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.ProcessGrid;

/**
 * LU with partial pivoting of a block-cyclic matrix (ScaLAPACK's pdgetrf and pdgetrs) on host parts:
 * {@link GridSolver}'s schedule on the host kernel set, the one {@link DeviceSolver} runs on the
 * device. Per panel of {@link FactorPlan#getrf}: the panel's process column gathers the panel in
 * global row order, the process of its diagonal block factors it (dgetf2: the pivot the first
 * largest |value|, as LAPACK), and sends it with its pivots over the grid; the interchanges reach
 * the other columns ({@link RowInterchanges}), the diagonal process row solves U₁₂ = L₁₁⁻¹ A₁₂ and
 * sends it down each column; every rank updates its trailing part, A₂₂ −= L₂₁ U₁₂. Every grid,
 * 1 × 1 included, runs these steps, so the factors of every P × Q grid are the same bits.
 *
 * <p>Any M, N, RSRC, CSRC and grid; square blocks (MB = NB). A zero pivot, a NaN or an Inf in the
 * input, or an overflow during the elimination stops every rank at the same step with the same
 * {@link FactorizationException}.
 */
public final class Lu {
  private Lu() {}

  /**
   * Factors {@code a} in place into P A = L U (L unit lower, below the diagonal; U on and above it)
   * and returns the pivots, the same on every rank: for k in [0, min(M, N)), global row k was
   * interchanged with global row {@code pivots[k]} (LAPACK's IPIV, 0-based, for the whole matrix).
   * Collective over {@code grid}.
   */
  public static int[] getrf(ProcessGrid<? extends Communicator> grid, LocalMatrix a) {
    try (HostParts parts = new HostParts(grid)) {
      Part pa = parts.in(a);
      try {
        return parts.solver().getrf(pa);
      } finally {
        parts.out(pa, a);
      }
    }
  }

  /**
   * Solves A X = B with the factors and pivots of {@link #getrf} (ScaLAPACK's pdgetrs, no
   * transpose): {@code b}, N × NRHS over the same grid with A's row blocks (MB and RSRC equal to
   * A's; NB and CSRC its own), is overwritten with X. Collective over {@code grid}.
   */
  public static void getrs(ProcessGrid<? extends Communicator> grid, LocalMatrix lu, int[] pivots, LocalMatrix b) {
    try (HostParts parts = new HostParts(grid)) {
      Part pb = parts.in(b);
      parts.solver().getrs(parts.in(lu), pivots, pb);
      parts.out(pb, b);
    }
  }

  /** getrs's checks of its arguments (on either kernel set), and the factors' plan. */
  static FactorPlan solvePlan(Descriptor a, Descriptor b, int[] pivots) {
    if (a.m() != a.n()) {
      throw new IllegalArgumentException("A must be square: M = " + a.m() + ", N = " + a.n());
    }
    FactorPlan plan = FactorPlan.getrf(a);
    GridSolver.requireRowsAligned(a, b);
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
