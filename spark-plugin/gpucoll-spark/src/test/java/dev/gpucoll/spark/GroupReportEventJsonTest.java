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
        List.of(new GroupReport.Member(0, "node-a", "1", 101, 2_000_000, 500_000, false, ""),
            new GroupReport.Member(1, "node-b", "2", 202, 1_250_000, 0, true, "boom")),
        "gpu", "spark-plugin-rpc",
        Map.of("allReduce", Map.of("gpu-ll-oneshot", 4L, "nccl", 2L), "allGather", Map.of("nccl-zero-cta", 2L)),
        List.of("allReduce 4096 B -> gpu-ll-oneshot"),
        List.of("zero-cta allGather: eligible", "CONTRADICTION allToAll: predicted nccl-zero-cta, NCCL ran ring",
            "executor GPUs [0]"),
        "stage 1.0", List.of("allReduce 256 B -> gpu-ll-oneshot"),
        List.of(new GroupReport.Latency("allReduce", 256, 6, 9_000, 15_000, 16_100)));
  }

  @Test
  void anEventLogOfAnOlderVersionReadsBackWithEmptyNewParts() {
    // What an earlier version wrote: no timings, reuse, failure, predictions at used sizes or latency.
    String json = "{\"Event\":\"" + GroupReportEvent.class.getName() + "\",\"report\":{\"groupId\":\"g\","
        + "\"stage\":\"stage 0.0\",\"size\":1,\"members\":[{\"rank\":0,\"host\":\"h\",\"executorId\":\"1\","
        + "\"pid\":7}],\"backend\":\"host\",\"rendezvous\":\"spark-plugin-rpc\",\"paths\":{\"allReduce\":"
        + "{\"host-oneshot\":2}},\"predicted\":[\"allReduce 8 B -> host-oneshot\"],\"findings\":[]}}";
    GroupReport r = assertInstanceOf(GroupReportEvent.class, JsonProtocol$.MODULE$.sparkEventFromJson(json)).report();
    assertEquals(List.of(), r.latency());
    assertEquals(List.of(), r.predictedUsed());
    assertEquals("", r.formedIn());
    assertEquals(new GroupReport.Member(0, "h", "1", 7), r.members().get(0));
    assertEquals(false, r.failed());
    assertEquals(Map.of("host-oneshot", 2L), r.paths("allReduce"));
  }

  @Test
  void theEventSurvivesSparksJsonProtocol() {
    GroupReport report = sample();
    String json = JsonProtocol$.MODULE$.sparkEventToJsonString(new GroupReportEvent(report, 1_764_000_000_123L));
    assertTrue(json.contains("\"Event\":\"" + GroupReportEvent.class.getName() + "\""), json);
    SparkListenerEvent back = JsonProtocol$.MODULE$.sparkEventFromJson(json);
    assertEquals(report, assertInstanceOf(GroupReportEvent.class, back).report());
    assertEquals(1_764_000_000_123L, ((GroupReportEvent) back).endedAtMillis());
    // An event log written before the end time was recorded reads back with none (0).
    String older = json.replace(",\"endedAtMillis\":1764000000123", "");
    assertTrue(!older.equals(json), json);
    assertEquals(0L, ((GroupReportEvent) JsonProtocol$.MODULE$.sparkEventFromJson(older)).endedAtMillis());
  }

  @Test
  void theReportSortsItsFindingsForDisplay() {
    GroupReport r = sample();
    assertEquals(List.of("zero-cta allGather: eligible"), r.zeroCtaVerdicts());
    assertEquals(List.of("CONTRADICTION allToAll: predicted nccl-zero-cta, NCCL ran ring"), r.ncclProof());
    assertEquals(List.of("executor GPUs [0]"), r.otherFindings());
    assertEquals(Map.of(0, 2.5, 1, 1.25), r.rendezvousMillis());
    assertEquals(1, r.contradictions());
    assertTrue(r.failed());
    assertTrue(r.summaryLine().startsWith("gpucoll group app-1-stage3.0 (stage 3.0, reused from stage 1.0): FAILED, "),
        r.summaryLine());
    assertTrue(r.verboseBlock().contains("rank 0: host node-a, executor 1, pid 101, rendezvous 2.0 ms, formation 500 us"),
        r.verboseBlock());
    assertTrue(r.verboseBlock().contains("latency allReduce <= 256 B: 6 calls, p50 9.0 us, p99 15.0 us"), r.verboseBlock());
  }
}
