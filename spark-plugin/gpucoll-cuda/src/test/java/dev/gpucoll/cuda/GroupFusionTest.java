package dev.gpucoll.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.CollectiveBatch;
import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.core.batch.RecordedBatch;
import dev.gpucoll.cuda.GroupRoute.GroupStep;
import dev.gpucoll.cuda.eligibility.BufferRegistration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/** Which calls of a group fuse into one batch-kernel launch ({@link GroupRoute#group}), without a GPU. */
class GroupFusionTest {
  private static final GroupRoute FOUR_GPUS = GroupRouteTest.route(GroupRouteTest.cluster(1, 4, true), Map.of());

  /** Device buffers at distinct addresses, 1 MB apart, so nothing overlaps unless a test says so. */
  private static long next = 1L << 40;

  private static CommBuffer.Device buffer() {
    next += 1 << 20;
    return new CommBuffer.Device(next, 1 << 20);
  }

  private static List<GroupStep> plan(GroupRoute r, Consumer<CollectiveBatch> body) {
    return r.group(RecordedBatch.record(body).calls(), c -> BufferRegistration.UNKNOWN);
  }

  private static void allReduces(CollectiveBatch g, int calls, long count, DataType t, ReduceOp op) {
    for (int i = 0; i < calls; i++) {
      g.allReduce(buffer(), buffer(), count, t, op);
    }
  }

  /** "16f" for a fused run of 16 calls, "1" for a call alone. */
  private static String shape(List<GroupStep> steps) {
    List<String> out = new ArrayList<>();
    for (GroupStep s : steps) {
      out.add(s.calls() + (s.fused() ? "f" : ""));
    }
    return String.join(" ", out);
  }

  @Test
  void sixteenCallsOfFourKilobytesAreOneLaunch() {
    List<GroupStep> steps = plan(FOUR_GPUS, g -> allReduces(g, 16, 1024, DataType.FLOAT32, ReduceOp.SUM));
    assertEquals("16f", shape(steps));
    LaunchPlan p = steps.get(0).plan();
    assertEquals("gc_allreduce_batch_ll_f32", p.kernel());
    assertEquals(KernelTable.LL_MAX_BYTES, p.bytes()); // the whole inbox, no header slot
    assertEquals(KernelTable.gridForBytes(KernelTable.LL_MAX_BYTES), p.grid());
    assertEquals(dev.gpucoll.core.Algorithm.GPU_LL_ONESHOT, p.algorithm());
  }

  @Test
  void aRunEndsAtTheInboxOrTheCallLimit() {
    assertEquals("16f 1f", shape(plan(FOUR_GPUS, g -> allReduces(g, 17, 1024, DataType.FLOAT32, ReduceOp.SUM))));
    assertEquals("64f 6f", shape(plan(FOUR_GPUS, g -> allReduces(g, 70, 2, DataType.FLOAT32, ReduceOp.SUM))));
    // 4097 bytes take 513 slots: 15 calls fit the 8192 slots, the 16th does not.
    assertEquals("15f 1f", shape(plan(FOUR_GPUS, g -> allReduces(g, 16, 4097, DataType.UINT8, ReduceOp.MAX))));
    // One call of the inbox's size still fuses; with another byte it is not one-shot any more.
    assertEquals("1f", shape(plan(FOUR_GPUS, g -> allReduces(g, 1, 65536, DataType.INT8, ReduceOp.SUM))));
    assertEquals("1", shape(plan(FOUR_GPUS, g -> allReduces(g, 1, 65537, DataType.INT8, ReduceOp.SUM))));
  }

  @Test
  void typesOpsSizesAndOtherCollectivesSplitRuns() {
    List<GroupStep> steps = plan(FOUR_GPUS, g -> {
      allReduces(g, 3, 256, DataType.FLOAT32, ReduceOp.SUM);
      allReduces(g, 2, 256, DataType.BFLOAT16, ReduceOp.SUM);
      allReduces(g, 2, 256, DataType.BFLOAT16, ReduceOp.MAX);
      allReduces(g, 1, 1 << 16, DataType.FLOAT32, ReduceOp.SUM); // 256 KB: the sentinel two-shot kernel
      g.allGather(buffer(), buffer(), 16, DataType.FLOAT32);
      allReduces(g, 1, 0, DataType.FLOAT32, ReduceOp.SUM);       // empty: a no-op of its own
      allReduces(g, 2, 16, DataType.FLOAT32, ReduceOp.SUM);
    });
    assertEquals("3f 2f 2f 1 1 1 2f", shape(steps));
    assertEquals("gc_allreduce_batch_ll_bf16", steps.get(1).plan().kernel());
    assertEquals(10, steps.get(6).first());
    assertNull(steps.get(3).plan());
  }

  @Test
  void hostBuffersAndOneRankGroupsDoNotFuse() {
    assertEquals("1 1f", shape(plan(FOUR_GPUS, g -> {
      g.allReduce(CommBuffer.of(new float[4]), CommBuffer.of(new float[4]), 4, DataType.FLOAT32, ReduceOp.SUM);
      allReduces(g, 1, 4, DataType.FLOAT32, ReduceOp.SUM);
    })));
    GroupRoute one = GroupRouteTest.route(GroupRouteTest.cluster(1, 1, true), Map.of());
    assertEquals("1 1 1", shape(plan(one, g -> allReduces(g, 3, 1024, DataType.FLOAT32, ReduceOp.SUM))));
  }

  @Test
  void callsThatDependOnEachOtherDoNotShareALaunch() {
    CommBuffer.Device a = buffer();
    CommBuffer.Device b = buffer();
    CommBuffer.Device c = buffer();
    // in place on its own buffer: fine; b then read by the next call after being written: a new run
    assertEquals("2f 1f", shape(plan(FOUR_GPUS, g -> {
      g.allReduce(a, a, 256, DataType.FLOAT32, ReduceOp.SUM);
      g.allReduce(c, b, 256, DataType.FLOAT32, ReduceOp.SUM);
      g.allReduce(b, buffer(), 256, DataType.FLOAT32, ReduceOp.SUM);
    })));
    // two calls writing overlapping bytes; two calls reading the same input are independent
    CommBuffer.Device out = buffer();
    assertEquals("1f 1f", shape(plan(FOUR_GPUS, g -> {
      g.allReduce(buffer(), out, 256, DataType.FLOAT32, ReduceOp.SUM);
      g.allReduce(buffer(), new CommBuffer.Device(out.address() + 512, 4096), 256, DataType.FLOAT32, ReduceOp.SUM);
    })));
    CommBuffer.Device in = buffer();
    assertEquals("2f", shape(plan(FOUR_GPUS, g -> {
      g.allReduce(in, buffer(), 256, DataType.FLOAT32, ReduceOp.SUM);
      g.allReduce(in, buffer(), 256, DataType.FLOAT32, ReduceOp.SUM);
    })));
  }

  @Test
  void eightGpusSumTakesLl128SoOnlyOtherOpsFuse() {
    GroupRoute eight = GroupRouteTest.route(GroupRouteTest.cluster(1, 8, true), Map.of());
    assertEquals("1 1", shape(plan(eight, g -> allReduces(g, 2, 1024, DataType.FLOAT32, ReduceOp.SUM))));
    assertEquals("2f", shape(plan(eight, g -> allReduces(g, 2, 1024, DataType.FLOAT32, ReduceOp.MAX))));
  }

  @Test
  void everyRankRecordingTheSameBatchGetsTheSameSteps() {
    Consumer<CollectiveBatch> body = g -> {
      allReduces(g, 5, 100, DataType.INT32, ReduceOp.MIN);
      allReduces(g, 60, 300, DataType.INT32, ReduceOp.MIN); // 250 + 52 * 150 slots fit the inbox
    };
    List<String> shapes = new ArrayList<>();
    for (int rank = 0; rank < 4; rank++) {
      GroupRoute r = new GroupRoute(rank, GroupRouteTest.cluster(1, 4, true),
          dev.gpucoll.core.config.GpuCollConf.of(Map.of()).validate());
      shapes.add(shape(plan(r, body)));
    }
    assertEquals(List.of("57f 8f", "57f 8f", "57f 8f", "57f 8f"), shapes);
  }

  @Test
  void theBatchParameterPacksEachCallAtTheNextWholeSlot() {
    java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(KernelTable.BATCH_SIZE).order(java.nio.ByteOrder.LITTLE_ENDIAN);
    long[] counts = {3, 4, 1, 5};
    int slots = KernelAbi.writeBatch(b, 77, new long[] {10, 11, 12, 13}, new long[] {20, 21, 22, 23}, counts, 1, 3,
        DataType.FLOAT16);
    assertEquals(1 + 1 + 2, slots); // 8, 2 and 10 bytes
    assertEquals(3, b.getInt(KernelTable.BATCH_OFFSET_CALLS));
    assertEquals(slots, b.getInt(KernelTable.BATCH_OFFSET_SLOTS));
    assertEquals(77, b.getLong(KernelTable.BATCH_OFFSET_HASH));
    assertEquals(11, b.getLong(KernelTable.BATCH_OFFSET_SEND));
    assertEquals(23, b.getLong(KernelTable.BATCH_OFFSET_RECV + 16));
    assertEquals(1, b.getInt(KernelTable.BATCH_OFFSET_COUNT + 4));
    assertEquals(List.of(0, 1, 2), List.of(b.getInt(KernelTable.BATCH_OFFSET_FIRST), b.getInt(KernelTable.BATCH_OFFSET_FIRST + 4),
        b.getInt(KernelTable.BATCH_OFFSET_FIRST + 8)));
  }

  @Test
  void aMismatchRecordBecomesAMessageNamingTheRank() {
    java.nio.ByteBuffer control = java.nio.ByteBuffer.allocate(KernelAbi.CONTROL_BYTES).order(java.nio.ByteOrder.LITTLE_ENDIAN);
    control.putInt(KernelTable.ERR_OFFSET_CODE, KernelTable.ERR_BATCH_MISMATCH);
    control.putInt(KernelTable.ERR_OFFSET_PEER, 3);
    control.putInt(KernelTable.ERR_OFFSET_KERNEL, KernelTable.kernelId(dev.gpucoll.api.Collective.ALL_REDUCE,
        KernelTable.Protocol.LL_BATCH));
    control.putLong(KernelTable.ERR_OFFSET_EPOCH, 42);
    String m = KernelAbi.toException(control, 1, null).getMessage();
    assertTrue(m.contains("ranks recorded different batches in group(): rank 3's batch differs from rank 1's"), m);
    assertTrue(m.contains("allReduce/ll_batch at epoch 42"), m);
    control.putLong(KernelTable.ERR_OFFSET_DETAIL, 1);
    m = KernelAbi.toException(control, 1, null).getMessage();
    assertTrue(m.contains("rank 3 ran another call where rank 1 ran allReduces fused into one launch"), m);
  }
}
