package dev.gpucoll.core.host;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.CollectiveMismatchException;
import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.LocOp;
import dev.gpucoll.api.PairType;
import dev.gpucoll.api.ReduceOp;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.IntFunction;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * MAXLOC / MINLOC on the host backend: every pair type and op against a reference written here
 * (values from a small set, so ties are common, -0.0 and +0.0 among them), ties to the lowest index
 * wherever it sits, NaN and bad buffers failing on every rank with the group still usable, and a
 * pair call meeting a plain one failing as a mismatch. On shared memory, across hosts on UCX, and on
 * the relay.
 */
class PairReductionTest {
  static final int COUNT = 9;

  static Stream<Arguments> groups() {
    IntFunction<String> oneHost = r -> "localhost";
    IntFunction<String> manyHosts = r -> "host" + r;
    return Stream.of(Arguments.of("host-shm", 1, oneHost), Arguments.of("host-shm", 2, oneHost),
        Arguments.of("host-shm", 5, oneHost), Arguments.of("host-ucx", 3, manyHosts),
        Arguments.of("host-relay", 3, manyHosts));
  }

  static Stream<Arguments> backends() {
    return groups().filter(a -> (int) a.get()[1] == 3 || a.get()[0].equals("host-shm") && (int) a.get()[1] == 5);
  }

  /** Rank {@code rank}'s pairs for a case: values from {-2, -1, -0, 0, 1, 2} (floats) or {-2..2}, random indices. */
  static ByteBuffer pairs(PairType t, int rank, long seed) {
    SplittableRandom rnd = new SplittableRandom(seed * 31 + rank);
    ByteBuffer b = ByteBuffer.allocate(COUNT * t.byteSize()).order(ByteOrder.nativeOrder());
    double[] floats = {-2, -1, -0.0, 0.0, 1, 2};
    for (int i = 0; i < COUNT; i++) {
      int at = i * t.byteSize();
      int pick = rnd.nextInt(6);
      switch (t.value()) {
        case FLOAT32 -> b.putFloat(at, (float) floats[pick]);
        case FLOAT64 -> b.putDouble(at, floats[pick]);
        case INT32 -> b.putInt(at, pick - 2);
        default -> b.putLong(at, pick - 2 + (pick == 5 ? Long.MAX_VALUE - 3 : 0)); // extremes: no double rounding
      }
      long index = rnd.nextInt(-3, 40);
      if (t.index() == DataType.INT32) {
        b.putInt(at + t.indexOffset(), (int) index);
      } else {
        b.putLong(at + t.indexOffset(), index + (rnd.nextBoolean() ? 1L << 40 : 0));
      }
    }
    return b;
  }

  static double value(ByteBuffer b, int at, PairType t) {
    return switch (t.value()) {
      case FLOAT32 -> b.getFloat(at);
      case FLOAT64 -> b.getDouble(at);
      case INT32 -> b.getInt(at);
      default -> b.getLong(at);
    };
  }

  static long index(ByteBuffer b, int at, PairType t) {
    return t.index() == DataType.INT32 ? b.getInt(at + t.indexOffset()) : b.getLong(at + t.indexOffset());
  }

  /** The expected result: the winning pair's bytes, for every pair position. */
  static byte[] reference(PairType t, LocOp op, int n, long seed) {
    int pb = t.byteSize();
    byte[] out = new byte[COUNT * pb];
    for (int i = 0; i < COUNT; i++) {
      ByteBuffer best = null;
      for (int r = 0; r < n; r++) {
        ByteBuffer b = pairs(t, r, seed);
        if (best == null) {
          best = b;
          continue;
        }
        int at = i * pb;
        boolean better;
        if (t.value() == DataType.INT64) { // compared exactly, not through double
          long x = b.getLong(at);
          long y = best.getLong(at);
          better = op == LocOp.MAXLOC ? x > y : x < y;
          better |= x == y && index(b, at, t) < index(best, at, t);
        } else {
          double x = value(b, at, t);
          double y = value(best, at, t);
          better = op == LocOp.MAXLOC ? x > y : x < y; // -0.0 == 0.0 here
          better |= x == y && index(b, at, t) < index(best, at, t);
        }
        if (better) {
          best = b;
        }
      }
      best.get(i * pb, out, i * pb, pb);
    }
    return out;
  }

  @ParameterizedTest(name = "{0} {1} ranks")
  @MethodSource("groups")
  void everyPairTypeAndOpMatchesTheReference(String backend, int n, IntFunction<String> hosts) {
    List<Ranks.Outcome<List<byte[]>>> out = Ranks.run(n, Ranks.confFor(backend), hosts, comm -> {
      assertEquals(backend, n == 1 ? backend : comm.backend());
      List<byte[]> results = new ArrayList<>();
      long seed = 1;
      for (PairType t : PairType.values()) {
        for (LocOp op : LocOp.values()) {
          ByteBuffer send = pairs(t, comm.rank(), seed);
          ByteBuffer recv = ByteBuffer.allocate(send.capacity());
          comm.allReduce(CommBuffer.of(send), CommBuffer.of(recv), COUNT, t, op);
          results.add(recv.array());
          // in place too
          ByteBuffer inPlace = pairs(t, comm.rank(), seed);
          comm.allReduce(CommBuffer.of(inPlace), CommBuffer.of(inPlace), COUNT, t, op);
          assertArrayEquals(recv.array(), inPlace.array(), t + " " + op + " in place");
          seed++;
        }
      }
      return results;
    });
    List<List<byte[]>> ranks = Ranks.values(out);
    long seed = 1;
    int k = 0;
    for (PairType t : PairType.values()) {
      for (LocOp op : LocOp.values()) {
        byte[] want = reference(t, op, n, seed++);
        for (int r = 0; r < n; r++) {
          assertArrayEquals(want, ranks.get(r).get(k), backend + " " + n + " ranks, rank " + r + ": " + t + " " + op);
        }
        k++;
      }
    }
  }

  @ParameterizedTest(name = "{0} {1} ranks")
  @MethodSource("backends")
  void tiesGoToTheLowestIndexOnWhicheverRankItIs(String backend, int n, IntFunction<String> hosts) {
    List<long[]> got = Ranks.values(Ranks.run(n, Ranks.confFor(backend), hosts, comm -> {
      // every rank holds 7.0; the lowest index (2) is on the last rank; MINLOC: -0.0 on rank 0 ties +0.0 elsewhere
      ByteBuffer b = ByteBuffer.allocate(32).order(ByteOrder.nativeOrder());
      int r = comm.rank();
      b.putDouble(0, 7.0).putLong(8, r == n - 1 ? 2 : 10 + r);
      b.putDouble(16, r == 0 ? -0.0 : 0.0).putLong(24, 50 - r);
      ByteBuffer max = ByteBuffer.allocate(16);
      comm.allReduce(CommBuffer.of(b.duplicate().limit(16)), CommBuffer.of(max), 1, PairType.FLOAT64_INT64, LocOp.MAXLOC);
      ByteBuffer min = ByteBuffer.allocate(16);
      comm.allReduce(CommBuffer.of(b.duplicate().position(16)), CommBuffer.of(min), 1, PairType.FLOAT64_INT64,
          LocOp.MINLOC);
      max.order(ByteOrder.nativeOrder());
      min.order(ByteOrder.nativeOrder());
      return new long[] {max.getLong(8), Double.doubleToRawLongBits(max.getDouble(0)), min.getLong(8),
          Double.doubleToRawLongBits(min.getDouble(0))};
    }));
    for (long[] g : got) {
      assertEquals(2, g[0]);
      assertEquals(Double.doubleToRawLongBits(7.0), g[1]);
      // -0.0 and +0.0 tie: the lowest index (50 - (n-1), on the last rank) wins, and its value bits come with it
      assertEquals(50 - (n - 1), g[2]);
      assertEquals(Double.doubleToRawLongBits(n == 1 ? -0.0 : 0.0), g[3]);
    }
  }

  interface Call {
    void run(Communicator comm);
  }

  /** {@code bad} fails on every rank with a message containing {@code what}; then the group still reduces. */
  private static List<CollectiveException> expectAllFail(String backend, int n, IntFunction<String> hosts, Call bad,
      String what) {
    List<CollectiveException> errors = Ranks.values(Ranks.run(n, Ranks.confFor(backend), hosts, comm -> {
      CollectiveException seen = null;
      try {
        bad.run(comm);
      } catch (CollectiveException e) {
        seen = e;
      }
      assertNotNull(seen, "rank " + comm.rank() + " did not fail");
      ByteBuffer p = ByteBuffer.allocate(8).order(ByteOrder.nativeOrder()).putInt(0, comm.rank()).putInt(4, comm.rank());
      comm.allReduce(CommBuffer.of(p), CommBuffer.of(p), 1, PairType.INT32_INT32, LocOp.MAXLOC);
      assertEquals(n - 1, p.getInt(4));
      return seen;
    }));
    for (int r = 0; r < n; r++) {
      assertEquals(r, errors.get(r).rank());
      assertEquals(dev.gpucoll.api.Collective.ALL_REDUCE, errors.get(r).collective());
      assertTrue(errors.get(r).getMessage().startsWith("rank " + r + ", allReduce: "), errors.get(r).getMessage());
      assertTrue(errors.get(r).getMessage().contains(what), errors.get(r).getMessage());
    }
    return errors;
  }

  @ParameterizedTest(name = "{0} {1} ranks")
  @MethodSource("backends")
  void nanIsRefusedOnEveryRankNamingWhere(String backend, int n, IntFunction<String> hosts) {
    expectAllFail(backend, n, hosts, comm -> {
      ByteBuffer b = ByteBuffer.allocate(16).order(ByteOrder.nativeOrder());
      b.putFloat(0, 1f).putInt(4, 0).putFloat(8, comm.rank() == 1 ? Float.NaN : 3f).putInt(12, 7);
      comm.allReduce(CommBuffer.of(b), CommBuffer.of(b), 2, PairType.FLOAT32_INT32, LocOp.MINLOC);
    }, "MINLOC over FLOAT32_INT32: rank 1's pair 1 has a NaN value (index 7); MINLOC refuses NaN values");
  }

  @ParameterizedTest(name = "{0} {1} ranks")
  @MethodSource("backends")
  void aBufferThatIsNotBytesFailsOnEveryRank(String backend, int n, IntFunction<String> hosts) {
    expectAllFail(backend, n, hosts, comm -> {
      CommBuffer b = comm.rank() == 2 ? CommBuffer.of(new double[2]) : CommBuffer.of(ByteBuffer.allocate(16));
      comm.allReduce(b, b, 1, PairType.FLOAT64_INT32, LocOp.MAXLOC);
    }, "send buffer is a HeapDoubleBuffer; MAXLOC/MINLOC pairs travel in a ByteBuffer");
  }

  @ParameterizedTest(name = "{0} {1} ranks")
  @MethodSource("backends")
  void aShortBufferFailsOnEveryRank(String backend, int n, IntFunction<String> hosts) {
    expectAllFail(backend, n, hosts, comm -> {
      ByteBuffer send = ByteBuffer.allocate(32);
      ByteBuffer recv = ByteBuffer.allocate(comm.rank() == 0 ? 24 : 32);
      comm.allReduce(CommBuffer.of(send), CommBuffer.of(recv), 2, PairType.INT64_INT32, LocOp.MAXLOC);
    }, "recv buffer holds 24 bytes, the call needs 32");
  }

  @ParameterizedTest(name = "{0} {1} ranks")
  @MethodSource("backends")
  void aPairCallMeetingAPlainOneIsAMismatch(String backend, int n, IntFunction<String> hosts) {
    List<CollectiveException> errors = expectAllFail(backend, n, hosts, comm -> {
      if (comm.rank() == 1) {
        comm.allReduce(new long[2], ReduceOp.MAX);
      } else {
        ByteBuffer b = ByteBuffer.allocate(16);
        comm.allReduce(CommBuffer.of(b), CommBuffer.of(b), 1, PairType.INT64_INT64, LocOp.MAXLOC);
      }
    }, "INT64_INT64");
    for (CollectiveException e : errors) {
      assertInstanceOf(CollectiveMismatchException.class, e);
      assertTrue(e.getMessage().contains("MAXLOC") && e.getMessage().contains("INT64, MAX"), e.getMessage());
    }
  }
}
