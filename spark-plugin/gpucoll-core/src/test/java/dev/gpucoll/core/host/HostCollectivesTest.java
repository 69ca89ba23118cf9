package dev.gpucoll.core.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.core.config.GpuCollConf;
import dev.gpucoll.core.report.RankReport;
import dev.gpucoll.core.report.ReportingCommunicator;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Every collective of the shared-memory backend with ranks as threads, against a reference. */
class HostCollectivesTest {
  static final int[] SMALL_COUNTS = {1, 7, 997};

  static int mib(DataType t) {
    return (1 << 20) / t.byteSize();
  }

  /** Every type x op at sizes 1, odd, prime and 1 MiB; results checked and bit-identical on all ranks. */
  @ParameterizedTest
  @ValueSource(ints = {2, 3, 4})
  void allReduceEveryTypeAndOp(int n) {
    List<List<Object>> results = Ranks.values(Ranks.run(n, Ranks.conf(), comm -> {
      List<Object> out = new ArrayList<>();
      int seed = 1;
      for (DataType t : DataType.values()) {
        for (ReduceOp op : ReduceOp.values()) {
          List<Integer> counts = new ArrayList<>(List.of(1, 7, 997));
          if (n < 4 || op == ReduceOp.SUM) {
            counts.add(mib(t));
          }
          for (int count : counts) {
            seed++;
            Object a = TypedData.alloc(t, count);
            TypedData.fill(t, op, seed, comm.rank(), a, 0, count);
            CommBuffer b = TypedData.buf(a);
            comm.allReduce(b, b, count, t, op);
            TypedData.checkReduced(t, op, seed, n, a, 0, 0, count,
                "rank " + comm.rank() + " allReduce " + t + " " + op + " count " + count);
            out.add(a);
          }
        }
      }
      return out;
    }));
    assertBitIdentical(results);
  }

  /** The large size: 64 MiB, a few combinations, through the chunked two-shot path. */
  @ParameterizedTest
  @ValueSource(ints = {2, 3})
  void allReduce64MiB(int n) {
    DataType t = n == 2 ? DataType.FLOAT32 : DataType.BFLOAT16;
    ReduceOp op = n == 2 ? ReduceOp.SUM : ReduceOp.AVG;
    int count = (64 << 20) / t.byteSize();
    List<Object> results = Ranks.values(Ranks.run(n, Ranks.conf(), comm -> {
      Object send = TypedData.alloc(t, count);
      Object recv = TypedData.alloc(t, count);
      TypedData.fill(t, op, 77, comm.rank(), send, 0, count);
      comm.allReduce(TypedData.buf(send), TypedData.buf(recv), count, t, op);
      TypedData.checkReduced(t, op, 77, n, recv, 0, 0, count, "64 MiB " + t + " " + op);
      assertEquals(List.of("allReduce/host-twoshot=1"), comm.observedPaths());
      return recv;
    }));
    assertBitIdentical(List.of(results));
  }

  /** One-shot and two-shot reduce in the same rank order, so forcing either gives the same bits. */
  @ParameterizedTest
  @ValueSource(strings = {"host-oneshot", "host-twoshot"})
  void forcedAlgorithmsAgreeBitForBit(String algorithm) {
    int n = 3;
    int[] counts = {1, 5000, 300_000};
    List<List<Object>> forced = Ranks.values(Ranks.run(n, Ranks.conf("algorithm", algorithm),
        comm -> runSums(comm, counts)));
    List<List<Object>> auto = Ranks.values(Ranks.run(n, Ranks.conf(), comm -> runSums(comm, counts)));
    for (int r = 0; r < n; r++) {
      assertTrue(Objects.deepEquals(forced.get(r).toArray(), auto.get(r).toArray()), "rank " + r);
    }
  }

  private static List<Object> runSums(Communicator comm, int[] counts) {
    List<Object> out = new ArrayList<>();
    for (int count : counts) {
      Object a = TypedData.alloc(DataType.FLOAT32, count);
      TypedData.fill(DataType.FLOAT32, ReduceOp.SUM, count, comm.rank(), a, 0, count);
      comm.allReduce(TypedData.buf(a), TypedData.buf(a), count, DataType.FLOAT32, ReduceOp.SUM);
      TypedData.checkReduced(DataType.FLOAT32, ReduceOp.SUM, count, comm.size(), a, 0, 0, count, "sum");
      out.add(a);
    }
    return out;
  }

  /** Many back-to-back calls reuse both buffer halves; a stale half would show as a wrong value. */
  @ParameterizedTest
  @ValueSource(ints = {2, 3, 4})
  void epochReuseOverManyCalls(int n) {
    Ranks.values(Ranks.run(n, Ranks.conf(), comm -> {
      long[] v = new long[3];
      for (int k = 0; k < 3000; k++) {
        for (int i = 0; i < v.length; i++) {
          v[i] = (long) k * 1000 + comm.rank() * 10 + i;
        }
        switch (k % 4) {
          case 0, 1 -> {
            // 1 element rides in the step header, 3 go through the bulk region: both share the halves
            int count = k % 4 == 0 ? 1 : 3;
            comm.allReduce(CommBuffer.of(v), CommBuffer.of(v), count, DataType.INT64, ReduceOp.SUM);
            for (int i = 0; i < count; i++) {
              long want = 0;
              for (int r = 0; r < n; r++) {
                want += (long) k * 1000 + r * 10 + i;
              }
              assertEquals(want, v[i], "call " + k);
            }
          }
          case 2 -> {
            long[] all = new long[3 * n];
            comm.allGather(CommBuffer.of(v), CommBuffer.of(all), 3, DataType.INT64);
            for (int r = 0; r < n; r++) {
              assertEquals((long) k * 1000 + r * 10 + 2, all[r * 3 + 2], "call " + k);
            }
          }
          default -> comm.barrier();
        }
      }
      return null;
    }));
  }

  @ParameterizedTest
  @ValueSource(ints = {2, 3, 4})
  void allGatherBroadcastAllToAllReduceScatter(int n) {
    List<List<Object>> results = Ranks.values(Ranks.run(n, Ranks.conf(), comm -> {
      List<Object> out = new ArrayList<>();
      int me = comm.rank();
      int seed = 1000;
      for (DataType t : DataType.values()) {
        for (int count : new int[] {1, 7, 997, mib(t) / n + 3}) {
          seed++;
          String ctx = "rank " + me + " " + t + " count " + count;
          // allGather
          Object send = TypedData.alloc(t, count);
          TypedData.fill(t, ReduceOp.SUM, seed, me, send, 0, count);
          Object recv = TypedData.alloc(t, count * n);
          comm.allGather(TypedData.buf(send), TypedData.buf(recv), count, t);
          for (int p = 0; p < n; p++) {
            TypedData.checkCopied(t, seed, p, recv, p * count, 0, count, ctx + " allGather");
          }
          out.add(recv);
          // broadcast from the last rank, in place
          int root = n - 1;
          Object b = TypedData.alloc(t, count);
          if (me == root) {
            TypedData.fill(t, ReduceOp.SUM, seed, root, b, 0, count);
          }
          comm.broadcast(TypedData.buf(b), TypedData.buf(b), count, t, root);
          TypedData.checkCopied(t, seed, root, b, 0, 0, count, ctx + " broadcast");
          // allToAll: block q of rank p's send is elements [q*count, (q+1)*count) of p's data
          Object big = TypedData.alloc(t, count * n);
          TypedData.fill(t, ReduceOp.SUM, seed, me, big, 0, count * n);
          Object got = TypedData.alloc(t, count * n);
          comm.allToAll(TypedData.buf(big), TypedData.buf(got), count, t);
          for (int p = 0; p < n; p++) {
            TypedData.checkCopied(t, seed, p, got, p * count, (long) me * count, count, ctx + " allToAll");
          }
          // reduceScatter
          ReduceOp op = t.isFloatingPoint() ? ReduceOp.SUM : ReduceOp.MAX;
          Object rsIn = TypedData.alloc(t, count * n);
          TypedData.fill(t, op, seed, me, rsIn, 0, count * n);
          Object rsOut = TypedData.alloc(t, count);
          comm.reduceScatter(TypedData.buf(rsIn), TypedData.buf(rsOut), count, t, op);
          TypedData.checkReduced(t, op, seed, n, rsOut, 0, (long) me * count, count, ctx + " reduceScatter");
        }
      }
      comm.barrier();
      return out;
    }));
    assertBitIdentical(results); // the allGather results
  }

  /** allToAllv with uneven counts (some zero) and displacements with gaps. */
  @ParameterizedTest
  @ValueSource(ints = {2, 3, 4})
  void allToAllvUnevenCounts(int n) {
    for (int scale : new int[] {1, 100_000}) {
      Ranks.values(Ranks.run(n, Ranks.conf(), comm -> {
        int me = comm.rank();
        DataType t = DataType.INT32;
        long[] sc = new long[n];
        long[] sd = new long[n];
        long[] rc = new long[n];
        long[] rd = new long[n];
        long at = 0;
        for (int q = 0; q < n; q++) {
          sc[q] = amount(me, q, scale);
          sd[q] = at;
          at += sc[q] + 2;
        }
        int sendLen = (int) at;
        at = 0;
        for (int p = 0; p < n; p++) {
          rc[p] = amount(p, me, scale);
          rd[p] = at + 1;
          at += rc[p] + 1;
        }
        int[] send = new int[sendLen];
        for (int q = 0; q < n; q++) {
          for (int i = 0; i < sc[q]; i++) {
            send[(int) sd[q] + i] = me * 1_000_000 + q * 10_000 + i % 10_000;
          }
        }
        int[] recv = new int[(int) at + 1];
        comm.allToAllv(CommBuffer.of(send), sc, sd, CommBuffer.of(recv), rc, rd, t);
        for (int p = 0; p < n; p++) {
          for (int i = 0; i < rc[p]; i++) {
            assertEquals(p * 1_000_000 + me * 10_000 + i % 10_000, recv[(int) rd[p] + i],
                "rank " + me + " from " + p + " element " + i);
          }
        }
        return null;
      }));
    }
  }

  private static int amount(int from, int to, int scale) {
    return ((from * 7 + to * 3) % 4) * scale + (from == to ? 1 : 0);
  }

  /** Direct ByteBuffers and buffers that start at a position, not at 0. */
  @ParameterizedTest
  @ValueSource(ints = {2, 3})
  void directAndOffsetBuffers(int n) {
    Ranks.values(Ranks.run(n, Ranks.conf(), comm -> {
      int count = 1001;
      ByteBuffer direct = ByteBuffer.allocateDirect(8 + count * 8).order(ByteOrder.nativeOrder());
      for (int i = 0; i < count; i++) {
        direct.putDouble(8 + i * 8, comm.rank() + i);
      }
      direct.position(8);
      comm.allReduce(CommBuffer.of(direct), CommBuffer.of(direct), count, DataType.FLOAT64, ReduceOp.MAX);
      for (int i = 0; i < count; i++) {
        assertEquals(n - 1 + i, direct.getDouble(8 + i * 8), 0.0);
      }
      float[] arr = new float[count + 5];
      java.nio.FloatBuffer fb = java.nio.FloatBuffer.wrap(arr, 5, count).slice();
      for (int i = 0; i < count; i++) {
        arr[5 + i] = 1;
      }
      comm.allReduce(CommBuffer.of(fb), CommBuffer.of(fb), count, DataType.FLOAT32, ReduceOp.SUM);
      assertEquals(0f, arr[4]);
      assertEquals(n, arr[5]);
      assertEquals(n, arr[5 + count - 1]);
      return null;
    }));
  }

  @ParameterizedTest
  @ValueSource(ints = {3, 4})
  void splitFormsWorkingSubgroups(int n) {
    Ranks.values(Ranks.run(n, Ranks.conf(), comm -> {
      int me = comm.rank();
      int color = me == 0 ? -1 : me % 2;
      try (Communicator sub = comm.split(color, -me)) {
        if (color < 0) {
          assertNull(sub);
        } else {
          List<Integer> members = new ArrayList<>();
          for (int r = 1; r < n; r++) {
            if (r % 2 == color) {
              members.add(r);
            }
          }
          assertEquals(members.size(), sub.size());
          // key = -rank orders the subgroup by descending parent rank
          assertEquals(members.size() - 1 - members.indexOf(me), sub.rank());
          int[] v = {me};
          sub.allReduce(v, ReduceOp.SUM);
          assertEquals(members.stream().mapToInt(Integer::intValue).sum(), v[0]);
          assertEquals("host-shm", sub.backend());
        }
      }
      // the parent still works after the split
      int[] all = {1};
      comm.allReduce(all, ReduceOp.SUM);
      assertEquals(n, all[0]);
      return null;
    }));
  }

  @ParameterizedTest
  @ValueSource(ints = {2})
  void listenersObservedPathsExplainAndReport(int n) {
    Ranks.values(Ranks.run(n, Ranks.conf(), comm -> {
      List<String> seen = new ArrayList<>();
      AtomicLong bytes = new AtomicLong();
      comm.addListener((c, algo, b, nanos) -> {
        seen.add(c.apiName() + ":" + algo);
        bytes.addAndGet(b);
        assertTrue(nanos > 0);
      });
      comm.allReduce(new float[4], ReduceOp.SUM);
      comm.allReduce(new float[1 << 20], ReduceOp.SUM);
      comm.barrier();
      assertEquals(List.of("allReduce:host-ll-oneshot", "allReduce:host-twoshot", "barrier:host-flags"), seen);
      assertEquals(16 + (4L << 20), bytes.get());
      assertEquals(List.of("allReduce/host-ll-oneshot=1", "allReduce/host-twoshot=1", "barrier/host-flags=1"),
          comm.observedPaths());
      assertEquals("host-ll-oneshot", comm.explain(Collective.ALL_REDUCE, 16).algorithm());
      assertEquals("host-oneshot", comm.explain(Collective.ALL_REDUCE, 65536).algorithm());
      assertEquals("host-twoshot", comm.explain(Collective.ALL_REDUCE, 65537).algorithm());
      assertEquals("host-bulk", comm.explain(Collective.ALL_TO_ALL, 1 << 20).algorithm());
      RankReport report = ((ReportingCommunicator) comm).report();
      assertEquals("host-shm", report.backend());
      assertEquals("local-threads", report.rendezvous());
      assertEquals(1L, report.observed().get("allReduce/host-twoshot"));
      assertTrue(report.toJson().contains("\"backend\":\"host-shm\""));
      assertTrue(report.findings().get(0).contains("unlinked"));
      return null;
    }));
  }

  @ParameterizedTest
  @ValueSource(ints = {2, 3})
  void segmentIsUnlinkedOnceMapped(int n) {
    String dir = System.getProperty("java.io.tmpdir") + "/gpucoll-shm-test-" + System.nanoTime();
    new java.io.File(dir).mkdirs();
    GpuCollConf conf = Ranks.conf("host.shmDir", dir);
    Ranks.values(Ranks.run(n, conf, comm -> {
      comm.barrier(); // every rank has mapped by now
      String[] left = new java.io.File(dir).list();
      assertEquals(0, left.length, "files left in " + dir + ": " + List.of(left));
      return null;
    }));
    new java.io.File(dir).delete();
  }

  static void assertBitIdentical(List<?> perRank) {
    for (int r = 1; r < perRank.size(); r++) {
      assertTrue(Objects.deepEquals(toArray(perRank.get(0)), toArray(perRank.get(r))),
          "rank " + r + " differs from rank 0");
    }
  }

  private static Object toArray(Object o) {
    return o instanceof List<?> l ? l.toArray() : o;
  }
}
