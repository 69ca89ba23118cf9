package dev.gpucoll.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.core.Algorithm;
import dev.gpucoll.cuda.KernelTable.Kernel;
import dev.gpucoll.cuda.KernelTable.Protocol;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** What the generated kernel table says, read through its Java API. */
class KernelTableTest {
  @Test
  void reductionKernelsAreNamedPerTypeAndMovementKernelsOnce() {
    Kernel ll = KernelTable.kernel(Collective.ALL_REDUCE, Protocol.LL);
    assertEquals("gc_allreduce_ll_f32", ll.name(DataType.FLOAT32));
    assertEquals("gc_allreduce_ll_bf16", ll.name(DataType.BFLOAT16));
    Kernel gather = KernelTable.kernel(Collective.ALL_GATHER, Protocol.PIPE);
    for (DataType t : DataType.values()) {
      assertEquals("gc_allgather_pipe", gather.name(t));
    }
    Kernel barrier = KernelTable.kernel(Collective.BARRIER, Protocol.FLAG_BARRIER);
    assertEquals("gc_barrier", barrier.name(DataType.FLOAT32));
    assertEquals(Algorithm.GPU_BARRIER, barrier.algorithm());
    assertEquals(1, barrier.grid(1 << 20));
    assertNull(KernelTable.kernel(Collective.BARRIER, Protocol.LL), "the barrier is not an LL kernel");
  }

  @Test
  void ll128TakesNoEightBitTypesAndOnlySumOrAvg() {
    Kernel k = KernelTable.kernel(Collective.ALL_REDUCE, Protocol.LL128);
    assertFalse(k.supports(DataType.INT8));
    assertFalse(k.supports(DataType.UINT8));
    assertNull(k.name(DataType.UINT8));
    assertEquals(0, k.capacityElements(DataType.INT8));
    assertTrue(k.supports(ReduceOp.SUM) && k.supports(ReduceOp.AVG));
    assertFalse(k.supports(ReduceOp.MAX) || k.supports(ReduceOp.PROD) || k.supports(ReduceOp.MIN));
    assertEquals(16384L * 30, k.capacityElements(DataType.FLOAT32));
    assertEquals(16384L * 30, k.capacityElements(DataType.FLOAT16), "16-bit floats accumulate in fp32");
    assertEquals(16384L * 15, k.capacityElements(DataType.FLOAT64));
  }

  @Test
  void capacitiesAreElementsOfTheTableBytes() {
    Kernel ll = KernelTable.kernel(Collective.ALL_REDUCE, Protocol.LL);
    assertEquals(KernelTable.LL_MAX_BYTES / 4, ll.capacityElements(DataType.FLOAT32));
    assertEquals(KernelTable.LL_MAX_BYTES, ll.capacityElements(DataType.UINT8));
    assertEquals(KernelTable.SENT_MAX_BYTES / 8,
        KernelTable.kernel(Collective.ALL_REDUCE, Protocol.SENTINEL).capacityElements(DataType.INT64));
    assertEquals(Long.MAX_VALUE, KernelTable.kernel(Collective.ALL_REDUCE, Protocol.PIPE).capacityElements(DataType.INT8));
    assertEquals(KernelTable.LL_MAX_BYTES / 2,
        KernelTable.kernel(Collective.ALL_TO_ALLV, Protocol.LL).capacityElements(DataType.FLOAT16));
  }

  @Test
  void gridRules() {
    Kernel pipe = KernelTable.kernel(Collective.REDUCE_SCATTER, Protocol.PIPE);
    assertEquals(KernelTable.PIPE_BLOCKS, pipe.grid(8));
    assertTrue(pipe.sameGridOnEveryRank());
    Kernel ll = KernelTable.kernel(Collective.ALL_REDUCE, Protocol.LL);
    assertFalse(ll.sameGridOnEveryRank());
    assertEquals(1, ll.grid(0));
    assertEquals(1, ll.grid(4096));
    assertEquals(2, ll.grid(4097));
    assertEquals(16, ll.grid(65536));
    assertEquals(16, ll.grid(64L << 20));
  }

  @Test
  void theBatchKernelPacksSixteenCallsOfFourKilobytesWithinTheParameterLimit() {
    Kernel b = KernelTable.kernel(Collective.ALL_REDUCE, Protocol.LL_BATCH);
    assertTrue(b.packed());
    assertEquals("gc_allreduce_batch_ll_bf16", b.name(DataType.BFLOAT16));
    assertEquals(KernelTable.LL_MAX_BYTES, b.capacityElements(DataType.UINT8));
    assertTrue(16 * 4096 <= KernelTable.LL_MAX_BYTES && KernelTable.LL_SLOTS * 8 == KernelTable.LL_MAX_BYTES);
    assertTrue(KernelTable.ARGS_SIZE + KernelTable.BATCH_SIZE <= 4096, "kernel parameters above 4 KB");
    for (Kernel k : KernelTable.kernels()) {
      assertEquals(k == b, k.packed(), k.toString());
    }
  }

  @Test
  void theProductTableHoldsNoComparisonKernel() {
    // The two-barrier comparison kernels are the benchmark build's (the table's "bench" section).
    for (Protocol p : Protocol.values()) {
      assertTrue(!p.abiName().equals("barrier2") && !p.name().equals("TWO_BARRIER"), p.name());
    }
    for (Kernel k : KernelTable.kernels()) {
      for (DataType t : DataType.values()) {
        assertTrue(k.name(t) == null || !k.name(t).contains("barrier2"), k.name(t));
      }
    }
  }

  @Test
  void algorithmsAndKernelIdsLeadBackToTheirKernel() {
    Set<Integer> ids = new HashSet<>();
    for (Kernel k : KernelTable.kernels()) {
      assertTrue(ids.add(k.id()), "two kernels share id " + k.id());
      assertSame(k, KernelTable.ofKernelId(k.id()));
      // kernel(c, algorithm) names the call-by-call kernel; a batch kernel runs the same algorithm
      // packed, the pair kernel on value-index pairs
      assertSame(k.packed() || k.pairs() ? KernelTable.kernel(k.collective(), Protocol.LL) : k,
          KernelTable.kernel(k.collective(), k.algorithm()));
      assertEquals(k.collective(), KernelTable.collectiveOfId(k.id() / 16));
    }
    assertEquals(Protocol.SENTINEL,
        KernelTable.kernel(Collective.ALL_REDUCE, Algorithm.GPU_SENTINEL_TWOSHOT).protocol());
    assertNull(KernelTable.kernel(Collective.ALL_REDUCE, Algorithm.NCCL));
    assertEquals("allReduce/ll", KernelAbi.kernelName(KernelTable.kernelId(Collective.ALL_REDUCE, Protocol.LL)));
    assertEquals("barrier/flag_barrier",
        KernelAbi.kernelName(KernelTable.kernelId(Collective.BARRIER, Protocol.FLAG_BARRIER)));
  }

  @Test
  void everyForceableGpuAlgorithmHasAnAllReduceKernel() {
    for (Algorithm a : Algorithm.values()) {
      if (a.forceable() && a.id().startsWith("gpu-")) {
        Kernel k = KernelTable.kernel(Collective.ALL_REDUCE, a);
        assertTrue(k != null, a.id());
      }
    }
  }
}
