package dev.gpucoll.core.spi;

/**
 * The one rule for how many elements an allToAllv buffer must hold, on every backend and path: a
 * block of zero elements reads and writes nothing, so its displacement may point anywhere, past the
 * end of the buffer too (as in MPI_Alltoallv).
 */
public final class AllToAllvLayout {
  private AllToAllvLayout() {}

  /** Elements from the buffer start to the end of the last non-empty block. */
  public static long extent(long[] counts, long[] displs) {
    long end = 0;
    for (int r = 0; r < counts.length; r++) {
      if (counts[r] > 0) {
        end = Math.max(end, displs[r] + counts[r]);
      }
    }
    return end;
  }
}
