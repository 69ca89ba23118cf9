package dev.gpucoll.linalg;

/**
 * A factorization that cannot go on, raised with the same message on every rank of the grid at the
 * same step (the rank that finds it puts it in a broadcast every other rank waits on), so that no
 * rank waits for a timeout and no non-finite value reaches the factors. Positions are 0-based
 * global indices.
 */
public final class FactorizationException extends ArithmeticException {
  /** Why the factorization stopped. */
  public enum Reason {
    /** LU: a column with no nonzero pivot (LAPACK's INFO > 0 of getrf). */
    SINGULAR,
    /** Cholesky: a pivot that is not positive (LAPACK's INFO > 0 of potrf). */
    NOT_POSITIVE_DEFINITE,
    /** The input holds a NaN or an infinity (refused before any step). */
    NOT_FINITE_INPUT,
    /** A finite input overflowed during the elimination (a non-finite value met in the pivot column). */
    OVERFLOW
  }

  private final Reason reason;
  private final int row;
  private final int column;

  FactorizationException(Reason reason, int row, int column, String message) {
    super(message);
    this.reason = reason;
    this.row = row;
    this.column = column;
  }

  /**
   * The same failure found by another solver on a matrix of this module's layout (cuSOLVERMp's
   * getrf and potrf INFO, in gpucoll-cusolvermp), so that callers handle both alike. Positions are
   * 0-based global indices, as here.
   */
  public static FactorizationException of(Reason reason, int row, int column, String message) {
    return new FactorizationException(reason, row, column, message);
  }

  public Reason reason() {
    return reason;
  }

  /** The global column where it stopped (for input that is not finite: the first such element's). */
  public int column() {
    return column;
  }

  /** The global row of the element named (the pivot row, or the non-finite element's row). */
  public int row() {
    return row;
  }
}
