package dev.gpucoll.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.LocOp;
import dev.gpucoll.api.PairType;
import dev.gpucoll.api.PathChoice;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.core.Algorithm;
import dev.gpucoll.core.config.GpuCollConf;
import dev.gpucoll.core.spi.MemberInfo;
import dev.gpucoll.cuda.GroupRoute.Kind;
import dev.gpucoll.cuda.GroupRoute.Route;
import dev.gpucoll.cuda.eligibility.BufferRegistration;
import dev.gpucoll.cuda.eligibility.FactKeys;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Every branch of the route, without a GPU: groups are built from synthetic rendezvous facts. */
class GroupRouteTest {
  static String bus(int gpu) {
    return String.format("0000:%02x:00.0", 0x10 + gpu);
  }

  /** {@code perHost} ranks on each of {@code hosts} hosts, one process per GPU, NVLink inside a host. */
  static List<MemberInfo> cluster(int hosts, int perHost, boolean p2p) {
    List<MemberInfo> out = new ArrayList<>();
    int rank = 0;
    for (int h = 0; h < hosts; h++) {
      for (int g = 0; g < perHost; g++) {
        Map<String, String> f = new LinkedHashMap<>();
        f.put(FactKeys.GPU_UUID, "GPU-" + h + "-" + g);
        f.put(FactKeys.GPU_PCI_BUS_ID, bus(g));
        f.put(FactKeys.GPU_VMM, "1");
        List<String> peers = new ArrayList<>();
        for (int o = 0; o < perHost; o++) {
          if (o != g) {
            peers.add(bus(o) + (p2p ? "|1|1" : "|0|0"));
          }
        }
        f.put(FactKeys.GPU_PEERS, String.join(",", peers));
        f.put(FactKeys.CUDA_DRIVER_VERSION, "13000");
        f.put(FactKeys.NCCL_VERSION, "22803");
        out.add(new MemberInfo(rank++, "host-" + h, (100 + g) + "@host-" + h, f));
      }
    }
    return out;
  }

  /** {@code n} ranks on one GPU: threads of one process, or one process each. */
  static List<MemberInfo> oneGpu(int n, boolean oneProcess) {
    MemberInfo m = cluster(1, 1, true).get(0);
    List<MemberInfo> out = new ArrayList<>();
    for (int r = 0; r < n; r++) {
      out.add(new MemberInfo(r, m.host(), oneProcess ? m.processId() : (900 + r) + "@" + m.host(), m.facts()));
    }
    return out;
  }

  static GroupRoute route(List<MemberInfo> ms, Map<String, String> conf) {
    return new GroupRoute(0, ms, GpuCollConf.of(conf).validate());
  }

  static String algorithm(GroupRoute r, Collective c, long bytes) {
    return r.explain(c, bytes).algorithm();
  }

  @ParameterizedTest(name = "{0} ranks x {1} hosts, {2} {3} B -> {4}")
  @CsvSource({
      "4, 1, ALL_REDUCE,     1024,     gpu-ll-oneshot",
      "4, 1, ALL_REDUCE,     65536,    gpu-ll-oneshot",
      "4, 1, ALL_REDUCE,     65537,    gpu-sentinel-twoshot",
      "4, 1, ALL_REDUCE,     1048576,  gpu-sentinel-twoshot",
      "4, 1, ALL_REDUCE,     1048577,  nccl-symmetric",
      "8, 1, ALL_REDUCE,     4096,     gpu-ll128-atomic",
      "4, 1, ALL_GATHER,     16384,    gpu-ll",
      "4, 1, ALL_GATHER,     16385,    gpu-pipe",
      "4, 1, ALL_GATHER,     8388608,  nccl-zero-cta",
      "4, 1, ALL_TO_ALL,     8388608,  nccl-zero-cta",
      "4, 1, ALL_TO_ALLV,    1024,     gpu-pipe",
      "4, 1, BARRIER,        0,        gpu-barrier",
      "4, 2, ALL_REDUCE,     1024,     nccl",
      "4, 2, ALL_REDUCE,     8388608,  nccl",
      "4, 2, ALL_GATHER,     1024,     nccl",
      "4, 2, ALL_TO_ALLV,    1024,     nccl",
      "4, 2, BARRIER,        0,        nccl-barrier",
      "1, 1, ALL_GATHER,     8388608,  one-rank-copy",
      "1, 1, ALL_REDUCE,     1024,     one-rank-copy",
      "1, 1, ALL_TO_ALLV,    1024,     one-rank-copy",
      "1, 1, BARRIER,        0,        one-rank-copy"})
  void choosesBySizeAndTopology(int perHost, int hosts, Collective c, long bytes, String expected) {
    PathChoice p = route(cluster(hosts, perHost, true), Map.of()).explain(c, bytes);
    assertEquals(expected, p.algorithm(), p.reasons().toString());
    assertTrue(!p.reasons().isEmpty());
  }

  /** A one-rank group copies, unless a kernel variant or an algorithm is forced (the checks time our kernels). */
  @Test
  void oneRankCopiesUnlessForced() {
    GroupRoute plain = route(cluster(1, 1, true), Map.of());
    assertEquals(Kind.ONE_RANK, plain.route(Collective.ALL_REDUCE, 4, DataType.FLOAT32, ReduceOp.AVG,
        BufferRegistration.UNKNOWN).kind());
    assertTrue(plain.explain(Collective.ALL_REDUCE, 4).reasons().get(0).startsWith("one rank"));
    GroupRoute forcedVariant = new GroupRoute(0, cluster(1, 1, true), variant("ll"));
    Route r = forcedVariant.route(Collective.ALL_REDUCE, 4, DataType.FLOAT32, ReduceOp.SUM, BufferRegistration.UNKNOWN);
    assertEquals(Kind.KERNEL, r.kind());
    assertEquals("gc_allreduce_ll_f32", r.plan().kernel());
    GroupRoute forcedNccl = route(cluster(1, 1, true), Map.of("spark.gpucoll.algorithm", "nccl"));
    assertEquals(Kind.NCCL, forcedNccl.route(Collective.ALL_REDUCE, 4, DataType.FLOAT32, ReduceOp.SUM,
        BufferRegistration.UNKNOWN).kind());
  }

  /** The memoized per-call answer is the one explain() reaches, and repeated calls reuse it. */
  @Test
  void memoizedRoutesMatchExplain() {
    for (int n : new int[] {1, 2, 8}) {
      GroupRoute r = route(cluster(1, n, true), Map.of());
      for (Collective c : Collective.values()) {
        for (long b : new long[] {0, 8, 4096, 64 << 10, 1 << 20, 256L << 20}) {
          Route first = r.route(c, b / 4, DataType.FLOAT32, ReduceOp.SUM, BufferRegistration.UNKNOWN);
          assertEquals(r.explain(c, b).algorithm(), first.algorithm().id(), c + " " + b + " B on " + n + " ranks");
          assertTrue(first == r.route(c, b / 4, DataType.FLOAT32, ReduceOp.SUM, BufferRegistration.UNKNOWN));
        }
      }
    }
    assertEquals(-1, GroupRoute.routeKey(Collective.ALL_REDUCE, 1L << 50, DataType.FLOAT32, ReduceOp.SUM,
        BufferRegistration.UNKNOWN));
  }

  @Test
  void routeOfACallCarriesTheKernelPlan() {
    GroupRoute r = route(cluster(1, 4, true), Map.of());
    Route small = r.route(Collective.ALL_REDUCE, 2048, DataType.BFLOAT16, ReduceOp.MAX, BufferRegistration.NONE);
    assertEquals(Kind.KERNEL, small.kind());
    assertEquals("gc_allreduce_ll_bf16", small.plan().kernel());
    Route large = r.route(Collective.ALL_GATHER, 2 << 20, DataType.FLOAT32, ReduceOp.SUM, BufferRegistration.NONE);
    assertEquals(Kind.NCCL, large.kind());
    assertEquals(Algorithm.NCCL, large.algorithm(), "unregistered buffers: no copy engines");
    assertNull(large.plan());
    assertEquals(Algorithm.NCCL_ZERO_CTA,
        r.route(Collective.ALL_GATHER, 2 << 20, DataType.FLOAT32, ReduceOp.SUM, BufferRegistration.SEND_AND_RECV)
            .algorithm());
    assertTrue(r.formsNccl() && r.kernelsOn() && !r.staged());
  }

  @Test
  void reasonsExplainTheNcclPathAndZeroCtaVerdict() {
    // Without buffer facts the prediction assumes registered windows and says so.
    PathChoice p = route(cluster(1, 4, true), Map.of()).explain(Collective.ALL_REDUCE, 8 << 20);
    assertEquals("nccl-symmetric", p.algorithm());
    assertTrue(p.reasons().get(0).contains("gpu.twoShotMaxBytes"), p.reasons().toString());
    assertTrue(p.reasons().stream().anyMatch(r -> r.startsWith("zero-cta allReduce: not eligible: COLLECTIVE_NEVER_CE")),
        p.reasons().toString());
  }

  @Test
  void noP2pSendsEverySizeToNccl() {
    PathChoice p = route(cluster(1, 2, false), Map.of()).explain(Collective.ALL_REDUCE, 1024);
    assertEquals("nccl", p.algorithm());
    assertTrue(p.reasons().get(0).contains("no CUDA P2P"), p.reasons().toString());
  }

  @Test
  void processesSharingAGpuAreStagedAndFormNoNccl() {
    GroupRoute r = route(oneGpu(2, false), Map.of());
    assertTrue(r.staged() && !r.formsNccl());
    PathChoice p = r.explain(Collective.ALL_REDUCE, 1024);
    assertEquals("gpu-staged-host", p.algorithm());
    assertTrue(p.reasons().get(0).contains("time-slice"), p.reasons().toString());
    assertEquals(Kind.STAGED, r.route(Collective.BARRIER, 0, DataType.INT32, ReduceOp.SUM,
        BufferRegistration.UNKNOWN).kind());
  }

  @Test
  void ranksOfOneProcessSharingAGpuAreStagedSoCudaFreeCannotDeadlock() {
    GroupRoute r = route(oneGpu(2, true), Map.of());
    assertTrue(r.staged(), r.findings().toString());
    PathChoice p = r.explain(Collective.BROADCAST, 1024);
    assertEquals("gpu-staged-host", p.algorithm());
    assertTrue(p.reasons().get(0).contains("cudaFree"), p.reasons().toString());
    assertTrue(r.findings().stream().anyMatch(f -> f.startsWith("spin kernels disabled: ranks 0,1 share")),
        r.findings().toString());
  }

  @Test
  void forcedKernelsOrTheChecksFlagSpinOnASharedGpu() {
    GroupRoute forced = route(oneGpu(2, true), Map.of("spark.gpucoll.algorithm", "gpu-ll-oneshot"));
    assertTrue(!forced.staged());
    assertEquals("gpu-ll-oneshot", algorithm(forced, Collective.ALL_REDUCE, 1024));
    assertTrue(forced.findings().stream().anyMatch(f -> f.contains("can deadlock")), forced.findings().toString());

    GroupRoute checks = new GroupRoute(1, oneGpu(4, true), SPIN);
    assertTrue(!checks.staged() && !checks.formsNccl());
    assertEquals("gpu-ll-oneshot", algorithm(checks, Collective.ALL_REDUCE, 1024));
    assertEquals("gpu-pipe", algorithm(checks, Collective.ALL_REDUCE, 8 << 20), "no NCCL on a shared GPU: our pipe");
    assertEquals("gpu-ll-oneshot", algorithm(new GroupRoute(0, oneGpu(8, true), SPIN),
        Collective.ALL_REDUCE, 1024), "LL128 is never chosen by size on a shared GPU");
    assertEquals("gpu-ll", algorithm(checks, Collective.ALL_GATHER, 32 << 10), "LL movement up to its capacity");
  }

  @Test
  void forcedAlgorithmRunsOrFailsNamingWhy() {
    GroupRoute two = route(cluster(1, 4, true), Map.of("spark.gpucoll.algorithm", "gpu-sentinel-twoshot"));
    PathChoice p = two.explain(Collective.ALL_REDUCE, 16);
    assertEquals("gpu-sentinel-twoshot", p.algorithm());
    assertTrue(p.reasons().contains("protocol forced to sentinel"), p.reasons().toString());
    assertEquals("unsupported", algorithm(two, Collective.ALL_GATHER, 16), "sentinel exists for allReduce only");
    CollectiveException tooLarge = assertThrows(CollectiveException.class, () -> two.route(Collective.ALL_REDUCE,
        KernelTable.SENT_MAX_BYTES / 4 + 1, DataType.FLOAT32, ReduceOp.SUM, BufferRegistration.NONE));
    assertTrue(tooLarge.getMessage().contains("at most"), tooLarge.getMessage());

    CollectiveException multiHost = assertThrows(CollectiveException.class,
        () -> route(cluster(2, 2, true), Map.of("spark.gpucoll.algorithm", "gpu-ll-oneshot")));
    assertTrue(multiHost.getMessage().contains("spans hosts") && multiHost.getMessage().contains("forced"),
        multiHost.getMessage());

    GroupRoute zero = route(cluster(1, 4, true), Map.of("spark.gpucoll.algorithm", "nccl-zero-cta"));
    assertTrue(!zero.kernelsOn() && zero.formsNccl());
    assertEquals("nccl-zero-cta", algorithm(zero, Collective.ALL_GATHER, 1024));
    CollectiveException ce = assertThrows(CollectiveException.class, () -> zero.route(Collective.ALL_REDUCE, 1 << 18,
        DataType.FLOAT32, ReduceOp.SUM, BufferRegistration.SEND_AND_RECV));
    assertTrue(ce.getMessage().contains("COLLECTIVE_NEVER_CE"), ce.getMessage());

    CollectiveException host = assertThrows(CollectiveException.class,
        () -> route(cluster(1, 2, true), Map.of("spark.gpucoll.algorithm", "host-twoshot")));
    assertTrue(host.getMessage().contains("host backend only") && host.getMessage().contains("gpu-ll-oneshot"),
        host.getMessage());
  }

  @Test
  void forcedNcclOnASharedGpuOrWithoutNcclIsRefused() {
    CollectiveException shared = assertThrows(CollectiveException.class,
        () -> route(oneGpu(2, true), Map.of("spark.gpucoll.algorithm", "nccl")));
    assertTrue(shared.getMessage().contains("NCCL refuses"), shared.getMessage());
    List<MemberInfo> noNccl = withFact(cluster(1, 2, true), FactKeys.NCCL_VERSION, "0");
    CollectiveException none = assertThrows(CollectiveException.class,
        () -> route(noNccl, Map.of("spark.gpucoll.algorithm", "nccl")));
    assertTrue(none.getMessage().contains("NCCL is not loadable"), none.getMessage());
  }

  @Test
  void withoutNcclOurKernelsServeEverySize() {
    GroupRoute r = route(withFact(cluster(1, 2, true), FactKeys.NCCL_VERSION, "0"), Map.of());
    assertTrue(!r.formsNccl());
    assertEquals("gpu-pipe", algorithm(r, Collective.ALL_REDUCE, 64 << 20));
    assertTrue(r.findings().contains("no NCCL communicator: NCCL is not loadable on every rank (2 ranks: no NCCL version"
        + " reported)"), r.findings().toString());
  }

  @Test
  void moreThanSixteenRanksOrSeveralHostsRunOnNccl() {
    GroupRoute big = route(cluster(1, 17, true), Map.of());
    assertTrue(!big.kernelsOn() && big.formsNccl());
    PathChoice p = big.explain(Collective.ALL_REDUCE, 8);
    assertTrue(p.algorithm().startsWith("nccl"), p.toString());
    assertTrue(p.reasons().get(0).contains("at most 16 ranks"), p.reasons().toString());
    GroupRoute hosts = route(cluster(2, 2, true), Map.of());
    assertTrue(hosts.findings().stream().anyMatch(f -> f.startsWith("our kernels are off: the group spans hosts")),
        hosts.findings().toString());
    assertThrows(CollectiveException.class, () -> route(withFact(cluster(2, 2, true), FactKeys.NCCL_VERSION, "0"),
        Map.of()), "several hosts without NCCL: nothing can serve the group");
  }

  @Test
  void ranksOfSimulatedHostsSharingOneGpuRunOnNcclAndARankWithoutNcclSaysWhy() {
    // Two hosts simulated on one machine: both ranks report its one GPU; NCCL takes them (NCCL_HOSTID).
    List<MemberInfo> one = cluster(1, 1, true);
    List<MemberInfo> ms = List.of(new MemberInfo(0, "host-a", "1@host-a", one.get(0).facts()),
        new MemberInfo(1, "host-b", "2@host-b", one.get(0).facts()));
    GroupRoute r = route(ms, Map.of());
    assertTrue(r.formsNccl() && !r.staged() && !r.kernelsOn(), r.findings().toString());
    assertTrue(r.explain(Collective.ALL_REDUCE, 8).algorithm().startsWith("nccl"));
    Map<String, String> python = new LinkedHashMap<>(one.get(0).facts());
    python.put(FactKeys.NCCL_VERSION, "0");
    python.put(FactKeys.NCCL_PROBLEM, "no NCCL binding in this Python: pip install cupy-cuda13x");
    CollectiveException e = assertThrows(CollectiveException.class, () -> route(List.of(ms.get(0),
        new MemberInfo(1, "host-b", "2@host-b", python)), Map.of()));
    assertTrue(e.getMessage().contains("the group spans hosts [host-a, host-b]")
        && e.getMessage().contains("NCCL is not loadable on every rank (rank 1: no NCCL binding in this Python: pip install"
        + " cupy-cuda13x)"), e.getMessage());
  }

  @Test
  void ctaPolicyConfigReachesTheDetector() {
    PathChoice p = route(cluster(1, 4, true), Map.of("spark.gpucoll.nccl.ctaPolicy", "default"))
        .explain(Collective.ALL_GATHER, 8 << 20);
    assertEquals("nccl-symmetric", p.algorithm(), p.reasons().toString());
    assertTrue(p.reasons().stream().anyMatch(r -> r.contains("POLICY_NOT_ZERO")));
  }

  @Test
  void thresholdsComeFromConfig() {
    GroupRoute r = route(cluster(1, 2, true),
        Map.of("spark.gpucoll.gpu.oneShotMaxBytes", "1k", "spark.gpucoll.gpu.twoShotMaxBytes", "4k"));
    assertEquals("gpu-ll-oneshot", algorithm(r, Collective.ALL_REDUCE, 1024));
    assertEquals("gpu-sentinel-twoshot", algorithm(r, Collective.ALL_REDUCE, 1025));
    assertEquals(Algorithm.NCCL, r.route(Collective.ALL_REDUCE, 1025, DataType.FLOAT32, ReduceOp.SUM,
        BufferRegistration.NONE).algorithm());
    CollectiveException e = assertThrows(CollectiveException.class, () -> route(cluster(1, 2, true),
        Map.of("spark.gpucoll.gpu.oneShotMaxBytes", "8k", "spark.gpucoll.gpu.twoShotMaxBytes", "4k")));
    assertTrue(e.getMessage().contains("larger than"), e.getMessage());
    assertTrue(r.summary().get(0).startsWith("allReduce: 8B->gpu-ll-oneshot"), r.summary().toString());

    // Beyond the kernels' capacity the sentinel and LL limits cap the configured thresholds.
    GroupRoute wide = route(withFact(cluster(1, 2, true), FactKeys.NCCL_VERSION, "0"),
        Map.of("spark.gpucoll.gpu.oneShotMaxBytes", "1m", "spark.gpucoll.gpu.twoShotMaxBytes", "1g"));
    assertEquals("gpu-sentinel-twoshot", algorithm(wide, Collective.ALL_REDUCE, KernelTable.LL_MAX_BYTES + 4));
    assertEquals("gpu-pipe", algorithm(wide, Collective.ALL_REDUCE, KernelTable.SENT_MAX_BYTES + 4));
  }

  @Test
  void ll128OnlyForSumAndAvgFromTheConfiguredRankCount() {
    GroupRoute eight = route(cluster(1, 8, true), Map.of());
    assertEquals("gc_allreduce_ll128_f32", eight.route(Collective.ALL_REDUCE, 10, DataType.FLOAT32, ReduceOp.SUM,
        BufferRegistration.NONE).plan().kernel());
    assertEquals("gc_allreduce_ll_f32", eight.route(Collective.ALL_REDUCE, 10, DataType.FLOAT32, ReduceOp.MAX,
        BufferRegistration.NONE).plan().kernel());
    assertEquals("gpu-ll-oneshot",
        algorithm(route(cluster(1, 8, true), Map.of("spark.gpucoll.gpu.ll128MinRanks", "16")), Collective.ALL_REDUCE, 8));
    // no 8-bit atomics: int8 / uint8 sums take the LL one-shot kernel of their type
    assertEquals("gc_allreduce_ll_i8", eight.route(Collective.ALL_REDUCE, 40, DataType.INT8, ReduceOp.SUM,
        BufferRegistration.NONE).plan().kernel());
    assertEquals("gc_allreduce_ll_u8", eight.route(Collective.ALL_REDUCE, 40, DataType.UINT8, ReduceOp.AVG,
        BufferRegistration.NONE).plan().kernel());
  }

  @Test
  void acrossGpusDataMovementLeavesLlEarlierButAllReduceDoesNot() {
    GroupRoute across = route(cluster(1, 2, true), Map.of());
    assertEquals("gpu-ll", algorithm(across, Collective.ALL_GATHER, 16 << 10));
    PathChoice over = across.explain(Collective.ALL_GATHER, (16 << 10) + 1);
    assertEquals("gpu-pipe", over.algorithm());
    assertTrue(over.reasons().stream().anyMatch(r -> r.contains("LL is slower from here across GPUs")),
        over.reasons().toString());
    assertEquals("gpu-ll-oneshot", algorithm(across, Collective.ALL_REDUCE, 32 << 10));
  }

  @Test
  void forcedVariantOfTheChecksIsNeverSilentlyReplaced() {
    GroupRoute ll = new GroupRoute(2, cluster(1, 4, true), variant("ll"));
    assertTrue(!ll.formsNccl(), "a forced variant forms no NCCL");
    CollectiveException e = assertThrows(CollectiveException.class,
        () -> ll.route(Collective.ALL_REDUCE, 16385, DataType.FLOAT32, ReduceOp.SUM, BufferRegistration.NONE));
    assertTrue(e.getMessage().contains("at most 16384 FLOAT32 elements (65536 bytes)"), e.getMessage());
    assertEquals(2, e.rank());
    assertEquals("gc_alltoallv_ll", ll.route(Collective.ALL_TO_ALLV, 16384, DataType.FLOAT32, ReduceOp.SUM,
        BufferRegistration.NONE).plan().kernel());
    GroupRoute sentinel = new GroupRoute(0, cluster(1, 8, true), variant("sentinel"));
    assertEquals("gpu-sentinel-twoshot", algorithm(sentinel, Collective.ALL_REDUCE, 1 << 10));
    assertEquals("gpu-barrier", algorithm(sentinel, Collective.BARRIER, 0));
    assertEquals("unsupported", algorithm(sentinel, Collective.BROADCAST, 8), "no broadcast on the sentinel protocol");
  }

  @Test
  void anUnknownForcedVariantIsNamedWithTheKnownOnes() {
    CollectiveException e = assertThrows(CollectiveException.class,
        () -> new GroupRoute(0, cluster(1, 2, true), variant("ll256")));
    assertTrue(e.getMessage().contains("spark.gpucoll.internal.kernelVariant=ll256 names no kernel variant"),
        e.getMessage());
    assertTrue(e.getMessage().contains("sentinel"), e.getMessage());
    // The two-barrier comparison kernel is the benchmark build's, no variant of the product.
    CollectiveException b2 = assertThrows(CollectiveException.class,
        () -> new GroupRoute(0, cluster(1, 2, true), variant("barrier2")));
    assertTrue(b2.getMessage().contains("kernelVariant=barrier2 names no kernel variant"), b2.getMessage());
  }

  @Test
  void maxlocTakesThePairKernelWhereOurKernelsSpinAndThePairsFitElseTheHost() {
    GroupRoute.PairRoute r = route(cluster(1, 4, true), Map.of()).pairRoute(PairType.FLOAT64_INT32, LocOp.MAXLOC, 3);
    assertEquals("gc_allreduce_pair_ll_f64_i32", r.plan().kernel());
    assertEquals(1, r.plan().grid(), "one block agrees on the first NaN");
    assertEquals(3, r.plan().count());
    assertEquals(48, r.plan().bytes());
    assertEquals(Algorithm.GPU_LL_ONESHOT, r.plan().algorithm());
    assertNull(r.throughHost());
    // a forced variant or algorithm does not apply: there is one pair kernel; one rank takes it too (its NaN check)
    assertEquals("gc_allreduce_pair_ll_i32_i32", new GroupRoute(0, cluster(1, 2, true), variant("pipe"))
        .pairRoute(PairType.INT32_INT32, LocOp.MINLOC, 1).plan().kernel());
    assertEquals("gc_allreduce_pair_ll_i64_i64", route(cluster(1, 1, true), Map.of())
        .pairRoute(PairType.INT64_INT64, LocOp.MINLOC, 1).plan().kernel());
    // the LL inbox: 64 KB of pairs per rank
    GroupRoute four = route(cluster(1, 4, true), Map.of());
    assertEquals(4096, four.pairRoute(PairType.FLOAT32_INT64, LocOp.MAXLOC, 4096).plan().count());
    GroupRoute.PairRoute big = four.pairRoute(PairType.FLOAT32_INT64, LocOp.MAXLOC, 4097);
    assertNull(big.plan());
    assertTrue(big.throughHost().contains("more than the 4096 the pair kernel takes"), big.throughHost());
    assertEquals(8192, four.pairRoute(PairType.INT32_INT32, LocOp.MAXLOC, 8192).plan().count());
    // no spinning kernels: ranks sharing a GPU, groups across hosts, GPUs without P2P
    assertTrue(route(oneGpu(2, true), Map.of()).pairRoute(PairType.FLOAT32_INT32, LocOp.MAXLOC, 1).throughHost()
        .contains("gpu-staged-host"));
    assertTrue(route(cluster(2, 2, true), Map.of()).pairRoute(PairType.FLOAT32_INT32, LocOp.MAXLOC, 1).throughHost()
        .contains("our kernels are off"));
    assertTrue(route(cluster(1, 2, false), Map.of()).pairRoute(PairType.FLOAT32_INT32, LocOp.MAXLOC, 1).throughHost()
        .contains("our kernels cannot run"));
    // the pair kernel is no kernel variant
    CollectiveException e = assertThrows(CollectiveException.class,
        () -> new GroupRoute(0, cluster(1, 2, true), variant("pair_ll")));
    assertTrue(e.getMessage().contains("names no kernel variant"), e.getMessage());
  }

  /** The GPU checks' internal settings: our kernels on ranks sharing a GPU. */
  private static final GpuCollConf SPIN = GpuCollConf.of(Map.of(GpuCollConf.INTERNAL_SPIN_ON_SHARED_GPU.key(), "true"));

  private static GpuCollConf variant(String name) {
    return GpuCollConf.of(Map.of(GpuCollConf.INTERNAL_KERNEL_VARIANT.key(), name));
  }

  @Test
  void aRankWithoutAGpuUuidIsRefused() {
    List<MemberInfo> ms = cluster(1, 2, true);
    Map<String, String> f = new HashMap<>(ms.get(1).facts());
    f.remove(FactKeys.GPU_UUID);
    List<MemberInfo> broken = List.of(ms.get(0), new MemberInfo(1, ms.get(1).host(), ms.get(1).processId(), f));
    CollectiveException e = assertThrows(CollectiveException.class, () -> route(broken, Map.of()));
    assertTrue(e.getMessage().contains("rank 1 reported no GPU UUID"), e.getMessage());
  }

  @Test
  void negativeSizeIsAnError() {
    assertThrows(CollectiveException.class, () -> route(cluster(1, 2, true), Map.of()).route(Collective.ALL_REDUCE, -1,
        DataType.FLOAT32, ReduceOp.SUM, BufferRegistration.NONE));
  }

  private static List<MemberInfo> withFact(List<MemberInfo> ms, String key, String value) {
    List<MemberInfo> out = new ArrayList<>();
    for (MemberInfo m : ms) {
      Map<String, String> f = new HashMap<>(m.facts());
      f.put(key, value);
      out.add(new MemberInfo(m.rank(), m.host(), m.processId(), f));
    }
    return out;
  }
}
