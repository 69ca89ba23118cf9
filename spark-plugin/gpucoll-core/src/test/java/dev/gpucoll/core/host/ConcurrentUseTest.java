package dev.gpucoll.core.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.ReduceOp;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;

/** Misuse from several threads: an error on the misusing thread, never a crash or wrong data. */
class ConcurrentUseTest {

  /**
   * Another thread closes rank 0's communicator while rank 0 is inside a large allReduce, then
   * calls a collective on it. Unmapping the segment under the running call would crash the JVM
   * (and this test with it); instead the call fails cleanly and so does the late call.
   */
  @Test
  void closeFromAnotherThreadMidCallNeverCrashes() throws Exception {
    for (int run = 0; run < 100; run++) {
      AtomicReference<Communicator> rank0 = new AtomicReference<>();
      AtomicReference<Throwable> lateCall = new AtomicReference<>();
      CountDownLatch formed = new CountDownLatch(1);
      long delayNanos = ThreadLocalRandom.current().nextLong(2_000_000);
      Thread closer = new Thread(() -> {
        try {
          formed.await();
          LockSupport.parkNanos(delayNanos);
          Communicator c = rank0.get();
          c.close();
          c.allReduce(new float[4], ReduceOp.SUM);
        } catch (Throwable t) {
          lateCall.set(t);
        }
      });
      closer.start();
      List<Ranks.Outcome<Integer>> out = Ranks.run(2, Ranks.conf("timeout", "10s"), comm -> {
        if (comm.rank() == 0) {
          rank0.set(comm);
          formed.countDown();
        }
        float[] v = new float[64 << 10];
        int calls = 0;
        try {
          while (calls < 10_000) {
            java.util.Arrays.fill(v, 1f);
            comm.allReduce(v, ReduceOp.SUM);
            for (float x : v) {
              assertEquals(2f, x);
            }
            calls++;
          }
          throw new AssertionError("rank " + comm.rank() + " never saw the close");
        } catch (CollectiveException e) {
          return calls;
        }
      });
      Ranks.values(out);
      closer.join(TimeUnit.SECONDS.toMillis(20));
      assertTrue(lateCall.get() instanceof CollectiveException, "late call: " + lateCall.get());
      String msg = lateCall.get().getMessage();
      assertTrue(msg.contains("is closed"), msg);
    }
  }

  /**
   * Another thread closes rank 0's communicator at a random moment while rank 0 and its two peers
   * run allReduces of one size (one step per call, or two-shot chunks), 40 times. Every peer fails
   * soon after the close naming rank 0 as closed (a peer waiting for a third rank used to wait out
   * the timeout blaming it), and every later call on rank 0, on either thread, says it is closed
   * (the closing thread's call used to say that another thread was inside a call). One host only:
   * across hosts UCX 1.13.1 now and then aborts the process when it destroys a worker with a
   * transfer of the interrupted call still on an endpoint.
   */
  @Test
  void closeDuringACallOnAnotherThreadTellsEveryPeerAndLaterCallsSayClosed() throws Exception {
    int n = 3;
    for (int run = 0; run < 40; run++) {
      int count = run % 2 == 0 ? 4 : 256 << 10;
      AtomicReference<Communicator> rank0 = new AtomicReference<>();
      AtomicReference<Throwable> closerCall = new AtomicReference<>();
      AtomicLong closedAt = new AtomicLong();
      CountDownLatch formed = new CountDownLatch(1);
      // A rank that failed keeps its communicator open until every rank failed: a peer waiting for
      // it must learn of the close from the group, not from its close.
      CountDownLatch failed = new CountDownLatch(n);
      long delayNanos = ThreadLocalRandom.current().nextLong(5_000_000);
      Thread closer = new Thread(() -> {
        try {
          formed.await();
          LockSupport.parkNanos(delayNanos);
          Communicator c = rank0.get();
          closedAt.set(System.nanoTime());
          c.close();
          c.allReduce(new float[4], ReduceOp.SUM);
        } catch (Throwable t) {
          closerCall.set(t);
        }
      }, "closer");
      closer.start();
      List<Ranks.Outcome<String>> out = Ranks.run(n, Ranks.conf("timeout", "10s"), comm -> {
        if (comm.rank() == 0) {
          rank0.set(comm);
          formed.countDown();
        }
        float[] v = new float[count];
        try {
          while (true) {
            comm.allReduce(v, ReduceOp.SUM);
          }
        } catch (CollectiveException e) {
          long failedAt = System.nanoTime();
          failed.countDown();
          assertTrue(failed.await(20, TimeUnit.SECONDS), "a rank never failed");
          if (comm.rank() == 0) {
            CollectiveException again = assertThrows(CollectiveException.class,
                () -> comm.allReduce(new float[4], ReduceOp.SUM));
            assertTrue(again.getMessage().contains("the communicator is closed"), again.getMessage());
            return e.getMessage();
          }
          long late = (failedAt - closedAt.get()) / 1_000_000;
          assertTrue(closedAt.get() != 0 && late < 3_000, "rank " + comm.rank() + " failed " + late
              + " ms after the close: " + e.getMessage());
          return e.getMessage();
        }
      });
      closer.join(TimeUnit.SECONDS.toMillis(20));
      List<String> messages = Ranks.values(out);
      for (int r = 1; r < n; r++) {
        String m = messages.get(r);
        assertTrue(m.contains("rank 0 closed its communicator"), "run " + run + ", rank " + r + ": " + m);
      }
      assertTrue(closerCall.get() instanceof CollectiveException, "closer's call: " + closerCall.get());
      assertTrue(closerCall.get().getMessage().contains("the communicator is closed"), closerCall.get().getMessage());
    }
  }

  /**
   * A second thread calling while the first is inside a call fails at once; the first call then
   * completes with the right result.
   */
  @Test
  void secondThreadInACallIsAnErrorAndTheFirstCallStaysCorrect() {
    CountDownLatch secondFailed = new CountDownLatch(1);
    AtomicReference<Throwable> second = new AtomicReference<>();
    List<Ranks.Outcome<int[]>> out = Ranks.run(2, Ranks.conf(), comm -> {
      int[] v = new int[100_000];
      java.util.Arrays.fill(v, comm.rank() + 1);
      if (comm.rank() == 1) {
        assertTrue(secondFailed.await(20, TimeUnit.SECONDS));
        comm.allReduce(v, ReduceOp.SUM);
        return v;
      }
      Thread intruder = new Thread(() -> {
        // Give rank 0's own call time to start waiting for rank 1.
        LockSupport.parkNanos(50_000_000);
        try {
          comm.allReduce(new int[100_000], ReduceOp.SUM);
        } catch (Throwable t) {
          second.set(t);
        }
        secondFailed.countDown();
      }, "intruder");
      intruder.start();
      comm.allReduce(v, ReduceOp.SUM);
      intruder.join();
      return v;
    });
    for (int[] v : Ranks.values(out)) {
      for (int x : v) {
        assertEquals(3, x);
      }
    }
    assertNotNull(second.get());
    assertTrue(second.get() instanceof CollectiveException, second.get().toString());
    assertTrue(second.get().getMessage().contains("thread 'pool-"), second.get().getMessage());
  }
}
