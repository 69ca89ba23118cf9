package dev.gpucoll.linalg;

import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.ProcessGrid;

/**
 * Cholesky A = L Lᵀ of a symmetric positive definite block-cyclic matrix (ScaLAPACK's pdpotrf and
 * pdpotrs with UPLO = 'L') on host parts: {@link GridSolver}'s schedule on the host kernel set, the
 * one {@link DeviceSolver} runs on the device. Per panel of {@link FactorPlan#potrf}: the rank of
 * the diagonal block factors it and sends L₁₁ down its column communicator; that process column
 * solves L₂₁ = A₂₁ L₁₁⁻ᵀ and sends it along each row communicator; an allGather down each column
 * communicator gives every rank the rows of L₂₁ that match its columns; every rank updates the lower
 * triangle of its trailing part, A₂₂ −= L₂₁ L₂₁ᵀ. Only the lower triangle is read or written (above
 * the diagonal stays as it was, as LAPACK leaves it).
 *
 * <p>Any N, RSRC, CSRC and grid; square blocks (MB = NB). A pivot that is not positive, a NaN or an
 * Inf in the lower triangle, or an overflow stops every rank at the same step with the same
 * {@link FactorizationException}.
 */
public final class Cholesky {
  private Cholesky() {}

  /** Factors {@code a} in place: L on and below the diagonal. Collective over {@code grid}. */
  public static void potrf(ProcessGrid<? extends Communicator> grid, LocalMatrix a) {
    try (HostParts parts = new HostParts(grid)) {
      Part pa = parts.in(a);
      try {
        parts.solver().potrf(pa);
      } finally {
        parts.out(pa, a);
      }
    }
  }

  /**
   * Solves A X = B with L from {@link #potrf}: {@code b}, N × NRHS over the same grid with A's row
   * blocks (MB and RSRC equal to A's), is overwritten with X. Collective over {@code grid}.
   */
  public static void potrs(ProcessGrid<? extends Communicator> grid, LocalMatrix l, LocalMatrix b) {
    try (HostParts parts = new HostParts(grid)) {
      Part pb = parts.in(b);
      parts.solver().potrs(parts.in(l), pb);
      parts.out(pb, b);
    }
  }

  /** potrs's checks of its arguments (on either kernel set), and the factor's plan. */
  static FactorPlan solvePlan(Descriptor a, Descriptor b) {
    FactorPlan plan = FactorPlan.potrf(a);
    GridSolver.requireRowsAligned(a, b);
    return plan;
  }
}
