package dev.gpucoll.cuda.select;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.PathChoice;
import dev.gpucoll.core.config.GpuCollConf;
import dev.gpucoll.core.spi.MemberInfo;
import dev.gpucoll.cuda.eligibility.BufferRegistration;
import dev.gpucoll.cuda.eligibility.FactKeys;
import dev.gpucoll.cuda.eligibility.GroupFacts;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class AlgorithmSelectorTest {
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

  static AlgorithmSelector selector(List<MemberInfo> ms, Map<String, String> conf) {
    return new AlgorithmSelector(GroupFacts.of(ms), GpuCollConf.of(conf).validate(), true,
        AlgorithmSelector.DEFAULT_KERNEL_COLLECTIVES);
  }

  @ParameterizedTest(name = "{0} ranks x {1} hosts, {2} {3} B -> {4}")
  @CsvSource({
      "4, 1, ALL_REDUCE,     1024,     gpu-oneshot",
      "4, 1, ALL_REDUCE,     65536,    gpu-oneshot",
      "4, 1, ALL_REDUCE,     65537,    gpu-twoshot",
      "4, 1, ALL_REDUCE,     1048576,  gpu-twoshot",
      "4, 1, ALL_REDUCE,     1048577,  nccl-symmetric",
      "8, 1, ALL_REDUCE,     4096,     gpu-ll128",
      "4, 1, ALL_GATHER,     8388608,  nccl-zero-cta",
      "4, 1, ALL_TO_ALL,     8388608,  nccl-zero-cta",
      "4, 1, ALL_TO_ALLV,    1024,     nccl",
      "4, 2, ALL_REDUCE,     1024,     hierarchical",
      "4, 2, ALL_REDUCE,     8388608,  nccl",
      "4, 2, ALL_GATHER,     1024,     nccl",
      "1, 1, ALL_GATHER,     8388608,  nccl-one-rank"})
  void choosesBySizeAndTopology(int perHost, int hosts, Collective c, long bytes, String expected) {
    PathChoice p = selector(cluster(hosts, perHost, true), Map.of()).explain(c, bytes);
    assertEquals(expected, p.algorithm(), p.reasons().toString());
    assertTrue(!p.reasons().isEmpty());
  }

  @Test
  void reasonsExplainTheNcclPathAndZeroCtaVerdict() {
    // Without buffer facts the prediction assumes registered windows and says so.
    PathChoice p = selector(cluster(1, 4, true), Map.of()).explain(Collective.ALL_REDUCE, 8 << 20);
    assertEquals("nccl-symmetric", p.algorithm());
    assertTrue(p.reasons().get(0).contains("gpu.twoShotMaxBytes"), p.reasons().toString());
    assertTrue(p.reasons().stream().anyMatch(r -> r.startsWith("zero-cta allReduce: not eligible: COLLECTIVE_NEVER_CE")),
        p.reasons().toString());
    PathChoice unregistered = selector(cluster(1, 4, true), Map.of())
        .explain(Collective.ALL_GATHER, 8 << 20, BufferRegistration.NONE);
    assertEquals("nccl", unregistered.algorithm());
    assertTrue(unregistered.reasons().stream().anyMatch(r -> r.contains("BUFFER_NOT_REGISTERED")));
  }

  @Test
  void noP2pKeepsOurKernelsOff() {
    PathChoice p = selector(cluster(1, 2, false), Map.of()).explain(Collective.ALL_REDUCE, 1024);
    assertEquals("nccl", p.algorithm());
    assertTrue(p.reasons().get(0).contains("no CUDA P2P"), p.reasons().toString());
  }

  @Test
  void gpuSharedAcrossProcessesMustNotSpinAndNcclRefusesIt() {
    List<MemberInfo> ms = cluster(1, 1, true);
    MemberInfo m = ms.get(0);
    List<MemberInfo> shared = List.of(m, new MemberInfo(1, m.host(), "999@" + m.host(), m.facts()));
    AlgorithmSelector s = selector(shared, Map.of());
    PathChoice p = s.explain(Collective.ALL_REDUCE, 1024);
    assertTrue(p.reasons().get(0).contains("time-slice"), p.reasons().toString());
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> selector(shared, Map.of("spark.gpucoll.algorithm", "oneshot")).explain(Collective.ALL_REDUCE, 1024));
    assertTrue(e.getMessage().contains("time-slice"), e.getMessage());
  }

  @Test
  void sharedGpuInOneProcessRunsOurKernels() {
    MemberInfo m = cluster(1, 1, true).get(0);
    List<MemberInfo> sameProcess = List.of(m, new MemberInfo(1, m.host(), m.processId(), m.facts()));
    assertEquals("gpu-oneshot", selector(sameProcess, Map.of()).explain(Collective.ALL_REDUCE, 1024).algorithm());
  }

  @Test
  void forcedAlgorithmRunsOrFailsNamingWhy() {
    AlgorithmSelector s = selector(cluster(1, 4, true), Map.of("spark.gpucoll.algorithm", "twoshot"));
    PathChoice p = s.explain(Collective.ALL_REDUCE, 16);
    assertEquals("gpu-twoshot", p.algorithm());
    assertEquals(List.of("forced by spark.gpucoll.algorithm=twoshot"), p.reasons());

    IllegalArgumentException multiHost = assertThrows(IllegalArgumentException.class,
        () -> selector(cluster(2, 2, true), Map.of("spark.gpucoll.algorithm", "oneshot"))
            .explain(Collective.ALL_REDUCE, 16));
    assertTrue(multiHost.getMessage().contains("spans hosts"), multiHost.getMessage());

    IllegalArgumentException ce = assertThrows(IllegalArgumentException.class,
        () -> selector(cluster(1, 4, true), Map.of("spark.gpucoll.algorithm", "nccl-zero-cta"))
            .explain(Collective.ALL_REDUCE, 1 << 20));
    assertTrue(ce.getMessage().contains("COLLECTIVE_NEVER_CE"), ce.getMessage());

    IllegalArgumentException hier = assertThrows(IllegalArgumentException.class,
        () -> selector(cluster(1, 4, true), Map.of("spark.gpucoll.algorithm", "hierarchical"))
            .explain(Collective.ALL_REDUCE, 16));
    assertTrue(hier.getMessage().contains("one host"), hier.getMessage());
  }

  @Test
  void ctaPolicyConfigReachesTheDetector() {
    PathChoice p = selector(cluster(1, 4, true), Map.of("spark.gpucoll.nccl.ctaPolicy", "default"))
        .explain(Collective.ALL_GATHER, 8 << 20, BufferRegistration.SEND_AND_RECV);
    assertEquals("nccl-symmetric", p.algorithm(), p.reasons().toString());
    assertTrue(p.reasons().stream().anyMatch(r -> r.contains("POLICY_NOT_ZERO")));
  }

  @Test
  void thresholdsComeFromConfig() {
    AlgorithmSelector s = selector(cluster(1, 2, true),
        Map.of("spark.gpucoll.gpu.oneShotMaxBytes", "1k", "spark.gpucoll.gpu.twoShotMaxBytes", "4k"));
    assertEquals("gpu-oneshot", s.explain(Collective.ALL_REDUCE, 1024).algorithm());
    assertEquals("gpu-twoshot", s.explain(Collective.ALL_REDUCE, 1025).algorithm());
    assertEquals("nccl", s.explain(Collective.ALL_REDUCE, 4097, BufferRegistration.NONE).algorithm());
    assertThrows(IllegalArgumentException.class, () -> selector(cluster(1, 2, true),
        Map.of("spark.gpucoll.gpu.oneShotMaxBytes", "8k", "spark.gpucoll.gpu.twoShotMaxBytes", "4k")));
    assertTrue(s.summary().get(0).startsWith("allReduce: 1024B->gpu-oneshot"), s.summary().toString());
  }

  @Test
  void withoutNcclLargeMessagesHaveNoPath() {
    AlgorithmSelector s = new AlgorithmSelector(GroupFacts.of(cluster(1, 2, true)), GpuCollConf.defaults(), false,
        EnumSet.of(Collective.ALL_REDUCE));
    PathChoice p = s.explain(Collective.ALL_REDUCE, 64 << 20);
    assertEquals("none", p.algorithm());
    assertTrue(p.reasons().contains("NCCL is unavailable on some rank"));
  }
}
