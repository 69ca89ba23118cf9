package dev.gpucoll.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.Collective;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.LocOp;
import dev.gpucoll.api.PairType;
import dev.gpucoll.api.GpuCommunicator;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.core.CommunicatorFactory;
import dev.gpucoll.core.config.GpuCollConf;
import dev.gpucoll.core.rendezvous.LocalRendezvous;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.bytedeco.javacpp.BytePointer;
import org.junit.jupiter.api.Test;

/**
 * The gpu communicator's Java paths on a simulated device (no GPU): a refused batch enqueues
 * nothing on any rank and leaves the group usable, the capture rules, a forced kernel that cannot
 * run failing loudly, and the simulated device's own strictness (it must catch what a GPU would).
 */
class SimulatedCommunicatorTest {
  private static final AtomicInteger GROUPS = new AtomicInteger();

  interface RankBody<T> {
    T run(GpuCommunicator comm) throws Exception;
  }

  /** Forms an n-rank gpu group on the simulated GPU (ranks as threads) and runs {@code body} on every rank. */
  static <T> List<T> onRanks(int n, Map<String, String> settings, RankBody<T> body) throws Exception {
    String id = "sim-" + GROUPS.incrementAndGet();
    Map<String, String> all = new HashMap<>(settings);
    all.put(GpuCollConf.BACKEND.key(), GpuBackend.NAME);
    all.put(GpuCollConf.TIMEOUT.key(), "20s");
    GpuCollConf conf = GpuCollConf.of(all).validate();
    ExecutorService pool = Executors.newFixedThreadPool(n);
    try {
      List<Future<T>> futures = new ArrayList<>();
      for (int r = 0; r < n; r++) {
        int rank = r;
        futures.add(pool.submit(() -> {
          CudaNative.setDevice(0);
          try (Communicator c = CommunicatorFactory.create(LocalRendezvous.join(id, rank, n), conf, "localhost")) {
            return body.run((GpuCommunicator) c);
          }
        }));
      }
      List<T> out = new ArrayList<>();
      for (Future<T> f : futures) {
        out.add(f.get(60, TimeUnit.SECONDS));
      }
      return out;
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void theListenersHearAMaxlocCallAsSuchAndASplitsCallsThroughTheListenerTheyGaveIt() throws Exception {
    try (SimulatedDevice.Installed sim = SimulatedDevice.install()) {
      List<List<String>> heard = onRanks(2, Map.of(), comm -> {
        List<String> events = new java.util.concurrent.CopyOnWriteArrayList<>();
        comm.addListener(new dev.gpucoll.api.CollectiveListener() {
          @Override
          public void onCollective(dev.gpucoll.api.Collective c, String algorithm, long bytes, long nanos) {
            events.add(c.apiName());
          }

          @Override
          public void onLocCollective(dev.gpucoll.api.LocOp op, String algorithm, long bytes, long nanos) {
            events.add(op + " " + bytes + " B");
          }

          @Override
          public dev.gpucoll.api.CollectiveListener onSplit(int split) {
            return (c, algorithm, bytes, nanos) -> events.add("split " + split + " " + c.apiName());
          }
        });
        java.nio.ByteBuffer send = java.nio.ByteBuffer.allocate(8).order(java.nio.ByteOrder.nativeOrder());
        send.putFloat(0, comm.rank()).putInt(4, comm.rank());
        java.nio.ByteBuffer recv = java.nio.ByteBuffer.allocate(8).order(java.nio.ByteOrder.nativeOrder());
        comm.allReduce(CommBuffer.of(send), CommBuffer.of(recv), 1, dev.gpucoll.api.PairType.FLOAT32_INT32,
            dev.gpucoll.api.LocOp.MAXLOC);
        assertEquals(1, recv.getInt(4));
        try (GpuCommunicator half = comm.split(0, comm.rank())) {
          half.allReduce(new float[] {1f}, ReduceOp.SUM);
        }
        return events;
      });
      for (List<String> events : heard) {
        assertEquals(List.of("MAXLOC 16 B", "split 1 allReduce"), events);
      }
    }
  }

  @Test
  void maxlocOnDeviceBuffersLaunchesThePairKernelWithThePairTypeAndOp() throws Exception {
    try (SimulatedDevice.Installed sim = SimulatedDevice.install()) {
      onRanks(1, Map.of(), comm -> {
        long a = CudaNative.malloc(64);
        try {
          // arguments are checked before anything is enqueued: the group stays usable
          CollectiveException overlap = assertThrows(CollectiveException.class, () -> comm.allReduce(
              CommBuffer.device(a, 64), CommBuffer.device(a + 16, 48), 2, PairType.FLOAT64_INT32, LocOp.MINLOC));
          assertTrue(overlap.getMessage().contains("send and recv overlap"), overlap.getMessage());
          CollectiveException shortRecv = assertThrows(CollectiveException.class, () -> comm.allReduce(
              CommBuffer.device(a, 64), CommBuffer.device(a + 32, 16), 2, PairType.FLOAT64_INT32, LocOp.MINLOC));
          assertTrue(shortRecv.getMessage().contains("recv buffer holds 16 bytes; this call needs 32"),
              shortRecv.getMessage());
          assertEquals(0, sim.device().launches().size());
          CollectiveException ran = assertThrows(CollectiveException.class, () -> comm.allReduce(
              CommBuffer.device(a, 32), CommBuffer.device(a + 32, 32), 2, PairType.FLOAT64_INT32, LocOp.MINLOC));
          assertTrue(ran.getMessage().contains("simulated device runs no kernels"), ran.getMessage());
          return null;
        } finally {
          CudaNative.free(a);
        }
      });
      // the first launch of a communicator is tried again without programmatic dependent launch when refused
      List<SimulatedDevice.Launch> launches = sim.device().launches();
      assertTrue(!launches.isEmpty() && launches.size() <= 2, launches.toString());
      SimulatedDevice.Launch l = launches.get(launches.size() - 1);
      assertEquals("gc_allreduce_pair_ll_f64_i32", l.kernel());
      assertEquals(1, l.grid());
      assertEquals(KernelTable.BLOCK_THREADS, l.block());
      assertEquals(PairType.FLOAT64_INT32.ordinal(), l.args().getInt(KernelTable.ARGS_OFFSET_DTYPE));
      assertEquals(LocOp.MINLOC.ordinal(), l.args().getInt(KernelTable.ARGS_OFFSET_OP));
      assertEquals(2, l.args().getLong(KernelTable.ARGS_OFFSET_COUNT));
      assertEquals(32, l.args().getLong(KernelTable.ARGS_OFFSET_RECV) - l.args().getLong(KernelTable.ARGS_OFFSET_SEND));
    }
  }

  @Test
  void maxlocThroughTheHostIsRefusedInsideACaptureNamingWhy() throws Exception {
    try (SimulatedDevice.Installed sim = SimulatedDevice.install()) {
      onRanks(2, Map.of(), comm -> {
        long own = comm.stream();
        long user = CudaNative.streamCreateNonBlocking();
        long a = CudaNative.malloc(16);
        try {
          comm.setStream(user);
          CollectiveException e = assertThrows(CollectiveException.class, () -> comm.capture(() -> comm.allReduce(
              CommBuffer.device(a, 16), CommBuffer.device(a, 16), 2, PairType.INT32_INT32, LocOp.MAXLOC)));
          assertTrue(e.getMessage().contains("cannot be captured into a CUDA graph: MAXLOC/MINLOC fold the gathered"
              + " pairs on the host here (this group takes gpu-staged-host"), e.getMessage());
          assertEquals(null, ((CudaCommunicator) comm).unusableReason());
          return null;
        } finally {
          comm.setStream(own);
          CudaNative.free(a);
          CudaNative.streamDestroy(user);
        }
      });
      assertEquals(0, sim.device().refusedLaunches());
    }
  }

  /**
   * A pair kernel's NaN refusal completed on every rank: raised once where the stream is idle, in the
   * host fold's words, leaving the group usable; not at a call's entry (ranks would disagree on
   * which call fails). Any other record breaks the group at the next call.
   */
  @Test
  void aNanRecordIsRaisedOnceAtTheNextWaitAndLeavesTheGroupUsable() {
    try (SimulatedDevice.Installed sim = SimulatedDevice.install()) {
      DeviceStage stage = new DeviceStage(1, java.time.Duration.ofSeconds(5));
      try {
        ByteBuffer rec = new BytePointer(CudaNative.ptr(stage.control().deviceAddress())).capacity(KernelTable.ERR_SIZE)
            .asByteBuffer().order(ByteOrder.LITTLE_ENDIAN);
        rec.putInt(KernelTable.ERR_OFFSET_RANK, 1).putInt(KernelTable.ERR_OFFSET_PEER, 2)
            .putInt(KernelTable.ERR_OFFSET_KERNEL, KernelTable.kernelId(Collective.ALL_REDUCE, KernelTable.Protocol.LL_PAIR))
            .putLong(KernelTable.ERR_OFFSET_EPOCH, 7)
            .putLong(KernelTable.ERR_OFFSET_WAITED, (long) PairType.FLOAT32_INT32.ordinal() << 8 | LocOp.MAXLOC.ordinal())
            .putLong(KernelTable.ERR_OFFSET_OBSERVED, -7).putLong(KernelTable.ERR_OFFSET_DETAIL, 1)
            .putInt(KernelTable.ERR_OFFSET_CODE, KernelTable.ERR_NAN);
        stage.checkUsable(Collective.BROADCAST); // a call's entry: not raised there
        CollectiveException nan = assertThrows(CollectiveException.class, () -> stage.waitStream(null));
        assertEquals("MAXLOC over FLOAT32_INT32: rank 2's pair 1 has a NaN value (index -7); MAXLOC refuses NaN values",
            nan.getMessage().substring(nan.getMessage().indexOf("MAXLOC")));
        assertEquals(Collective.ALL_REDUCE, nan.collective());
        assertEquals(dev.gpucoll.core.pairs.PairFold.nanMessage(LocOp.MAXLOC, PairType.FLOAT32_INT32, 2, 1, -7),
            nan.getMessage().substring(nan.getMessage().indexOf("MAXLOC")));
        stage.waitStream(null); // raised once
        stage.checkUsable(null);
        assertEquals(null, stage.unusableReason());
        rec.putLong(KernelTable.ERR_OFFSET_EPOCH, 9).putInt(KernelTable.ERR_OFFSET_CODE, KernelTable.ERR_NAN);
        assertThrows(CollectiveException.class, () -> stage.waitStream(null), "a later NaN call is raised too");
        rec.putLong(KernelTable.ERR_OFFSET_EPOCH, 10).putInt(KernelTable.ERR_OFFSET_CODE, KernelTable.ERR_TIMEOUT);
        assertThrows(dev.gpucoll.api.CollectiveTimeoutException.class, () -> stage.checkUsable(null));
        assertTrue(stage.unusableReason() != null);
      } finally {
        stage.close().forEach(Runnable::run);
      }
    }
  }

  static float[] read(long device, int floats, GpuCommunicator comm) {
    comm.synchronize();
    float[] out = new float[floats];
    new BytePointer(CudaNative.ptr(device)).capacity(4L * floats).asByteBuffer().order(ByteOrder.nativeOrder())
        .asFloatBuffer().get(out);
    return out;
  }

  static long upload(float[] values) {
    long d = CudaNative.malloc(4L * values.length);
    ByteBuffer b = new BytePointer(CudaNative.ptr(d)).capacity(4L * values.length).asByteBuffer()
        .order(ByteOrder.nativeOrder());
    b.asFloatBuffer().put(values);
    return d;
  }

  @Test
  void stagedAllToAllvLeavesWhatLiesBetweenItsRecvBlocksUnchangedForDeviceAndHostBuffers() throws Exception {
    try (SimulatedDevice.Installed sim = SimulatedDevice.install()) {
      // rank r sends 10 r + q to rank q; the blocks land at 0 and 2, the element between them is not written
      List<float[][]> seen = onRanks(2, Map.of(), comm -> {
        int r = comm.rank();
        long[] counts = {1, 1};
        long[] sendDispls = {0, 1};
        long[] recvDispls = {0, 2};
        float[] send = {10 * r, 10 * r + 1};
        long dSend = upload(send);
        long dRecv = upload(new float[] {-1, -1, -1});
        float[] hostRecv = {-1, -1, -1};
        try {
          comm.allToAllv(CommBuffer.device(dSend, 8), counts, sendDispls, CommBuffer.device(dRecv, 12), counts,
              recvDispls, DataType.FLOAT32);
          comm.allToAllv(CommBuffer.of(send), counts, sendDispls, CommBuffer.of(hostRecv), counts, recvDispls,
              DataType.FLOAT32);
          return new float[][] {read(dRecv, 3, comm), hostRecv};
        } finally {
          CudaNative.free(dSend);
          CudaNative.free(dRecv);
        }
      });
      for (int q = 0; q < 2; q++) {
        float[] expect = {q, -1, 10 + q};
        assertArrayEquals(expect, seen.get(q)[0], "device buffers, rank " + q);
        assertArrayEquals(expect, seen.get(q)[1], "host buffers, rank " + q);
      }
    }
  }

  @Test
  void aRefusedBatchEnqueuesNothingOnAnyPathAndTheGroupStaysUsable() throws Exception {
    try (SimulatedDevice.Installed sim = SimulatedDevice.install()) {
      for (int n : new int[] {1, 2}) { // one-rank copies; the staged path of ranks sharing the GPU
        List<String> messages = onRanks(n, Map.of(), comm -> {
          long a = upload(new float[] {1, 2, 3, 4});
          long out = upload(new float[] {-1, -1, -1, -1});
          long small = CudaNative.malloc(8);
          try {
            CollectiveException e = assertThrows(CollectiveException.class, () -> comm.group(g -> {
              g.allReduce(CommBuffer.device(a, 16), CommBuffer.device(out, 16), 4, DataType.FLOAT32, ReduceOp.SUM);
              g.allGather(CommBuffer.device(a, 16), CommBuffer.device(small, 8), 4, DataType.FLOAT32);
            }));
            assertArrayEquals(new float[] {-1, -1, -1, -1}, read(out, 4, comm), "call 1 of a refused batch ran");
            assertTrue(((CudaCommunicator) comm).unusableReason() == null, "a refusal broke the group: " + ((CudaCommunicator) comm).unusableReason());
            comm.group(g -> g.allReduce(CommBuffer.device(a, 16), CommBuffer.device(out, 16), 4, DataType.FLOAT32,
                ReduceOp.SUM));
            float k = comm.size();
            assertArrayEquals(new float[] {k, 2 * k, 3 * k, 4 * k}, read(out, 4, comm));
            return e.getMessage();
          } finally {
            CudaNative.free(a);
            CudaNative.free(out);
            CudaNative.free(small);
          }
        });
        for (String m : messages) {
          assertTrue(m.contains("call 2 of the 2 in this group() was refused, so none of them ran")
              && m.contains("recv buffer holds 8 bytes"), m);
        }
      }
    }
  }

  /** Thrown by one rank's group() body. */
  private static final class BodyError extends RuntimeException {
    BodyError() {
      super("the body's own error");
    }
  }

  /**
   * On every rank of a 2-rank group formed with {@code settings}: rank 1's group() body throws after
   * one call, then (second group) rank 1 refuses an argument. Each time every rank fails at once
   * (not after the 20 s timeout), nothing runs, and the group stays usable; then {@code after} runs
   * on each rank. Returns each rank's two messages (rank 1's first: "BodyError", its own error
   * unchanged).
   */
  private static List<List<String>> bodyThrowsThenRefusal(Map<String, String> settings, RankBody<Void> after)
      throws Exception {
    return onRanks(2, settings, comm -> {
      long a = upload(new float[] {1, 2, 3, 4});
      long out = upload(new float[] {-1, -1, -1, -1});
      long small = CudaNative.malloc(8);
      List<String> messages = new ArrayList<>();
      try {
        long start = System.nanoTime();
        RuntimeException thrown = assertThrows(RuntimeException.class, () -> comm.group(g -> {
          g.allReduce(CommBuffer.device(a, 16), CommBuffer.device(out, 16), 4, DataType.FLOAT32, ReduceOp.SUM);
          if (comm.rank() == 1) {
            throw new BodyError();
          }
        }));
        assertTrue(comm.rank() == 1 ? thrown instanceof BodyError : thrown instanceof CollectiveException,
            String.valueOf(thrown));
        messages.add(thrown instanceof BodyError ? "BodyError" : thrown.getMessage());
        CommBuffer recv = comm.rank() == 1 ? CommBuffer.device(small, 8) : CommBuffer.device(out, 16);
        CollectiveException refused = assertThrows(CollectiveException.class, () -> comm.group(g ->
            g.allReduce(CommBuffer.device(a, 16), recv, 4, DataType.FLOAT32, ReduceOp.SUM)));
        messages.add(refused.getMessage());
        assertTrue(System.nanoTime() - start < 10_000_000_000L, "waited for the timeout");
        assertArrayEquals(new float[] {-1, -1, -1, -1}, read(out, 4, comm), "a call of a failed group ran");
        assertEquals(null, ((CudaCommunicator) comm).unusableReason());
        after.run(comm);
        return messages;
      } finally {
        CudaNative.free(a);
        CudaNative.free(out);
        CudaNative.free(small);
      }
    });
  }

  private static void assertEveryRankNamedRankOne(List<List<String>> seen) {
    assertEquals("BodyError", seen.get(1).get(0), "the body's error reaches its caller unchanged");
    assertTrue(seen.get(0).get(0).contains("rank 1's group() body threw (its error says what), so no call of this"
        + " group() ran on any rank"), seen.get(0).get(0));
    assertTrue(seen.get(0).get(1).contains("rank 1 refused its arguments"), seen.get(0).get(1));
    assertTrue(seen.get(1).get(1).contains("recv buffer holds 8 bytes"), seen.get(1).get(1));
  }

  @Test
  void aGroupBodyThatThrowsOnOneRankFailsTheOthersAtOnceAndTheGroupStaysUsable() throws Exception {
    try (SimulatedDevice.Installed sim = SimulatedDevice.install()) {
      // Ranks sharing the GPU take the staged path: after the failed groups a group runs.
      assertEveryRankNamedRankOne(bodyThrowsThenRefusal(Map.of(), comm -> {
        assertEquals("gpu-staged-host", comm.explain(Collective.ALL_REDUCE, 16).algorithm());
        long a = upload(new float[] {1, 2, 3, 4});
        long out = upload(new float[] {-1, -1, -1, -1});
        try {
          comm.group(g -> g.allReduce(CommBuffer.device(a, 16), CommBuffer.device(out, 16), 4, DataType.FLOAT32,
              ReduceOp.SUM));
          assertArrayEquals(new float[] {2, 4, 6, 8}, read(out, 4, comm));
        } finally {
          CudaNative.free(a);
          CudaNative.free(out);
        }
        return null;
      }));
    }
  }

  @Test
  void onTheKernelPathAThrowingBodyOrARefusedCallFailsEveryRankAtOnceAndLaunchesNothing() throws Exception {
    try (SimulatedDevice.Installed sim = SimulatedDevice.install()) {
      // Our kernels spin on the shared GPU when told to: the kernel path, whose launches the simulated device refuses.
      assertEveryRankNamedRankOne(bodyThrowsThenRefusal(Map.of(GpuCollConf.INTERNAL_SPIN_ON_SHARED_GPU.key(), "true"),
          comm -> {
            assertEquals("gpu-ll-oneshot", comm.explain(Collective.ALL_REDUCE, 16).algorithm());
            return null;
          }));
      assertEquals(0, sim.device().refusedLaunches(), "a failed group() launched a kernel");
    }
  }

  @Test
  void aNullTypeOrOpIsRefusedWithoutBreakingTheGroup() throws Exception {
    try (SimulatedDevice.Installed sim = SimulatedDevice.install()) {
      onRanks(1, Map.of(), comm -> {
        long a = upload(new float[] {1, 2});
        try {
          CollectiveException type = assertThrows(CollectiveException.class,
              () -> comm.allReduce(CommBuffer.device(a, 8), CommBuffer.device(a, 8), 2, null, ReduceOp.SUM));
          assertTrue(type.getMessage().contains("data type is null"), type.getMessage());
          CollectiveException op = assertThrows(CollectiveException.class,
              () -> comm.allReduce(CommBuffer.device(a, 8), CommBuffer.device(a, 8), 2, DataType.FLOAT32, null));
          assertTrue(op.getMessage().contains("reduction op is null"), op.getMessage());
          CollectiveException v = assertThrows(CollectiveException.class, () -> comm.allToAllv(CommBuffer.device(a, 8),
              new long[] {1}, new long[] {0}, CommBuffer.device(a, 8), new long[] {1}, new long[] {0}, null));
          assertTrue(v.getMessage().contains("data type is null"), v.getMessage());
          assertEquals(null, ((CudaCommunicator) comm).unusableReason());
          comm.allReduce(CommBuffer.device(a, 8), CommBuffer.device(a, 8), 2, DataType.FLOAT32, ReduceOp.SUM);
          return null;
        } finally {
          CudaNative.free(a);
        }
      });
    }
  }

  @Test
  void captureRecordsOneRankCopiesAndRefusesTheStagedPath() throws Exception {
    try (SimulatedDevice.Installed sim = SimulatedDevice.install()) {
      onRanks(1, Map.of(), comm -> {
        long own = comm.stream();
        long user = CudaNative.streamCreateNonBlocking();
        long a = upload(new float[] {1, 2});
        long b = upload(new float[] {0, 0});
        try {
          comm.setStream(user);
          try (GpuCommunicator.CapturedGraph graph = comm.capture(() ->
              comm.allReduce(CommBuffer.device(a, 8), CommBuffer.device(b, 8), 2, DataType.FLOAT32, ReduceOp.SUM))) {
            assertArrayEquals(new float[] {0, 0}, read(b, 2, comm), "a captured call ran at capture");
            graph.replay();
            assertArrayEquals(new float[] {1, 2}, read(b, 2, comm));
          }
          CollectiveException host = assertThrows(CollectiveException.class, () -> comm.capture(() ->
              comm.allReduce(new float[] {1}, ReduceOp.SUM)));
          assertTrue(host.getMessage().contains("cannot be captured"), host.getMessage());
          return null;
        } finally {
          comm.setStream(own); // the communicator must not keep a stream that is destroyed
          CudaNative.free(a);
          CudaNative.free(b);
          CudaNative.streamDestroy(user);
        }
      });
      onRanks(2, Map.of(), comm -> {
        long own = comm.stream();
        long user = CudaNative.streamCreateNonBlocking();
        long a = upload(new float[] {1, 2});
        try {
          comm.setStream(user);
          CollectiveException staged = assertThrows(CollectiveException.class, () -> comm.capture(() ->
              comm.allReduce(CommBuffer.device(a, 8), CommBuffer.device(a, 8), 2, DataType.FLOAT32, ReduceOp.SUM)));
          assertTrue(staged.getMessage().contains("gpu-staged-host"), staged.getMessage());
          // The caller's own capture of the stream it gave us is refused alike, and breaks nothing.
          CudaNative.beginCapture(user);
          CollectiveException usersCapture = assertThrows(CollectiveException.class, () ->
              comm.allReduce(CommBuffer.device(a, 8), CommBuffer.device(a, 8), 2, DataType.FLOAT32, ReduceOp.SUM));
          CudaNative.graphExecDestroy(CudaNative.endCaptureAndInstantiate(user));
          assertTrue(usersCapture.getMessage().contains("cannot be captured"), usersCapture.getMessage());
          assertEquals(null, ((CudaCommunicator) comm).unusableReason());
          comm.allReduce(CommBuffer.device(a, 8), CommBuffer.device(a, 8), 2, DataType.FLOAT32, ReduceOp.SUM);
          assertArrayEquals(new float[] {2, 4}, read(a, 2, comm));
          return null;
        } finally {
          comm.setStream(own);
          CudaNative.free(a);
          CudaNative.streamDestroy(user);
        }
      });
    }
  }

  @Test
  void aForcedKernelFailsLoudlyOnTheSimulatedDevice() throws Exception {
    try (SimulatedDevice.Installed sim = SimulatedDevice.install()) {
      onRanks(1, Map.of(GpuCollConf.INTERNAL_KERNEL_VARIANT.key(), "ll"), comm -> {
        long a = upload(new float[] {1, 2});
        try {
          CollectiveException e = assertThrows(CollectiveException.class, () ->
              comm.allReduce(CommBuffer.device(a, 8), CommBuffer.device(a, 8), 2, DataType.FLOAT32, ReduceOp.SUM));
          assertTrue(e.getMessage().contains("simulated device runs no kernels"), e.getMessage());
          return null;
        } finally {
          CudaNative.free(a);
        }
      });
      assertTrue(sim.device().refusedLaunches() > 0);
    }
  }

  @Test
  void theSimulatedDeviceRefusesWhatAGpuWould() {
    try (SimulatedDevice.Installed sim = SimulatedDevice.install()) {
      assertTrue(CudaNative.simulated() && CudaEnvironment.probe().available());
      long d = CudaNative.malloc(16);
      long s = CudaNative.streamCreateNonBlocking();
      try {
        assertThrows(CudaException.class, () -> CudaNative.memcpyAsync(d + 8, d, 16, s), "a copy past the end");
        assertThrows(CudaException.class, () -> CudaNative.memsetAsync(d, 0, 17, s));
        assertThrows(CudaException.class, () -> CudaNative.free(d + 4), "freeing inside an allocation");
        assertThrows(CudaException.class, () -> CudaNative.beginCapture(0), "capturing the legacy stream");
        CudaNative.beginCapture(s);
        assertThrows(CudaException.class, () -> CudaNative.streamSynchronize(s), "synchronising a capture");
        assertThrows(CudaException.class, () -> CudaNative.endCaptureAndInstantiate(s), "an invalidated capture");
      } finally {
        CudaNative.free(d);
        CudaNative.streamDestroy(s);
      }
      assertEquals(0, sim.device().liveBytes());
    }
    assertTrue(!CudaNative.simulated());
  }
}
