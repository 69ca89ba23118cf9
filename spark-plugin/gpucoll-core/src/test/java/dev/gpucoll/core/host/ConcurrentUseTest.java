package dev.gpucoll.core.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.ReduceOp;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
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
      assertTrue(msg.contains("is closed") || msg.contains("one thread at a time"), msg);
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
