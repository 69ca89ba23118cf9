package dev.gpucoll.core.host;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.CollectiveBatch;
import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.CollectiveMismatchException;
import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.ReduceOp;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.IntFunction;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * group(): the same results, bit for bit, as the calls made one by one; a batch that differs between
 * ranks fails on every rank before any data moves, and the group still works afterwards. On the
 * shared-memory backend, across hosts on UCX, and on the relay.
 */
class GroupedCallsTest {
  static final int N = 3;

  static Stream<Arguments> backends() {
    IntFunction<String> oneHost = r -> "localhost";
    IntFunction<String> manyHosts = r -> "host" + r;
    return Stream.of(Arguments.of("host-shm", oneHost), Arguments.of("host-ucx", manyHosts),
        Arguments.of("host-relay", manyHosts));
  }

  private static float[] input(int rank, int n, int call) {
    SplittableRandom rnd = new SplittableRandom(31L * rank + call);
    float[] a = new float[n];
    for (int i = 0; i < n; i++) {
      a[i] = (float) rnd.nextDouble(-1, 1);
    }
    return a;
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("backends")
  void groupedEqualsSeparateBitForBit(String backend, IntFunction<String> hosts) {
    int[] counts = {1, 7, 1009, 4096};
    List<Ranks.Outcome<Void>> out = Ranks.run(N, Ranks.confFor(backend), hosts, comm -> {
      assertEquals(backend, comm.backend());
      int r = comm.rank();
      float[][] separate = new float[counts.length][];
      float[][] grouped = new float[counts.length][];
      for (int k = 0; k < counts.length; k++) {
        separate[k] = new float[counts[k]];
        comm.allReduce(CommBuffer.of(input(r, counts[k], k)), CommBuffer.of(separate[k]), counts[k],
            DataType.FLOAT32, ReduceOp.SUM);
        grouped[k] = new float[counts[k]];
      }
      float[] gatheredSeparate = new float[5 * N];
      comm.allGather(CommBuffer.of(input(r, 5, 9)), CommBuffer.of(gatheredSeparate), 5, DataType.FLOAT32);
      float[] bcastSeparate = r == 1 ? input(r, 6, 7) : new float[6];
      comm.broadcast(CommBuffer.of(bcastSeparate), CommBuffer.of(bcastSeparate), 6, DataType.FLOAT32, 1);

      float[] gatheredGrouped = new float[5 * N];
      float[] bcastGrouped = r == 1 ? input(r, 6, 7) : new float[6];
      comm.group(g -> {
        for (int k = 0; k < counts.length; k++) {
          g.allReduce(CommBuffer.of(input(r, counts[k], k)), CommBuffer.of(grouped[k]), counts[k], DataType.FLOAT32,
              ReduceOp.SUM);
        }
        g.allGather(CommBuffer.of(input(r, 5, 9)), CommBuffer.of(gatheredGrouped), 5, DataType.FLOAT32);
        g.broadcast(CommBuffer.of(bcastGrouped), CommBuffer.of(bcastGrouped), 6, DataType.FLOAT32, 1);
      });
      for (int k = 0; k < counts.length; k++) {
        assertArrayEquals(separate[k], grouped[k], "allReduce " + k + " on rank " + r);
      }
      assertArrayEquals(gatheredSeparate, gatheredGrouped);
      assertArrayEquals(bcastSeparate, bcastGrouped);
      comm.group(g -> { }); // an empty group moves nothing and needs no peer
      return null;
    });
    Ranks.values(out);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("backends")
  void batchesThatDifferFailOnEveryRank(String backend, IntFunction<String> hosts) {
    List<Ranks.Outcome<String>> out = Ranks.run(N, Ranks.confFor(backend), hosts, comm -> {
      int r = comm.rank();
      float[] a = new float[8];
      float[] b = new float[8];
      String first;
      try {
        comm.group(g -> {
          g.allReduce(CommBuffer.of(a), CommBuffer.of(a), 8, DataType.FLOAT32, ReduceOp.SUM);
          if (r == 2) {
            g.allReduce(CommBuffer.of(b), CommBuffer.of(b), 8, DataType.FLOAT32, ReduceOp.SUM);
          }
        });
        throw new AssertionError("rank " + r + ": a batch of another length ran");
      } catch (CollectiveMismatchException e) {
        first = e.getMessage();
      }
      // Same length, one count differs.
      CollectiveException second = assertThrows(CollectiveMismatchException.class, () -> comm.group(g ->
          g.allReduce(CommBuffer.of(a), CommBuffer.of(a), r == 1 ? 7 : 8, DataType.FLOAT32, ReduceOp.SUM)));
      assertTrue(second.getMessage().contains("rank 1: 1 call (differing from rank 0"), second.getMessage());
      // A group on one rank against a plain call of the same shape on the others.
      long[] pair = new long[2 * N];
      assertThrows(CollectiveMismatchException.class, () -> {
        if (r == 0) {
          comm.group(g -> g.allReduce(CommBuffer.of(a), CommBuffer.of(a), 8, DataType.FLOAT32, ReduceOp.SUM));
        } else {
          comm.allGather(CommBuffer.of(new long[2]), CommBuffer.of(pair), 2, DataType.INT64);
        }
      });
      // Nothing moved, and the group still works.
      assertArrayEquals(new float[8], a);
      int[] v = {1};
      comm.allReduce(v, ReduceOp.SUM);
      assertEquals(N, v[0]);
      return first;
    });
    for (String m : Ranks.values(out)) {
      assertTrue(m.contains("rank 0: 1 call, rank 1: 1 call, rank 2: 2 calls"), m);
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("backends")
  void aBatchOneRankRefusesRunsNothingOnAnyRank(String backend, IntFunction<String> hosts) {
    List<Ranks.Outcome<String>> out = Ranks.run(N, Ranks.confFor(backend), hosts, comm -> {
      int r = comm.rank();
      float[] first = {1, 2, 3, 4};
      float[] second = new float[r == 2 ? 3 : 8]; // rank 2's receive buffer is too small for call 2
      CollectiveException refused = assertThrows(CollectiveException.class, () -> comm.group(g -> {
        g.allReduce(CommBuffer.of(first), CommBuffer.of(first), 4, DataType.FLOAT32, ReduceOp.SUM);
        g.allReduce(CommBuffer.of(new float[8]), CommBuffer.of(second), 8, DataType.FLOAT32, ReduceOp.SUM);
        g.broadcast(CommBuffer.of(first), CommBuffer.of(first), 4, DataType.FLOAT32, 0);
      }));
      assertArrayEquals(new float[] {1, 2, 3, 4}, first, "rank " + r + ": call 1 of a refused batch ran");
      // A bad root is refused the same way, before anything moves.
      CollectiveException badRoot = assertThrows(CollectiveException.class, () -> comm.group(g -> {
        g.allReduce(CommBuffer.of(first), CommBuffer.of(first), 4, DataType.FLOAT32, ReduceOp.SUM);
        g.broadcast(CommBuffer.of(first), CommBuffer.of(first), 4, DataType.FLOAT32, N);
      }));
      assertTrue(badRoot.getMessage().contains("call 2 of the 2") && badRoot.getMessage().contains("root " + N),
          badRoot.getMessage());
      assertArrayEquals(new float[] {1, 2, 3, 4}, first, "rank " + r + ": call 1 of a refused batch ran");
      // The group still works, batched and plain.
      comm.group(g -> g.allReduce(CommBuffer.of(first), CommBuffer.of(first), 4, DataType.FLOAT32, ReduceOp.SUM));
      assertArrayEquals(new float[] {N, 2 * N, 3 * N, 4 * N}, first);
      int[] v = {1};
      comm.allReduce(v, ReduceOp.SUM);
      assertEquals(N, v[0]);
      return refused.getMessage();
    });
    List<String> messages = Ranks.values(out);
    for (int r = 0; r < N; r++) {
      String m = messages.get(r);
      assertTrue(m.contains("call 2 of the 3 in this group() was refused, so none of them ran"), m);
      assertTrue(r == 2 ? m.contains("recv buffer holds 3") : m.contains("rank 2 refused its arguments"), m);
    }
  }

  /**
   * Rank 1's body throws after recording a call; the other ranks recorded theirs. Rank 1 gets its
   * own exception, the others fail at once naming rank 1 (they used to wait out the timeout and
   * leave the group unusable), nothing ran, and the group goes on. Rank 1 makes its next call only
   * after its peers returned, so a peer that waits for it can only time out.
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("backends")
  void aBodyThatThrowsOnOneRankFailsEveryRankAtOnce(String backend, IntFunction<String> hosts) {
    java.util.concurrent.CountDownLatch peersReturned = new java.util.concurrent.CountDownLatch(N - 1);
    List<Ranks.Outcome<String>> out = Ranks.run(N, Ranks.confFor(backend, "timeout", "8s"), hosts, comm -> {
      int r = comm.rank();
      float[] a = {1, 2};
      long t0 = System.nanoTime();
      RuntimeException e = assertThrows(RuntimeException.class, () -> comm.group(g -> {
        g.allReduce(CommBuffer.of(a), CommBuffer.of(a), 2, DataType.FLOAT32, ReduceOp.SUM);
        if (r == 1) {
          throw new IllegalStateException("user code failed on rank 1");
        }
      }));
      long ms = (System.nanoTime() - t0) / 1_000_000;
      if (r == 1) {
        assertEquals("user code failed on rank 1", e.getMessage());
        assertTrue(peersReturned.await(20, java.util.concurrent.TimeUnit.SECONDS), "the peers never returned");
      } else {
        peersReturned.countDown();
        assertInstanceOf(CollectiveException.class, e);
        assertTrue(ms < 4_000, "rank " + r + " failed after " + ms + " ms: " + e.getMessage());
      }
      assertArrayEquals(new float[] {1, 2}, a, "rank " + r + ": a call of a batch whose body threw ran");
      comm.group(g -> g.allReduce(CommBuffer.of(a), CommBuffer.of(a), 2, DataType.FLOAT32, ReduceOp.SUM));
      assertArrayEquals(new float[] {N, 2 * N}, a, "rank " + r + ": the group after the failed batch");
      return e.getMessage();
    });
    List<String> messages = Ranks.values(out);
    for (int r : new int[] {0, 2}) {
      assertTrue(messages.get(r).contains("rank 1's group() body threw"), messages.get(r));
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("backends")
  void theBodyRecordsOnlyOnTheBatch(String backend, IntFunction<String> hosts) {
    List<Ranks.Outcome<Void>> out = Ranks.run(N, Ranks.confFor(backend), hosts, comm -> {
      float[] a = {1, 2};
      CollectiveException inside = assertThrows(CollectiveException.class, () -> comm.group(g ->
          comm.allReduce(a, ReduceOp.SUM)));
      assertTrue(inside.getMessage().contains("inside group()"), inside.getMessage());
      IllegalStateException thrown = assertThrows(IllegalStateException.class, () -> comm.group(g -> {
        g.allReduce(CommBuffer.of(a), CommBuffer.of(a), 2, DataType.FLOAT32, ReduceOp.SUM);
        throw new IllegalStateException("user code failed");
      }));
      assertEquals("user code failed", thrown.getMessage());
      assertArrayEquals(new float[] {1, 2}, a, "a body that threw ran its calls");
      AtomicReference<CollectiveBatch> leaked = new AtomicReference<>();
      comm.group(g -> {
        leaked.set(g);
        g.allReduce(CommBuffer.of(a), CommBuffer.of(a), 2, DataType.FLOAT32, ReduceOp.SUM);
      });
      assertArrayEquals(new float[] {N, 2 * N}, a);
      assertInstanceOf(IllegalStateException.class, assertThrows(RuntimeException.class,
          () -> leaked.get().allReduce(CommBuffer.of(a), CommBuffer.of(a), 2, DataType.FLOAT32, ReduceOp.SUM)));
      return null;
    });
    Ranks.values(out);
  }
}
