package dev.gpucoll.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.Collective;
import dev.gpucoll.core.config.GpuCollConf;
import dev.gpucoll.core.report.RankReport;
import dev.gpucoll.core.spi.MemberInfo;
import dev.gpucoll.cuda.eligibility.GroupFacts;
import dev.gpucoll.cuda.eligibility.NcclPath;
import dev.gpucoll.cuda.nccl.PathProof;
import dev.gpucoll.cuda.select.GpuPathReport;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class GpuPathReportTest {
  private static final List<MemberInfo> MEMBERS = GroupRouteTest.cluster(1, 2, true);
  private static final GroupFacts NODE = GroupFacts.of(MEMBERS);
  private static final GroupRoute SEL = new GroupRoute(0, MEMBERS, GpuCollConf.defaults());

  /** A process whose NCCL log is the real 2-H200 recording with NCCL_CTA_POLICY=ZERO (read as 0). */
  private static PathProof proofAgainstEnvZeroLog(Path dir, NcclPath predicted) throws IOException {
    try (InputStream in = GpuPathReportTest.class.getResourceAsStream("/nccl-logs/h200x2-2.28.3/2gpu-zero-envzero.log")) {
      Files.write(dir.resolve("nccl.vm.809.log"), in.readAllBytes());
    }
    PathProof proof = new PathProof("g1", 0);
    proof.predict(Collective.ALL_GATHER, predicted);
    proof.recordCall(Collective.ALL_GATHER);
    proof.checkLog(Map.of("NCCL_DEBUG", "INFO", "NCCL_DEBUG_SUBSYS", "INIT,ENV,TUNING",
        "NCCL_DEBUG_FILE", dir.resolve("nccl.%h.%p.log").toString()), 809, true);
    return proof;
  }

  @Test
  void reportCarriesPredictionsEligibilityAndTheProof(@TempDir Path dir) throws IOException {
    PathProof proof = proofAgainstEnvZeroLog(dir, NcclPath.ZERO_CTA);
    RankReport r = GpuPathReport.build("g1", 0, "host-0", "spark-plugin-rpc", NODE, SEL::explain,
        SEL.ctaPolicy(), List.of(), Map.of("allReduce/gpu-ll-oneshot", 10L), proof);
    assertEquals("gpu", r.backend());
    assertEquals(2, r.size());
    assertTrue(r.predicted().stream().anyMatch(p -> p.collective() == Collective.ALL_REDUCE
        && p.algorithm().equals("gpu-ll-oneshot")), r.predicted().toString());
    assertTrue(r.predicted().stream().anyMatch(p -> p.collective() == Collective.ALL_GATHER
        && p.algorithm().equals("nccl-zero-cta")), r.predicted().toString());
    assertEquals(Map.of("allReduce/gpu-ll-oneshot", 10L, "allGather/nccl-symmetric", 1L), r.observed());
    assertTrue(r.findings().stream().anyMatch(f -> f.startsWith("topology: host host-0")), r.findings().toString());
    assertTrue(r.findings().contains("zero-cta allReduce: not eligible: COLLECTIVE_NEVER_CE: allReduce always runs on"
        + " SM kernels in NCCL (CE implements AllGather, AlltoAll, Gather, Scatter)"), r.findings().toString());
    assertTrue(r.findings().stream().anyMatch(f -> f.startsWith("CONTRADICTION allGather")), r.findings().toString());
    assertTrue(r.findings().contains("contradictions: 1 prediction(s) refuted by NCCL's log (see above)"));

    String block = GpuPathReport.render(r);
    assertTrue(block.startsWith("gpucoll group g1 rank 0/2 on host-0, backend gpu"), block);
    assertTrue(block.contains("  WARN CONTRADICTION allGather: predicted nccl-zero-cta, NCCL ran nccl-symmetric"), block);
    assertTrue(block.contains("    allReduce: >=8 B: gpu-ll-oneshot, >=65537 B: gpu-sentinel-twoshot, >=1048577 B:"
        + " nccl-symmetric"), block);
    String json = r.toJson();
    assertTrue(json.contains("\"observed\":{\"allGather/nccl-symmetric\":1,\"allReduce/gpu-ll-oneshot\":10}"),
        json);
    assertTrue(json.contains("CONTRADICTION allGather"), json);
  }

  @Test
  void agreeingProofHasNoContradiction(@TempDir Path dir) throws IOException {
    RankReport r = GpuPathReport.build("g1", 0, "host-0", "local", NODE, SEL::explain, SEL.ctaPolicy(), List.of(), Map.of(),
        proofAgainstEnvZeroLog(dir, NcclPath.SYMMETRIC));
    assertTrue(r.findings().stream().noneMatch(f -> f.contains("CONTRADICTION")), r.findings().toString());
    assertTrue(r.findings().stream().anyMatch(f -> f.startsWith("observed allGather: nccl-symmetric")));
  }

  @Test
  void missingNcclDebugSetupIsAFindingNotSilence() {
    PathProof proof = new PathProof("g", 0);
    proof.recordCall(Collective.ALL_GATHER);
    List<String> f = proof.checkLog(Map.of(), 1, true);
    assertEquals(1, f.size());
    assertTrue(f.get(0).startsWith("runtime proof unavailable: NCCL_DEBUG is '', not INFO"), f.get(0));
    RankReport r = GpuPathReport.build("g", 0, "h", "local", NODE, SEL::explain, SEL.ctaPolicy(), List.of(), Map.of(), proof);
    assertTrue(r.findings().contains(f.get(0)));
    assertEquals(Map.of("allGather/nccl-unconfirmed", 1L), r.observed());
  }
}
