package dev.gpucoll.it.cluster;

import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.ProcessGrid;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.linalg.Descriptor;
import dev.gpucoll.linalg.LocalMatrix;
import dev.gpucoll.linalg.Lu;
import dev.gpucoll.spark.GpuCollectives;
import dev.gpucoll.spark.GpuCollectivesPlugin;
import dev.gpucoll.spark.GroupReport;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.IntStream;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.SparkEnv;
import org.apache.spark.api.java.JavaSparkContext;

/**
 * The application the standalone-cluster test submits (in its own small jar, with gpucoll only on
 * {@code --jars}): one barrier stage runs every collective on every rank; the driver checks each
 * rank's results against values it computes itself, then the group report; a second barrier stage,
 * whose last rank throws its own exception while the others wait in a collective, must fail the
 * job with that exception (not a peer's error about the failed rank). Prints one line
 * starting with {@link #OK} or {@link #FAILED} and exits 0 or 1.
 *
 * <p>Usage: {@code ClusterCollectivesApp <ranks> [--check-ui-tab]}; with {@code --check-ui-tab} the
 * driver also fetches its own UI's "GPU Collectives" page and its JSON, which must show the group.
 */
public final class ClusterCollectivesApp {
  static final String OK = "GPUCOLL-CLUSTER-OK";
  static final String FAILED = "GPUCOLL-CLUSTER-FAILED";
  /** Elements of the large allReduce: above the host backend's one-shot limit, so two-shot. */
  static final int LARGE = 300_001;

  private ClusterCollectivesApp() {}

  public static void main(String[] args) {
    int ranks = Integer.parseInt(args[0]);
    boolean checkUiTab = List.of(args).contains("--check-ui-tab");
    int exit = 1;
    SparkContext sc = null;
    try {
      sc = new SparkContext(new SparkConf());
      awaitExecutors(sc, ranks, 120_000);
      JavaSparkContext jsc = new JavaSparkContext(sc);
      List<String> lines = GpuCollectives.barrierMapPartitions(
          jsc.parallelize(IntStream.range(0, ranks).boxed().toList(), ranks),
          (comm, rows) -> runEveryCollective(comm).iterator()).collect();
      List<String> wrong = wrongResults(lines, ranks);
      Set<String> pids = new TreeSet<>();
      lines.stream().filter(l -> l.startsWith("where ")).forEach(l -> pids.add(l.split(" ")[2]));
      if (pids.size() != ranks) {
        wrong.add("expected " + ranks + " executor JVMs, ranks ran in " + pids);
      }
      GroupReport report = awaitReport(10_000);
      if (report == null) {
        wrong.add("no group report reached the driver");
      } else if (!report.backend().startsWith("host") || report.distinctProcesses() != ranks
          || !"spark-plugin-rpc".equals(report.rendezvous())) {
        wrong.add("unexpected group report: " + report.summaryLine());
      }
      if (checkUiTab && report != null) {
        wrong.addAll(uiTabProblems(sc, report.groupId()));
      }
      String ownError = ownErrorProblem(jsc, ranks);
      if (ownError != null) {
        wrong.add(ownError);
      }
      if (wrong.isEmpty()) {
        System.out.println(OK + " ranks=" + ranks + " pids=" + pids + " group=" + report.groupId()
            + " report: " + report.summaryLine());
        exit = 0;
      } else {
        System.out.println(FAILED + " " + wrong);
      }
    } catch (Throwable t) {
      System.out.println(FAILED + " " + t);
      t.printStackTrace(System.out);
    } finally {
      if (sc != null) {
        sc.stop();
      }
    }
    System.exit(exit);
  }

  static final String OWN_ERROR = "the last rank's own error";

  /**
   * Why the job whose last rank throws {@link #OWN_ERROR} (while the others wait for it in an
   * allReduce) did not fail with that exception, or null when it did.
   */
  static String ownErrorProblem(JavaSparkContext jsc, int ranks) {
    try {
      GpuCollectives.barrierMapPartitions(jsc.parallelize(IntStream.range(0, ranks).boxed().toList(), ranks),
          (comm, rows) -> {
            if (comm.rank() == comm.size() - 1) {
              throw new IllegalStateException(OWN_ERROR);
            }
            comm.allReduce(new float[] {1f}, ReduceOp.SUM);
            return List.of("unreachable").iterator();
          }).collect();
      return "the job whose last rank threw its own exception succeeded";
    } catch (Exception e) { // a SparkException, thrown from Scala undeclared
      String why = e.getClass().getName() + ": " + e.getMessage();
      boolean own = why.contains("IllegalStateException: " + OWN_ERROR) && !why.contains("CollectiveException");
      return own ? null : "the job's error is not the task's own exception: " + why.lines().limit(3).toList();
    }
  }

  /** Runs on each rank: every collective, each result as one line "collective rank result". */
  static List<String> runEveryCollective(Communicator comm) {
    int r = comm.rank();
    int n = comm.size();
    List<String> out = new ArrayList<>();
    out.add("where " + r + " " + ProcessHandle.current().pid() + " " + SparkEnv.get().executorId());

    long[] small = {r + 1, 10L * r};
    comm.allReduce(small, ReduceOp.SUM);
    out.add(line("allReduce-sum-i64", r, Arrays.toString(small)));
    int[] max = {r, -r, 7};
    comm.allReduce(max, ReduceOp.MAX);
    out.add(line("allReduce-max-i32", r, Arrays.toString(max)));
    float[] large = new float[LARGE];
    Arrays.fill(large, r + 1);
    comm.allReduce(large, ReduceOp.SUM);
    Set<Float> distinct = new TreeSet<>();
    for (float f : large) {
      distinct.add(f);
    }
    out.add(line("allReduce-large-f32", r, large.length + "x" + distinct));

    long[] gathered = new long[2 * n];
    comm.allGather(CommBuffer.of(new long[] {r, (long) r * r}), CommBuffer.of(gathered), 2, DataType.INT64);
    out.add(line("allGather-i64", r, Arrays.toString(gathered)));

    double[] rsIn = new double[4 * n];
    Arrays.setAll(rsIn, i -> r + 10.0 * (i / 4) + i % 4);
    double[] rsOut = new double[4];
    comm.reduceScatter(CommBuffer.of(rsIn), CommBuffer.of(rsOut), 4, DataType.FLOAT64, ReduceOp.SUM);
    out.add(line("reduceScatter-f64", r, Arrays.toString(rsOut)));

    int[] a2aIn = new int[3 * n];
    Arrays.setAll(a2aIn, i -> r * 100 + (i / 3) * 10 + i % 3);
    int[] a2aOut = new int[3 * n];
    comm.allToAll(CommBuffer.of(a2aIn), CommBuffer.of(a2aOut), 3, DataType.INT32);
    out.add(line("allToAll-i32", r, Arrays.toString(a2aOut)));

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
    out.add(line("allToAllv-i64", r, Arrays.toString(vOut)));

    double[] bc = new double[5];
    if (r == n - 1) {
      Arrays.setAll(bc, i -> 1.5 * i);
    }
    comm.broadcast(CommBuffer.of(bc), CommBuffer.of(bc), 5, DataType.FLOAT64, n - 1);
    out.add(line("broadcast-f64", r, Arrays.toString(bc)));

    comm.barrier();
    out.add(line("barrier", r, "passed"));

    try (Communicator reversed = comm.split(0, n - 1 - r)) {
      long[] v = {reversed.rank()};
      reversed.allReduce(v, ReduceOp.SUM);
      out.add(line("split", r, reversed.rank() + "/" + reversed.size() + " sum " + v[0]));
    }
    out.add(line("getrf-getrs", r, solveOnAGrid(comm)));
    return out;
  }

  /**
   * The distributed LU of gpucoll-linalg from the one jar: A X = A·1 on a P × Q grid (ragged blocks,
   * the first block column off process column 0); "ok" when every element of X is 1 within 1e-12.
   */
  static String solveOnAGrid(Communicator comm) {
    int rows = comm.size() % 2 == 0 ? 2 : 1;
    int cols = comm.size() / rows;
    int n = 11;
    Descriptor da = Descriptor.of(n, n, 2, 2, 0, cols - 1, rows, cols);
    Descriptor db = Descriptor.of(n, 1, 2, 1, 0, 0, rows, cols);
    try (ProcessGrid<Communicator> grid = ProcessGrid.of(comm, rows, cols)) {
      double[] a = new double[n * n];
      double[] b = new double[n];
      for (int j = 0; j < n; j++) {
        for (int i = 0; i < n; i++) {
          a[i + j * n] = i == j ? 4 + i : 1.0 / (1 + i + 2 * j);
          b[i] += a[i + j * n];
        }
      }
      LocalMatrix mine = LocalMatrix.scatter(a, n, da, grid.myRow(), grid.myCol());
      LocalMatrix x = LocalMatrix.scatter(b, n, db, grid.myRow(), grid.myCol());
      Lu.getrs(grid, mine, Lu.getrf(grid, mine), x);
      for (int li = 0; li < x.rows(); li++) {
        for (int lj = 0; lj < x.cols(); lj++) {
          if (Math.abs(x.get(li, lj) - 1) > 1e-12) {
            return "x(" + db.indxl2gRow(li, grid.myRow()) + ") = " + x.get(li, lj);
          }
        }
      }
      return "ok";
    }
  }

  /** What rank {@code r} of {@code n} must have seen, computed on the driver without collectives. */
  static List<String> expected(int r, int n) {
    List<String> out = new ArrayList<>();
    out.add(line("allReduce-sum-i64", r, Arrays.toString(new long[] {(long) n * (n + 1) / 2, 10L * n * (n - 1) / 2})));
    out.add(line("allReduce-max-i32", r, Arrays.toString(new int[] {n - 1, 0, 7})));
    out.add(line("allReduce-large-f32", r, LARGE + "x[" + (float) (n * (n + 1) / 2) + "]"));
    long[] gathered = new long[2 * n];
    for (int q = 0; q < n; q++) {
      gathered[2 * q] = q;
      gathered[2 * q + 1] = (long) q * q;
    }
    out.add(line("allGather-i64", r, Arrays.toString(gathered)));
    double[] rs = new double[4];
    Arrays.setAll(rs, i -> n * (n - 1) / 2.0 + n * (10.0 * r + i));
    out.add(line("reduceScatter-f64", r, Arrays.toString(rs)));
    int[] a2a = new int[3 * n];
    Arrays.setAll(a2a, i -> (i / 3) * 100 + r * 10 + i % 3);
    out.add(line("allToAll-i32", r, Arrays.toString(a2a)));
    List<Long> v = new ArrayList<>();
    for (int q = 0; q < n; q++) {
      for (int j = 0; j < q + r + 1; j++) {
        v.add(q * 1000L + r * 100L + j);
      }
    }
    out.add(line("allToAllv-i64", r, v.toString()));
    double[] bc = new double[5];
    Arrays.setAll(bc, i -> 1.5 * i);
    out.add(line("broadcast-f64", r, Arrays.toString(bc)));
    out.add(line("barrier", r, "passed"));
    out.add(line("split", r, (n - 1 - r) + "/" + n + " sum " + (long) n * (n - 1) / 2));
    out.add(line("getrf-getrs", r, "ok"));
    return out;
  }

  /** Each expected line missing from what the ranks returned, with what the rank got instead. */
  static List<String> wrongResults(List<String> got, int n) {
    List<String> wrong = new ArrayList<>();
    for (int r = 0; r < n; r++) {
      for (String want : expected(r, n)) {
        if (!got.contains(want)) {
          String prefix = want.substring(0, want.indexOf(' ', want.indexOf(' ') + 1) + 1);
          wrong.add("expected '" + want + "', got " + got.stream().filter(l -> l.startsWith(prefix)).toList());
        }
      }
    }
    return wrong;
  }

  private static String line(String collective, int rank, String result) {
    return collective + " " + rank + " " + result;
  }

  private static void awaitExecutors(SparkContext sc, int executors, long timeoutMillis)
      throws InterruptedException {
    long deadline = System.currentTimeMillis() + timeoutMillis;
    while (sc.statusTracker().getExecutorInfos().length - 1 < executors) { // minus the driver
      if (System.currentTimeMillis() > deadline) {
        throw new IllegalStateException("only " + (sc.statusTracker().getExecutorInfos().length - 1)
            + " of " + executors + " executors registered within " + timeoutMillis + " ms");
      }
      Thread.sleep(100);
    }
  }

  /** What is wrong with the live UI's GPU Collectives page and its JSON: each must name the group. */
  private static List<String> uiTabProblems(SparkContext sc, String groupId) throws InterruptedException {
    List<String> wrong = new ArrayList<>();
    if (sc.uiWebUrl().isEmpty()) {
      return List.of("--check-ui-tab, but the driver has no UI (spark.ui.enabled=false?)");
    }
    String tab = sc.uiWebUrl().get() + "/gpucoll/";
    for (String url : List.of(tab, tab + "json/")) {
      String body = "";
      // The status queue writes the report into the store shortly after the driver got it.
      for (int attempt = 0; attempt < 50 && !body.contains(groupId); attempt++) {
        try {
          body = fetch(url);
        } catch (java.io.IOException e) {
          body = e.toString();
        }
        if (!body.contains(groupId)) {
          Thread.sleep(100);
        }
      }
      if (!body.contains(groupId)) {
        wrong.add("the live UI's " + url + " does not show group " + groupId + ": "
            + body.substring(0, Math.min(body.length(), 2000)));
      }
    }
    return wrong;
  }

  /** The body of a GET that answered 200 (this jar holds only this class: no StandaloneCluster.fetch). */
  private static String fetch(String url) throws java.io.IOException {
    java.net.HttpURLConnection c = (java.net.HttpURLConnection) java.net.URI.create(url).toURL().openConnection();
    c.setConnectTimeout(5_000);
    c.setReadTimeout(10_000);
    try {
      if (c.getResponseCode() != 200) {
        throw new java.io.IOException("GET " + url + " answered " + c.getResponseCode());
      }
      return new String(c.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
    } finally {
      c.disconnect();
    }
  }

  private static GroupReport awaitReport(long timeoutMillis) throws InterruptedException {
    long deadline = System.currentTimeMillis() + timeoutMillis;
    while (GpuCollectivesPlugin.driverReports().isEmpty() && System.currentTimeMillis() < deadline) {
      Thread.sleep(20);
    }
    List<GroupReport> reports = GpuCollectivesPlugin.driverReports();
    return reports.isEmpty() ? null : reports.get(reports.size() - 1);
  }
}
