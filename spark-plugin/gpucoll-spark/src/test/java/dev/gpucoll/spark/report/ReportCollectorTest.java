package dev.gpucoll.spark.report;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.spark.GroupReport;
import dev.gpucoll.spark.metrics.LatencyHistogram;
import dev.gpucoll.spark.rpc.RpcMessages.RankReportMessage;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ReportCollectorTest {

  private static RankReportMessage rank(int rank, String stage, Map<String, Map<String, Long>> paths) {
    return report(rank, stage, paths, "", List.of());
  }

  private static RankReportMessage report(int rank, String stage, Map<String, Map<String, Long>> paths,
      String failure, List<LatencyHistogram.Cell> latency) {
    return new RankReportMessage("app-stage3.0", stage, rank, 2, "h" + rank,
        "exec" + rank, 100 + rank, "host-shm", "spark-plugin-rpc", paths,
        List.of("allReduce 8 B -> host-oneshot"), List.of("finding " + rank), "", false, 1_000_000L * (rank + 1),
        3_000_000, failure, List.of("allReduce 256 B -> host-oneshot (rank " + rank + ")"), latency);
  }

  @Test
  void latencyAddsUpOverRanksAndTheLeadRanksPredictionsAtUsedSizesAreKept() {
    List<GroupReport> logged = new ArrayList<>();
    ReportCollector c = new ReportCollector(logged::add);
    LatencyHistogram r0 = new LatencyHistogram();
    LatencyHistogram r1 = new LatencyHistogram();
    for (int i = 0; i < 98; i++) {
      r0.record("allReduce", 256, 10_000);
    }
    r1.record("allReduce", 200, 10_000);
    r1.record("allReduce", 256, 1_000_000);
    c.add(report(1, "stage 3.0", Map.of(), "", r1.cells()));
    c.add(report(0, "stage 3.0", Map.of(), "", r0.cells()));
    GroupReport g = logged.get(0);
    assertEquals(1, g.latency().size());
    GroupReport.Latency l = g.latency().get(0);
    assertEquals(100, l.calls());
    assertEquals(256, l.maxBytes());
    assertEquals(1_000_000, l.maxNanos());
    assertTrue(Math.abs(l.p50Nanos() - 10_000) <= 10_000 / 16, "p50 " + l.p50Nanos());
    assertTrue(Math.abs(l.p99Nanos() - 10_000) <= 10_000 / 16, "the 99th of 100 calls is still 10 us: " + l.p99Nanos());
    assertEquals(List.of("allReduce 256 B -> host-oneshot (rank 0)"), g.predictedUsed());
    assertEquals(1_000_000, g.members().get(0).rendezvousNanos());
    assertEquals(3_000_000, g.members().get(1).formationNanos());
    assertFalse(g.failed());
  }

  @Test
  void aFailedGroupAtReportSummaryIsOneLinePerDistinctReasonWithoutPredictions() {
    RankReportMessage[] ranks = new RankReportMessage[4];
    for (int r = 0; r < 3; r++) {
      ranks[r] = new RankReportMessage("app-stage3.0", "stage 3.0", r, 4, "h", "exec" + r, 100 + r, "host-shm",
          "spark-plugin-rpc", Map.of(), List.of("allReduce 8 B -> host-oneshot", "allGather 8 B -> host-oneshot"),
          List.of("finding"), "", false, 0, 0, r == 1 ? "rank 1 stops on purpose" : "rank 1 gave up on the group",
          List.of(), List.of());
    }
    GroupReport g = ReportCollector.merge(ranks);
    String block = g.failureBlock();
    assertEquals(List.of(g.summaryLine(), "  ranks 0, 2: rank 1 gave up on the group", "  rank 1: rank 1 stops on purpose",
        "  rank 3: " + ReportCollector.NO_REPORT), block.lines().toList(), block);
    assertTrue(g.verboseBlock().contains("predicted: "), "verbose keeps the predictions");
  }

  @Test
  void aFailedGroupIsHandedOnWithEachRanksReasonOnceAllReported() {
    List<GroupReport> logged = new ArrayList<>();
    ReportCollector c = new ReportCollector(logged::add);
    c.add(report(0, "stage 5.0", Map.of(), "no backend can serve this group: libcuda.so.1 missing", List.of()));
    assertTrue(logged.isEmpty(), "rank 1 may still report");
    c.add(report(1, "stage 5.0", Map.of(), "Spark killed task 9", List.of()));
    GroupReport g = logged.get(0);
    assertTrue(g.failed());
    assertEquals("no backend can serve this group: libcuda.so.1 missing", g.members().get(0).failure());
    assertEquals("Spark killed task 9", g.members().get(1).failure());
    assertTrue(g.summaryLine().contains("FAILED"), g.summaryLine());
  }

  @Test
  void ranksThatNeverReportAreMarkedOnceTheGraceAfterAFailureIsOver() {
    List<GroupReport> logged = new ArrayList<>();
    ReportCollector c = new ReportCollector(logged::add);
    long t0 = 1_000_000_000L;
    c.add(report(1, "stage 6.0", Map.of(), "boom", List.of()), t0);
    c.flush(t0 + ReportCollector.FAILED_GRACE_NANOS / 2);
    assertTrue(logged.isEmpty());
    c.flush(t0 + ReportCollector.FAILED_GRACE_NANOS + 1);
    assertEquals(1, logged.size());
    GroupReport g = logged.get(0);
    assertEquals(ReportCollector.NO_REPORT, g.members().get(0).failure());
    assertEquals(-1, g.members().get(0).pid());
    assertEquals(java.util.Set.of("h1"), g.hosts(), "the rank without a report adds no host");
    assertEquals("boom", g.members().get(1).failure());
    assertEquals(Map.of(1, 5.0), g.rendezvousMillis(), "the rank without a report has no time");
    // A late report of the same stage starts no second report of the group until it too expires.
    c.add(report(0, "stage 6.0", Map.of(), "", List.of()), t0 + ReportCollector.FAILED_GRACE_NANOS + 2);
    assertEquals(1, logged.size());
  }

  @Test
  void aRunningGroupShowsItsRanksProgressUntilItsReportIsHandedOn() {
    List<GroupReport> logged = new ArrayList<>();
    ReportCollector c = new ReportCollector(logged::add);
    long t0 = 1_000_000_000L;
    assertEquals(List.of(), c.running(t0));
    c.progress(rank(1, "stage 3.0", Map.of("allReduce", Map.of("host-oneshot", 5L))), t0);
    List<GroupReport> running = c.running(t0);
    assertEquals(1, running.size());
    GroupReport g = running.get(0);
    assertFalse(g.failed(), "a rank without progress yet has not failed: " + g.failureBlock());
    assertEquals(-1, g.members().get(0).pid(), "rank 0 sent no progress yet");
    assertEquals(Map.of("host-oneshot", 5L), g.paths("allReduce"));
    c.progress(rank(1, "stage 3.0", Map.of("allReduce", Map.of("host-oneshot", 9L))), t0 + 1);
    c.progress(rank(0, "stage 3.0", Map.of("allReduce", Map.of("host-oneshot", 9L))), t0 + 1);
    assertEquals(Map.of("host-oneshot", 18L), c.running(t0 + 1).get(0).paths("allReduce"), "the latest per rank");
    // Rank 0's task ends: its final numbers show while rank 1 still runs; its late progress cannot undo that.
    c.add(rank(0, "stage 3.0", Map.of("allReduce", Map.of("host-oneshot", 10L))), t0 + 2);
    c.progress(rank(0, "stage 3.0", Map.of("allReduce", Map.of("host-oneshot", 9L))), t0 + 3);
    assertEquals(Map.of("host-oneshot", 19L), c.running(t0 + 3).get(0).paths("allReduce"));
    c.add(rank(1, "stage 3.0", Map.of("allReduce", Map.of("host-oneshot", 10L))), t0 + 4);
    assertEquals(1, logged.size());
    assertEquals(List.of(), c.running(t0 + 4), "the group ended: its report replaces the running view");
    c.progress(rank(1, "stage 3.0", Map.of()), t0 + 5);
    assertEquals(List.of(), c.running(t0 + 5), "progress arriving after the report does not revive the group");
    // A running group whose ranks stopped sending progress (executors lost) leaves the running view.
    c.progress(rank(0, "stage 4.0", Map.of()), t0);
    assertEquals(1, c.running(t0 + ReportCollector.PROGRESS_STALE_NANOS).size());
    assertEquals(0, c.running(t0 + ReportCollector.PROGRESS_STALE_NANOS + 1).size());
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
