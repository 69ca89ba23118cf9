package dev.gpucoll.core.wait;

import java.time.Duration;

/**
 * What bounds the waits of one call: how long a wait may go without progress from the peers, and
 * what cancels the call (an interrupt of the calling thread, or the check its task bound). Captured
 * when a call begins, so a watchdog thread can apply the same bounds to a call of another thread.
 *
 * <p>A task (the Spark layer: one task thread per rank) binds its timeout and cancellation check to
 * its thread with {@link #bind}; calls made on that thread then take them, whichever job formed the
 * communicator. Without a binding a call takes its communicator's own timeout and only the thread's
 * interrupt cancels it.
 *
 * @param caller       the thread that made the call (its interrupt cancels the call)
 * @param timeoutNanos how long one wait may go without progress
 * @param check        the bound cancellation check, or null
 */
public record CallBounds(Thread caller, long timeoutNanos, CancellationCheck check) {
  private record Binding(Duration timeout, CancellationCheck check) {}

  private static final ThreadLocal<Binding> BOUND = new ThreadLocal<>();

  /**
   * Binds this thread's calls to {@code timeout} (null: each communicator's own) and {@code check}
   * (null: none) until {@link #unbind()}.
   */
  public static void bind(Duration timeout, CancellationCheck check) {
    BOUND.set(new Binding(timeout, check));
  }

  public static void unbind() {
    BOUND.remove();
  }

  /** The bounds of a call starting now on this thread; {@code ownTimeout} unless the thread bound one. */
  public static CallBounds current(Duration ownTimeout) {
    Binding b = BOUND.get();
    Duration t = b == null || b.timeout == null ? ownTimeout : b.timeout;
    return new CallBounds(Thread.currentThread(), t.toNanos(), b == null ? null : b.check);
  }

  /** Why the call must stop now, or null. The thread's interrupt flag is left set for its owner. */
  public String cancellation() {
    if (caller.isInterrupted()) {
      return "the calling thread '" + caller.getName() + "' was interrupted";
    }
    return check == null ? null : check.cancelledBecause();
  }

  public Duration timeout() {
    return Duration.ofNanos(timeoutNanos);
  }
}
