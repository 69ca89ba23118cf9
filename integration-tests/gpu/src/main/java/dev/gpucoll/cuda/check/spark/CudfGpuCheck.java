package dev.gpucoll.cuda.check.spark;

import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.GpuCommunicator;
import dev.gpucoll.spark.BarrierPartitionFunction;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.IntStream;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.resource.ResourceInformation;

/**
 * The cuDF job (run by integration-tests/gpu/spark/run.sh --cudf JAR): barrier stages whose tasks run every
 * {@code dev.gpucoll.cudf.CudfCollectives} entry point on cuDF device buffers and fixed-width
 * columns, checked against a host reference on every rank; the refusals (strings, lists, structs,
 * null masks) on every rank; {@code allToAllv(Table, key)} as the shuffle of a distributed hash
 * join, checked on the driver against a one-process join of the same data (row multiset equal);
 * and the shuffle's throughput beside a device-to-device copy of the same bytes, printed as a
 * table and as "BENCH {json}" rows. Each group of stages runs twice: with the route the plugin
 * chooses, then with our kernels forced ({@code spark.gpucoll.algorithm=gpu-ll-oneshot} as a local
 * property: every call on the LL kernels, so payloads stay within their 64 KiB).
 *
 * <p>cuDF is not in the plugin jar: the application brings it ({@code --jars
 * cudf-26.08.1-cuda13.jar,gpucoll-cudf-<version>.jar}). Without a GPU for every task (the host
 * backend) the job fails at its first stage, saying so.
 *
 * <p>Usage: CudfGpuCheck --ranks N --executors E [--quick] [--no-forced] [--shuffle-rows R]
 * <br>Exit status 0 when every check passed, 1 otherwise.
 */
public final class CudfGpuCheck {
  /** The LL kernels take payloads up to this many bytes (KernelAbi.LL_MAX_BYTES). */
  static final long LL_MAX_BYTES = 64 << 10;
  static final String FORCED = "gpu-ll-oneshot";
  static final long JOIN_SEED = 20_26_12_01L;

  /** Sizes of one route's stages. */
  record Sizes(long maxBytes, int joinBuildRows, int joinProbeRows, long joinKeys, int[] shuffleRows,
      int iterations) implements java.io.Serializable {}

  record Options(int ranks, int executors, boolean quick, boolean forced, int shuffleRows) {
    static Options parse(String[] args) {
      JobArgs a = JobArgs.parse(args, Set.of("--ranks", "--executors", "--shuffle-rows"), Set.of("--quick", "--no-forced"),
          "CudfGpuCheck --ranks N --executors E [--quick] [--no-forced] [--shuffle-rows R]");
      int ranks = a.intValue("--ranks", 2);
      int executors = a.intValue("--executors", 1);
      boolean quick = a.has("--quick");
      int shuffleRows = a.intValue("--shuffle-rows", 0);
      if (ranks < 1 || executors < 1 || shuffleRows < 0) {
        throw new IllegalArgumentException("--ranks and --executors must be at least 1, --shuffle-rows not"
            + " negative (got " + ranks + ", " + executors + ", " + shuffleRows + ")");
      }
      if (shuffleRows == 0) {
        shuffleRows = quick ? 1 << 20 : 4 << 20;
      }
      return new Options(ranks, executors, quick, !a.has("--no-forced"), shuffleRows);
    }

    /**
     * The plugin's route: buffers up to 1 MiB, a join of about 100k rows, the shuffle at 256k rows
     * and at the large size.
     */
    Sizes routed() {
      return new Sizes(1 << 20, 50_000, 50_000, 100_000,
          java.util.stream.IntStream.of(Math.min(1 << 18, shuffleRows), shuffleRows).distinct().toArray(), quick ? 3 : 5);
    }

    /**
     * Our LL kernels forced: every payload within 64 KiB, for allToAllv per peer and column (a
     * hash partition of 8192 INT64 keys sends about 32 KiB to each of 2 ranks).
     */
    Sizes forcedKernels() {
      int rows = (int) Math.min(8192, LL_MAX_BYTES / 2 / 8 * ranks);
      return new Sizes(LL_MAX_BYTES, rows * 3 / 4, rows * 3 / 4, rows, new int[] {rows}, quick ? 3 : 5);
    }
  }

  private CudfGpuCheck() {}

  public static void main(String[] args) {
    Options o = Options.parse(args);
    int problems;
    try (JavaSparkContext jsc = new JavaSparkContext(new SparkConf().setAppName("gpucoll CudfGpuCheck"))) {
      if (!jsc.sc().isLocal()) { // local mode runs the tasks in the driver: no executor to wait for
        SparkGpuCheck.awaitExecutors(jsc, o.executors(), 180);
      }
      Map<String, List<String>> byStage = new LinkedHashMap<>();
      Map<String, Sizes> joins = new LinkedHashMap<>();
      byStage.put("cudf-start", stage(jsc, o, "cudf-start", null, (comm, rows) -> start(comm, "cudf-start")));
      boolean started = byStage.get("cudf-start").stream().noneMatch(l -> l.startsWith("FAIL"));
      List<String> routes = o.forced() ? List.of("auto", FORCED) : List.of("auto");
      for (String route : routes) {
        String forced = route.equals("auto") ? null : route;
        Sizes sizes = forced == null ? o.routed() : o.forcedKernels();
        String suffix = forced == null ? "" : "-" + forced;
        for (String part : List.of("collectives", "refusals", "join", "shuffle")) {
          String name = "cudf-" + part + suffix;
          if (!started) {
            String skip = "SKIP stage=" + name + ": cuDF did not start on every rank (stage cudf-start)";
            System.out.println(skip);
            byStage.put(name, List.of(skip));
            continue;
          }
          if (part.equals("join")) {
            joins.put(name, sizes);
          }
          byStage.put(name, stage(jsc, o, name, forced, (comm, rows) -> body(comm, name, part, sizes, route)));
        }
      }
      problems = report(byStage, joins, o.ranks());
    }
    System.out.println(problems == 0 ? "== CudfGpuCheck PASSED" : "== CudfGpuCheck FAILED: " + problems + " problem(s)");
    System.exit(problems == 0 ? 0 : 1);
  }

  /**
   * One barrier stage of {@code o.ranks()} tasks, {@code spark.gpucoll.algorithm} set to
   * {@code forced} for it when not null; prints its lines (the joined rows abbreviated); a failed
   * stage becomes one FAIL line.
   */
  private static List<String> stage(JavaSparkContext jsc, Options o, String name, String forced,
      BarrierPartitionFunction<Integer, String> body) {
    return BarrierStage.run(jsc, "CudfGpuCheck", name, forced,
        jsc.parallelize(IntStream.range(0, o.ranks()).boxed().toList(), o.ranks()), body,
        l -> l.replaceFirst(" data=(.{0,40}).*", " data=$1..."));
  }

  // ---------------------------------------------------------------- stage bodies (executors)

  private static Iterator<String> start(Communicator comm, String stage) {
    List<String> out = new ArrayList<>();
    TaskContext task = TaskContext.get();
    ResourceInformation gpu = task.resourcesJMap().get("gpu");
    out.add("RANK rank=" + comm.rank() + "/" + comm.size() + " executor=" + SparkEnv.get().executorId() + " pid="
        + ProcessHandle.current().pid() + " backend=" + comm.backend() + " taskGpus="
        + (gpu == null ? "[]" : Arrays.toString(gpu.addresses())) + " thread=" + Thread.currentThread().getName());
    if (!(comm instanceof GpuCommunicator g)) {
      out.add("FAIL stage=" + stage + " rank=" + comm.rank() + " the " + comm.backend() + " backend formed this group:"
          + " cuDF collectives need the gpu backend (a GPU for every task: spark.executor.resource.gpu.amount and"
          + " spark.task.resource.gpu.amount)");
      return out.iterator();
    }
    try {
      out.add("CUDF stage=" + stage + " rank=" + comm.rank() + " " + CudfRankChecks.start(g.device()));
    } catch (Throwable e) { // a missing native library is an Error: report it, the other ranks too
      out.add("FAIL stage=" + stage + " rank=" + comm.rank() + " cuDF did not start on device " + g.device() + ": "
          + e.toString().replace('\n', ' '));
    }
    return out.iterator();
  }

  private static Iterator<String> body(Communicator comm, String stage, String part, Sizes sizes, String route) {
    List<String> out = new ArrayList<>();
    if (!(comm instanceof GpuCommunicator gpu)) {
      out.add("FAIL stage=" + stage + " rank=" + comm.rank() + " the " + comm.backend() + " backend formed this group");
      return out.iterator();
    }
    CudfRankChecks.start(gpu.device()); // this task's thread: cuDF's current device
    CudfRankChecks c = new CudfRankChecks(gpu, stage, sizes.maxBytes());
    switch (part) {
      case "collectives" -> {
        c.buffers();
        c.columns();
      }
      case "refusals" -> c.refusals();
      case "join" -> c.join(JOIN_SEED, sizes.joinBuildRows(), sizes.joinProbeRows(), sizes.joinKeys());
      case "shuffle" -> {
        for (int rows : sizes.shuffleRows()) {
          c.shuffleThroughput(rows, sizes.iterations(), route);
        }
      }
      default -> throw new IllegalArgumentException("no part " + part);
    }
    out.addAll(c.finish());
    out.add("PATHS stage=" + stage + " rank=" + comm.rank() + " "
        + (comm.isClosed() ? "(communicator closed)" : comm.observedPaths()));
    if (c.failed() && !comm.isClosed()) {
      comm.close(); // the next stage forms a new group rather than reuse one in an unknown state
      out.add("CLOSED rank=" + comm.rank() + ": a check failed; the next stage forms a new group");
    }
    return out.iterator();
  }

  // ---------------------------------------------------------------- driver report

  private static final Pattern CHECKS = Pattern.compile("^CHECKS stage=(\\S+) memory=\\S+ rank=(\\d+) cases=(\\d+)"
      + " failures=(\\d+)");
  private static final Pattern JOIN = Pattern.compile("^JOIN stage=(\\S+) rank=(\\d+) buildRows=(\\d+) probeRows=(\\d+)"
      + " receivedBuild=(\\d+) receivedProbe=(\\d+) joined=(\\d+) data=(\\S*)$");

  /** Prints the summary, the join verdicts and the throughput table; returns the number of problems. */
  static int report(Map<String, List<String>> byStage, Map<String, Sizes> joins, int ranks) {
    int problems = 0;
    List<String> summary = new ArrayList<>();
    List<String> bench = new ArrayList<>();
    for (Map.Entry<String, List<String>> e : byStage.entrySet()) {
      for (String line : e.getValue()) {
        Matcher m = CHECKS.matcher(line);
        if (m.find()) {
          summary.add(String.format(Locale.ROOT, "  %-34s rank %s: %4s cases, %s wrong", m.group(1), m.group(2),
              m.group(3), m.group(4)));
        }
        if (line.startsWith("FAIL")) {
          problems++;
        }
        if (line.startsWith("PATHS ") && e.getKey().endsWith("-" + FORCED) && line.contains("gpu-staged-host")) {
          System.out.println("FAIL stage=" + e.getKey() + " our kernels were forced, yet calls took gpu-staged-host: "
              + line);
          problems++;
        }
        if (line.startsWith("BENCH ")) {
          bench.add(line.substring(6));
        }
      }
    }
    System.out.println();
    System.out.println("== CudfGpuCheck summary: cases and failures per stage and rank");
    summary.forEach(System.out::println);
    for (Map.Entry<String, Sizes> j : joins.entrySet()) {
      String verdict = checkJoin(j.getKey(), j.getValue(), byStage.get(j.getKey()), ranks);
      System.out.println("  " + verdict);
      if (verdict.startsWith("FAIL")) {
        problems++;
      }
    }
    if (!bench.isEmpty()) {
      printThroughput(bench);
    }
    return problems;
  }

  /** The ranks' joined rows against the one-process join of every rank's data. */
  static String checkJoin(String stage, Sizes s, List<String> lines, int ranks) {
    List<long[]> perRank = new ArrayList<>();
    long receivedBuild = 0;
    long receivedProbe = 0;
    for (int r = 0; r < ranks; r++) {
      perRank.add(null);
    }
    for (String line : lines) {
      Matcher m = JOIN.matcher(line);
      if (m.find()) {
        int r = Integer.parseInt(m.group(2));
        long[] rows = JoinReference.decode(m.group(8));
        if (rows.length != Long.parseLong(m.group(7)) * JoinReference.ROW_LONGS) {
          return "FAIL stage=" + stage + " join: rank " + r + " sent " + rows.length / JoinReference.ROW_LONGS
              + " rows but says it joined " + m.group(7);
        }
        perRank.set(r, rows);
        receivedBuild += Long.parseLong(m.group(5));
        receivedProbe += Long.parseLong(m.group(6));
      }
    }
    List<Integer> missing = IntStream.range(0, ranks).filter(r -> perRank.get(r) == null).boxed().toList();
    if (!missing.isEmpty()) {
      return "FAIL stage=" + stage + " join: no joined rows from rank(s) " + missing + " (see their FAIL lines)";
    }
    if (receivedBuild != (long) s.joinBuildRows() * ranks || receivedProbe != (long) s.joinProbeRows() * ranks) {
      return "FAIL stage=" + stage + " join: the shuffle delivered " + receivedBuild + " build and " + receivedProbe
          + " probe rows in all, " + (long) s.joinBuildRows() * ranks + " and " + (long) s.joinProbeRows() * ranks
          + " were sent";
    }
    List<JoinReference.Share> shares = new ArrayList<>();
    for (int r = 0; r < ranks; r++) {
      shares.add(JoinReference.share(JOIN_SEED, r, s.joinBuildRows(), s.joinProbeRows(), s.joinKeys()));
    }
    long[] reference = JoinReference.join(shares);
    String diff = JoinReference.compare(reference, perRank);
    if (diff != null) {
      return "FAIL stage=" + stage + " join: " + diff;
    }
    List<Long> split = JoinReference.keysOnSeveralRanks(perRank);
    if (!split.isEmpty()) {
      return "FAIL stage=" + stage + " join: keys joined on several ranks (the shuffle must send a key to one rank): "
          + split.subList(0, Math.min(5, split.size()));
    }
    return "JOIN stage=" + stage + ": " + reference.length / JoinReference.ROW_LONGS + " joined rows from "
        + ranks + " x (" + s.joinBuildRows() + " build + " + s.joinProbeRows() + " probe) rows over " + s.joinKeys()
        + " keys, row multiset equal to the one-process join; every key joined on one rank";
  }

  private static void printThroughput(List<String> rows) {
    System.out.println();
    System.out.println("== CudfGpuCheck throughput: allToAllv(Table, key) per rank (hash partition + count exchange"
        + " + one allToAllv per column), beside a device-to-device copy of the same bytes on the same stream;"
        + " medians, every rank started together; GB/s = table bytes per rank / time");
    System.out.printf(Locale.ROOT, "%-32s %-15s %4s %9s %11s %10s %12s %9s %10s %9s %11s%n", "stage", "algorithm",
        "rank", "rows", "bytes", "shuffle ms", "rows/s", "GB/s", "partition", "copy ms", "copy GB/s");
    for (String json : rows) {
      System.out.printf(Locale.ROOT, "%-32s %-15s %4s %9s %11s %10s %12s %9s %10s %9s %11s%n",
          SparkGpuCheck.field(json, "stage"), SparkGpuCheck.field(json, "algorithm"), SparkGpuCheck.field(json, "rank"),
          SparkGpuCheck.field(json, "rows"), SparkGpuCheck.field(json, "bytes"), SparkGpuCheck.field(json, "shuffle_ms"),
          SparkGpuCheck.field(json, "shuffle_rows_per_s"), SparkGpuCheck.field(json, "shuffle_gb_per_s"),
          SparkGpuCheck.field(json, "hash_partition_ms"), SparkGpuCheck.field(json, "copy_ms"),
          SparkGpuCheck.field(json, "copy_gb_per_s"));
    }
  }
}
