package dev.gpucoll.cuda;

/**
 * The host's per-communicator launch epoch of kernel_abi.h section 3: 1 for the first launch, +1 for
 * every launch of any kernel, never 0, never reset. All ranks advance it identically because they
 * launch the same sequence of kernels. It is a lower bound: a kernel runs at max(this, the last
 * epoch the rank's kernels ran + 1), kept in device memory, so replays of a captured CUDA graph (which
 * this counter does not see) still get fresh epochs and later eager launches stay in step. Parity
 * picks the half of every double-buffered region; the full 64-bit value is the flag, so slots never
 * need clearing (2^64 launches do not happen).
 */
final class EpochCounter {
  private long last;

  /** The epoch for the next launch. */
  long next() {
    if (last == Long.MAX_VALUE) {
      throw new IllegalStateException("epoch counter exhausted");
    }
    return ++last;
  }

  /** The epoch of the most recent launch (0 before the first). */
  long last() {
    return last;
  }

  /** The double-buffer half an epoch writes: epoch & 1. */
  static int half(long epoch) {
    return (int) (epoch & 1);
  }

  /**
   * The epoch whose data a write at {@code epoch} may overwrite: the same half was last used two
   * launches earlier, and completing launch epoch-1 proves every peer has finished reading it.
   */
  static long reusedFrom(long epoch) {
    return epoch - 2;
  }
}
