package dev.gpucoll.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.codahale.metrics.MetricRegistry;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.LocOp;
import dev.gpucoll.api.PairType;
import dev.gpucoll.api.ProcessGrid;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.spark.barrier.ExecutorState;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.gpucoll.GpuCollPage$;
import org.junit.jupiter.api.Test;

/**
 * Calls on a split's communicator and on a ProcessGrid's rows and columns count in the parent
 * group's report (under their split) and in the executor's metrics; MAXLOC under its own name; a
 * failed group is listed before a newer one that did not fail.
 */
class EveryCommunicatorCountsTest {
  static final int RANKS = 4;

  @Test
  void splitsAndGridCallsCountUnderTheParentAndMaxlocUnderItsOwnNameAndTheFailedGroupComesFirst() throws Exception {
    JavaSparkContext sc = new JavaSparkContext(LocalSpark.withPlugin("gpucoll-every-communicator", "local[" + RANKS + "]")
        .set("spark.ui.enabled", "true")
        .set("spark.ui.port", "0")
        .set("spark.gpucoll.timeout", "60s"));
    try {
      assertThrows(Exception.class, () -> GpuCollectives.barrierMapPartitions(sc.parallelize(List.of(0, 1, 2, 3), RANKS),
          (comm, rows) -> {
            comm.barrier();
            if (comm.rank() == 0) {
              throw new IllegalStateException("this group fails on purpose");
            }
            return List.of(0).iterator();
          }).collect());
      GroupReport failed = awaitReport(1);
      assertTrue(failed.failed(), failed::failureBlock);

      List<Long> found = GpuCollectives.barrierMapPartitions(sc.parallelize(List.of(0, 1, 2, 3), RANKS),
          (comm, rows) -> List.of(everyKind(comm)).iterator()).collect();
      assertEquals(List.of(3L, 3L, 3L, 3L), found, "MAXLOC found rank 3's value on every rank");
      GroupReport r = awaitReport(2);
      Map<String, Long> calls = r.paths().entrySet().stream().collect(Collectors.toMap(Map.Entry::getKey,
          e -> e.getValue().values().stream().mapToLong(Long::longValue).sum()));
      // Per rank: the group's own allReduce and the grid's shape check; the split's two; the grid row's
      // allReduce, its column's broadcast; one MAXLOC. Summed over the 4 ranks.
      assertEquals(Map.of("allReduce", 8L, "split 1: allReduce", 8L, "split 2: allReduce", 4L,
          "split 3: broadcast", 4L, "allReduceMaxloc", 4L), calls, r::verboseBlock);
      List<String> latency = r.latency().stream().map(GroupReport.Latency::collective).distinct().sorted().toList();
      assertEquals(List.of("allReduce", "allReduceMaxloc", "split 1: allReduce", "split 2: allReduce",
          "split 3: broadcast"), latency, r::verboseBlock);

      // The executor's metrics count every communicator's calls (one executor holds the 4 ranks here),
      // the first job's barriers included.
      MetricRegistry registry = ExecutorState.active().context().metricRegistry();
      assertEquals(20, registry.counter("collective.allReduce.calls").getCount());
      assertEquals(4, registry.counter("collective.broadcast.calls").getCount());
      assertEquals(4, registry.counter("collective.allReduceMaxloc.calls").getCount());
      assertEquals(0, registry.counter("collective.allReduceMinloc.calls").getCount());
      assertEquals(4, registry.counter("collective.barrier.calls").getCount());

      // The failed group, older, is listed first in the tab's JSON as in the tab.
      String ui = sc.sc().uiWebUrl().get();
      List<String> order = new ArrayList<>();
      for (JsonNode e : new ObjectMapper().readTree(get(ui + "/gpucoll/json/"))) {
        order.add(e.get("status").asText() + " " + e.get("stage").asText());
      }
      assertEquals(List.of("FAILED " + failed.stage(), "OK " + r.stage()), order);
      String page = get(ui + "/gpucoll/");
      assertTrue(page.indexOf("id=\"" + GpuCollPage$.MODULE$.anchor(failed) + "\"") < page.indexOf("id=\"" + GpuCollPage$.MODULE$.anchor(r) + "\""),
          "the failed group's details come first");
      assertTrue(page.contains("split 1: allReduce") && page.contains("allReduceMaxloc"), page);
    } finally {
      sc.stop();
    }
  }

  /** One call of each kind on each rank; returns the index MAXLOC found. */
  private static long everyKind(Communicator comm) {
    int r = comm.rank();
    comm.allReduce(new float[] {r}, ReduceOp.SUM);
    try (Communicator half = comm.split(r % 2, r)) {
      half.allReduce(new float[] {r}, ReduceOp.SUM);
      half.allReduce(new int[] {r}, ReduceOp.MAX);
    }
    try (ProcessGrid<Communicator> grid = ProcessGrid.of(comm, 2, 2)) {
      grid.row().allReduce(new double[] {r}, ReduceOp.SUM);
      grid.column().broadcast(new long[] {r}, 0);
    }
    ByteBuffer send = ByteBuffer.allocate(PairType.FLOAT32_INT32.byteSize()).order(ByteOrder.nativeOrder());
    send.putFloat(0, r).putInt(4, r);
    ByteBuffer recv = ByteBuffer.allocate(send.capacity()).order(ByteOrder.nativeOrder());
    comm.allReduce(CommBuffer.of(send), CommBuffer.of(recv), 1, PairType.FLOAT32_INT32, LocOp.MAXLOC);
    return recv.getInt(4);
  }

  private static GroupReport awaitReport(int count) throws InterruptedException {
    long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    while (GpuCollectivesPlugin.driverReports().size() < count && System.nanoTime() < deadline) {
      Thread.sleep(20);
    }
    List<GroupReport> all = GpuCollectivesPlugin.driverReports();
    assertEquals(count, all.size(), all::toString);
    return all.get(count - 1);
  }

  private static String get(String url) throws Exception {
    HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(url))
        .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
    assertEquals(200, r.statusCode(), url);
    return r.body();
  }
}
