package dev.gpucoll.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.core.config.Durations;
import dev.gpucoll.cuda.CudaEnvironment;
import dev.gpucoll.examples.LocalCluster;
import dev.gpucoll.spark.GpuCollectives;
import dev.gpucoll.spark.GpuCollectivesPlugin;
import dev.gpucoll.spark.GroupReport;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.SparkException;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * The "GPU Collectives" tab as a person sees it, in a real headless browser: the live UI and the
 * History Server of one application with a group used at two message sizes, the same group reused
 * by a later stage, a group that failed, and a group seen while its stage runs (members, calls and
 * latency so far, the page reloading itself) and after it ended. Asserts the charts' elements and
 * their numbers in the DOM, and keeps screenshots under target/ui-screenshots/.
 */
class SparkUiBrowserTest {
  static final int EXECUTORS = 2;
  static final Path SCREENSHOTS = Path.of("target", "ui-screenshots");

  @Test
  void theTabDrawsLatencyPathsRanksReuseAndFailuresLiveAndInTheHistoryServer() throws Exception {
    HeadlessChromium browser = HeadlessChromium.find().orElse(null);
    if (browser == null) {
      String why = "no chromium on PATH (Debian: apt-get install chromium; or set GPUCOLL_CHROMIUM)";
      if (HeadlessChromium.required()) {
        throw new AssertionError(HeadlessChromium.REQUIRE_ENV + " is set but " + why);
      }
      Assumptions.abort("browser test skipped: " + why);
    }
    Path work = Files.createTempDirectory("gpucoll-ui-browser");
    Path events = Files.createDirectories(work.resolve("events"));
    try {
      SparkConf conf = LocalHistoryServer.uiAppConf("gpucoll-ui-browser", EXECUTORS, events);
      SparkContext sc = new SparkContext(conf);
      String appId = sc.applicationId();
      List<GroupReport> reports;
      try {
        LocalCluster.awaitExecutors(sc, EXECUTORS, Duration.ofSeconds(120));
        JavaSparkContext jsc = new JavaSparkContext(sc);
        // Cached partitions pin each rank to its executor, so the second stage meets the same group.
        JavaRDD<Integer> ranks = jsc.parallelize(IntStream.range(0, EXECUTORS).boxed().toList(), EXECUTORS).cache();
        ranks.count();
        for (int job = 0; job < 2; job++) { // the second stage reuses the first one's group
          List<Float> sums = GpuCollectives.barrierMapPartitions(ranks, (comm, rows) -> {
            float[] small = new float[64];       // 256 B
            float[] large = new float[16 << 10]; // 64 KiB
            for (int i = 0; i < 40; i++) {
              small[0] = comm.rank() + 1f;
              comm.allReduce(small, ReduceOp.SUM);
            }
            for (int i = 0; i < 8; i++) {
              comm.allReduce(large, ReduceOp.SUM);
            }
            comm.barrier();
            return List.of(small[0]).iterator();
          }).collect();
          assertEquals(List.of(3f, 3f), sums);
        }
        // A group that fails: on a machine without a GPU, the GPU backend cannot serve it (as a user
        // who sets spark.gpucoll.backend=gpu there meets it); with GPUs, a rank's task fails.
        boolean gpus = CudaEnvironment.probe().available();
        sc.setLocalProperty("spark.gpucoll.backend", gpus ? null : "gpu");
        assertThrows(SparkException.class, () -> GpuCollectives.barrierMapPartitions(ranks, (comm, rows) -> {
          if (comm.rank() == 1) {
            throw new IllegalStateException("rank 1 stops on purpose");
          }
          comm.barrier();
          return List.of(0).iterator();
        }).collect());
        sc.setLocalProperty("spark.gpucoll.backend", null);
        awaitReports(3);
        assertRunningGroupIsLive(browser, sc, ranks, work);
        reports = awaitReports(4);
        GroupReport failed = reports.get(2);
        assertTrue(failed.failed(), failed::verboseBlock);
        if (!gpus) {
          assertTrue(failed.members().stream().allMatch(m -> m.failure().contains("no backend can serve this group")
              || m.failure().contains("killed")), failed::verboseBlock);
        }
        assertEquals(reports.get(0).stage(), reports.get(1).formedIn(), reports.get(1)::verboseBlock);

        String live = sc.uiWebUrl().get() + "/gpucoll/";
        String dom = browser.dumpDom(live);
        Files.createDirectories(SCREENSHOTS);
        Files.writeString(SCREENSHOTS.resolve("live-gpucoll-tab.html"), dom);
        browser.screenshot(live, SCREENSHOTS.resolve("live-gpucoll-tab.png"), 1280, 3000);
        assertPage(dom, reports, live);
      } finally {
        sc.stop();
      }

      try (LocalHistoryServer history = new LocalHistoryServer(events)) {
        String url = history.url(appId, "gpucoll/");
        String dom = awaitDom(browser, url, reports.get(2).groupId());
        Files.writeString(SCREENSHOTS.resolve("history-gpucoll-tab.html"), dom);
        browser.screenshot(url, SCREENSHOTS.resolve("history-gpucoll-tab.png"), 1280, 3000);
        assertPage(dom, reports, url);
      }
    } finally {
      try (Stream<Path> files = Files.walk(work)) {
        files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
      }
    }
  }

  /**
   * A stage that runs until told to stop: while it runs the tab lists its group as RUNNING with
   * its members, calls and latency so far, and reloads itself; once it ended, the group says so.
   */
  private static void assertRunningGroupIsLive(HeadlessChromium browser, SparkContext sc, JavaRDD<Integer> ranks,
      Path work) throws Exception {
    Path stop = work.resolve("stop-the-running-stage");
    String stopFile = stop.toString();
    java.util.concurrent.CompletableFuture<List<Integer>> job = java.util.concurrent.CompletableFuture.supplyAsync(
        () -> GpuCollectives.barrierMapPartitions(ranks, (comm, rows) -> {
          long start = System.nanoTime();
          int calls = 0;
          int[] stopNow = {0};
          do { // every rank decides alike: stop once any rank sees the file (or after 90 s)
            float[] grad = new float[256];
            comm.allReduce(grad, ReduceOp.SUM);
            calls++;
            Thread.sleep(20);
            stopNow[0] = Files.exists(Path.of(stopFile)) || System.nanoTime() - start > 90e9 ? 1 : 0;
            comm.allReduce(stopNow, ReduceOp.MAX);
          } while (stopNow[0] == 0);
          return List.of(calls).iterator();
        }).collect());
    try {
      GroupReport live = awaitRunning();
      String url = sc.uiWebUrl().get() + "/gpucoll/";
      String dom = browser.dumpDom(url);
      Files.createDirectories(SCREENSHOTS);
      Files.writeString(SCREENSHOTS.resolve("running-gpucoll-tab.html"), dom);
      browser.screenshot(url, SCREENSHOTS.resolve("running-gpucoll-tab.png"), 1280, 2000);
      String anchor = "id=\"" + (live.groupId() + "-" + live.stage()).replaceAll("[^A-Za-z0-9_-]", "_") + "\"";
      int at = dom.indexOf(anchor);
      assertTrue(at >= 0, "the running group " + live.groupId() + " is not on the page:\n" + dom);
      String group = dom.substring(at);
      assertTrue(group.startsWith(anchor + " class=\"gpucoll-group gpucoll-running\""), "marked running: " + group);
      assertTrue(group.contains("RUNNING: calls and latency so far"), group);
      assertTrue(Pattern.compile("<meta http-equiv=\"refresh\" content=\"\\d+\"").matcher(dom).find(),
          "the page reloads itself while a group runs");
      assertEquals(EXECUTORS, count(group.substring(0, group.indexOf("</table>", group.indexOf("Members")) + 1),
          "<td>running</td>"), "every member is listed as running");
      assertTrue(group.contains("<tr class=\"gpucoll-latency-row\" data-collective=\"allReduce\""),
          "the latency so far is drawn: " + group);
    } finally {
      Files.createFile(stop);
    }
    assertEquals(EXECUTORS, job.get(120, java.util.concurrent.TimeUnit.SECONDS).size());
    GroupReport ended = awaitReports(4).get(3);
    String url = sc.uiWebUrl().get() + "/gpucoll/";
    String dom = browser.dumpDom(url);
    Files.writeString(SCREENSHOTS.resolve("ended-gpucoll-tab.html"), dom);
    String group = section(dom, ended, url);
    assertTrue(group.contains("class=\"gpucoll-ended\""), "the group says it ended: " + group);
    assertFalse(group.contains("RUNNING"), group);
    assertFalse(dom.contains("http-equiv=\"refresh\""), "nothing runs: the page stops reloading");
  }

  /** The first running group once every rank sent progress with calls in it. */
  private static GroupReport awaitRunning() throws InterruptedException {
    long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
    while (System.nanoTime() < deadline) {
      for (GroupReport r : GpuCollectivesPlugin.driverRunningGroups()) {
        if (r.members().stream().allMatch(m -> m.pid() >= 0) && !r.paths("allReduce").isEmpty()) {
          return r;
        }
      }
      Thread.sleep(200);
    }
    throw new AssertionError("no running group with progress from every rank within 60 s: "
        + GpuCollectivesPlugin.driverRunningGroups());
  }

  /** The charts, their numbers and the tables, as the browser's DOM holds them. */
  private static void assertPage(String dom, List<GroupReport> reports, String url) {
    assertTrue(dom.contains("GPU Collectives"), url + ": no tab title");
    GroupReport first = reports.get(0);
    GroupReport reused = reports.get(1);
    GroupReport failed = reports.get(2);
    for (GroupReport r : List.of(first, reused)) {
      assertEquals(2, r.latency().stream().filter(l -> l.collective().equals("allReduce")).count(), r::verboseBlock);
      String group = section(dom, r, url);
      assertEquals(1, count(group, "<svg[^>]*class=\"gpucoll-chart gpucoll-latency-chart\""), url);
      assertEquals(1, count(group, "<svg[^>]*class=\"gpucoll-chart gpucoll-path-chart\""), url);
      assertEquals(1, count(group, "<svg[^>]*class=\"gpucoll-chart gpucoll-rank-chart\""), url);
      assertEquals(r.latency().size(), count(group, "<g class=\"point\""), url);
      for (GroupReport.Latency l : r.latency()) {
        String point = "data-collective=\"" + l.collective() + "\" data-max-bytes=\"" + l.maxBytes()
            + "\" data-p50-ns=\"" + l.p50Nanos() + "\" data-p99-ns=\"" + l.p99Nanos() + "\"";
        assertTrue(group.contains(point), url + " lacks the point " + point);
        assertTrue(group.contains(": p50 " + Durations.format(l.p50Nanos()) + "</title>"), url + " lacks p50 of " + l);
        assertTrue(group.contains(": p99 " + Durations.format(l.p99Nanos()) + "</title>"), url + " lacks p99 of " + l);
        assertTrue(Pattern.compile("<tr class=\"gpucoll-latency-row\" data-collective=\"" + l.collective()
            + "\" data-max-bytes=\"" + l.maxBytes() + "\">.*?<td>" + l.calls() + "</td>\\s*<td>"
            + Pattern.quote(Durations.format(l.p50Nanos())) + "</td>", Pattern.DOTALL).matcher(group).find(),
            url + " lacks the table row of " + l);
      }
      assertEquals(EXECUTORS, count(group, "<g class=\"rank\""), url);
      assertTrue(group.contains("data-algorithm=\"" + r.paths("allReduce").keySet().iterator().next() + "\""), url);
      assertTrue(group.contains("<summary>Predicted paths at "), url + ": the reference sizes are one click away");
      assertTrue(group.contains("allReduce 256 B -&gt; ") || group.contains("allReduce 256 B -> "),
          url + ": the prediction at the used size 256 B is shown");
    }
    assertTrue(section(dom, reused, url).contains(reused.stage() + " (reused from " + first.stage() + ")"), url);
    if (first.backend().startsWith("host")) { // no NCCL, no copy engines: not "none" but not applicable
      assertTrue(section(dom, first, url).contains("not applicable: the " + first.backend() + " backend uses neither"),
          url + ": the NCCL and Zero-CTA sections of a host group");
    }
    String bad = section(dom, failed, url);
    assertTrue(bad.contains("FAILED"), url);
    for (GroupReport.Member m : failed.members()) {
      String reason = m.failure().substring(0, Math.min(40, m.failure().length()))
          .replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;");
      assertTrue(bad.contains(reason), url + " lacks rank " + m.rank() + "'s reason " + reason);
    }
  }

  /** The part of the page about one group (its anchor up to the next group). */
  private static String section(String dom, GroupReport r, String url) {
    String anchor = "id=\"" + (r.groupId() + "-" + r.stage()).replaceAll("[^A-Za-z0-9_-]", "_") + "\"";
    int at = dom.indexOf(anchor);
    assertTrue(at >= 0, url + " has no section " + anchor);
    Matcher next = Pattern.compile("<div[^>]*class=\"gpucoll-group\"").matcher(dom);
    int end = next.find(dom.indexOf('>', at)) ? next.start() : dom.length();
    return dom.substring(at, end);
  }

  private static int count(String s, String regex) {
    Matcher m = Pattern.compile(regex).matcher(s);
    int n = 0;
    while (m.find()) {
      n++;
    }
    return n;
  }

  private static List<GroupReport> awaitReports(int n) throws InterruptedException {
    long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    while (GpuCollectivesPlugin.driverReports().size() < n) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("only " + GpuCollectivesPlugin.driverReports().size() + " of " + n
            + " group reports reached the driver");
      }
      Thread.sleep(100);
    }
    return GpuCollectivesPlugin.driverReports();
  }

  /** The History Server lists an application once its scan found the log. */
  private static String awaitDom(HeadlessChromium browser, String url, String mustContain) throws Exception {
    long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    String dom = "";
    while (System.nanoTime() < deadline) {
      dom = browser.dumpDom(url);
      if (dom.contains(mustContain)) {
        return dom;
      }
      Thread.sleep(500);
    }
    throw new AssertionError(url + " did not show group " + mustContain + " within 30 s:\n"
        + dom.substring(0, Math.min(2000, dom.length())));
  }
}
