package dev.gpucoll.cuda.nccl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.Collective;
import dev.gpucoll.cuda.eligibility.NcclPath;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Parses logs NCCL 2.28.3 wrote on H200s (integration-tests/gpu/nccl-probe); each assertion is a line that was there. */
class NcclLogParserTest {
  private static final String X2 = "h200x2-2.28.3";
  private static final String X1 = "h200x1-2.28.3";

  @Test
  void copyEnginesOnTwoGpusWithPolicyZeroAndRegisteredWindows() {
    NcclLogSummary s = RecordedLogs.parse(X2, "2gpu-zero-memalloc");
    assertEquals("2.28.3+cuda13.0", s.version());
    assertEquals(List.of(2, 2), s.configPolicies());
    assertEquals(Set.of(0, 1), s.ceInitRanks());
    assertEquals(2, s.communicators().size());
    assertEquals(new NcclLogSummary.Comm(s.communicators().get(0).address(), s.communicators().get(0).rank(), 2, 1),
        s.communicators().get(0));
    assertFalse(s.symmetricKernels().containsKey("AllGather"), "AllGather ran on copy engines, not a kernel");
    assertEquals(Map.of("AllReduce_RSxLD_AGxST", 1L), s.symmetricKernels().get("AllReduce"));
    assertEquals(2, s.effectivePolicy());
    assertTrue(s.warnings().isEmpty(), s.warnings().toString());

    Observation ag = Observation.of(s, Collective.ALL_GATHER, true, true);
    assertEquals(Optional.of(NcclPath.ZERO_CTA), ag.path());
    assertFalse(ag.conclusive(), "2.28 logs Init CE once per communicator");
    Observation ar = Observation.of(s, Collective.ALL_REDUCE, true, true);
    assertEquals(Optional.of(NcclPath.SYMMETRIC), ar.path());
    assertTrue(ar.conclusive());
  }

  @Test
  void environmentZeroIsReadAsZeroAndCopyEnginesStayOff() {
    NcclLogSummary s = RecordedLogs.parse(X2, "2gpu-zero-envzero");
    assertEquals("0", s.environment().get("NCCL_CTA_POLICY"));
    assertEquals(List.of(2, 2), s.configPolicies(), "the config said ZERO");
    assertEquals(0, s.effectivePolicy(), "the environment reset it to 0");
    assertTrue(s.ceInitRanks().isEmpty());
    assertEquals(Map.of("AllGather_ST", 1L), s.symmetricKernels().get("AllGather"));
    assertEquals(Optional.of(NcclPath.SYMMETRIC), Observation.of(s, Collective.ALL_GATHER, true, true).path());
  }

  @Test
  void numericEnvironmentPolicyTurnsCopyEnginesOn() {
    NcclLogSummary s = RecordedLogs.parse(X2, "2gpu-default-env2");
    assertEquals("2", s.environment().get("NCCL_CTA_POLICY"));
    assertEquals(List.of(0, 0), s.configPolicies());
    assertEquals(2, s.effectivePolicy());
    assertEquals(Set.of(0, 1), s.ceInitRanks());
  }

  @Test
  void defaultPolicyRunsTheSymmetricAllGatherKernel() {
    NcclLogSummary s = RecordedLogs.parse(X2, "2gpu-default-memalloc");
    assertTrue(s.ceInitRanks().isEmpty());
    assertEquals(Map.of("AllGather_ST", 1L), s.symmetricKernels().get("AllGather"));
  }

  @Test
  void disabledCumemWindowsOrP2pLeaveNoPathLineAtAll() {
    for (String c : List.of("2gpu-zero-nocumem", "2gpu-zero-nowin", "2gpu-zero-nop2p")) {
      NcclLogSummary s = RecordedLogs.parse(X2, c);
      assertTrue(s.ceInitRanks().isEmpty(), c);
      assertTrue(s.symmetricKernels().isEmpty(), c);
      assertTrue(s.symmetricUnsupported().isEmpty(), c + ": 2.28.3 prints no 'not supported' line here");
      Observation o = Observation.of(s, Collective.ALL_GATHER, true, true);
      assertEquals(Optional.of(NcclPath.DEFAULT), o.path(), c);
      assertTrue(o.conclusive(), c);
    }
    assertEquals("0", RecordedLogs.parse(X2, "2gpu-zero-nocumem").environment().get("NCCL_CUMEM_ENABLE"));
    assertEquals("0", RecordedLogs.parse(X2, "2gpu-zero-nowin").environment().get("NCCL_WIN_ENABLE"));
    assertEquals("1", RecordedLogs.parse(X2, "2gpu-zero-nop2p").environment().get("NCCL_P2P_DISABLE"));
  }

  @Test
  void registeringCudaMallocMemoryBreaksTheCommunicator() {
    NcclLogSummary s = RecordedLogs.parse(X2, "2gpu-zero-cudamalloc");
    assertTrue(s.warnings().stream().anyMatch(w -> w.contains("Cuda failure 1 'invalid argument'")), s.warnings().toString());
    assertTrue(s.ceInitRanks().isEmpty());
  }

  @Test
  void oneRankCommunicatorsNeverShowCeOrSymmetricLines() {
    for (String machine : List.of(X1, X2)) {
      for (String c : List.of("zero-memalloc", "zero-cudamalloc", "env-zero-memalloc", "zero-nocumem", "zero-nowin")) {
        NcclLogSummary s = RecordedLogs.parse(machine, c);
        assertEquals(1, s.communicators().get(0).nRanks(), machine + "/" + c);
        assertTrue(s.ceInitRanks().isEmpty(), machine + "/" + c);
        assertTrue(s.symmetricKernels().isEmpty(), machine + "/" + c);
        Observation o = Observation.of(s, Collective.ALL_GATHER, true, true);
        assertEquals(Optional.of(NcclPath.ONE_RANK), o.path(), machine + "/" + c);
      }
    }
    assertEquals(0, RecordedLogs.parse(X1, "env-zero-memalloc").effectivePolicy());
  }

  @Test
  void laterVersionLinesParseToo() {
    // Formats NCCL 2.29.2+ prints (ce_coll.cc / enqueue.cc); not recorded here: the H200 has 2.28.3.
    NcclLogSummary s = NcclLogParser.parse(List.of(
        "h:1:1 [0] NCCL INFO NCCL version 2.29.7+cuda13.0",
        "h:1:1 [0] NCCL INFO Comm config CTAPolicy reset to NCCL_CTA_POLICY=2",
        "h:1:1 [0] NCCL INFO AlltoAll [Copy Engine]: 4096 Bytes -> cudaMemcpy; CE synchronization with NVLS",
        "h:1:1 [0] NCCL INFO AllGather [Hierarchical CE]: 8192 Bytes -> RMA proxy + CE",
        "h:1:1 [0] NCCL INFO Symmetric memory is not supported. cuMemEnable 0, globalGinSupport 0, cuMemGdrSupport 0"));
    assertEquals(List.of(2), s.policyResets());
    assertEquals(2, s.effectivePolicy());
    assertEquals(List.of(4096L), s.copyEngineBytes().get("AlltoAll"));
    assertEquals(List.of(8192L), s.copyEngineBytes().get("AllGather"));
    assertEquals(1, s.symmetricUnsupported().size());
    Observation o = Observation.of(s, Collective.ALL_TO_ALL, true, true);
    assertEquals(Optional.of(NcclPath.ZERO_CTA), o.path());
    assertTrue(o.conclusive());
  }

  @Test
  void emptyLogTellsNothing() {
    Observation o = Observation.of(NcclLogParser.parse(List.of("unrelated")), Collective.ALL_GATHER, true, true);
    assertTrue(o.path().isEmpty());
    assertTrue(o.evidence().contains("no NCCL log lines"));
  }
}
