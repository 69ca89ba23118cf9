package dev.gpucoll.core.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.CollectiveMismatchException;
import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.core.config.GpuCollConf;
import dev.gpucoll.core.report.RankReport;
import dev.gpucoll.core.report.ReportingCommunicator;
import dev.gpucoll.core.rendezvous.LocalRendezvous;
import dev.gpucoll.core.spi.GroupContext;
import dev.gpucoll.core.spi.MemberInfo;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntFunction;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.Test;

/**
 * Groups across hosts on {@link HostUcxCommunicator}: the results equal the one-host shared-memory
 * path bit for bit (reductions in rank order), bad input and mismatched calls fail every rank
 * alike, a dead peer ends the waits. Ranks are threads; their "hosts" are names, each host's ranks
 * share a segment, and the leaders talk over real UCX (loopback) or the in-process fake; the tests
 * of real UCX need it in this JVM ({@link NeedsUcx}).
 */
class HostUcxTest {
  private static final AtomicInteger GROUPS = new AtomicInteger();
  /** 5 ranks on 3 hosts, interleaved: node-0 {0, 3}, node-1 {1, 4}, node-2 {2}. */
  static final int N = 5;
  static final IntFunction<String> INTERLEAVED = r -> "node-" + (r % 3);

  private static GpuCollConf conf(String... kv) {
    return Ranks.conf(kv);
  }

  /** Runs body on n rank threads, each forming its communicator through the host backend over {@code transports}. */
  static <T> List<Ranks.Outcome<T>> run(int n, GpuCollConf conf, IntFunction<String> hostOf,
      IntFunction<PeerTransport> transports, Ranks.Body<T> body) {
    String group = "ucx-test-" + GROUPS.incrementAndGet();
    ExecutorService pool = Executors.newFixedThreadPool(n);
    try {
      List<Future<T>> futures = new ArrayList<>();
      for (int r = 0; r < n; r++) {
        int rank = r;
        futures.add(pool.submit(() -> {
          try (LocalRendezvous rv = LocalRendezvous.join(group, rank, n)) {
            List<MemberInfo> members = new ArrayList<>();
            for (int q = 0; q < n; q++) {
              members.add(new MemberInfo(q, hostOf.apply(q), "p" + q, Map.of()));
            }
            try (Communicator comm = HostBackend.create(new GroupContext(rv, members, conf), transports)) {
              return body.run(comm);
            }
          }
        }));
      }
      List<Ranks.Outcome<T>> out = new ArrayList<>();
      for (Future<T> f : futures) {
        try {
          out.add(new Ranks.Outcome<>(f.get(120, TimeUnit.SECONDS), null));
        } catch (java.util.concurrent.ExecutionException e) {
          out.add(new Ranks.Outcome<>(null, e.getCause()));
        } catch (Exception e) {
          throw new AssertionError("a rank hung", e);
        }
      }
      return out;
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void overUcxEveryCollectiveEqualsTheOneHostPathBitForBit() {
    NeedsUcx.assume();
    List<List<Object>> shm = Ranks.values(Ranks.run(N, conf(), c -> everything(c, N)));
    List<List<Object>> ucx = Ranks.values(run(N, conf(), INTERLEAVED, UcxTransport::open, comm -> {
      assertEquals("host-ucx", comm.backend());
      List<Object> out = everything(comm, N);
      RankReport report = ((ReportingCommunicator) comm).report();
      assertEquals("host-ucx", report.backend());
      assertTrue(report.observed().get("allReduce/host-ucx-oneshot") > 0, report.observed().toString());
      assertTrue(report.observed().get("allReduce/host-ucx-twoshot") > 0, report.observed().toString());
      assertTrue(report.findings().get(0).contains("3 hosts"), report.findings().toString());
      return out;
    }));
    for (int r = 0; r < N; r++) {
      assertTrue(Objects.deepEquals(shm.get(r).toArray(), ucx.get(r).toArray()), "rank " + r);
    }
  }

  @Test
  void theFakeTransportGivesTheSameResults() {
    List<List<Object>> shm = Ranks.values(Ranks.run(N, conf(), c -> everything(c, N)));
    List<List<Object>> fake = Ranks.values(run(N, conf(), INTERLEAVED, LoopbackTransport::new, c -> everything(c, N)));
    for (int r = 0; r < N; r++) {
      assertTrue(Objects.deepEquals(shm.get(r).toArray(), fake.get(r).toArray()), "rank " + r);
    }
  }

  /**
   * Across hosts, auto takes UCX where every rank can use it; elsewhere (no libucx0) the group relays
   * and its WARN says why and what to install. Runs either way (scripts/ci/without-ucx.sh hides UCX).
   */
  @Test
  void acrossHostsAutoTakesUcxOrRelaysSayingWhyAndWhatToInstall() {
    List<LogRecord> records = new CopyOnWriteArrayList<>();
    Handler capture = new Handler() {
      @Override
      public void publish(LogRecord r) {
        records.add(r);
      }

      @Override
      public void flush() {}

      @Override
      public void close() {}
    };
    Logger log = Logger.getLogger(HostBackend.class.getName());
    log.addHandler(capture);
    try {
      List<String> backends = Ranks.values(Ranks.run(3, conf(), r -> "host" + r, comm -> {
        int[] v = {1};
        comm.allReduce(v, ReduceOp.SUM);
        assertEquals(3, v[0]);
        return comm.backend();
      }));
      List<String> warnings = records.stream().filter(r -> r.getLevel() == Level.WARNING)
          .map(LogRecord::getMessage).toList();
      if (UcxTransport.unavailableReason().isEmpty()) {
        assertEquals(List.of("host-ucx", "host-ucx", "host-ucx"), backends);
        assertEquals(List.of(), warnings);
      } else {
        assertEquals(List.of("host-relay", "host-relay", "host-relay"), backends);
        assertEquals(1, warnings.size(), warnings.toString());
        String w = warnings.get(0);
        assertTrue(w.contains("relays every payload") && w.contains("UCX cannot be used in this process (")
            && w.contains("apt-get install libucx0"), w);
      }
    } finally {
      log.removeHandler(capture);
    }
  }

  /**
   * Hosts of consecutive ranks ({0}, {1, 2}, {3, 4}): their inputs are gathered and received in
   * place, and the one-rank host sends and receives its allToAll blocks in place.
   */
  @Test
  void hostsOfConsecutiveRanksGiveTheSameResults() {
    List<List<Object>> shm = Ranks.values(Ranks.run(N, conf(), c -> everything(c, N)));
    List<List<Object>> fake = Ranks.values(run(N, conf(), r -> r == 0 ? "node-a" : r < 3 ? "node-b" : "node-c",
        LoopbackTransport::new, c -> {
          // Above the size that rides in the header's message: received in place as a message of its own.
          int count = 20_000;
          float[] mine = new float[count * N];
          for (int i = 0; i < mine.length; i++) {
            mine[i] = c.rank() * 1e6f + i;
          }
          float[] all = new float[count * N];
          c.allGather(CommBuffer.of(mine), CommBuffer.of(all), count, DataType.FLOAT32);
          for (int p = 0; p < N; p++) {
            assertEquals(p * 1e6f + count - 1, all[p * count + count - 1]);
          }
          c.allToAll(CommBuffer.of(mine), CommBuffer.of(all), count, DataType.FLOAT32);
          for (int p = 0; p < N; p++) {
            assertEquals(p * 1e6f + c.rank() * count + 7, all[p * count + 7]);
          }
          // Two-shot, each host's slice in several chunks, with a one-rank host among them.
          float[] sum = new float[count * N];
          for (int i = 0; i < sum.length; i++) {
            mine[i] = (c.rank() + 1) * (i % 7);
          }
          c.allReduce(CommBuffer.of(mine), CommBuffer.of(sum), sum.length, DataType.FLOAT32, ReduceOp.SUM);
          for (int i = 0; i < sum.length; i++) {
            assertEquals(15 * (i % 7), sum[i], "element " + i);
          }
          return everything(c, N);
        }));
    for (int r = 0; r < N; r++) {
      assertTrue(Objects.deepEquals(shm.get(r).toArray(), fake.get(r).toArray()), "rank " + r);
    }
  }

  /**
   * 2 hosts from {@link HostRoute#HALVING_MIN_BYTES} up: the leaders halve (each half one message
   * per phase). Every type and op, odd counts at and above the limit, in place, with one rank per
   * host and with hosts of several interleaved ranks: equal to the one-host path bit for bit, and
   * the calls took the halving path (the report counts them).
   */
  @Test
  void twoHostsHalveEqualToTheOneHostPathBitForBit() {
    halvingEqualsTheOneHostPath(LoopbackTransport::new);
  }

  @Test
  void overUcxTwoHostsHalveEqualToTheOneHostPathBitForBit() {
    NeedsUcx.assume();
    halvingEqualsTheOneHostPath(UcxTransport::open);
  }

  @Test
  void atTwoHostsTheTwoShotHalvesFromItsLimitUnlessForced() {
    long limit = HostRoute.HALVING_MIN_BYTES;
    Ranks.values(run(3, conf(), r -> "node-" + (r % 2), LoopbackTransport::new, comm -> {
      assertEquals("host-ucx-twoshot", comm.explain(Collective.ALL_REDUCE, limit - 1).algorithm());
      assertEquals("host-ucx-halving", comm.explain(Collective.ALL_REDUCE, limit).algorithm());
      assertTrue(comm.explain(Collective.ALL_REDUCE, limit).reasons().toString().contains("2 hosts"));
      return null;
    }));
    Ranks.values(run(2, conf("algorithm", "host-twoshot"), r -> "node-" + r, LoopbackTransport::new, comm -> {
      assertEquals("host-ucx-twoshot", comm.explain(Collective.ALL_REDUCE, 4 * limit).algorithm());
      return null;
    }));
  }

  private static void halvingEqualsTheOneHostPath(IntFunction<PeerTransport> transports) {
    for (int n : new int[] {2, 3, 4}) {
      IntFunction<String> hosts = n == 3 ? r -> r == 0 ? "node-a" : "node-b" : r -> "node-" + (r % 2);
      List<List<Object>> shm = Ranks.values(Ranks.run(n, conf(), c -> halvingEveryTypeAndOp(c, n)));
      List<List<Object>> ucx = Ranks.values(run(n, conf(), hosts, transports, c -> {
        List<Object> out = halvingEveryTypeAndOp(c, n);
        Long halved = ((ReportingCommunicator) c).report().observed().get("allReduce/host-ucx-halving");
        assertEquals(2L * DataType.values().length * ReduceOp.values().length, halved, "halving calls at " + n + " ranks");
        return out;
      }));
      for (int r = 0; r < n; r++) {
        assertTrue(Objects.deepEquals(shm.get(r).toArray(), ucx.get(r).toArray()), n + " ranks, rank " + r);
      }
    }
  }

  /** In-place allReduces of every type and op at two odd counts from the halving limit up, each checked. */
  private static List<Object> halvingEveryTypeAndOp(Communicator comm, int n) {
    List<Object> out = new ArrayList<>();
    int seed = 100;
    for (DataType t : DataType.values()) {
      int atLimit = (int) (HostRoute.HALVING_MIN_BYTES / t.byteSize());
      for (ReduceOp op : ReduceOp.values()) {
        for (int count : new int[] {atLimit + 1, 2 * atLimit + 7}) {
          seed++;
          Object a = TypedData.alloc(t, count);
          TypedData.fill(t, op, seed, comm.rank(), a, 0, count);
          comm.allReduce(TypedData.buf(a), TypedData.buf(a), count, t, op);
          TypedData.checkReduced(t, op, seed, n, a, 0, 0, count, "halving " + t + " " + op + " " + count);
          out.add(a);
        }
      }
    }
    return out;
  }

  @Test
  void explainNamesTheHostsAndTheChoiceBySize() {
    Ranks.values(run(N, conf("host.oneShotMaxBytes", "1k"), INTERLEAVED, LoopbackTransport::new, comm -> {
      assertEquals("host-ucx-oneshot", comm.explain(Collective.ALL_REDUCE, 1024).algorithm());
      assertEquals("host-ucx-twoshot", comm.explain(Collective.ALL_REDUCE, 1025).algorithm());
      assertEquals("host-ucx-twoshot", comm.explain(Collective.ALL_REDUCE, 64 << 20).algorithm()); // 3 hosts: no halving
      assertEquals("host-ucx", comm.explain(Collective.ALL_TO_ALL, 1 << 20).algorithm());
      assertTrue(comm.explain(Collective.ALL_REDUCE, 8).reasons().get(0).contains("5 ranks on 3 hosts"));
      return null;
    }));
  }

  @Test
  void badInputOnOneRankFailsEveryRankAlikeAndTheGroupGoesOn() {
    List<Ranks.Outcome<String>> out = run(N, conf(), INTERLEAVED, LoopbackTransport::new, comm -> {
      float[] a = new float[comm.rank() == 4 ? 3 : 8];
      String msg;
      try {
        comm.allReduce(CommBuffer.of(a), CommBuffer.of(a), 8, DataType.FLOAT32, ReduceOp.SUM);
        msg = "no error";
      } catch (CollectiveException e) {
        msg = e.getMessage();
      }
      // The group stays usable after an agreed failure.
      long[] v = {comm.rank()};
      comm.allReduce(v, ReduceOp.SUM);
      assertEquals(10, v[0]);
      return msg;
    });
    for (int r = 0; r < N; r++) {
      String m = out.get(r).get();
      assertTrue(m.contains(r == 4 ? "buffer holds 3" : "rank 4 rejected its call"), r + ": " + m);
    }
  }

  @Test
  void mismatchedCallsFailEveryRankWithOneMessage() {
    List<Ranks.Outcome<String>> out = run(N, conf(), INTERLEAVED, LoopbackTransport::new, comm -> {
      try {
        if (comm.rank() == 2) {
          comm.broadcast(CommBuffer.of(new int[4]), CommBuffer.of(new int[4]), 4, DataType.INT32, 0);
        } else {
          comm.allReduce(new int[4], ReduceOp.SUM);
        }
        return "no error";
      } catch (CollectiveMismatchException e) {
        return e.getMessage().substring(e.getMessage().indexOf("ranks called"));
      }
    });
    String first = out.get(0).get();
    assertTrue(first.contains("rank 2 called broadcast"), first);
    for (int r = 1; r < N; r++) {
      assertEquals(first, out.get(r).get());
    }
  }

  @Test
  void splitAcrossAndInsideHosts() {
    Ranks.values(run(N, conf(), INTERLEAVED, LoopbackTransport::new, comm -> {
      int r = comm.rank();
      // Even ranks {0, 2, 4} span node-0, node-2, node-1; odd {1, 3} span node-1, node-0. Keys reverse.
      try (Communicator sub = comm.split(r % 2, -r)) {
        assertEquals("host-ucx", sub.backend());
        int[] v = {r};
        sub.allReduce(v, ReduceOp.SUM);
        assertEquals(r % 2 == 0 ? 6 : 4, v[0]);
        long[] who = new long[sub.size()];
        sub.allGather(CommBuffer.of(new long[] {r}), CommBuffer.of(who), 1, DataType.INT64);
        assertEquals(r % 2 == 0 ? "[4, 2, 0]" : "[3, 1]", Arrays.toString(who));
      }
      // By host: node-0 {0, 3} is one host's group: shared memory only.
      try (Communicator byHost = comm.split(r % 3, r)) {
        assertEquals("host-shm", byHost.backend());
      }
      // A color of one rank; the others join none.
      Communicator solo = comm.split(r == 0 ? 0 : -1, 0);
      if (r == 0) {
        assertEquals(1, solo.size());
        solo.close();
      } else {
        assertNull(solo);
      }
      return null;
    }));
  }

  @Test
  void aDeadLeaderEndsTheWaitsOfEveryRankWithinTheBounds() {
    List<LoopbackTransport> made = new java.util.concurrent.CopyOnWriteArrayList<>();
    long t0 = System.nanoTime();
    List<Ranks.Outcome<Object>> out = run(N, conf("timeout", "30s"), INTERLEAVED, n -> {
      LoopbackTransport t = new LoopbackTransport(n);
      made.add(t);
      return t;
    }, comm -> {
      comm.barrier();
      if (comm.rank() == 1) {
        // node-1's leader vanishes (its process "died"); it never calls again.
        for (LoopbackTransport t : made) {
          if (Arrays.equals(t.address(), addressOfRank(made, comm))) {
            t.kill();
          }
        }
        throw new IllegalStateException("rank 1 died");
      }
      comm.allReduce(new long[] {1}, ReduceOp.SUM);
      return null;
    });
    double seconds = (System.nanoTime() - t0) / 1e9;
    for (int r = 0; r < N; r++) {
      assertNotNull(out.get(r).error(), "rank " + r + " completed without its peer");
    }
    assertTrue(seconds < 20, "took " + seconds + " s");
    // Ranks waiting on node-1's leader name it or the rank that gave up because of it.
    assertInstanceOf(CollectiveException.class, out.get(0).error());
    assertTrue(out.get(0).error().getMessage().contains("rank 1"), out.get(0).error().getMessage());
  }

  /**
   * A rank gives up on a call and closes while its peer has not progressed UCX since the group
   * formed (it sleeps 1.5 s): the endpoint's orderly close cannot finish within close()'s second, so
   * the worker is handed to the reaper (destroying it then would abort the process in UCX 1.13),
   * which destroys it once the peer progresses and closes too.
   */
  @Test
  void aWorkerWhoseCloseOutlivesCloseIsDestroyedOnceThePeerAnswers() throws Exception {
    NeedsUcx.assume();
    awaitNoClosingWorkers(); // another test's worker may still be with the reaper
    List<Ranks.Outcome<Integer>> out = run(2, conf("timeout", "200ms"), r -> "node-" + r, n -> UcxTransport.open(n),
        comm -> {
          if (comm.rank() == 1) {
            Thread.sleep(1500); // rank 0 times out and closes meanwhile; this rank's worker is not progressed
            return UcxTransport.closingWorkers();
          }
          try {
            comm.allReduce(new long[] {1}, ReduceOp.SUM);
          } catch (CollectiveException e) {
            // the peer never came: expected
          }
          return null;
        });
    assertEquals(1, out.get(1).get(), "rank 0's close should have outlived close() and gone to the reaper");
    awaitNoClosingWorkers();
    assertEquals(0, UcxTransport.closingWorkers(), "the reaper did not destroy the worker");
  }

  /**
   * Peers closing under ranks that still send to them, many times over: with forced endpoint closes,
   * UCX 1.13.1's TCP transport aborted this process within a few rounds (an assertion on a closed
   * endpoint); every round must end with errors on the waiting ranks and the process alive.
   */
  @Test
  void peersClosingUnderWaitingRanksNeverAbortTheProcess() {
    NeedsUcx.assume();
    for (int round = 0; round < 30; round++) {
      boolean late = round % 6 == 5; // a rank arriving after the others gave up and closed
      List<Ranks.Outcome<String>> out = Ranks.run(3, Ranks.confFor("host-ucx", "timeout", late ? "200ms" : "3s"),
          r -> "host" + r, comm -> {
            if (!late && comm.rank() == 1) {
              comm.close();
              return "closed";
            }
            if (late && comm.rank() == 2) {
              Thread.sleep(400);
            }
            try {
              comm.allReduce(new float[2], ReduceOp.SUM);
              return "no error";
            } catch (CollectiveException e) {
              return "error";
            }
          });
      for (int r = 0; r < 3; r++) {
        String v = out.get(r).get();
        assertTrue(v.equals("error") || v.equals("closed"), "round " + round + " rank " + r + ": " + v);
      }
    }
  }

  private static void awaitNoClosingWorkers() throws InterruptedException {
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (UcxTransport.closingWorkers() > 0 && System.nanoTime() < deadline) {
      Thread.sleep(20);
    }
  }

  /** The transport the rank's communicator uses (the one made for the group, by creation order). */
  private static byte[] addressOfRank(List<LoopbackTransport> made, Communicator comm) {
    return ((HostUcxCommunicator) comm).transportAddress();
  }

  /** Every collective, several types and sizes (one-shot and two-shot allReduce); returns the results. */
  static List<Object> everything(Communicator comm, int n) {
    List<Object> out = new ArrayList<>();
    int me = comm.rank();
    TypedData.allReduceEveryType(comm, n, "allReduce", out);
    float[] recv1 = new float[n];
    comm.allGather(CommBuffer.of(new float[] {me}), CommBuffer.of(recv1), 1, DataType.FLOAT32);
    for (int p = 0; p < n; p++) {
      assertEquals(p, recv1[p]);
    }
    int count = 3000;
    float[] send = new float[count * n];
    for (int i = 0; i < send.length; i++) {
      send[i] = me * 1e6f + i;
    }
    float[] recv = new float[count * n];
    comm.allToAll(CommBuffer.of(send), CommBuffer.of(recv), count, DataType.FLOAT32);
    for (int p = 0; p < n; p++) {
      assertEquals(p * 1e6f + me * count + 7, recv[p * count + 7]);
    }
    out.add(recv.clone());
    double[] rsIn = new double[count * n];
    for (int i = 0; i < rsIn.length; i++) {
      rsIn[i] = Math.sin(me * 31 + i) * 1e3;
    }
    double[] rs = new double[count];
    comm.reduceScatter(CommBuffer.of(rsIn), CommBuffer.of(rs), count, DataType.FLOAT64, ReduceOp.SUM);
    out.add(rs);
    long[] b = {me == 3 ? 42 : 0, me};
    comm.broadcast(CommBuffer.of(b), CommBuffer.of(b), 2, DataType.INT64, 3);
    assertEquals("[42, 3]", Arrays.toString(b));
    long[] sc = new long[n];
    long[] rc = new long[n];
    long[] sd = new long[n];
    long[] rd = new long[n];
    for (int q = 0; q < n; q++) {
      sc[q] = (me + 2 * q) % 4; // some zero counts
      rc[q] = (q + 2 * me) % 4;
      sd[q] = q * 10L;
      rd[q] = (n - 1 - q) * 10L;
    }
    int[] vs = new int[10 * n];
    for (int i = 0; i < vs.length; i++) {
      vs[i] = me * 100 + i;
    }
    int[] vr = new int[10 * n];
    comm.allToAllv(CommBuffer.of(vs), sc, sd, CommBuffer.of(vr), rc, rd, DataType.INT32);
    for (int p = 0; p < n; p++) {
      for (int i = 0; i < rc[p]; i++) {
        assertEquals(p * 100 + me * 10 + i, vr[(n - 1 - p) * 10 + i], "allToAllv from " + p);
      }
    }
    out.add(vr);
    comm.barrier();
    return out;
  }
}
