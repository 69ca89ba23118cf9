package dev.gpucoll.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.spark.barrier.BackendCheckedRDD;
import dev.gpucoll.spark.rpc.PluginRpcRendezvous;
import java.io.Serializable;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.Test;
import scala.jdk.javaapi.CollectionConverters;
import scala.reflect.ClassTag$;
import scala.reflect.ClassTag;
import scala.runtime.AbstractFunction1;

/**
 * A group whose last rank is held back before it asks for its communicator: while the others
 * wait, the driver lists the group as FORMING (arrived and missing ranks, how long), the live tab
 * and /gpucoll/json/ show it, and each waiting rank logs once which ranks it waits for. Then, held
 * inside its task after forming, the group is RUNNING in the JSON as in the tab.
 */
class WaitingGroupTest {
  /** Where this module's test logging goes (log4j2-test.properties). */
  private static final Path TEST_LOG = Path.of("target/test-logs/gpucoll-spark-tests.log");
  private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
  private static final ObjectMapper JSON = new ObjectMapper();

  /** Rank 2 asks for its communicator only once this opens. */
  static final CountDownLatch LATE_RANK = new CountDownLatch(1);
  /** Every rank leaves its task only once this opens (the group is RUNNING meanwhile). */
  static final CountDownLatch LEAVE = new CountDownLatch(1);

  @Test
  void aHeldBackRankShowsItsGroupFormingThenRunningInTheTabAndItsJsonAndEachWaitingRankLogsOnce() throws Exception {
    JavaSparkContext sc = new JavaSparkContext(LocalSpark.withPlugin("gpucoll-waiting", "local[3]")
        .set("spark.ui.enabled", "true")
        .set("spark.ui.port", "0")
        .set("spark.gpucoll.timeout", "60s"));
    try {
      String ui = sc.sc().uiWebUrl().get();
      @SuppressWarnings("unchecked")
      ClassTag<Float> tag = (ClassTag<Float>) (ClassTag<?>) ClassTag$.MODULE$.AnyRef();
      JavaRDD<Integer> rows = sc.parallelize(List.of(0, 1, 2), 3);
      CompletableFuture<List<Float>> job = CompletableFuture.supplyAsync(() -> new JavaRDD<>(
          new BackendCheckedRDD<>(rows.rdd(), rows.classTag()).barrier().mapPartitions(new HeldBackRankTwo(), false, tag),
          tag).collect());

      FormingGroup forming = await(() -> GpuCollectivesPlugin.driverFormingGroups().stream()
          .filter(g -> g.missingRanks().equals(List.of(2))).findFirst().orElse(null), Duration.ofSeconds(60));
      assertEquals(List.of(0, 1), forming.arrivedRanks(), forming::toString);
      assertEquals(3, forming.size());
      assertTrue(forming.stage().matches("stage [0-9]+\\.0"), forming.stage());
      assertTrue(forming.groupId().endsWith("-" + forming.stage().replace(" ", "")), forming.groupId());

      JsonNode entry = awaitJson(ui, forming.groupId(), "FORMING");
      assertEquals(List.of(0, 1), ints(entry.get("arrivedRanks")), entry::toString);
      assertEquals(List.of(2), ints(entry.get("missingRanks")), entry::toString);
      assertEquals(forming.stage(), entry.get("stage").asText());
      String page = get(ui + "/gpucoll/");
      assertTrue(page.contains("FORMING") && page.contains(forming.groupId())
          && page.contains("<td class=\"gpucoll-arrived\">0, 1</td>") && page.contains("<td class=\"gpucoll-missing\">2</td>"),
          page);

      // After the notice threshold each waiting rank says, once, which ranks it waits for.
      String notice = "of group " + forming.groupId() + " has waited";
      await(() -> noticeLines(notice).size() == 2 ? true : null,
          Duration.ofNanos(PluginRpcRendezvous.WAIT_NOTICE_NANOS).plusSeconds(20));
      long waited = GpuCollectivesPlugin.driverFormingGroups().stream()
          .filter(g -> g.groupId().equals(forming.groupId())).findFirst().orElseThrow().waitingNanos();
      assertTrue(waited >= PluginRpcRendezvous.WAIT_NOTICE_NANOS, "waiting for " + waited + " ns");
      for (String line : noticeLines(notice)) {
        assertTrue(line.contains("for ranks [2] of its 3"), line);
      }

      LATE_RANK.countDown();
      JsonNode running = awaitJson(ui, forming.groupId(), "RUNNING");
      assertEquals(3, running.get("members").size(), running::toString);
      assertTrue(GpuCollectivesPlugin.driverFormingGroups().stream().noneMatch(g -> g.groupId().equals(forming.groupId())),
          "a formed group is no longer forming");
      assertTrue(get(ui + "/gpucoll/").contains("RUNNING"));

      LEAVE.countDown();
      assertEquals(List.of(6f, 6f, 6f), job.get(60, TimeUnit.SECONDS));
      JsonNode ended = awaitJson(ui, forming.groupId(), "OK");
      assertTrue(ended.get("endedAtMillis").asLong() > 0, ended::toString);
      Thread.sleep(PluginRpcRendezvous.WAIT_NOTICE_NANOS / 1_000_000); // long enough for a second notice, were there one
      List<String> lines = noticeLines(notice);
      assertEquals(2, lines.size(), lines::toString);
      assertTrue(lines.stream().anyMatch(l -> l.contains("rank 0 of group"))
          && lines.stream().anyMatch(l -> l.contains("rank 1 of group")), lines::toString);
    } finally {
      LATE_RANK.countDown();
      LEAVE.countDown();
      sc.stop();
    }
  }

  /** A barrier task whose rank 2 asks for its communicator only once the test lets it. */
  private static final class HeldBackRankTwo
      extends AbstractFunction1<scala.collection.Iterator<Integer>, scala.collection.Iterator<Float>>
      implements Serializable {
    private static final long serialVersionUID = 1L;

    @Override
    public scala.collection.Iterator<Float> apply(scala.collection.Iterator<Integer> rows) {
      if (TaskContext.getPartitionId() == 2) {
        await(LATE_RANK);
      }
      Communicator comm = GpuCollectives.communicator();
      float[] v = {comm.rank() + 1f};
      comm.allReduce(v, ReduceOp.SUM);
      await(LEAVE);
      return CollectionConverters.asScala(List.of(v[0]).iterator());
    }
  }

  private static void await(CountDownLatch latch) {
    try {
      if (!latch.await(120, TimeUnit.SECONDS)) {
        throw new IllegalStateException("the test never released the latch");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  private static <T> T await(java.util.function.Supplier<T> probe, Duration within) throws InterruptedException {
    long deadline = System.nanoTime() + within.toNanos();
    while (System.nanoTime() < deadline) {
      T t = probe.get();
      if (t != null) {
        return t;
      }
      Thread.sleep(50);
    }
    throw new AssertionError("not within " + within + "; forming now: " + GpuCollectivesPlugin.driverFormingGroups()
        + ", running: " + GpuCollectivesPlugin.driverRunningGroups());
  }

  /** The entry of /gpucoll/json/ for {@code groupId} once its status is {@code status}. */
  private static JsonNode awaitJson(String ui, String groupId, String status) throws Exception {
    List<String> seen = new ArrayList<>();
    Predicate<JsonNode> wanted = e -> e.get("groupId").asText().equals(groupId) && e.get("status").asText().equals(status);
    long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    while (System.nanoTime() < deadline) {
      String body = get(ui + "/gpucoll/json/");
      seen.add(body);
      for (JsonNode e : JSON.readTree(body)) {
        if (wanted.test(e)) {
          return e;
        }
      }
      Thread.sleep(100);
    }
    throw new AssertionError("no " + status + " entry for " + groupId + " in /gpucoll/json/; last: " + seen.get(seen.size() - 1));
  }

  private static String get(String url) throws Exception {
    HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(10)).build(),
        HttpResponse.BodyHandlers.ofString());
    assertEquals(200, r.statusCode(), url);
    return r.body();
  }

  private static List<Integer> ints(JsonNode array) {
    List<Integer> out = new ArrayList<>();
    array.forEach(n -> out.add(n.asInt()));
    return out;
  }

  private static List<String> noticeLines(String marker) {
    try {
      return Files.readAllLines(TEST_LOG).stream().filter(l -> l.contains(marker)).toList();
    } catch (java.io.IOException e) {
      return List.of();
    }
  }
}
