package dev.gpucoll.core.host;

import java.util.concurrent.locks.LockSupport;

/**
 * How a rank waits for a peer's flag: spin (Thread.onSpinWait) for a short budget, then yield,
 * then park with a doubling sleep. Spinning wins when every rank has its own core; yielding and
 * parking let several ranks share 2 cores without starving the rank they wait for.
 */
final class Backoff {
  /**
   * Spin budget before yielding for small messages. Short, because when two ranks share a core
   * (more ranks than cores, or a loaded machine) every wait costs about twice this budget; with a
   * core per rank a small message arrives well within it.
   */
  static final long SPIN_NANOS = 10_000;
  /**
   * Longest spin budget, for steps moving large chunks: the peer legitimately takes tens of
   * microseconds to copy one, and a rank that yields then may lose its core for a whole time
   * slice on a loaded machine.
   */
  static final long MAX_SPIN_NANOS = 200_000;
  static final long YIELD_NANOS = 1_000_000;
  /** Longest sleep between checks: a chunked large message waits many times per call. */
  private static final long MAX_PARK_NANOS = 100_000;

  private long start;
  private long spinNanos = SPIN_NANOS;
  private long parkNanos;
  private int calls;

  /** Sets the spin budget for the next waits from the bytes a step moves (about 2 bytes / ns). */
  void expectBytes(long bytes) {
    spinNanos = Math.min(MAX_SPIN_NANOS, SPIN_NANOS + bytes / 2);
  }

  /** Starts a wait. */
  Backoff begin() {
    start = 0;
    calls = 0;
    parkNanos = 5_000;
    return this;
  }

  /**
   * Waits a little. Returns false once {@code deadline} (System.nanoTime) has passed. Every 64th
   * call returns with {@link #slowCheckDue()} true so the caller can look at the peer's state.
   */
  boolean pause(long deadline) {
    calls++;
    if ((calls & 15) != 0 && start != 0 && System.nanoTime() - start < spinNanos) {
      Thread.onSpinWait();
      return true;
    }
    long now = System.nanoTime();
    if (start == 0) {
      start = now;
    }
    if (now - deadline > 0) {
      return false;
    }
    long waited = now - start;
    if (waited < spinNanos) {
      Thread.onSpinWait();
    } else if (waited < YIELD_NANOS) {
      Thread.yield();
    } else {
      LockSupport.parkNanos(parkNanos);
      parkNanos = Math.min(parkNanos * 2, MAX_PARK_NANOS);
    }
    return true;
  }

  boolean slowCheckDue() {
    return (calls & 63) == 0;
  }
}
