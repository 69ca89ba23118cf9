package dev.gpucoll.cuda.nccl;

import dev.gpucoll.core.config.Durations;
import dev.gpucoll.core.wait.CallBounds;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Bounds blocking NCCL calls the way PyTorch's ProcessGroupNCCL watchdog does: one daemon thread
 * looks at every call in flight and aborts its communicator (ncclCommAbort, which makes the blocked
 * call return with an error) when the call has run past its timeout or its caller was cancelled
 * ({@link CallBounds}: an interrupt of the calling thread, or Spark's kill of its task). The caller
 * learns from its {@link Watch} why the call failed, so it can throw a clear error.
 */
final class NcclWatchdog {
  private static final Logger LOG = Logger.getLogger(NcclWatchdog.class.getName());

  /** What the watchdog aborts; in production the NCCL communicator of the call. */
  @FunctionalInterface
  interface AbortTarget {
    void abort();
  }

  /** The process's watchdog for every NCCL communicator. */
  static final NcclWatchdog PROCESS = new NcclWatchdog(Duration.ofMillis(10));

  private final long pollNanos;
  private final Set<Watch> active = ConcurrentHashMap.newKeySet();
  private final AtomicReference<Thread> thread = new AtomicReference<>();

  NcclWatchdog(Duration poll) {
    this.pollNanos = poll.toNanos();
  }

  /** One call in flight. */
  final class Watch implements AutoCloseable {
    private final String what;
    private final CallBounds bounds;
    private final AbortTarget target;
    private final long deadline;
    private final AtomicReference<String> aborted = new AtomicReference<>();

    private Watch(String what, CallBounds bounds, AbortTarget target) {
      this.what = what;
      this.bounds = bounds;
      this.target = target;
      this.deadline = System.nanoTime() + bounds.timeoutNanos();
    }

    /** Why the watchdog aborted the call ("... did not complete within ...", "cancelled: ..."), or null. */
    String abortReason() {
      return aborted.get();
    }

    /** Whether the reason is the timeout (as opposed to a cancellation). */
    boolean timedOut() {
      String r = aborted.get();
      return r != null && r.contains("did not complete within");
    }

    /** The call returned: stop watching it. */
    @Override
    public void close() {
      active.remove(this);
    }

    private void check(long now) {
      String why = null;
      if (now - deadline > 0) {
        why = what + " did not complete within " + Durations.format(bounds.timeout());
      } else {
        String cancelled = bounds.cancellation();
        if (cancelled != null) {
          why = what + " cancelled: " + cancelled;
        }
      }
      if (why != null && aborted.compareAndSet(null, why)) {
        active.remove(this);
        try {
          target.abort();
        } catch (RuntimeException | Error e) {
          LOG.log(Level.WARNING, "gpucoll: aborting the NCCL communicator (" + why + ") failed", e);
        }
      }
    }
  }

  /** Starts watching a call made now with {@code bounds}; close the watch when the call returns. */
  Watch watch(String what, CallBounds bounds, AbortTarget target) {
    Watch w = new Watch(what, bounds, target);
    active.add(w);
    Thread t = thread.get();
    if (t == null) {
      Thread fresh = new Thread(this::run, "gpucoll-nccl-watchdog");
      fresh.setDaemon(true);
      if (thread.compareAndSet(null, fresh)) {
        fresh.start();
      }
    } else {
      LockSupport.unpark(t);
    }
    return w;
  }

  /** Calls being watched now (for tests). */
  int inFlight() {
    return active.size();
  }

  private void run() {
    while (true) {
      if (active.isEmpty()) {
        LockSupport.park(this); // watch() unparks
      } else {
        LockSupport.parkNanos(this, pollNanos);
      }
      long now = System.nanoTime();
      for (Watch w : active) {
        w.check(now);
      }
    }
  }
}
