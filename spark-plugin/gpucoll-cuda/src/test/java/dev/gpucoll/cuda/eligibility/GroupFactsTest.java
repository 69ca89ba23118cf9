package dev.gpucoll.cuda.eligibility;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.core.spi.MemberInfo;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class GroupFactsTest {
  @Test
  void describesLinksPerHost() {
    GroupFacts g = GroupFacts.of(Members.node(3, (r, f) -> {
      if (r == 2) {
        f.put(FactKeys.GPU_PEERS, Members.bus(0) + "|1|0," + Members.bus(1) + "|1|0");
      }
    }));
    List<String> d = g.describe();
    assertEquals(1, d.size());
    assertTrue(d.get(0).contains("ranks 0-1: NVLink-class"), d.get(0));
    // rank 0 sees rank 2 as NVLink-class, so the first view wins
    assertTrue(d.get(0).contains("ranks 0-2: NVLink-class"), d.get(0));
  }

  @Test
  void busIdsFromCudaAndNvidiaSmiCompareEqual() {
    assertEquals(GroupFacts.normalizeBusId("00000000:00:06.0"), GroupFacts.normalizeBusId("0000:00:06.0"));
  }

  @Test
  void sharedGpuInOneProcessIsNotCrossProcess() {
    Map<String, String> f = Members.healthy(0, 1);
    GroupFacts oneProcess = GroupFacts.of(List.of(
        new MemberInfo(0, "h", "7@h", f), new MemberInfo(1, "h", "7@h", f)));
    assertEquals(1, oneProcess.sharedGpus().size());
    assertFalse(oneProcess.sharedGpuAcrossProcesses());
    assertTrue(oneProcess.singleProcess());
    GroupFacts twoProcesses = GroupFacts.of(List.of(
        new MemberInfo(0, "h", "7@h", f), new MemberInfo(1, "h", "8@h", f)));
    assertTrue(twoProcesses.sharedGpuAcrossProcesses());
  }

  @Test
  void processFactsReadEnvironmentAndWsl() {
    Map<String, String> f = LocalFacts.processFacts(Map.of("NCCL_CTA_POLICY", "ZERO", "PATH", "/bin"),
        "Linux version 5.15.167.4-microsoft-standard-WSL2");
    assertEquals("ZERO", f.get(FactKeys.env("NCCL_CTA_POLICY")));
    assertEquals("1", f.get(FactKeys.OS_WSL));
    assertFalse(f.containsKey(FactKeys.env("PATH")));
    assertEquals("0", LocalFacts.processFacts(Map.of(), "Linux version 6.18.44").get(FactKeys.OS_WSL));
  }
}
