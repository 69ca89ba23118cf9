package dev.gpucoll.core.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.PathChoice;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.core.report.RankReport;
import dev.gpucoll.core.report.ReportingCommunicator;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Groups spanning hosts: the relay computes the same results, and says it is the relay. */
class HostRelayTest {
  static final int N = 3;

  @Test
  void relayRunsEveryCollectiveAndReportsItself() {
    List<List<Object>> shm = Ranks.values(Ranks.run(N, Ranks.conf(), HostRelayTest::everything));
    List<List<Object>> relay = Ranks.values(Ranks.run(N, Ranks.conf("host.crossHost", "relay"), r -> "node-" + r, comm -> {
      assertEquals("host-relay", comm.backend());
      PathChoice p = comm.explain(Collective.ALL_REDUCE, 8);
      assertEquals("host-relay", p.algorithm());
      assertTrue(p.reasons().get(0).contains("spans hosts"), p.reasons().toString());
      List<Object> out = everything(comm);
      RankReport report = ((ReportingCommunicator) comm).report();
      assertEquals("host-relay", report.backend());
      assertTrue(report.observed().get("allReduce/host-relay") > 0);
      assertTrue(comm.observedPaths().contains("barrier/host-relay=1"), comm.observedPaths().toString());
      return out;
    }));
    // Same rank order of reduction: the relay's results equal the shared-memory path's, bit for bit.
    for (int r = 0; r < N; r++) {
      assertTrue(java.util.Objects.deepEquals(shm.get(r).toArray(), relay.get(r).toArray()), "rank " + r);
    }
  }

  private static List<Object> everything(Communicator comm) {
    List<Object> out = new ArrayList<>();
    int me = comm.rank();
    TypedData.allReduceEveryType(comm, N, "relay allReduce", out);
    int count = 20_000;
    float[] send = new float[count * N];
    for (int i = 0; i < send.length; i++) {
      send[i] = me * 1e6f + i;
    }
    float[] recv = new float[count * N];
    comm.allGather(CommBuffer.of(new float[] {me}), CommBuffer.of(recv), 1, DataType.FLOAT32);
    for (int p = 0; p < N; p++) {
      assertEquals(p, recv[p]);
    }
    comm.allToAll(CommBuffer.of(send), CommBuffer.of(recv), count, DataType.FLOAT32);
    for (int p = 0; p < N; p++) {
      assertEquals(p * 1e6f + me * count + 7, recv[p * count + 7]);
    }
    out.add(recv.clone());
    float[] rs = new float[count];
    comm.reduceScatter(CommBuffer.of(send), CommBuffer.of(rs), count, DataType.FLOAT32, ReduceOp.MAX);
    assertEquals((N - 1) * 1e6f + me * count + 3, rs[3]);
    long[] b = {me == 1 ? 42 : 0};
    comm.broadcast(CommBuffer.of(b), CommBuffer.of(b), 1, DataType.INT64, 1);
    assertEquals(42, b[0]);
    long[] sc = new long[N];
    long[] rc = new long[N];
    long[] sd = new long[N];
    long[] rd = new long[N];
    for (int q = 0; q < N; q++) {
      sc[q] = me + q;
      rc[q] = q + me;
      sd[q] = q * 10L;
      rd[q] = q * 10L;
    }
    int[] vs = new int[10 * N];
    for (int i = 0; i < vs.length; i++) {
      vs[i] = me * 100 + i;
    }
    int[] vr = new int[10 * N];
    comm.allToAllv(CommBuffer.of(vs), sc, sd, CommBuffer.of(vr), rc, rd, DataType.INT32);
    for (int p = 0; p < N; p++) {
      for (int i = 0; i < rc[p]; i++) {
        assertEquals(p * 100 + me * 10 + i, vr[p * 10 + i]);
      }
    }
    comm.barrier();
    return out;
  }

  @Test
  void relaySplitIntoOneHostGroupsUsesSharedMemory() {
    Ranks.values(Ranks.run(4, Ranks.conf("host.crossHost", "relay"), r -> "node-" + (r / 2), comm -> {
      try (Communicator sub = comm.split(comm.rank() / 2, 0)) {
        assertEquals("host-shm", sub.backend());
        assertEquals(2, sub.size());
        int[] v = {comm.rank()};
        sub.allReduce(v, ReduceOp.SUM);
        assertEquals(comm.rank() / 2 == 0 ? 1 : 5, v[0]);
      }
      return null;
    }));
  }
}
