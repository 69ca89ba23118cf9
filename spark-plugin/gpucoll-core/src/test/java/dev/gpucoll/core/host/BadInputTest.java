package dev.gpucoll.core.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.CollectiveMismatchException;
import dev.gpucoll.api.CollectiveTimeoutException;
import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.InvalidArgumentException;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.core.config.GpuCollConf;
import dev.gpucoll.core.spi.RefusingCommunicator;
import java.util.List;
import java.util.function.IntFunction;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Each bad input fails on every rank with an exception naming rank and collective,
 * within the timeout, never a hang; after an argument error or mismatch the group still works.
 * Runs on the shared-memory backend, across hosts on UCX, and on the relay.
 */
class BadInputTest {
  static final int N = 3;

  static Stream<Arguments> backends() {
    IntFunction<String> oneHost = r -> "localhost";
    IntFunction<String> manyHosts = r -> "host" + r;
    return Stream.of(Arguments.of("host-shm", oneHost), Arguments.of("host-ucx", manyHosts),
        Arguments.of("host-relay", manyHosts));
  }

  interface Call {
    void run(Communicator comm);
  }

  /** Runs {@code bad} on every rank, expects every rank to fail, then checks the group still works. */
  private static List<Throwable> expectAllFail(IntFunction<String> hosts, String backend, Call bad) {
    List<Ranks.Outcome<Throwable>> out = Ranks.run(N, Ranks.confFor(backend), hosts, comm -> {
      assertEquals(backend, comm.backend());
      Throwable seen = null;
      try {
        bad.run(comm);
      } catch (CollectiveException e) {
        seen = e;
      }
      assertNotNull(seen, "rank " + comm.rank() + " did not fail");
      // The same communicator still runs a correct call afterwards.
      int[] v = {1};
      comm.allReduce(v, ReduceOp.SUM);
      assertEquals(N, v[0]);
      return seen;
    });
    List<Throwable> errors = Ranks.values(out);
    for (int r = 0; r < N; r++) {
      CollectiveException e = (CollectiveException) errors.get(r);
      assertEquals(r, e.rank());
      assertTrue(e.getMessage().startsWith("rank " + r + ", "), e.getMessage());
    }
    return errors;
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("backends")
  void mismatchedCount(String backend, IntFunction<String> hosts) {
    List<Throwable> errors = expectAllFail(hosts, backend, comm -> {
      float[] a = new float[10];
      comm.allReduce(CommBuffer.of(a), CommBuffer.of(a), comm.rank() == 1 ? 9 : 10, DataType.FLOAT32,
          ReduceOp.SUM);
    });
    for (Throwable e : errors) {
      assertInstanceOf(CollectiveMismatchException.class, e);
      assertEquals(Collective.ALL_REDUCE, ((CollectiveException) e).collective());
      assertTrue(e.getMessage().contains("rank 1 called allReduce(count=9"), e.getMessage());
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("backends")
  void mismatchedType(String backend, IntFunction<String> hosts) {
    List<Throwable> errors = expectAllFail(hosts, backend, comm -> {
      int[] a = new int[4];
      DataType t = comm.rank() == 2 ? DataType.FLOAT32 : DataType.INT32;
      comm.allGather(CommBuffer.of(java.nio.ByteBuffer.allocate(16)), CommBuffer.of(java.nio.ByteBuffer.allocate(48)),
          4, t);
    });
    for (Throwable e : errors) {
      assertInstanceOf(CollectiveMismatchException.class, e);
      assertTrue(e.getMessage().contains("FLOAT32") && e.getMessage().contains("INT32"), e.getMessage());
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("backends")
  void mismatchedOp(String backend, IntFunction<String> hosts) {
    List<Throwable> errors = expectAllFail(hosts, backend,
        comm -> comm.allReduce(new double[3], comm.rank() == 0 ? ReduceOp.MAX : ReduceOp.MIN));
    for (Throwable e : errors) {
      assertInstanceOf(CollectiveMismatchException.class, e);
      assertTrue(e.getMessage().contains("MAX") && e.getMessage().contains("MIN"), e.getMessage());
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("backends")
  void mismatchedRoot(String backend, IntFunction<String> hosts) {
    List<Throwable> errors = expectAllFail(hosts, backend, comm -> {
      long[] a = new long[5];
      comm.broadcast(CommBuffer.of(a), CommBuffer.of(a), 5, DataType.INT64, comm.rank() == 0 ? 0 : 1);
    });
    for (Throwable e : errors) {
      assertInstanceOf(CollectiveMismatchException.class, e);
      assertTrue(e.getMessage().contains("root=0") && e.getMessage().contains("root=1"), e.getMessage());
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("backends")
  void differentCollectives(String backend, IntFunction<String> hosts) {
    List<Throwable> errors = expectAllFail(hosts, backend, comm -> {
      if (comm.rank() == 1) {
        comm.barrier();
      } else {
        comm.allReduce(new int[2], ReduceOp.SUM);
      }
    });
    for (Throwable e : errors) {
      assertInstanceOf(CollectiveMismatchException.class, e);
      assertTrue(e.getMessage().contains("barrier"), e.getMessage());
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("backends")
  void negativeCount(String backend, IntFunction<String> hosts) {
    List<Throwable> errors = expectAllFail(hosts, backend, comm -> {
      float[] a = new float[4];
      comm.allReduce(CommBuffer.of(a), CommBuffer.of(a), comm.rank() == 2 ? -1 : 4, DataType.FLOAT32,
          ReduceOp.SUM);
    });
    assertTrue(errors.get(2).getMessage().contains("count is negative: -1"), errors.get(2).getMessage());
    assertTrue(errors.get(0).getMessage().contains("rank 2 rejected its call: count is negative"),
        errors.get(0).getMessage());
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("backends")
  void recvBufferTooSmall(String backend, IntFunction<String> hosts) {
    List<Throwable> errors = expectAllFail(hosts, backend, comm -> {
      float[] send = new float[8];
      float[] recv = new float[comm.rank() == 1 ? 8 * N - 1 : 8 * N];
      comm.allGather(CommBuffer.of(send), CommBuffer.of(recv), 8, DataType.FLOAT32);
    });
    assertTrue(errors.get(1).getMessage().contains("rank 1, allGather: recv buffer holds 23 FLOAT32 elements, "
        + "the call needs 24"), errors.get(1).getMessage());
    assertTrue(errors.get(2).getMessage().contains("rank 1 rejected its call"), errors.get(2).getMessage());
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("backends")
  void sendBufferTooSmallAndWrongClass(String backend, IntFunction<String> hosts) {
    List<Throwable> errors = expectAllFail(hosts, backend, comm -> {
      CommBuffer send = comm.rank() == 0 ? CommBuffer.of(new float[N * 4]) : CommBuffer.of(new int[N * 4 - 1]);
      comm.allToAll(send, CommBuffer.of(new int[N * 4]), 4, DataType.INT32);
    });
    assertTrue(errors.get(0).getMessage().contains("send buffer is a FloatBuffer but INT32 needs a IntBuffer"),
        errors.get(0).getMessage());
    assertTrue(errors.get(1).getMessage().contains("send buffer holds 11 INT32 elements"), errors.get(1).getMessage());
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("backends")
  void deviceBufferOnHostBackend(String backend, IntFunction<String> hosts) {
    List<Throwable> errors = expectAllFail(hosts, backend, comm -> {
      CommBuffer b = comm.rank() == 0 ? CommBuffer.device(0x1000, 64) : CommBuffer.of(new float[16]);
      comm.allReduce(b, b, 16, DataType.FLOAT32, ReduceOp.SUM);
    });
    assertTrue(errors.get(0).getMessage().contains("device memory"), errors.get(0).getMessage());
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("backends")
  void badRootAndAllToAllvCounts(String backend, IntFunction<String> hosts) {
    expectAllFail(hosts, backend, comm -> comm.broadcast(CommBuffer.of(new int[1]), CommBuffer.of(new int[1]), 1,
        DataType.INT32, N));
    List<Throwable> errors = expectAllFail(hosts, backend, comm -> {
      long[] sc = {1, 1, 1};
      long[] rc = {1, 1, 1};
      if (comm.rank() == 2) {
        rc[0] = 2; // rank 0 sends 1 element to rank 2, rank 2 expects 2
      }
      comm.allToAllv(CommBuffer.of(new int[3]), sc, new long[] {0, 1, 2}, CommBuffer.of(new int[4]), rc,
          new long[] {0, 2, 3}, DataType.INT32);
    });
    for (Throwable e : errors) {
      assertInstanceOf(CollectiveMismatchException.class, e);
      assertTrue(e.getMessage().contains("rank 0 sends 1 elements to rank 2 but rank 2 expects 2"), e.getMessage());
    }
  }

  /** The rank whose own arguments are refused gets InvalidArgumentException; its peers are told which rank and why. */
  @ParameterizedTest(name = "{0}")
  @MethodSource("backends")
  void ownArgumentsRaiseInvalidArgument(String backend, IntFunction<String> hosts) {
    for (Throwable e : expectAllFail(hosts, backend, comm -> comm.broadcast(CommBuffer.of(new int[1]),
        CommBuffer.of(new int[1]), 1, DataType.INT32, N))) {
      assertInstanceOf(InvalidArgumentException.class, e);
      assertTrue(e.getMessage().contains("root " + N + " is not a rank"), e.getMessage());
    }
    List<Throwable> errors = expectAllFail(hosts, backend, comm -> {
      float[] send = new float[4];
      comm.allGather(CommBuffer.of(send), CommBuffer.of(new float[comm.rank() == 1 ? 5 : 4 * N]), 4,
          DataType.FLOAT32);
    });
    for (int r = 0; r < N; r++) {
      Throwable e = errors.get(r);
      if (r == 1) {
        assertInstanceOf(InvalidArgumentException.class, e);
      } else {
        assertEquals(CollectiveException.class, e.getClass(), e.getMessage());
        assertTrue(e.getMessage().contains("rank 1 rejected its call: recv buffer holds 5"), e.getMessage());
      }
    }
  }

  /**
   * A call its caller refused before making it (the Python package's own checks) reaches the peers as
   * that rank's refusal with its reason, whichever collective the peers called, MAXLOC / MINLOC too.
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("backends")
  void aCallerRefusalReachesThePeers(String backend, IntFunction<String> hosts) {
    String reason = "gpucoll: send is not contiguous";
    List<Call> calls = List.of(
        comm -> comm.allReduce(new float[4], ReduceOp.SUM),
        comm -> comm.allToAllv(CommBuffer.of(new int[N]), new long[] {1, 1, 1}, new long[] {0, 1, 2},
            CommBuffer.of(new int[N]), new long[] {1, 1, 1}, new long[] {0, 1, 2}, DataType.INT32),
        comm -> comm.broadcast(new long[2], 0),
        comm -> comm.allReduce(CommBuffer.of(java.nio.ByteBuffer.allocate(8)),
            CommBuffer.of(java.nio.ByteBuffer.allocate(8)), 1,
            dev.gpucoll.api.PairType.FLOAT32_INT32, dev.gpucoll.api.LocOp.MAXLOC));
    List<Collective> collectives = List.of(Collective.ALL_REDUCE, Collective.ALL_TO_ALLV, Collective.BROADCAST,
        Collective.ALL_REDUCE);
    for (int k = 0; k < calls.size(); k++) {
      Call call = calls.get(k);
      Collective c = collectives.get(k);
      boolean pairs = k == 3;
      List<Throwable> errors = expectAllFail(hosts, backend, comm -> {
        if (comm.rank() == 1) {
          ((RefusingCommunicator) comm).refuse(c, pairs, reason);
        } else {
          call.run(comm);
        }
      });
      for (int r = 0; r < N; r++) {
        String m = errors.get(r).getMessage();
        assertEquals(c, ((CollectiveException) errors.get(r)).collective(), m);
        assertTrue(m.contains(r == 1 ? reason : "rank 1 rejected its call: " + reason), m);
        assertTrue(!m.contains("called"), m);
      }
      assertInstanceOf(InvalidArgumentException.class, errors.get(1));
    }
  }

  /**
   * A zero count reads and writes nothing, so its displacement may point past the end of the
   * buffer (as in MPI): one extent rule on every backend and path.
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("backends")
  void allToAllvZeroCountTakesAnyDisplacement(String backend, IntFunction<String> hosts) {
    Ranks.values(Ranks.run(N, Ranks.conf(), hosts, comm -> {
      int me = comm.rank();
      int skipTo = (me + 1) % N; // sends nothing to the next rank
      int skipFrom = (me + N - 1) % N; // so gets nothing from the previous one
      long[] sc = new long[N];
      long[] sd = new long[N];
      long[] rc = new long[N];
      long[] rd = new long[N];
      int[] send = new int[N];
      for (int q = 0; q < N; q++) {
        sc[q] = q == skipTo ? 0 : 1;
        sd[q] = q == skipTo ? (q % 2 == 0 ? 5_000_000_000L : N + 7) : q;
        send[q] = me * 100 + q;
        rc[q] = q == skipFrom ? 0 : 1;
        rd[q] = q == skipFrom ? N : q;
      }
      int[] recv = new int[N];
      java.util.Arrays.fill(recv, -1);
      comm.allToAllv(CommBuffer.of(send), sc, sd, CommBuffer.of(recv), rc, rd, DataType.INT32);
      for (int p = 0; p < N; p++) {
        assertEquals(p == skipFrom ? -1 : p * 100 + me, recv[p], "rank " + me + " from " + p);
      }
      return null;
    }));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("backends")
  void avgOnIntegersTruncatesTowardZero(String backend, IntFunction<String> hosts) {
    Ranks.values(Ranks.run(N, Ranks.confFor(backend), hosts, comm -> {
      int[] v = {comm.rank() == 0 ? -4 : 0, 5};
      comm.allReduce(v, ReduceOp.AVG);
      assertEquals(-1, v[0]); // -4/3 = -1.33 -> -1
      assertEquals(5, v[1]);
      return null;
    }));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("backends")
  void closedCommunicator(String backend, IntFunction<String> hosts) {
    List<Ranks.Outcome<String>> out = Ranks.run(N, Ranks.confFor(backend, "timeout", "3s"), hosts, comm -> {
      if (comm.rank() == 1) {
        comm.close();
        try {
          comm.allReduce(new float[2], ReduceOp.SUM);
        } catch (CollectiveException e) {
          return e.getMessage();
        }
        return "no error";
      }
      long t0 = System.nanoTime();
      try {
        comm.allReduce(new float[2], ReduceOp.SUM);
        return "no error";
      } catch (CollectiveException e) {
        assertTrue(System.nanoTime() - t0 < 10_000_000_000L);
        return e.getMessage();
      }
    });
    List<String> messages = Ranks.values(out);
    assertEquals("rank 1, allReduce: the communicator is closed", messages.get(1));
    for (int r : new int[] {0, 2}) {
      assertTrue(messages.get(r).startsWith("rank " + r + ", allReduce: ") && messages.get(r).contains("rank 1 "),
          messages.get(r));
    }
  }

  /** close() from another thread while a call waits: the call fails promptly, nothing is unmapped under it. */
  @org.junit.jupiter.api.Test
  void closeFromAnotherThreadWhileWaiting() {
    List<Ranks.Outcome<String>> out = Ranks.run(2, Ranks.conf("timeout", "30s"), comm -> {
      if (comm.rank() == 1) {
        Thread.sleep(1500); // never joins the call below
        return "idle";
      }
      Thread closer = new Thread(() -> {
        try {
          Thread.sleep(300);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        comm.close();
      });
      closer.start();
      long t0 = System.nanoTime();
      try {
        comm.allReduce(new float[1000], ReduceOp.SUM);
        return "no error";
      } catch (CollectiveException e) {
        assertTrue(System.nanoTime() - t0 < 5_000_000_000L, "took too long");
        closer.join();
        assertTrue(comm.isClosed());
        return e.getMessage();
      }
    });
    String msg = out.get(0).get();
    assertTrue(msg.startsWith("rank 0, allReduce: the communicator was closed while this rank waited for rank 1"),
        msg);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("backends")
  void rankThatNeverArrives(String backend, IntFunction<String> hosts) {
    GpuCollConf conf = Ranks.confFor(backend, "timeout", "2s");
    List<Ranks.Outcome<Throwable>> out = Ranks.run(N, conf, hosts, comm -> {
      if (comm.rank() == 2) {
        Thread.sleep(4000); // "never" arrives within the others' timeout
        return null;
      }
      long t0 = System.nanoTime();
      try {
        comm.allReduce(new float[64], ReduceOp.SUM);
        return null;
      } catch (CollectiveTimeoutException e) {
        long waited = System.nanoTime() - t0;
        assertTrue(waited >= 1_900_000_000L && waited < 6_000_000_000L, "waited " + waited);
        return e;
      }
    });
    for (int r = 0; r < 2; r++) {
      CollectiveTimeoutException e = (CollectiveTimeoutException) out.get(r).get();
      assertNotNull(e, "rank " + r + " did not time out");
      assertEquals(List.of(2), e.missingRanks());
      assertEquals(Collective.ALL_REDUCE, e.collective());
      assertTrue(e.getMessage().contains("rank 2") || e.getMessage().contains("[2]"), e.getMessage());
    }
  }
}
