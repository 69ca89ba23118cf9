package dev.gpucoll.cuda.eligibility;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.core.spi.MemberInfo;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class ZeroCtaDetectorTest {
  private static final int ZERO = ZeroCtaDetector.CTA_POLICY_ZERO;

  private static Verdict allGather(List<MemberInfo> ms, int policy, BufferRegistration buffers) {
    return ZeroCtaDetector.evaluate(GroupFacts.of(ms), policy, Collective.ALL_GATHER, buffers, null, null);
  }

  @Test
  void healthyNodeWithRegisteredBuffersIsEligible() {
    Verdict v = allGather(Members.node(4), ZERO, BufferRegistration.SEND_AND_RECV);
    assertTrue(v.zeroCtaEligible(), v.zeroCtaFailing().toString());
    assertEquals(NcclPath.ZERO_CTA, v.predicted());
    assertTrue(v.unverified().isEmpty(), v.unverified().toString());
    assertEquals("zero-cta allGather: eligible", v.findings().get(0));
  }

  @Test
  void groupLevelPredictionSaysWhatTheBuffersNeed() {
    Verdict v = ZeroCtaDetector.evaluate(GroupFacts.of(Members.node(2)), ZERO, Collective.ALL_TO_ALL);
    assertTrue(v.zeroCtaEligible());
    assertTrue(v.unverified().stream().anyMatch(r -> r.detail().contains("send and receive buffers")),
        v.unverified().toString());
  }

  /** One case per reason: a tweak of a healthy 2-GPU node and the code it must produce. */
  static Stream<Arguments> everyReason() {
    List<Arguments> cases = new ArrayList<>();
    cases.add(Arguments.of("single rank", Members.node(1), ZERO, Collective.ALL_GATHER,
        BufferRegistration.SEND_AND_RECV, Reason.Code.SINGLE_RANK));
    for (Collective c : List.of(Collective.ALL_REDUCE, Collective.REDUCE_SCATTER, Collective.BROADCAST,
        Collective.ALL_TO_ALLV, Collective.BARRIER)) {
      cases.add(Arguments.of(c.apiName() + " never CE", Members.node(2), ZERO, c,
          BufferRegistration.SEND_AND_RECV, Reason.Code.COLLECTIVE_NEVER_CE));
    }
    cases.add(Arguments.of("no CUDA driver", Members.node(2, (r, f) -> {
      if (r == 1) {
        f.put(FactKeys.CUDA_DRIVER_VERSION, "0");
      }
    }), ZERO, Collective.ALL_GATHER, BufferRegistration.SEND_AND_RECV, Reason.Code.CUDA_UNAVAILABLE));
    cases.add(Arguments.of("NCCL missing", Members.node(2, (r, f) -> {
      if (r == 1) {
        f.put(FactKeys.NCCL_VERSION, "0");
        f.put(FactKeys.NCCL_PROBLEM, "NCCL unavailable: libnccl.so.2: cannot open shared object file");
      }
    }), ZERO, Collective.ALL_GATHER, BufferRegistration.SEND_AND_RECV, Reason.Code.NCCL_UNAVAILABLE));
    cases.add(Arguments.of("NCCL 2.27", Members.node(2, (r, f) -> f.put(FactKeys.NCCL_VERSION, "22703")),
        ZERO, Collective.ALL_GATHER, BufferRegistration.SEND_AND_RECV, Reason.Code.NCCL_TOO_OLD));
    cases.add(Arguments.of("NCCL versions differ", Members.node(2, (r, f) -> {
      if (r == 1) {
        f.put(FactKeys.NCCL_VERSION, "22907");
      }
    }), ZERO, Collective.ALL_GATHER, BufferRegistration.SEND_AND_RECV, Reason.Code.NCCL_VERSIONS_DIFFER));
    cases.add(Arguments.of("driver 12.4", Members.node(2, (r, f) -> f.put(FactKeys.CUDA_DRIVER_VERSION, "12040")),
        ZERO, Collective.ALL_GATHER, BufferRegistration.SEND_AND_RECV, Reason.Code.DRIVER_TOO_OLD));
    List<MemberInfo> twoHosts = new ArrayList<>();
    for (MemberInfo m : Members.node(2)) {
      twoHosts.add(new MemberInfo(m.rank(), m.rank() == 0 ? "host-a" : "host-b", m.processId(), m.facts()));
    }
    cases.add(Arguments.of("two hosts", twoHosts, ZERO, Collective.ALL_GATHER,
        BufferRegistration.SEND_AND_RECV, Reason.Code.MULTI_HOST));
    List<MemberInfo> shared = new ArrayList<>();
    Map<String, String> gpu0 = Members.healthy(0, 1);
    shared.add(new MemberInfo(0, "host-a", "1@host-a", gpu0));
    shared.add(new MemberInfo(1, "host-a", "2@host-a", gpu0));
    cases.add(Arguments.of("shared GPU", shared, ZERO, Collective.ALL_GATHER,
        BufferRegistration.SEND_AND_RECV, Reason.Code.SHARED_GPU));
    cases.add(Arguments.of("no P2P", Members.node(2, (r, f) ->
        f.put(FactKeys.GPU_PEERS, Members.bus(1 - r) + "|0|0")),
        ZERO, Collective.ALL_GATHER, BufferRegistration.SEND_AND_RECV, Reason.Code.NO_P2P));
    cases.add(Arguments.of("no VMM", Members.node(2, (r, f) -> f.put(FactKeys.GPU_VMM, "0")),
        ZERO, Collective.ALL_GATHER, BufferRegistration.SEND_AND_RECV, Reason.Code.NO_VMM));
    cases.add(Arguments.of("WSL", Members.node(2, (r, f) -> f.put(FactKeys.OS_WSL, "1")),
        ZERO, Collective.ALL_GATHER, BufferRegistration.SEND_AND_RECV, Reason.Code.WSL));
    cases.add(Arguments.of("config policy default", Members.node(2), ZeroCtaDetector.CTA_POLICY_DEFAULT,
        Collective.ALL_GATHER, BufferRegistration.SEND_AND_RECV, Reason.Code.POLICY_NOT_ZERO));
    cases.add(Arguments.of("env policy ZERO on 2.28 reads as 0", Members.node(2, (r, f) ->
        f.put(FactKeys.env("NCCL_CTA_POLICY"), "ZERO")), ZERO, Collective.ALL_GATHER,
        BufferRegistration.SEND_AND_RECV, Reason.Code.ENV_POLICY_NOT_UNDERSTOOD));
    cases.add(Arguments.of("env policy 1 overrides config ZERO", Members.node(2, (r, f) ->
        f.put(FactKeys.env("NCCL_CTA_POLICY"), "1")), ZERO, Collective.ALL_GATHER,
        BufferRegistration.SEND_AND_RECV, Reason.Code.POLICY_NOT_ZERO));
    cases.add(Arguments.of("NCCL_WIN_ENABLE=0", Members.node(2, (r, f) ->
        f.put(FactKeys.env("NCCL_WIN_ENABLE"), "0")), ZERO, Collective.ALL_GATHER,
        BufferRegistration.SEND_AND_RECV, Reason.Code.ENV_WIN_DISABLED));
    cases.add(Arguments.of("NCCL_CUMEM_ENABLE=0", Members.node(2, (r, f) ->
        f.put(FactKeys.env("NCCL_CUMEM_ENABLE"), "0")), ZERO, Collective.ALL_GATHER,
        BufferRegistration.SEND_AND_RECV, Reason.Code.ENV_CUMEM_DISABLED));
    cases.add(Arguments.of("NCCL_P2P_DISABLE=1", Members.node(2, (r, f) ->
        f.put(FactKeys.env("NCCL_P2P_DISABLE"), "1")), ZERO, Collective.ALL_GATHER,
        BufferRegistration.SEND_AND_RECV, Reason.Code.ENV_P2P_DISABLED));
    cases.add(Arguments.of("env differs between ranks", Members.node(2, (r, f) -> {
      if (r == 0) {
        f.put(FactKeys.env("NCCL_CTA_POLICY"), "2");
      }
    }), ZERO, Collective.ALL_GATHER, BufferRegistration.SEND_AND_RECV, Reason.Code.ENV_DIFFERS));
    cases.add(Arguments.of("buffers not registered", Members.node(2), ZERO, Collective.ALL_GATHER,
        BufferRegistration.NONE, Reason.Code.BUFFER_NOT_REGISTERED));
    cases.add(Arguments.of("only recv registered on 2.28", Members.node(2), ZERO, Collective.ALL_GATHER,
        BufferRegistration.RECV_ONLY, Reason.Code.BUFFER_NOT_REGISTERED));
    cases.add(Arguments.of("cudaMalloc buffer", Members.node(2), ZERO, Collective.ALL_GATHER,
        BufferRegistration.NOT_VMM, Reason.Code.BUFFER_NOT_VMM));
    return cases.stream();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("everyReason")
  void everyFailingReasonIsNamed(String name, List<MemberInfo> ms, int policy, Collective c,
      BufferRegistration buffers, Reason.Code expected) {
    Verdict v = ZeroCtaDetector.evaluate(GroupFacts.of(ms), policy, c, buffers, null, null);
    assertFalse(v.zeroCtaEligible(), name + ": expected not eligible");
    assertTrue(v.zeroCtaFailing().stream().anyMatch(r -> r.code() == expected),
        name + ": expected " + expected + " in " + v.zeroCtaFailing());
    assertTrue(v.findings().stream().anyMatch(f -> f.contains("not eligible: " + expected)),
        name + ": findings " + v.findings());
  }

  @Test
  void everyReasonCodeIsCoveredByTheTable() {
    java.util.Set<Reason.Code> covered = java.util.EnumSet.noneOf(Reason.Code.class);
    everyReason().forEach(a -> covered.add((Reason.Code) a.get()[5]));
    covered.add(Reason.Code.UNVERIFIED);                 // notes, not failures: tested below
    covered.add(Reason.Code.SYMMETRIC_KERNEL_UNSUPPORTED); // symmetric verdict: tested below
    assertEquals(java.util.EnumSet.allOf(Reason.Code.class), covered);
  }

  @Test
  void allFailingReasonsAreListedNotJustTheFirst() {
    List<MemberInfo> ms = Members.node(2, (r, f) -> {
      f.put(FactKeys.CUDA_DRIVER_VERSION, "12040");
      f.put(FactKeys.env("NCCL_CUMEM_ENABLE"), "0");
      f.put(FactKeys.GPU_VMM, "0");
    });
    Verdict v = ZeroCtaDetector.evaluate(GroupFacts.of(ms), ZeroCtaDetector.CTA_POLICY_DEFAULT,
        Collective.ALL_REDUCE, BufferRegistration.NONE, null, null);
    List<Reason.Code> codes = v.zeroCtaFailing().stream().map(Reason::code).toList();
    for (Reason.Code c : List.of(Reason.Code.COLLECTIVE_NEVER_CE, Reason.Code.DRIVER_TOO_OLD,
        Reason.Code.NO_VMM, Reason.Code.ENV_CUMEM_DISABLED, Reason.Code.POLICY_NOT_ZERO,
        Reason.Code.BUFFER_NOT_REGISTERED)) {
      assertTrue(codes.contains(c), c + " missing from " + codes);
    }
  }

  @Test
  void reductionsAndBroadcastSayTheyAreNeverCe() {
    for (Collective c : List.of(Collective.ALL_REDUCE, Collective.REDUCE_SCATTER, Collective.BROADCAST)) {
      Verdict v = ZeroCtaDetector.evaluate(GroupFacts.of(Members.node(2)), ZERO, c,
          BufferRegistration.SEND_AND_RECV, DataType.FLOAT32, ReduceOp.SUM);
      assertEquals(1, v.zeroCtaFailing().size(), v.zeroCtaFailing().toString());
      assertEquals(Reason.Code.COLLECTIVE_NEVER_CE, v.zeroCtaFailing().get(0).code());
      assertTrue(v.findings().get(0).startsWith("zero-cta " + c.apiName() + ": not eligible: COLLECTIVE_NEVER_CE"));
    }
  }

  @Test
  void symmetricKernelsPredictedForRegisteredFloatSumAllReduce() {
    Verdict v = ZeroCtaDetector.evaluate(GroupFacts.of(Members.node(2)), ZERO, Collective.ALL_REDUCE,
        BufferRegistration.SEND_AND_RECV, DataType.FLOAT32, ReduceOp.SUM);
    assertEquals(NcclPath.SYMMETRIC, v.predicted());
    Verdict max = ZeroCtaDetector.evaluate(GroupFacts.of(Members.node(2)), ZERO, Collective.ALL_REDUCE,
        BufferRegistration.SEND_AND_RECV, DataType.FLOAT64, ReduceOp.MAX);
    assertEquals(NcclPath.DEFAULT, max.predicted());
    assertEquals(2, max.symmetricFailing().stream()
        .filter(r -> r.code() == Reason.Code.SYMMETRIC_KERNEL_UNSUPPORTED).count(), max.symmetricFailing().toString());
    Verdict a2a = ZeroCtaDetector.evaluate(GroupFacts.of(Members.node(2)), ZeroCtaDetector.CTA_POLICY_DEFAULT,
        Collective.ALL_TO_ALL, BufferRegistration.SEND_AND_RECV, null, null);
    assertEquals(NcclPath.DEFAULT, a2a.predicted(), "no symmetric AlltoAll kernel");
  }

  @Test
  void defaultPolicyOnRegisteredAllGatherPredictsSymmetricKernel() {
    // Seen on 2 H200s, NCCL 2.28.3: "AllGather [Symmetric]: 1048576 Bytes -> Kernel AllGather_ST".
    Verdict v = allGather(Members.node(2), ZeroCtaDetector.CTA_POLICY_DEFAULT, BufferRegistration.SEND_AND_RECV);
    assertEquals(NcclPath.SYMMETRIC, v.predicted());
  }

  @Test
  void oneRankPredictsNcclLocalCopy() {
    Verdict v = allGather(Members.node(1), ZERO, BufferRegistration.SEND_AND_RECV);
    assertEquals(NcclPath.ONE_RANK, v.predicted());
    assertFalse(v.symmetricEligible());
  }

  @Test
  void invisiblePeerGpuIsUnverifiedNotFailing() {
    List<MemberInfo> ms = Members.node(2, (r, f) -> {
      f.put(FactKeys.GPU_PEERS, "");
      f.put(FactKeys.GPU_VISIBLE_COUNT, "1");
    });
    Verdict v = allGather(ms, ZERO, BufferRegistration.SEND_AND_RECV);
    assertTrue(v.zeroCtaEligible());
    assertTrue(v.unverified().stream().anyMatch(r -> r.detail().contains("neither process can see")),
        v.unverified().toString());
    assertTrue(v.findings().get(0).contains("unverified"));
  }

  @Test
  void recvOnlyRegistrationIsEnoughFrom229() {
    List<MemberInfo> ms = Members.node(2, (r, f) -> f.put(FactKeys.NCCL_VERSION, "22907"));
    assertTrue(allGather(ms, ZERO, BufferRegistration.RECV_ONLY).zeroCtaEligible());
  }

  @Test
  void multiHostWithHierarchicalCeIsUnverifiedOn2307() {
    List<MemberInfo> ms = new ArrayList<>();
    for (MemberInfo m : Members.node(2, (r, f) -> f.put(FactKeys.NCCL_VERSION, "23007"))) {
      ms.add(new MemberInfo(m.rank(), "host-" + m.rank(), m.processId(), m.facts()));
    }
    Verdict v = allGather(ms, ZERO, BufferRegistration.SEND_AND_RECV);
    assertTrue(v.zeroCtaEligible(), v.zeroCtaFailing().toString());
    assertTrue(v.unverified().stream().anyMatch(r -> r.detail().contains("hierarchical CE")));
    assertFalse(allGather(ms, ZERO, BufferRegistration.RECV_ONLY).zeroCtaEligible());
  }

  @Test
  void effectivePolicyFollowsNcclParsingRules() {
    // 2.28: a number only; "ZERO" is 0 (seen: "NCCL_CTA_POLICY set by environment to 0.").
    assertEquals(new ZeroCtaDetector.EffectivePolicy(0, true, true),
        ZeroCtaDetector.effectivePolicy(2, Optional.of("ZERO"), 22803));
    assertEquals(2, ZeroCtaDetector.effectivePolicy(0, Optional.of("2"), 22803).value());
    assertEquals(2, ZeroCtaDetector.effectivePolicy(0, Optional.of("zero"), 22907).value());
    assertEquals(3, ZeroCtaDetector.effectivePolicy(0, Optional.of("EFFICIENCY|ZERO"), 23007).value());
    assertEquals(2, ZeroCtaDetector.effectivePolicy(2, Optional.empty(), 22803).value());
    assertFalse(ZeroCtaDetector.effectivePolicy(2, Optional.empty(), 22803).fromEnvironment());
  }
}
