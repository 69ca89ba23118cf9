package dev.gpucoll.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.gpucoll.api.CollectiveMismatchException;
import dev.gpucoll.api.CollectiveTimeoutException;
import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.examples.LocalCluster;
import dev.gpucoll.spark.GpuCollectives;
import dev.gpucoll.spark.GpuCollectivesPlugin;
import dev.gpucoll.spark.GroupReport;
import dev.gpucoll.spark.GroupReportEvent;
import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import scala.jdk.javaapi.CollectionConverters;
import scala.reflect.ClassTag$;
import scala.runtime.AbstractFunction1;

/**
 * Barrier stages over local-cluster[3,1,1024]: three executor JVMs exchanging data through the
 * plugin rendezvous and the host backend. One SparkContext serves the whole class (start-up is
 * the expensive part on a 2-core machine).
 */
class LocalClusterCollectivesTest {
  static final int EXECUTORS = 3;
  static SparkContext sc;
  static JavaSparkContext jsc;
  static final List<GroupReportEvent> EVENTS = new CopyOnWriteArrayList<>();
  static Path eventLogDir;

  @BeforeAll
  static void startCluster() throws IOException {
    eventLogDir = Files.createTempDirectory("gpucoll-eventlog");
    SparkConf conf = LocalCluster.conf("gpucoll-integration", EXECUTORS)
        .set("spark.gpucoll.timeout", "30s")
        .set("spark.gpucoll.report", "summary")
        .set("spark.task.maxFailures", "1")
        .set("spark.eventLog.enabled", "true")
        .set("spark.eventLog.compress", "false")
        .set("spark.eventLog.dir", eventLogDir.toUri().toString());
    sc = new SparkContext(conf);
    sc.addSparkListener(new SparkListener() {
      @Override
      public void onOtherEvent(SparkListenerEvent event) {
        if (event instanceof GroupReportEvent e) {
          EVENTS.add(e);
        }
      }
    });
    jsc = new JavaSparkContext(sc);
    LocalCluster.awaitExecutors(sc, EXECUTORS, Duration.ofSeconds(120));
  }

  @AfterAll
  static void stopCluster() throws IOException {
    if (sc != null) {
      sc.stop();
    }
    if (eventLogDir != null) {
      try (Stream<Path> files = Files.walk(eventLogDir)) {
        files.sorted(java.util.Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
      }
    }
  }

  static JavaRDD<Integer> oneRowPerRank() {
    return jsc.parallelize(IntStream.range(0, EXECUTORS).boxed().toList(), EXECUTORS);
  }

  @Test
  void everyCollectiveAcrossThreeExecutorJvmsWithTheDriverReport() {
    List<String> out = GpuCollectives.barrierMapPartitions(oneRowPerRank(), (comm, rows) -> {
      exerciseEveryCollective(comm);
      return List.of(comm.rank() + " " + ProcessHandle.current().pid() + " "
          + SparkEnv.get().executorId() + " " + TaskContext.get().stageId()).iterator();
    }).collect();
    assertEquals(EXECUTORS, out.size());
    assertEquals(EXECUTORS, out.stream().map(s -> s.split(" ")[1]).distinct().count(),
        "every rank in its own executor JVM: " + out);

    String stage = out.get(0).split(" ")[3];
    GroupReport report = awaitReport("stage " + stage + ".0");
    assertEquals(EXECUTORS, report.size());
    assertEquals(EXECUTORS, report.distinctProcesses(), report::verboseBlock);
    assertEquals("host-shm", report.backend(), report::verboseBlock);
    assertEquals("spark-plugin-rpc", report.rendezvous(), report::verboseBlock);
    for (String collective : List.of("allReduce", "allGather", "reduceScatter", "allToAll",
        "allToAllv", "broadcast")) {
      assertTrue(!report.paths(collective).isEmpty(), collective + " missing in "
          + report.summaryLine());
    }
    // allReduce ran small (LL one-shot) and large (two-shot) messages on every rank.
    assertTrue(report.paths("allReduce").keySet().stream().anyMatch(a -> a.contains("oneshot")),
        report::summaryLine);
    assertTrue(report.paths("allReduce").keySet().stream().anyMatch(a -> a.contains("twoshot")),
        report::summaryLine);
    for (GroupReport.Member m : report.members()) {
      assertTrue(out.contains(m.rank() + " " + m.pid() + " " + m.executorId() + " " + stage),
          "report member " + m + " matches what rank " + m.rank() + " saw: " + out);
    }
    // The same report as a listener event, as JSON, and in the event log.
    String json = report.toJson();
    assertTrue(json.contains("\"groupId\":\"" + report.groupId() + "\"") && json.contains("\"allReduce\""), json);
    awaitTrue(() -> EVENTS.stream().anyMatch(e -> e.report().equals(report)), "a GroupReportEvent for " + stage);
    awaitTrue(() -> eventLogContains(GroupReportEvent.class.getName(), report.groupId()),
        "the event log in " + eventLogDir + " holds the report of " + report.groupId());
  }

  static boolean eventLogContains(String... needles) {
    try (Stream<Path> files = Files.walk(eventLogDir)) {
      for (Path f : files.filter(Files::isRegularFile).toList()) {
        String text = Files.readString(f);
        if (Arrays.stream(needles).allMatch(text::contains)) {
          return true;
        }
      }
      return false;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static void awaitTrue(java.util.function.BooleanSupplier condition, String what) {
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        fail("not seen within 10 s: " + what);
      }
      try {
        Thread.sleep(20);
      } catch (InterruptedException e) {
        throw new AssertionError(e);
      }
    }
  }

  @Test
  void aLaterStageOverTheSameExecutorsReusesTheCachedCommunicators() {
    // Cached partitions pin each partition to its executor, as in an iterative job.
    JavaRDD<Integer> data = oneRowPerRank().cache();
    data.count();
    List<String> first = identities(data);
    List<String> second = identities(data);
    assertEquals(EXECUTORS, first.stream().map(s -> s.split(" ")[1]).distinct().count(), first::toString);
    assertEquals(withoutStage(first), withoutStage(second),
        "same communicator object on every rank in the second stage");
    GroupReport firstReport = awaitReport("stage " + first.get(0).split(" ")[3] + ".0");
    GroupReport secondReport = awaitReport("stage " + second.get(0).split(" ")[3] + ".0");
    assertEquals(firstReport.groupId(), secondReport.groupId(),
        "the second stage ran on the group formed by the first");
    Map<String, Long> paths = secondReport.paths("allReduce");
    assertEquals(1, paths.size(), secondReport::summaryLine);
    assertTrue(paths.keySet().iterator().next().contains("oneshot"), secondReport::summaryLine);
    assertEquals((long) EXECUTORS, paths.values().iterator().next(), "one call per rank");
    data.unpersist(true);
  }

  private static List<String> withoutStage(List<String> lines) {
    return lines.stream().map(l -> l.substring(0, l.lastIndexOf(' '))).toList();
  }

  /** rank, pid, identity of the communicator object, stage id, after one checked allReduce. */
  private static List<String> identities(JavaRDD<Integer> data) {
    return GpuCollectives.barrierMapPartitions(data, (comm, rows) -> {
      long[] v = {comm.rank()};
      comm.allReduce(v, ReduceOp.SUM);
      check(v[0] == 3, comm, "allReduce sum " + v[0]);
      return List.of(comm.rank() + " " + ProcessHandle.current().pid() + " "
          + System.identityHashCode(comm) + " " + TaskContext.get().stageId()).iterator();
    }).collect();
  }

  @Test
  void mismatchedCountsFailOnEveryRankWithoutHanging() {
    List<String> out = GpuCollectives.barrierMapPartitions(oneRowPerRank(), (comm, rows) -> {
      double[] v = new double[4 + comm.rank()];
      try {
        comm.allReduce(CommBuffer.of(v), CommBuffer.of(v), v.length, DataType.FLOAT64, ReduceOp.SUM);
        return List.of(comm.rank() + " no error").iterator();
      } catch (CollectiveMismatchException e) {
        return List.of(comm.rank() + " " + e.getMessage()).iterator();
      }
    }).collect();
    assertEquals(EXECUTORS, out.size());
    for (String line : out) {
      assertTrue(line.contains("allReduce") && line.contains("count"), line);
    }
    // The group is still usable afterwards.
    assertEquals(List.of("ok", "ok", "ok"), GpuCollectives.barrierMapPartitions(oneRowPerRank(),
        (comm, rows) -> {
          int[] v = {1};
          comm.allReduce(v, ReduceOp.SUM);
          check(v[0] == EXECUTORS, comm, "sum " + v[0]);
          return List.of("ok").iterator();
        }).collect());
  }

  @Test
  void aRankArrivingAfterTheTimeoutIsNamedByTheOthersAndFailsItselfAtOnce() {
    sc.setLocalProperty("spark.gpucoll.timeout", "2s");
    try {
      List<String> out = oneRowPerRank().rdd().barrier()
          .mapPartitions(new LateRank(), false, ClassTag$.MODULE$.apply(String.class))
          .toJavaRDD().collect();
      assertEquals(EXECUTORS, out.size(), out::toString);
      for (String line : out) {
        String[] f = line.split(" ", 4);
        long millis = Long.parseLong(f[2]);
        if (f[0].equals("2")) {
          assertEquals(CollectiveTimeoutException.class.getSimpleName(), f[1], line);
          assertTrue(f[3].contains("arrived after the others stopped waiting for ranks [2]"), line);
          assertTrue(millis < 1500, "the late rank fails at once: " + line);
        } else {
          assertEquals(CollectiveTimeoutException.class.getSimpleName(), f[1], line);
          assertTrue(f[3].contains("ranks [2] did not arrive"), line);
          assertTrue(millis >= 1900 && millis < 6000, "within the 2 s timeout: " + line);
        }
      }
    } finally {
      sc.setLocalProperty("spark.gpucoll.timeout", null);
    }
  }

  /** Ranks 0 and 1 ask for the communicator at once, rank 2 after 5 s; each reports its error. */
  static final class LateRank
      extends AbstractFunction1<scala.collection.Iterator<Integer>, scala.collection.Iterator<String>>
      implements Serializable {
    @Override
    public scala.collection.Iterator<String> apply(scala.collection.Iterator<Integer> rows) {
      int rank = TaskContext.getPartitionId();
      String line;
      try {
        if (rank == 2) {
          Thread.sleep(5000); // well past the others giving up, even with a slow task launch
        }
        long start = System.nanoTime();
        try {
          GpuCollectives.communicator();
          line = rank + " none 0 no error";
        } catch (RuntimeException e) {
          line = rank + " " + e.getClass().getSimpleName() + " "
              + (System.nanoTime() - start) / 1_000_000 + " " + e.getMessage();
        }
      } catch (InterruptedException e) {
        throw new IllegalStateException(e);
      }
      return CollectionConverters.asScala(List.of(line).iterator());
    }
  }

  @Test
  void aClosedCommunicatorFailsClearlyAndTheNextStageFormsANewOne() {
    List<String> out = GpuCollectives.barrierMapPartitions(oneRowPerRank(), (comm, rows) -> {
      comm.close();
      String again;
      try {
        GpuCollectives.communicator();
        again = "no error";
      } catch (IllegalStateException e) {
        again = e.getMessage();
      }
      String use;
      try {
        comm.allReduce(new int[] {1}, ReduceOp.SUM);
        use = "no error";
      } catch (RuntimeException e) {
        use = e.getClass().getSimpleName() + ": " + e.getMessage();
      }
      return List.of(again + " | " + use).iterator();
    }).collect();
    for (String line : out) {
      assertTrue(line.contains("was closed earlier in this task"), line);
      assertTrue(!line.endsWith("no error") && line.contains("closed"), line);
    }
    assertEquals(List.of(3, 3, 3), GpuCollectives.barrierMapPartitions(oneRowPerRank(),
        (comm, rows) -> {
          int[] v = {1};
          comm.allReduce(v, ReduceOp.SUM);
          return List.of(v[0]).iterator();
        }).collect());
  }

  @Test
  void theAllGatherRendezvousAlsoFormsAGroupAcrossExecutorJvms() {
    sc.setLocalProperty("spark.gpucoll.rendezvous", "allgather");
    try {
      List<String> out = GpuCollectives.barrierMapPartitions(oneRowPerRank(), (comm, rows) -> {
        long[] v = {comm.rank() + 1};
        comm.allReduce(v, ReduceOp.PROD);
        check(v[0] == 6, comm, "allReduce PROD " + v[0]);
        return List.of(ProcessHandle.current().pid() + " " + TaskContext.get().stageId()).iterator();
      }).collect();
      assertEquals(EXECUTORS, out.stream().map(l -> l.split(" ")[0]).distinct().count(), out::toString);
      GroupReport report = awaitReport("stage " + out.get(0).split(" ")[1] + ".0");
      assertEquals("barrier-allgather", report.rendezvous(), report::summaryLine);
    } finally {
      sc.setLocalProperty("spark.gpucoll.rendezvous", null);
    }
  }

  @Test
  void callingOutsideABarrierStageIsAClearError() {
    IllegalStateException onDriver = assertThrows(IllegalStateException.class,
        GpuCollectives::communicator);
    assertTrue(onDriver.getMessage().contains("outside a Spark task"), onDriver.getMessage());
    Exception inTask = assertThrows(Exception.class,
        () -> oneRowPerRank().map(x -> GpuCollectives.communicator().rank()).collect());
    assertTrue(inTask.getMessage().contains("which is not a barrier stage"), inTask.getMessage());
  }

  // ---- helpers ----

  static void exerciseEveryCollective(Communicator comm) {
    int r = comm.rank();
    int n = comm.size();

    double[] d = new double[1001];
    Arrays.setAll(d, i -> r * 1000.0 + i);
    comm.allReduce(d, ReduceOp.SUM);
    for (int i = 0; i < d.length; i++) {
      check(d[i] == n * (double) i + 1000.0 * n * (n - 1) / 2, comm, "allReduce f64 [" + i + "] " + d[i]);
    }
    int[] m = {r, -r, 7};
    comm.allReduce(m, ReduceOp.MAX);
    check(Arrays.equals(m, new int[] {n - 1, 0, 7}), comm, "allReduce MAX " + Arrays.toString(m));
    float[] big = new float[300_001]; // > one-shot limit: two-shot
    Arrays.fill(big, r + 1);
    comm.allReduce(big, ReduceOp.SUM);
    for (float f : big) {
      check(f == n * (n + 1) / 2f, comm, "allReduce two-shot " + f);
    }

    long[] gathered = new long[2 * n];
    comm.allGather(CommBuffer.of(new long[] {r, (long) r * r}), CommBuffer.of(gathered), 2,
        DataType.INT64);
    for (int q = 0; q < n; q++) {
      check(gathered[2 * q] == q && gathered[2 * q + 1] == (long) q * q, comm,
          "allGather " + Arrays.toString(gathered));
    }

    double[] rsIn = new double[4 * n];
    Arrays.setAll(rsIn, i -> r + 10.0 * (i / 4) + i % 4);
    double[] rsOut = new double[4];
    comm.reduceScatter(CommBuffer.of(rsIn), CommBuffer.of(rsOut), 4, DataType.FLOAT64, ReduceOp.SUM);
    for (int i = 0; i < 4; i++) {
      check(rsOut[i] == n * (n - 1) / 2.0 + n * (10.0 * r + i), comm, "reduceScatter " + Arrays.toString(rsOut));
    }

    int[] a2aIn = new int[3 * n];
    Arrays.setAll(a2aIn, i -> r * 100 + (i / 3) * 10 + i % 3);
    int[] a2aOut = new int[3 * n];
    comm.allToAll(CommBuffer.of(a2aIn), CommBuffer.of(a2aOut), 3, DataType.INT32);
    for (int i = 0; i < a2aOut.length; i++) {
      check(a2aOut[i] == (i / 3) * 100 + r * 10 + i % 3, comm, "allToAll " + Arrays.toString(a2aOut));
    }

    // allToAllv: rank p sends p + q + 1 elements to rank q.
    long[] sendCounts = new long[n];
    long[] sendDispls = new long[n];
    long[] recvCounts = new long[n];
    long[] recvDispls = new long[n];
    for (int q = 0; q < n; q++) {
      sendCounts[q] = r + q + 1;
      recvCounts[q] = q + r + 1;
      if (q > 0) {
        sendDispls[q] = sendDispls[q - 1] + sendCounts[q - 1];
        recvDispls[q] = recvDispls[q - 1] + recvCounts[q - 1];
      }
    }
    long[] vIn = new long[(int) (sendDispls[n - 1] + sendCounts[n - 1])];
    for (int q = 0; q < n; q++) {
      for (int j = 0; j < sendCounts[q]; j++) {
        vIn[(int) sendDispls[q] + j] = r * 1000L + q * 100L + j;
      }
    }
    long[] vOut = new long[(int) (recvDispls[n - 1] + recvCounts[n - 1])];
    comm.allToAllv(CommBuffer.of(vIn), sendCounts, sendDispls, CommBuffer.of(vOut), recvCounts,
        recvDispls, DataType.INT64);
    for (int q = 0; q < n; q++) {
      for (int j = 0; j < recvCounts[q]; j++) {
        check(vOut[(int) recvDispls[q] + j] == q * 1000L + r * 100L + j, comm,
            "allToAllv " + Arrays.toString(vOut));
      }
    }

    double[] bc = new double[5];
    if (r == 1) {
      Arrays.setAll(bc, i -> 1.5 * i);
    }
    comm.broadcast(CommBuffer.of(bc), CommBuffer.of(bc), 5, DataType.FLOAT64, 1);
    for (int i = 0; i < 5; i++) {
      check(bc[i] == 1.5 * i, comm, "broadcast " + Arrays.toString(bc));
    }
    comm.barrier();
  }

  static void check(boolean ok, Communicator comm, String what) {
    if (!ok) {
      throw new AssertionError("rank " + comm.rank() + ": wrong result: " + what);
    }
  }

  /** The driver's merged report for {@code stage}; ranks send theirs asynchronously. */
  static GroupReport awaitReport(String stage) {
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (System.nanoTime() < deadline) {
      for (GroupReport g : GpuCollectivesPlugin.driverReports()) {
        if (g.stage().equals(stage)) {
          return g;
        }
      }
      try {
        Thread.sleep(20);
      } catch (InterruptedException e) {
        throw new AssertionError(e);
      }
    }
    return fail("no report for " + stage + " within 10 s; have "
        + GpuCollectivesPlugin.driverReports().stream().map(GroupReport::stage).toList());
  }
}
