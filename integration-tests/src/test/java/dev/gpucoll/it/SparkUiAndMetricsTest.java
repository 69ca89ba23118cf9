package dev.gpucoll.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.cuda.CudaEnvironment;
import dev.gpucoll.examples.LocalCluster;
import dev.gpucoll.spark.GpuCollectives;
import dev.gpucoll.spark.GpuCollectivesPlugin;
import dev.gpucoll.spark.GroupReport;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.function.Predicate;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.Test;

/**
 * What a Spark user sees: executor metrics in a CsvSink, the "GPU Collectives" tab of the live
 * Spark UI, and the same tab in a History Server replaying the event log. Real pages over HTTP,
 * a local-cluster of two executor JVMs.
 */
class SparkUiAndMetricsTest {
  static final int EXECUTORS = 2;
  static final String PLUGIN_METRICS = ".plugin." + GpuCollectivesPlugin.class.getName() + ".";
  static final HttpClient HTTP = HttpClient.newBuilder()
      .followRedirects(HttpClient.Redirect.NORMAL).connectTimeout(Duration.ofSeconds(10)).build();

  @Test
  void metricsTheUiTabAndTheHistoryServerShowTheGroup() throws Exception {
    Path work = Files.createTempDirectory("gpucoll-ui");
    Path csv = Files.createDirectories(work.resolve("metrics"));
    Path events = Files.createDirectories(work.resolve("events"));
    try {
      SparkConf conf = LocalHistoryServer.uiAppConf("gpucoll-ui", EXECUTORS, events)
          .set("spark.metrics.conf.*.sink.csv.class", "org.apache.spark.metrics.sink.CsvSink")
          .set("spark.metrics.conf.*.sink.csv.period", "1")
          .set("spark.metrics.conf.*.sink.csv.unit", "seconds")
          .set("spark.metrics.conf.*.sink.csv.directory", csv.toString())
          .set("spark.metrics.conf.*.sink.prometheusServlet.class", "org.apache.spark.metrics.sink.PrometheusServlet")
          .set("spark.metrics.conf.*.sink.prometheusServlet.path", "/metrics/prometheus");
      SparkContext sc = new SparkContext(conf);
      String appId = sc.applicationId();
      GroupReport report;
      try {
        LocalCluster.awaitExecutors(sc, EXECUTORS, Duration.ofSeconds(120));
        JavaSparkContext jsc = new JavaSparkContext(sc);
        List<Float> sums = GpuCollectives.barrierMapPartitions(
            jsc.parallelize(IntStream.range(0, EXECUTORS).boxed().toList(), EXECUTORS),
            (comm, rows) -> {
              float[] v = {comm.rank() + 1f};
              comm.allReduce(v, ReduceOp.SUM);
              comm.barrier();
              return List.of(v[0]).iterator();
            }).collect();
        assertEquals(List.of(3f, 3f), sums);
        report = awaitReport();

        if (!CudaEnvironment.probe().available()) {
          // Why the group is not on the GPU reaches the driver's report, per rank.
          String reason = CudaEnvironment.probe().unavailableReason().orElseThrow();
          assertTrue(report.otherFindings().stream().anyMatch(f ->
              f.contains("is not usable on ranks [0, 1]") && f.contains(reason)), report::verboseBlock);
        }
        String ui = sc.uiWebUrl().get();
        String page = assertTabShows(ui + "/gpucoll/", report);
        if (!CudaEnvironment.probe().available()) {
          assertTrue(page.contains("is not usable on ranks [0, 1]"), page);
        }
        String json = awaitPage(ui + "/gpucoll/json/", body -> body.contains(report.groupId()));
        assertTrue(json.replace(" ", "").contains("\"backend\":\"" + report.backend() + "\""), json);

        // Each executor's CsvSink has its counters, registered at plugin init.
        for (String executor : List.of("0", "1")) {
          String prefix = appId + "." + executor + PLUGIN_METRICS;
          assertEquals(1, awaitCount(csv, prefix + "collective.allReduce.calls.csv", v -> v > 0));
          assertEquals(1, awaitCount(csv, prefix + "collective.barrier.calls.csv", v -> v > 0));
          assertEquals(1, awaitCount(csv, prefix + "cache.misses.csv", v -> v > 0));
          assertEquals(0, awaitCount(csv, prefix + "path.other.calls.csv", v -> true),
              "every path that ran has its own metric");
          if (!CudaEnvironment.probe().available()) {
            assertFalse(Files.exists(csv.resolve(prefix + "path.nccl.calls.csv")), "no GPU path metric without a GPU");
          }
        }
        // The driver's own endpoints (Spark's JSON servlet, the Prometheus servlet) sum the executors' counts:
        // 2 ranks made one allReduce and one barrier each.
        String name = appId + ".driver" + PLUGIN_METRICS + "executors.collective.allReduce.calls";
        String metricsJson = awaitPage(ui + "/metrics/json/", body -> body.replace(" ", "").contains("\"" + name + "\":{\"count\":2}"));
        assertTrue(metricsJson.contains(appId + ".driver" + PLUGIN_METRICS + "executors.collective.barrier.meanLatencyMicros"),
            metricsJson);
        String prometheus = awaitPage(ui + "/metrics/prometheus/",
            body -> body.matches("(?s).*_executors_collective_allReduce_calls_Count\\{[^}]*\\} 2\n.*"));
        assertTrue(prometheus.contains("_executors_path_host_oneshot_calls_Count")
            || prometheus.contains("_executors_path_nccl_calls_Count"), prometheus);
        // A running total shows once, as a counter: not as a gauge's _Number and _Value besides.
        assertFalse(prometheus.contains("_executors_collective_allReduce_calls_Number"), prometheus);
      } finally {
        sc.stop();
      }

      // The History Server replays GroupReportEvent from the event log into the same tab.
      try (LocalHistoryServer history = new LocalHistoryServer(events)) {
        assertTabShows(history.url(appId, "gpucoll/"), report);
      }
    } finally {
      try (Stream<Path> files = Files.walk(work)) {
        files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
      }
    }
  }

  private static String assertTabShows(String url, GroupReport report) throws Exception {
    String page = awaitPage(url, body -> body.contains(report.groupId()));
    assertTrue(page.contains("GPU Collectives"), page);
    List<String> expected = new ArrayList<>(List.of(report.stage(), report.backend(),
        report.rendezvous(), "allReduce", "barrier", "Longest wait", "gpucoll-latency-chart", "Zero-CTA verdicts", "NCCL path proof", "Members"));
    report.paths("allReduce").keySet().forEach(expected::add);
    report.members().forEach(m -> expected.add("<td>" + m.pid() + "</td>"));
    report.hosts().forEach(expected::add);
    for (String s : expected) {
      assertTrue(page.contains(s), url + " lacks '" + s + "'");
    }
    assertFalse(report.rendezvousMillis().isEmpty(), report::verboseBlock);
    return page;
  }

  private static GroupReport awaitReport() throws InterruptedException {
    long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
    while (GpuCollectivesPlugin.driverReports().isEmpty()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("no group report reached the driver");
      }
      Thread.sleep(50);
    }
    return GpuCollectivesPlugin.driverReports().get(0);
  }

  /** The page's body once it answers 200 and passes {@code ready} (listeners and scans are async). */
  private static String awaitPage(String url, Predicate<String> ready) throws Exception {
    long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    String last = "(no answer)";
    while (System.nanoTime() < deadline) {
      try {
        HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create(url))
            .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() == 200 && ready.test(r.body())) {
          return r.body();
        }
        last = r.statusCode() + ": " + r.body();
      } catch (IOException e) {
        last = e.toString();
      }
      Thread.sleep(250);
    }
    throw new AssertionError(url + " did not show the group within 30 s; last answer " + last);
  }

  /** The last value a CsvSink wrote for a counter, once it passes {@code ok}. */
  private static long awaitCount(Path dir, String file, Predicate<Long> ok) throws Exception {
    Path f = dir.resolve(file);
    long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
    String last = "(no file)";
    while (System.nanoTime() < deadline) {
      if (Files.exists(f)) {
        List<String> rows = Files.readAllLines(f);
        if (rows.size() >= 2) {
          last = rows.get(rows.size() - 1);
          long value = Long.parseLong(last.substring(last.indexOf(',') + 1).trim());
          if (ok.test(value)) {
            return value;
          }
        }
      }
      Thread.sleep(250);
    }
    try (Stream<Path> all = Files.list(dir)) {
      throw new AssertionError(f + ": no expected value within 20 s (last row " + last + "); files: "
          + all.map(p -> p.getFileName().toString()).filter(n -> n.contains("gpucoll")).limit(20).toList());
    }
  }
}
