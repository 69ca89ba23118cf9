package dev.gpucoll.cuda.nccl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.core.wait.CallBounds;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The watchdog's logic with a fake abort target standing in for ncclCommAbort: the "blocking
 * call" is a latch that only the abort releases, as a blocked NCCL call returns only when its
 * communicator is aborted.
 */
class NcclWatchdogTest {
  private final NcclWatchdog watchdog = new NcclWatchdog(Duration.ofMillis(5));

  /** A blocked call, released only by the abort; returns how long it blocked, in ms. */
  private long blockedCall(NcclWatchdog.Watch[] out, CallBounds bounds, AtomicInteger aborts) throws Exception {
    CountDownLatch released = new CountDownLatch(1);
    long t0 = System.nanoTime();
    NcclWatchdog.Watch w = watchdog.watch("ncclAllReduce", bounds, () -> {
      aborts.incrementAndGet();
      released.countDown();
    });
    out[0] = w;
    try {
      assertTrue(released.await(10, TimeUnit.SECONDS), "the watchdog never aborted the blocked call");
    } finally {
      w.close();
    }
    return (System.nanoTime() - t0) / 1_000_000;
  }

  @Test
  void aCallPastItsTimeoutIsAbortedWithAClearReason() throws Exception {
    NcclWatchdog.Watch[] w = new NcclWatchdog.Watch[1];
    AtomicInteger aborts = new AtomicInteger();
    long ms = blockedCall(w, new CallBounds(Thread.currentThread(), Duration.ofMillis(200).toNanos(), null), aborts);
    assertTrue(ms >= 190 && ms < 2_000, "aborted after " + ms + " ms");
    assertEquals(1, aborts.get(), "aborted once");
    assertTrue(w[0].timedOut());
    assertEquals("ncclAllReduce did not complete within 0.2 s", w[0].abortReason());
    assertEquals(0, watchdog.inFlight());
  }

  @Test
  void aCancelledCallerIsAbortedPromptlyLongBeforeTheTimeout() throws Exception {
    AtomicBoolean killed = new AtomicBoolean();
    new Thread(() -> {
      try {
        Thread.sleep(100);
      } catch (InterruptedException e) {
        return;
      }
      killed.set(true);
    }).start();
    NcclWatchdog.Watch[] w = new NcclWatchdog.Watch[1];
    AtomicInteger aborts = new AtomicInteger();
    CallBounds bounds = new CallBounds(Thread.currentThread(), Duration.ofSeconds(120).toNanos(),
        () -> killed.get() ? "Spark killed task 7" : null);
    long ms = blockedCall(w, bounds, aborts);
    assertTrue(ms < 2_000, "aborted after " + ms + " ms");
    assertFalse(w[0].timedOut());
    assertEquals("ncclAllReduce cancelled: Spark killed task 7", w[0].abortReason());
  }

  @Test
  void anInterruptOfTheCallingThreadAbortsItsCall() throws Exception {
    AtomicBoolean stop = new AtomicBoolean();
    // Stands for the thread blocked in NCCL; park keeps its interrupt flag set.
    Thread caller = new Thread(() -> {
      while (!stop.get()) {
        java.util.concurrent.locks.LockSupport.parkNanos(1_000_000);
      }
    });
    caller.start();
    try {
      new Thread(() -> {
        try {
          Thread.sleep(50);
        } catch (InterruptedException e) {
          return;
        }
        caller.interrupt();
      }).start();
      NcclWatchdog.Watch[] w = new NcclWatchdog.Watch[1];
      AtomicInteger aborts = new AtomicInteger();
      long ms = blockedCall(w, new CallBounds(caller, Duration.ofSeconds(120).toNanos(), null), aborts);
      assertTrue(ms < 2_000, "aborted after " + ms + " ms");
      assertEquals(1, aborts.get());
      assertTrue(w[0].abortReason().contains("was interrupted"), w[0].abortReason());
    } finally {
      stop.set(true);
      caller.join();
    }
  }

  @Test
  void aCallThatReturnsInTimeIsNeverAborted() throws Exception {
    AtomicInteger aborts = new AtomicInteger();
    for (int i = 0; i < 100; i++) {
      NcclWatchdog.Watch w = watchdog.watch("ncclAllGather", new CallBounds(Thread.currentThread(),
          Duration.ofMillis(100).toNanos(), null), aborts::incrementAndGet);
      w.close();
      assertNull(w.abortReason());
    }
    Thread.sleep(300); // well past every call's timeout
    assertEquals(0, aborts.get());
    assertEquals(0, watchdog.inFlight());
  }

  @Test
  void aFailingAbortDoesNotStopTheWatchdog() throws Exception {
    NcclWatchdog.Watch bad = watchdog.watch("first", new CallBounds(Thread.currentThread(),
        Duration.ofMillis(20).toNanos(), null), () -> {
          throw new IllegalStateException("ncclCommAbort failed");
        });
    NcclWatchdog.Watch[] w = new NcclWatchdog.Watch[1];
    AtomicInteger aborts = new AtomicInteger();
    blockedCall(w, new CallBounds(Thread.currentThread(), Duration.ofMillis(100).toNanos(), null), aborts);
    bad.close();
    assertTrue(bad.timedOut());
    assertEquals(1, aborts.get());
  }
}
