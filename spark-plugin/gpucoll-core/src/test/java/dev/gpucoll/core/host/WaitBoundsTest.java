package dev.gpucoll.core.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.CollectiveTimeoutException;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.core.wait.CallBounds;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/** What ends a wait: no progress for the timeout, a cancellation, an interrupt; never the call's length. */
class WaitBoundsTest {

  /** A call much longer than the timeout completes while every rank keeps making progress. */
  @Test
  void timeoutBoundsProgressNotTheWholeCall() {
    int count = 128 << 20; // 512 MB of floats per rank: about a thousand chunk steps
    List<Ranks.Outcome<long[]>> out = Ranks.run(2, Ranks.conf(), comm -> {
      float[] v = new float[count];
      comm.allReduce(v, ReduceOp.SUM); // warm-up
      comm.barrier();
      // How long this machine takes for the whole call: the fastest of three, so that a slow one (a
      // loaded machine) cannot make the timeout below as long as the bounded call itself.
      long wholeMs = Long.MAX_VALUE;
      for (int i = 0; i < 3; i++) {
        long t0 = System.nanoTime();
        comm.allReduce(v, ReduceOp.SUM);
        wholeMs = Math.min(wholeMs, (System.nanoTime() - t0) / 1_000_000);
      }
      // Half the whole call, so the bounded call must outlast its own timeout while a rank that
      // loses its core for a while on a loaded machine (a third, 87 ms, was seen to be too short on
      // two busy cores) still arrives within it; at least 25 ms so one chunk step (well under a
      // millisecond) never comes near it.
      long timeoutMs = Math.max(25, wholeMs / 2);
      // Three bounded calls, each right, the longest kept: one call on a busy machine ran in 113 ms
      // after three of at least 294, so a single one may end inside the timeout and show nothing.
      long ms = 0;
      for (int attempt = 0; attempt < 3; attempt++) {
        java.util.Arrays.fill(v, comm.rank() + 1);
        comm.barrier();
        CallBounds.bind(Duration.ofMillis(timeoutMs), null); // forming the group took longer
        long t0 = System.nanoTime();
        try {
          comm.allReduce(v, ReduceOp.SUM);
        } finally {
          CallBounds.unbind();
        }
        ms = Math.max(ms, (System.nanoTime() - t0) / 1_000_000);
        assertTrue(IntStream.range(0, count).allMatch(i -> v[i] == 3f), "wrong result");
      }
      return new long[] {ms, timeoutMs};
    });
    for (long[] r : Ranks.values(out)) {
      assertTrue(r[0] > r[1], "the call took " + r[0] + " ms, no longer than the " + r[1]
          + " ms timeout: make the buffer bigger so this test shows something");
    }
  }

  /** Rank 1 never calls; rank 0's wait ends on its bound cancellation, not after the 60 s timeout. */
  @Test
  void boundCancellationEndsAWaitPromptly() {
    AtomicBoolean killed = new AtomicBoolean();
    CountDownLatch done = new CountDownLatch(1);
    List<Ranks.Outcome<Long>> out = Ranks.run(2, Ranks.conf("timeout", "60s"), comm -> {
      if (comm.rank() == 1) {
        assertTrue(done.await(30, TimeUnit.SECONDS));
        return 0L;
      }
      CallBounds.bind(null, () -> killed.get() ? "task killed (test)" : null);
      Thread killer = new Thread(() -> {
        sleep(200);
        killed.set(true);
      });
      killer.start();
      long t0 = System.nanoTime();
      try {
        comm.allReduce(new float[8], ReduceOp.SUM);
        throw new AssertionError("not cancelled");
      } catch (CollectiveException e) {
        assertTrue(e.getMessage().contains("cancelled while waiting for rank 1") && e.getMessage()
            .contains("task killed (test)"), e.getMessage());
        return (System.nanoTime() - t0) / 1_000_000;
      } finally {
        CallBounds.unbind();
        done.countDown();
      }
    });
    long ms = Ranks.values(out).get(0);
    assertTrue(ms >= 150 && ms < 1_200, "cancelled after " + ms + " ms");
  }

  @Test
  void threadInterruptEndsAWaitAndStaysSet() {
    CountDownLatch done = new CountDownLatch(1);
    List<Ranks.Outcome<Boolean>> out = Ranks.run(2, Ranks.conf("timeout", "60s"), comm -> {
      if (comm.rank() == 1) {
        assertTrue(done.await(30, TimeUnit.SECONDS));
        return true;
      }
      Thread me = Thread.currentThread();
      new Thread(() -> {
        sleep(100);
        me.interrupt();
      }).start();
      try {
        comm.allReduce(new float[8], ReduceOp.SUM);
        throw new AssertionError("not cancelled");
      } catch (CollectiveException e) {
        assertTrue(e.getMessage().contains("was interrupted"), e.getMessage());
        return Thread.interrupted(); // the flag is left for its owner (and cleared here for the pool)
      } finally {
        done.countDown();
      }
    });
    assertTrue(Ranks.values(out).get(0), "interrupt flag kept");
  }

  /** A timeout bound to the calling thread wins over the one the group was formed with. */
  @Test
  void boundTimeoutReplacesTheFormingJobsTimeout() {
    CountDownLatch done = new CountDownLatch(1);
    List<Ranks.Outcome<Long>> out = Ranks.run(2, Ranks.conf("timeout", "60s"), comm -> {
      if (comm.rank() == 1) {
        assertTrue(done.await(30, TimeUnit.SECONDS));
        return 0L;
      }
      CallBounds.bind(Duration.ofMillis(300), null);
      long t0 = System.nanoTime();
      try {
        comm.allReduce(new float[8], ReduceOp.SUM);
        throw new AssertionError("no timeout");
      } catch (CollectiveTimeoutException e) {
        assertEquals(List.of(1), e.missingRanks());
        assertTrue(e.getMessage().contains("within 0.3 s"), e.getMessage());
        return (System.nanoTime() - t0) / 1_000_000;
      } finally {
        CallBounds.unbind();
        done.countDown();
      }
    });
    long ms = Ranks.values(out).get(0);
    assertTrue(ms >= 250 && ms < 3_000, "timed out after " + ms + " ms");
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
