package dev.gpucoll.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.spark.RpcMessages.RankReportMessage;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ReportCollectorTest {

  private static RankReportMessage rank(int rank, String stage, Map<String, Map<String, Long>> paths) {
    return new RankReportMessage("app-stage3.0", stage, rank, 2, "h" + rank,
        "exec" + rank, 100 + rank, "host-shm", "spark-plugin-rpc", paths,
        List.of("allReduce 8 B -> host-oneshot"), List.of("finding " + rank));
  }

  @Test
  void mergesOnceEveryRankOfTheStageReportedAndSumsThePaths() {
    List<GroupReport> logged = new ArrayList<>();
    ReportCollector c = new ReportCollector(logged::add);
    c.add(rank(1, "stage 3.0", Map.of("allReduce", Map.of("host-oneshot", 2L))));
    assertTrue(logged.isEmpty(), "rank 0 has not reported yet");
    c.add(rank(1, "stage 3.0", Map.of("allReduce", Map.of("host-oneshot", 2L)))); // duplicate
    c.add(rank(0, "stage 3.0", Map.of("allReduce", Map.of("host-oneshot", 2L, "host-twoshot", 1L),
        "barrier", Map.of("host-flags", 1L))));
    assertEquals(1, logged.size());
    GroupReport g = logged.get(0);
    assertEquals(Map.of("host-oneshot", 4L, "host-twoshot", 1L), g.paths("allReduce"));
    assertEquals(2, g.distinctProcesses());
    assertEquals(List.of("finding 0", "finding 1"), g.findings());
    assertEquals("gpucoll group app-stage3.0 (stage 3.0): 2 ranks on hosts [h0, h1], executors"
        + " [exec0, exec1], backend host-shm, rendezvous spark-plugin-rpc, paths"
        + " allReduce=host-oneshotx4+host-twoshotx1, barrier=host-flagsx1", g.summaryLine());
    assertEquals(List.of(g), c.reports());
    // The same group in a later stage is a new report.
    c.add(rank(0, "stage 4.0", Map.of()));
    c.add(rank(1, "stage 4.0", Map.of()));
    assertEquals(2, c.reports().size());
    assertTrue(c.reports().get(1).summaryLine().endsWith("paths (no collectives ran)"));
  }
}
