package dev.gpucoll.linalg;

/**
 * Non-finite input, found before any step: LAPACK would return factors full of NaN (or, for
 * Cholesky, stop at a column that says nothing of the cause). Each rank scans its part; the grid's
 * first NaN and first Inf in column-major order meet in the routine's opening allReduce
 * ({@link GridCalls#open}).
 *
 * @param name what the part is called in the error ("the input", "B")
 * @param desc the part's descriptor
 * @param scan this rank's smallest j * M + i holding a NaN, and holding an Inf ({@link #NONE}: none),
 *     by the kernel set that holds the part
 */
record FiniteInput(String name, Descriptor desc, java.util.function.Supplier<long[]> scan) {
  static final long NONE = Long.MAX_VALUE;

  /** Fails (the same on every rank) if the grid's first NaN or Inf, {@code first}, names an element. */
  void refuse(long[] first, String routine) {
    if (first[0] == NONE && first[1] == NONE) {
      return;
    }
    Descriptor d = desc;
    boolean nanFirst = first[0] < first[1];
    long at = nanFirst ? first[0] : first[1];
    int row = (int) (at % d.m());
    int column = (int) (at / d.m());
    long other = nanFirst ? first[1] : first[0];
    throw new FactorizationException(FactorizationException.Reason.NOT_FINITE_INPUT, row, column, routine + ": "
        + name + " is not finite: " + (nanFirst ? "NaN" : "Inf") + " at row " + row + ", column " + column
        + " (0-based)" + (other == NONE ? "" : nanFirst ? "; it holds Inf too" : "; it holds NaN too") + "; "
        + routine + " refuses NaN and Inf");
  }
}
