package dev.gpucoll.core.wait;

/**
 * Says whether the work of a caller has been cancelled: the reason, or null while it has not. Polled
 * at wait points (amortised, like the timer checks), so it must be cheap: a volatile read, no I/O.
 * The Spark layer feeds it from {@code TaskContext.isInterrupted()} and the kill reason, since Spark
 * cancels barrier tasks without interrupting their thread.
 */
@FunctionalInterface
public interface CancellationCheck {
  String cancelledBecause();
}
