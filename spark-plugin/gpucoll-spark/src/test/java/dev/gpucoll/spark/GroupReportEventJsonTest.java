package dev.gpucoll.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.apache.spark.util.JsonProtocol$;
import org.junit.jupiter.api.Test;

/**
 * The event log and the History Server read GroupReportEvent through Spark's own JsonProtocol:
 * what it writes must read back as the same report.
 */
class GroupReportEventJsonTest {

  static GroupReport sample() {
    return new GroupReport("app-1-stage3.0", "stage 3.0", 2,
        List.of(new GroupReport.Member(0, "node-a", "1", 101), new GroupReport.Member(1, "node-b", "2", 202)),
        "gpu", "spark-plugin-rpc",
        Map.of("allReduce", Map.of("gpu-ll-oneshot", 4L, "nccl", 2L), "allGather", Map.of("nccl-zero-cta", 2L)),
        List.of("allReduce 4096 B -> gpu-ll-oneshot"),
        List.of("zero-cta allGather: eligible", "CONTRADICTION allToAll: predicted nccl-zero-cta, NCCL ran ring",
            GroupReport.rendezvousFinding(0, 2_500_000, false),
            GroupReport.rendezvousFinding(1, 1_250_000, true), "executor GPUs [0]"));
  }

  @Test
  void theEventSurvivesSparksJsonProtocol() {
    GroupReport report = sample();
    String json = JsonProtocol$.MODULE$.sparkEventToJsonString(new GroupReportEvent(report));
    assertTrue(json.contains("\"Event\":\"" + GroupReportEvent.class.getName() + "\""), json);
    SparkListenerEvent back = JsonProtocol$.MODULE$.sparkEventFromJson(json);
    assertEquals(report, assertInstanceOf(GroupReportEvent.class, back).report());
  }

  @Test
  void theReportSortsItsFindingsForDisplay() {
    GroupReport r = sample();
    assertEquals(List.of("zero-cta allGather: eligible"), r.zeroCtaVerdicts());
    assertEquals(List.of("CONTRADICTION allToAll: predicted nccl-zero-cta, NCCL ran ring"), r.ncclProof());
    assertEquals(List.of("executor GPUs [0]"), r.otherFindings());
    assertEquals(Map.of(0, 2.5, 1, 1.25), r.rendezvousMillis());
    assertEquals(1, r.contradictions());
  }
}
