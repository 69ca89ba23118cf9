package dev.gpucoll.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.PathChoice;
import dev.gpucoll.api.ReduceOp;
import org.junit.jupiter.api.Test;

class LaunchPlannerTest {
  final LaunchPlanner auto = new LaunchPlanner(0, 4, null);

  @Test
  void allReduceVariantBySize() {
    LaunchPlan small = auto.plan(Collective.ALL_REDUCE, DataType.FLOAT32, ReduceOp.SUM, 1);
    assertEquals("gc_allreduce_ll_f32", small.kernel());
    assertEquals(1, small.grid());
    assertEquals(512, small.block());
    assertEquals("gpu-ll-oneshot", small.algorithm());

    LaunchPlan edge = auto.plan(Collective.ALL_REDUCE, DataType.BFLOAT16, ReduceOp.MAX, 32768); // 64 KB
    assertEquals("gc_allreduce_ll_bf16", edge.kernel());
    assertEquals(16, edge.grid());

    LaunchPlan medium = auto.plan(Collective.ALL_REDUCE, DataType.FLOAT64, ReduceOp.PROD, 8193); // 64 KB + 8
    assertEquals("gc_allreduce_sentinel_f64", medium.kernel());
    assertEquals(KernelVariant.SENTINEL, medium.variant());
    assertEquals(16, medium.grid());

    LaunchPlan mb = auto.plan(Collective.ALL_REDUCE, DataType.INT32, ReduceOp.MIN, 262144); // 1 MB
    assertEquals("gc_allreduce_sentinel_i32", mb.kernel());
    assertEquals(16, mb.grid());

    LaunchPlan large = auto.plan(Collective.ALL_REDUCE, DataType.FLOAT16, ReduceOp.AVG, 32L << 20); // 64 MB
    assertEquals("gc_allreduce_pipe_f16", large.kernel());
    assertEquals(KernelAbi.PIPE_BLOCKS, large.grid());
  }

  @Test
  void ll128FromTheConfiguredRankCountForSumAndAvg() {
    LaunchPlanner eight = new LaunchPlanner(0, 8, null);
    assertEquals("gc_allreduce_ll128_f32", eight.plan(Collective.ALL_REDUCE, DataType.FLOAT32, ReduceOp.SUM, 10).kernel());
    assertEquals("gc_allreduce_ll128_bf16", eight.plan(Collective.ALL_REDUCE, DataType.BFLOAT16, ReduceOp.AVG, 1 << 18).kernel());
    assertEquals("gc_allreduce_ll_f32", eight.plan(Collective.ALL_REDUCE, DataType.FLOAT32, ReduceOp.MAX, 10).kernel());
    assertEquals("gc_allreduce_pipe_f32", eight.plan(Collective.ALL_REDUCE, DataType.FLOAT32, ReduceOp.SUM, 1 << 20).kernel());
    // f64: 15 elements per line, 16384 lines -> 245760 elements; 1 MB of f64 is 131072: fits.
    assertEquals("gc_allreduce_ll128_f64", eight.plan(Collective.ALL_REDUCE, DataType.FLOAT64, ReduceOp.SUM, 131072).kernel());
    LaunchPlanner tuned = new LaunchPlanner(0, 8, null, 4096, 1 << 20, 16, KernelAbi.LL_MAX_BYTES);
    assertEquals("gc_allreduce_sentinel_f32", tuned.plan(Collective.ALL_REDUCE, DataType.FLOAT32, ReduceOp.SUM, 1025).kernel());
    assertEquals("gc_allreduce_ll_f32", tuned.plan(Collective.ALL_REDUCE, DataType.FLOAT32, ReduceOp.SUM, 1024).kernel());
    LaunchPlanner beyondCapacity = new LaunchPlanner(0, 2, null, 1 << 20, 1 << 30, 16, KernelAbi.LL_MAX_BYTES);
    assertEquals("gc_allreduce_sentinel_f32",
        beyondCapacity.plan(Collective.ALL_REDUCE, DataType.FLOAT32, ReduceOp.SUM, 16385).kernel(), "capped at LL capacity");
    assertEquals("gc_allreduce_pipe_f32",
        beyondCapacity.plan(Collective.ALL_REDUCE, DataType.FLOAT32, ReduceOp.SUM, 262145).kernel(), "capped at sentinel capacity");
  }

  @Test
  void everyReductionTypeHasAKernelSuffix() {
    String[] expect = {"f32", "f64", "f16", "bf16", "i32", "i64", "i8", "u8"};
    DataType[] types = {DataType.FLOAT32, DataType.FLOAT64, DataType.FLOAT16, DataType.BFLOAT16, DataType.INT32,
        DataType.INT64, DataType.INT8, DataType.UINT8};
    for (int i = 0; i < types.length; i++) {
      assertEquals("gc_reducescatter_ll_" + expect[i],
          auto.plan(Collective.REDUCE_SCATTER, types[i], ReduceOp.SUM, 100).kernel());
      assertEquals("gc_allreduce_ll_" + expect[i], auto.plan(Collective.ALL_REDUCE, types[i], ReduceOp.MAX, 10).kernel());
    }
  }

  @Test
  void eightBitReductionsNeverTakeLl128() {
    LaunchPlanner manyRanks = new LaunchPlanner(0, 8, null, KernelAbi.LL_MAX_BYTES, KernelAbi.SENT_MAX_BYTES, 4,
        KernelAbi.LL_MAX_BYTES);
    assertEquals("gc_allreduce_ll128_f32", manyRanks.plan(Collective.ALL_REDUCE, DataType.FLOAT32, ReduceOp.SUM, 10).kernel());
    assertEquals("gc_allreduce_ll_i8", manyRanks.plan(Collective.ALL_REDUCE, DataType.INT8, ReduceOp.SUM, 10).kernel());
    assertEquals("gc_allreduce_ll_u8", manyRanks.plan(Collective.ALL_REDUCE, DataType.UINT8, ReduceOp.AVG, 10).kernel());
    LaunchPlanner forced = new LaunchPlanner(0, 2, KernelVariant.LL128);
    CollectiveException e = assertThrows(CollectiveException.class,
        () -> forced.plan(Collective.ALL_REDUCE, DataType.UINT8, ReduceOp.SUM, 10));
    assertTrue(e.getMessage().contains("UINT8") && e.getMessage().contains("ll128"), e.getMessage());
    assertEquals(Collective.ALL_REDUCE, e.collective());
  }

  @Test
  void dataMovementKernelsAreTypeless() {
    assertEquals("gc_allgather_ll", auto.plan(Collective.ALL_GATHER, DataType.INT8, ReduceOp.SUM, 5).kernel());
    assertEquals("gc_alltoall_ll", auto.plan(Collective.ALL_TO_ALL, DataType.FLOAT64, ReduceOp.SUM, 8192).kernel());
    assertEquals("gc_alltoall_pipe", auto.plan(Collective.ALL_TO_ALL, DataType.FLOAT64, ReduceOp.SUM, 8193).kernel());
    assertEquals("gc_broadcast_pipe", auto.plan(Collective.BROADCAST, DataType.UINT8, ReduceOp.SUM, 65537).kernel());
    assertEquals("gc_reducescatter_pipe_f32",
        auto.plan(Collective.REDUCE_SCATTER, DataType.FLOAT32, ReduceOp.SUM, 16385).kernel());
    LaunchPlan b = auto.plan(Collective.BARRIER, DataType.INT32, ReduceOp.SUM, 0);
    assertEquals("gc_barrier", b.kernel());
    assertEquals(1, b.grid());
  }

  @Test
  void acrossGpusDataMovementLeavesLlEarlierButAllReduceDoesNot() {
    LaunchPlanner across = new LaunchPlanner(0, 2, null, KernelAbi.LL_MAX_BYTES, KernelAbi.SENT_MAX_BYTES, 8,
        LaunchPlanner.LL_MOVEMENT_MAX_ACROSS_GPUS);
    assertEquals("gc_allgather_ll", across.plan(Collective.ALL_GATHER, DataType.UINT8, ReduceOp.SUM, 16 << 10).kernel());
    LaunchPlan over = across.plan(Collective.ALL_GATHER, DataType.UINT8, ReduceOp.SUM, (16 << 10) + 1, true);
    assertEquals("gc_allgather_pipe", over.kernel());
    assertTrue(over.reasons().stream().anyMatch(r -> r.contains("LL is slower from here across GPUs")), over.reasons().toString());
    assertEquals("gc_alltoall_pipe", across.plan(Collective.ALL_TO_ALL, DataType.FLOAT32, ReduceOp.SUM, 16 << 10).kernel());
    // allReduce keeps its own one-shot threshold (LL was fast up to 32 KB across two H200s).
    assertEquals("gc_allreduce_ll_f32", across.plan(Collective.ALL_REDUCE, DataType.FLOAT32, ReduceOp.SUM, 16 << 10).kernel());
  }

  @Test
  void allToAllvTakesThePipeUnlessLlIsForced() {
    // Ranks know only their own counts: choosing LL by local size could split the group between kernels.
    long[] send = {10, 20, 30, 40, 0, 0, 0, 0};
    long[] recv = {1, 1, 1, 1, 1, 1, 1, 16384};
    LaunchPlan p = auto.planAllToAllv(DataType.FLOAT32, send, recv);
    assertEquals("gc_alltoallv_pipe", p.kernel());
    assertEquals(KernelAbi.PIPE_BLOCKS, p.grid());
    LaunchPlanner ll = new LaunchPlanner(0, 8, KernelVariant.LL);
    LaunchPlan forced = ll.planAllToAllv(DataType.FLOAT32, send, recv);
    assertEquals("gc_alltoallv_ll", forced.kernel());
    assertEquals(65536, forced.bytes());
    assertEquals(16, forced.grid());
    recv[7] = 16385;
    assertThrows(CollectiveException.class, () -> ll.planAllToAllv(DataType.FLOAT32, send, recv));
    assertThrows(CollectiveException.class,
        () -> new LaunchPlanner(0, 8, KernelVariant.SENTINEL).planAllToAllv(DataType.FLOAT32, send, recv));
  }

  @Test
  void forcedVariantIsNeverSilentlyReplaced() {
    LaunchPlanner ll = new LaunchPlanner(2, 4, KernelVariant.LL);
    CollectiveException e = assertThrows(CollectiveException.class,
        () -> ll.plan(Collective.ALL_REDUCE, DataType.FLOAT32, ReduceOp.SUM, 16385));
    assertTrue(e.getMessage().contains("at most 65536"), e.getMessage());
    assertEquals(2, e.rank());

    LaunchPlanner ll128 = new LaunchPlanner(0, 8, KernelVariant.LL128);
    assertEquals("gc_allreduce_ll128_f32", ll128.plan(Collective.ALL_REDUCE, DataType.FLOAT32, ReduceOp.SUM, 1000).kernel());
    assertThrows(CollectiveException.class, () -> ll128.plan(Collective.ALL_REDUCE, DataType.FLOAT32, ReduceOp.MAX, 10));
    assertThrows(CollectiveException.class,
        () -> ll128.plan(Collective.ALL_REDUCE, DataType.FLOAT64, ReduceOp.SUM, KernelAbi.ll128MaxCount(DataType.FLOAT64) + 1));
    assertThrows(CollectiveException.class, () -> ll128.plan(Collective.ALL_GATHER, DataType.FLOAT32, ReduceOp.SUM, 10));

    LaunchPlanner b2 = new LaunchPlanner(0, 8, KernelVariant.BARRIER2);
    LaunchPlan p = b2.plan(Collective.ALL_REDUCE, DataType.FLOAT32, ReduceOp.SUM, 1 << 20);
    assertEquals("gc_allreduce_barrier2_f32", p.kernel());
    assertEquals(16, p.grid());

    LaunchPlanner pipe = new LaunchPlanner(0, 8, KernelVariant.PIPE);
    assertEquals("gc_allgather_pipe", pipe.plan(Collective.ALL_GATHER, DataType.FLOAT32, ReduceOp.SUM, 1).kernel());
    assertEquals(KernelAbi.PIPE_BLOCKS, pipe.plan(Collective.ALL_GATHER, DataType.FLOAT32, ReduceOp.SUM, 1).grid());
  }

  @Test
  void algorithmSettingMapsToVariants() {
    assertEquals(KernelVariant.LL, LaunchPlanner.fromAlgorithmSetting("oneshot"));
    assertEquals(KernelVariant.SENTINEL, LaunchPlanner.fromAlgorithmSetting("twoshot"));
    assertEquals(KernelVariant.LL128, LaunchPlanner.fromAlgorithmSetting("ll128"));
    assertEquals(null, LaunchPlanner.fromAlgorithmSetting("auto"));
  }

  @Test
  void explainGivesReasonsAndKernel() {
    PathChoice c = auto.explain(Collective.ALL_REDUCE, 32 << 10);
    assertEquals("gpu-ll-oneshot", c.algorithm());
    assertTrue(c.reasons().stream().anyMatch(r -> r.contains("gc_allreduce_ll_f32")), c.reasons().toString());
    assertEquals("gpu-pipe", auto.explain(Collective.ALL_GATHER, 1 << 20).algorithm());
    assertEquals("unsupported", new LaunchPlanner(0, 8, KernelVariant.LL128).explain(Collective.BROADCAST, 8).algorithm());
  }

  @Test
  void rankCountLimits() {
    assertThrows(IllegalArgumentException.class, () -> new LaunchPlanner(0, 17, null));
    assertThrows(IllegalArgumentException.class, () -> new LaunchPlanner(0, 0, null));
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
