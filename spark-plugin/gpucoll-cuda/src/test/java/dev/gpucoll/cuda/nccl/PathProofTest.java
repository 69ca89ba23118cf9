package dev.gpucoll.cuda.nccl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.Collective;
import dev.gpucoll.core.spi.MemberInfo;
import dev.gpucoll.cuda.eligibility.BufferRegistration;
import dev.gpucoll.cuda.eligibility.FactKeys;
import dev.gpucoll.cuda.eligibility.GroupFacts;
import dev.gpucoll.cuda.eligibility.NcclPath;
import dev.gpucoll.cuda.eligibility.Verdict;
import dev.gpucoll.cuda.eligibility.ZeroCtaDetector;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;

/**
 * The detector's prediction against what NCCL 2.28.3 really did on two NVLink-connected H200s: for
 * every recorded case the prediction must agree with the log, and a wrong prediction must show up
 * as a contradiction (finding + counter), never silently.
 */
class PathProofTest {
  /** The facts the two H200s of the recording would publish (facts.txt: NV18 between them). */
  static List<MemberInfo> recordedPair(String envVar, String envValue) {
    List<MemberInfo> out = new ArrayList<>();
    String[] bus = {"0000:00:06.0", "0000:00:07.0"};
    for (int r = 0; r < 2; r++) {
      Map<String, String> f = new LinkedHashMap<>();
      f.put(FactKeys.GPU_UUID, "GPU-" + r);
      f.put(FactKeys.GPU_PCI_BUS_ID, bus[r]);
      f.put(FactKeys.GPU_VMM, "1");
      f.put(FactKeys.GPU_PEERS, bus[1 - r] + "|1|1");
      f.put(FactKeys.CUDA_DRIVER_VERSION, "13000");
      f.put(FactKeys.NCCL_VERSION, "22803");
      f.put(FactKeys.OS_WSL, "0");
      if (envVar != null) {
        f.put(FactKeys.env(envVar), envValue);
      }
      out.add(new MemberInfo(r, "vm", "1@vm", f)); // one process drove both GPUs
    }
    return out;
  }

  @ParameterizedTest(name = "{0}")
  @CsvSource({
      // case,                 config policy, env var,           env value, predicted allGather
      "2gpu-zero-memalloc,     2,             ,                  ,          ZERO_CTA",
      "2gpu-default-memalloc,  0,             ,                  ,          SYMMETRIC",
      "2gpu-zero-envzero,      2,             NCCL_CTA_POLICY,   ZERO,      SYMMETRIC",
      "2gpu-default-env2,      0,             NCCL_CTA_POLICY,   2,         ZERO_CTA",
      "2gpu-zero-nocumem,      2,             NCCL_CUMEM_ENABLE, 0,         DEFAULT",
      "2gpu-zero-nowin,        2,             NCCL_WIN_ENABLE,   0,         DEFAULT",
      "2gpu-zero-nop2p,        2,             NCCL_P2P_DISABLE,  1,         DEFAULT"})
  void predictionAgreesWithWhatNcclDidOnTheH200s(String caseName, int policy, String envVar, String envValue,
      NcclPath expected) {
    GroupFacts g = GroupFacts.of(recordedPair(envVar, envValue));
    Verdict v = ZeroCtaDetector.evaluate(g, policy, Collective.ALL_GATHER, BufferRegistration.SEND_AND_RECV, null, null);
    assertEquals(expected, v.predicted(), v.findings().toString());

    PathProof proof = new PathProof("test", 0);
    proof.predict(Collective.ALL_GATHER, v.predicted());
    proof.recordCall(Collective.ALL_GATHER);
    long before = PathProof.contradictions();
    List<String> findings = proof.check(RecordedLogs.parse("h200x2-2.28.3", caseName), true, true);
    assertEquals(before, PathProof.contradictions(), findings.toString());
    assertTrue(findings.get(0).startsWith("observed allGather: " + expected.algorithm()), findings.toString());
  }

  @Test
  void aWrongPredictionIsAContradictionFindingAndCounter() {
    // Predicting Zero-CTA while NCCL_CTA_POLICY=ZERO (read as 0 by 2.28.3) is in force:
    PathProof proof = new PathProof("g", 0);
    proof.predict(Collective.ALL_GATHER, NcclPath.ZERO_CTA);
    proof.recordCall(Collective.ALL_GATHER);
    long before = PathProof.contradictions();
    List<String> findings = proof.check(RecordedLogs.parse("h200x2-2.28.3", "2gpu-zero-envzero"), true, true);
    assertEquals(before + 1, PathProof.contradictions());
    assertTrue(findings.get(0).startsWith("CONTRADICTION allGather: predicted nccl-zero-cta, NCCL ran nccl-symmetric"),
        findings.toString());
    assertEquals(Map.of("allGather/nccl-symmetric", 1L), proof.observedCounts());
    // Checking again does not count the same contradiction twice.
    proof.check(RecordedLogs.parse("h200x2-2.28.3", "2gpu-zero-envzero"), true, true);
    assertEquals(before + 1, PathProof.contradictions());
  }

  @Test
  void oneRankPredictionAgreesWithTheSingleH200() {
    GroupFacts g = GroupFacts.of(recordedPair(null, null).subList(0, 1));
    Verdict v = ZeroCtaDetector.evaluate(g, 2, Collective.ALL_TO_ALL, BufferRegistration.SEND_AND_RECV, null, null);
    assertEquals(NcclPath.ONE_RANK, v.predicted());
    PathProof proof = new PathProof("g", 0);
    proof.predict(Collective.ALL_TO_ALL, v.predicted());
    proof.recordCall(Collective.ALL_TO_ALL);
    long before = PathProof.contradictions();
    proof.check(RecordedLogs.parse("h200x1-2.28.3", "zero-memalloc"), true, true);
    assertEquals(before, PathProof.contradictions());
    assertEquals(Map.of("allToAll/nccl-one-rank", 1L), proof.observedCounts());
  }
}
