package dev.gpucoll.linalg;

import java.util.ArrayList;
import java.util.List;

/**
 * The right-looking schedule of a blocked factorization over a {@link Descriptor}, as ScaLAPACK's
 * pdgetrf (LU with partial pivoting) and pdpotrf (Cholesky, lower): who holds what at each panel
 * step, decided once here so that the host and the device kernels run the same algorithm.
 *
 * <p>Step k factors the panel of global columns [{@code first}, {@code end}) (NB of them, fewer at
 * the last step), then updates the trailing matrix, global rows [end, M) × columns [end, N):
 * <ul>
 *   <li><b>LU</b>: the process column {@link Step#panelCol} factors the panel, rows [first, M)
 *       (gathered whole on the process of the diagonal block), and broadcasts it with its pivots;
 *       the process row {@link Step#diagRow} solves its part of the block row, U₁₂ = L₁₁⁻¹ A₁₂ over the trailing columns, and broadcasts it down each column
 *       communicator; every process updates its trailing part, A₂₂ −= L₂₁ U₁₂. The pivots' row
 *       interchanges apply to every local column outside the panel.
 *   <li><b>Cholesky</b>: process (diagRow, panelCol) factors the diagonal block and broadcasts
 *       L₁₁ down its column communicator; process column panelCol solves L₂₁ = A₂₁ L₁₁⁻ᵀ over the
 *       trailing rows and broadcasts it along each row communicator; the rows of L₂₁ that match a
 *       process's columns come down each column communicator (an allGather: no one root); every
 *       process updates the lower triangle (global row ≥ global column) of its trailing part,
 *       A₂₂ −= L₂₁ L₂₁ᵀ.
 * </ul>
 * Both need square blocks (MB = NB, as pdgetrf and pdpotrf), so that the diagonal block lies in
 * one process row; Cholesky needs M = N. All ranges are local indices of the process named.
 */
public final class FactorPlan {
  /** The factorization, by ScaLAPACK's name. */
  public enum Kind {
    /** LU with partial pivoting (pdgetrf). */
    GETRF,
    /** Cholesky, lower: A = L Lᵀ (pdpotrf with UPLO = 'L'). */
    POTRF
  }

  private final Kind kind;
  private final Descriptor desc;
  private final List<Step> steps;

  private FactorPlan(Kind kind, Descriptor desc) {
    if (desc.mb() != desc.nb()) {
      throw new IllegalArgumentException(kind + " needs square blocks: mb (MB_) = " + desc.mb() + ", nb (NB_) = "
          + desc.nb());
    }
    if (kind == Kind.POTRF && desc.m() != desc.n()) {
      throw new IllegalArgumentException("POTRF needs a square matrix: m (M_) = " + desc.m() + ", n (N_) = "
          + desc.n());
    }
    this.kind = kind;
    this.desc = desc;
    int columns = Math.min(desc.m(), desc.n());
    List<Step> s = new ArrayList<>();
    for (int first = 0, k = 0; first < columns; first += desc.nb(), k++) {
      s.add(new Step(desc, k, first, Math.min(desc.nb(), columns - first), desc.indxg2pCol(first),
          desc.indxg2pRow(first)));
    }
    this.steps = List.copyOf(s);
  }

  /** LU with partial pivoting of the M × N matrix: min(M, N) columns in panels of NB. */
  public static FactorPlan getrf(Descriptor desc) {
    return new FactorPlan(Kind.GETRF, desc);
  }

  /** Cholesky (lower) of the N × N matrix: N columns in panels of NB. */
  public static FactorPlan potrf(Descriptor desc) {
    return new FactorPlan(Kind.POTRF, desc);
  }

  public Kind kind() {
    return kind;
  }

  public Descriptor descriptor() {
    return desc;
  }

  /** The panel steps in order. */
  public List<Step> steps() {
    return steps;
  }

  /** Whether the trailing update touches only the lower triangle of each trailing part (Cholesky). */
  public boolean lowerOnly() {
    return kind == Kind.POTRF;
  }

  /**
   * Panel step {@code index}: global columns [first, first + width).
   *
   * @param panelCol the process column holding the panel: the root of the panel's broadcast along
   *     each row communicator (a rank's rank there is its process column)
   * @param diagRow the process row holding the diagonal block: the root of the broadcast down each
   *     column communicator (U₁₂ for LU, L₁₁ for Cholesky; a rank's rank there is its process row)
   */
  public record Step(Descriptor desc, int index, int first, int width, int panelCol, int diagRow) {
    /** One past the panel's last global column (and row): where the trailing matrix starts. */
    public int end() {
      return first + width;
    }

    /** The panel's local columns on process column {@link #panelCol}. */
    public IndexRange panelLocalCols() {
      return new IndexRange(desc.localColsBefore(first, panelCol), desc.localColsBefore(end(), panelCol));
    }

    /** The panel's local rows (global rows [first, M): the diagonal block and below) on process row {@code prow}. */
    public IndexRange panelLocalRows(int prow) {
      return new IndexRange(desc.localRowsBefore(first, prow), desc.numrocRows(prow));
    }

    /** The diagonal block's local rows (global rows [first, end)) on process row {@link #diagRow}. */
    public IndexRange diagLocalRows() {
      return new IndexRange(desc.localRowsBefore(first, diagRow), desc.localRowsBefore(end(), diagRow));
    }

    /** The trailing matrix's local rows (global rows [end, M)) on process row {@code prow}. */
    public IndexRange trailingLocalRows(int prow) {
      return new IndexRange(desc.localRowsBefore(end(), prow), desc.numrocRows(prow));
    }

    /**
     * The trailing matrix's local columns (global columns [end, N)) on process column {@code pcol};
     * for LU also the columns of U₁₂ that process row {@link #diagRow} solves there.
     */
    public IndexRange trailingLocalCols(int pcol) {
      return new IndexRange(desc.localColsBefore(end(), pcol), desc.numrocCols(pcol));
    }
  }
}
