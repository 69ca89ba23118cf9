package dev.gpucoll.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.core.Algorithm;
import dev.gpucoll.cuda.KernelTable.Protocol;
import org.junit.jupiter.api.Test;

/**
 * The plan the route hands the launch: kernel name, grid and capacity from the kernel table, one unit
 * (elements of a type) throughout; which protocol runs is GroupRouteTest's.
 */
class RoutePlanTest {
  private static LaunchPlan plan(Collective c, Protocol p, DataType t, ReduceOp op, long count) {
    return GroupRoute.plan(0, c, p, t, op, count);
  }

  @Test
  void allReduceKernelAndGridBySize() {
    LaunchPlan small = plan(Collective.ALL_REDUCE, Protocol.LL, DataType.FLOAT32, ReduceOp.SUM, 1);
    assertEquals("gc_allreduce_ll_f32", small.kernel());
    assertEquals(1, small.grid());
    assertEquals(512, small.block());
    assertEquals(Algorithm.GPU_LL_ONESHOT, small.algorithm());
    assertEquals(8, plan(Collective.ALL_REDUCE, Protocol.LL, DataType.BFLOAT16, ReduceOp.MAX, 16384).grid());
    assertEquals(16, plan(Collective.ALL_REDUCE, Protocol.LL, DataType.BFLOAT16, ReduceOp.MAX, 32768).grid());
    LaunchPlan medium = plan(Collective.ALL_REDUCE, Protocol.SENTINEL, DataType.FLOAT64, ReduceOp.PROD, 4097);
    assertEquals("gc_allreduce_sentinel_f64", medium.kernel());
    assertEquals(9, medium.grid());
    assertEquals(16, plan(Collective.ALL_REDUCE, Protocol.SENTINEL, DataType.INT32, ReduceOp.MIN, 262144).grid());
    LaunchPlan large = plan(Collective.ALL_REDUCE, Protocol.PIPE, DataType.FLOAT16, ReduceOp.AVG, 32L << 20);
    assertEquals("gc_allreduce_pipe_f16", large.kernel());
    assertEquals(KernelTable.PIPE_BLOCKS, large.grid());
    assertEquals(4097, medium.count());
    assertEquals(4097 * 8, medium.bytes());
    CollectiveException none = assertThrows(CollectiveException.class,
        () -> plan(Collective.ALL_GATHER, Protocol.SENTINEL, DataType.FLOAT32, ReduceOp.SUM, 1 << 10));
    assertTrue(none.getMessage().contains("has no kernel on the sentinel protocol; it has [ll, pipe]"), none.getMessage());
  }

  @Test
  void everyReductionTypeHasAKernelSuffix() {
    String[] expect = {"f32", "f64", "f16", "bf16", "i32", "i64", "i8", "u8"};
    DataType[] types = {DataType.FLOAT32, DataType.FLOAT64, DataType.FLOAT16, DataType.BFLOAT16, DataType.INT32,
        DataType.INT64, DataType.INT8, DataType.UINT8};
    for (int i = 0; i < types.length; i++) {
      assertEquals("gc_reducescatter_ll_" + expect[i],
          plan(Collective.REDUCE_SCATTER, Protocol.LL, types[i], ReduceOp.SUM, 100).kernel());
      assertEquals("gc_allreduce_ll_" + expect[i],
          plan(Collective.ALL_REDUCE, Protocol.LL, types[i], ReduceOp.MAX, 10).kernel());
    }
  }

  @Test
  void eightBitTypesHaveNoLl128Kernel() {
    CollectiveException e = assertThrows(CollectiveException.class,
        () -> plan(Collective.ALL_REDUCE, Protocol.LL128, DataType.UINT8, ReduceOp.SUM, 10));
    assertTrue(e.getMessage().contains("UINT8") && e.getMessage().contains("ll128"), e.getMessage());
    assertEquals(Collective.ALL_REDUCE, e.collective());
  }

  @Test
  void dataMovementKernelsAreTypeless() {
    assertEquals("gc_allgather_ll", plan(Collective.ALL_GATHER, Protocol.LL, DataType.INT8, ReduceOp.SUM, 5).kernel());
    assertEquals("gc_alltoall_pipe", plan(Collective.ALL_TO_ALL, Protocol.PIPE, DataType.FLOAT64, ReduceOp.SUM,
        8193).kernel());
    assertEquals(Algorithm.GPU_LL, plan(Collective.BROADCAST, Protocol.LL, DataType.UINT8, ReduceOp.SUM, 9)
        .algorithm());
    LaunchPlan b = GroupRoute.plan(0, Collective.BARRIER, KernelTable.Protocol.FLAG_BARRIER, DataType.INT32, ReduceOp.SUM, 0);
    assertEquals("gc_barrier", b.kernel());
    assertEquals(1, b.grid());
    assertEquals(Algorithm.GPU_BARRIER, b.algorithm());
  }

  @Test
  void aVariantThatCannotTakeTheCallIsAnError() {
    CollectiveException e = assertThrows(CollectiveException.class,
        () -> GroupRoute.plan(2, Collective.ALL_REDUCE, KernelTable.Protocol.LL, DataType.FLOAT32, ReduceOp.SUM, 16385));
    assertTrue(e.getMessage().contains("at most 16384 FLOAT32 elements (65536 bytes)"), e.getMessage());
    assertEquals(2, e.rank());
    assertEquals("gc_allreduce_ll128_f32",
        plan(Collective.ALL_REDUCE, Protocol.LL128, DataType.FLOAT32, ReduceOp.SUM, 1000).kernel());
    assertThrows(CollectiveException.class,
        () -> plan(Collective.ALL_REDUCE, Protocol.LL128, DataType.FLOAT32, ReduceOp.MAX, 10));
    assertThrows(CollectiveException.class, () -> plan(Collective.ALL_REDUCE, Protocol.LL128, DataType.FLOAT64,
        ReduceOp.SUM, KernelTable.kernel(Collective.ALL_REDUCE, KernelTable.Protocol.LL128).capacityElements(DataType.FLOAT64) + 1));
    assertThrows(CollectiveException.class,
        () -> plan(Collective.ALL_GATHER, Protocol.LL128, DataType.FLOAT32, ReduceOp.SUM, 10));
    assertThrows(CollectiveException.class,
        () -> plan(Collective.ALL_TO_ALLV, Protocol.SENTINEL, DataType.FLOAT32, ReduceOp.SUM, 10));
    assertThrows(CollectiveException.class,
        () -> plan(Collective.ALL_TO_ALLV, Protocol.LL, DataType.FLOAT32, ReduceOp.SUM, 16385));
    assertEquals(KernelTable.PIPE_BLOCKS, plan(Collective.ALL_GATHER, Protocol.PIPE, DataType.FLOAT32, ReduceOp.SUM,
        1).grid());
  }

  @Test
  void epochsStartAtOneAndAlternateHalves() {
    EpochCounter e = new EpochCounter();
    assertEquals(0, e.last());
    long first = e.next();
    assertEquals(1, first);
    int previousHalf = EpochCounter.half(first);
    for (int i = 0; i < 1000; i++) {
      long next = e.next();
      assertEquals(first + i + 1, next);
      assertEquals(1 - previousHalf, EpochCounter.half(next), "consecutive launches use different halves");
      assertEquals(EpochCounter.half(next), EpochCounter.half(EpochCounter.reusedFrom(next)));
      previousHalf = EpochCounter.half(next);
    }
    assertEquals(1001, e.last());
  }
}
