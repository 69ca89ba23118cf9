package dev.gpucoll.examples;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.spark.GpuCollectives;
import dev.gpucoll.spark.GpuCollectivesPlugin;
import dev.gpucoll.spark.GroupReport;
import java.io.Serializable;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkEnv;
import org.apache.spark.api.java.JavaSparkContext;

/**
 * The demo: a Spark local-cluster with several executor JVMs runs one barrier stage in which every
 * task gets its communicator and runs each collective on generated data, checks the results, then
 * times them. Prints the executors, the driver's per-group path report and a latency table. The
 * backend is chosen by the factory: GPU when every rank has one, the host backend otherwise.
 *
 * <p>Run with scripts/demo.sh. Arguments: [executors (3)] [timed repetitions (50)] [--ui]: with
 * {@code --ui} the Spark UI stays up after the job (its address printed; the "GPU collectives"
 * tab and /gpucoll/json/) until the process is stopped.
 */
public final class Demo {
  private Demo() {}

  /** One timed case: what a rank ran and how long each repetition took. */
  record Timing(String collective, long bytes, String algorithm, long[] nanos) implements Serializable {}

  /** What one rank reports back to the driver. */
  record RankResult(int rank, long pid, String executorId, String backend, int checked,
      List<Timing> timings) implements Serializable {}

  public static void main(String[] args) throws InterruptedException {
    boolean ui = Arrays.asList(args).contains("--ui");
    String[] positional = Arrays.stream(args).filter(a -> !a.equals("--ui")).toArray(String[]::new);
    int executors = positional.length > 0 ? Integer.parseInt(positional[0]) : 3;
    int reps = positional.length > 1 ? Integer.parseInt(positional[1]) : 50;
    SparkConf conf = LocalCluster.conf("gpucoll-demo", executors)
        .set("spark.gpucoll.report", "off") // the demo prints the group's report itself, once
        .set("spark.ui.enabled", String.valueOf(ui));
    System.out.println("Starting Spark local-cluster[" + executors + ",1,1024]: " + executors
        + " executor JVMs (this takes 20-40 s on a small machine)...");
    try (JavaSparkContext jsc = new JavaSparkContext(conf)) {
      LocalCluster.awaitExecutors(jsc.sc(), executors, Duration.ofSeconds(180));
      long start = System.nanoTime();
      List<RankResult> ranks = new ArrayList<>(GpuCollectives.barrierMapPartitions(
          jsc.parallelize(IntStream.range(0, executors).boxed().toList(), executors),
          (comm, rows) -> List.of(runRank(comm, reps)).iterator()).collect());
      long jobMillis = (System.nanoTime() - start) / 1_000_000;
      ranks.sort((a, b) -> Integer.compare(a.rank(), b.rank()));
      print(ranks, jobMillis, reps);
      if (ui) {
        System.out.println();
        System.out.println("Spark UI: " + jsc.sc().uiWebUrl().getOrElse(() -> "(none)") + "/gpucoll/ (the \"GPU"
            + " collectives\" tab; the same as JSON under /gpucoll/json/). Stop with Ctrl-C.");
        Thread.sleep(Long.MAX_VALUE);
      }
    }
  }

  static RankResult runRank(Communicator comm, int reps) {
    List<Timing> timings = new ArrayList<>();
    int checked = 0;
    for (Case c : cases(comm)) {
      c.run.run();
      c.check.run(); // throws with the rank and the first wrong element
      checked++;
      // Untimed calls first, the same number on every rank: the timings are of compiled code, not
      // of the interpreter and the JIT compiling while the executors start.
      for (int i = 0; i < warmUpCalls(c.bytes); i++) {
        c.run.run();
      }
      long[] nanos = new long[reps];
      for (int i = 0; i < reps; i++) {
        long t = System.nanoTime();
        c.run.run();
        nanos[i] = System.nanoTime() - t;
      }
      String algorithm = comm.explain(c.collective, c.bytes).algorithm();
      timings.add(new Timing(c.collective.apiName(), c.bytes, algorithm, nanos));
    }
    return new RankResult(comm.rank(), ProcessHandle.current().pid(), SparkEnv.get().executorId(),
        comm.backend(), checked, timings);
  }

  /** Untimed calls before a case is timed: many for small messages, a few for large ones. */
  static int warmUpCalls(long bytes) {
    return bytes <= (64 << 10) ? 2000 : 20;
  }

  private record Case(Collective collective, long bytes, Runnable run, Runnable check) {}

  /** Each collective on generated data, with a check of the exact expected result. */
  private static List<Case> cases(Communicator comm) {
    int r = comm.rank();
    int n = comm.size();
    List<Case> cases = new ArrayList<>();
    for (int count : new int[] {256, 262_144}) { // 1 KiB and 1 MiB of float32
      float[] in = new float[count];
      float[] out = new float[count];
      for (int i = 0; i < count; i++) {
        in[i] = r + 1 + i % 7;
      }
      cases.add(new Case(Collective.ALL_REDUCE, 4L * count,
          () -> comm.allReduce(CommBuffer.of(in), CommBuffer.of(out), count, DataType.FLOAT32, ReduceOp.SUM),
          () -> {
            for (int i = 0; i < count; i++) {
              expect(out[i] == n * (n + 1) / 2f + n * (i % 7), comm, "allReduce", i, out[i]);
            }
          }));
    }
    int[] gIn = new int[256];
    Arrays.setAll(gIn, i -> r * 1000 + i);
    int[] gOut = new int[256 * n];
    cases.add(new Case(Collective.ALL_GATHER, 1024,
        () -> comm.allGather(CommBuffer.of(gIn), CommBuffer.of(gOut), 256, DataType.INT32),
        () -> {
          for (int i = 0; i < gOut.length; i++) {
            expect(gOut[i] == (i / 256) * 1000 + i % 256, comm, "allGather", i, gOut[i]);
          }
        }));
    double[] rsIn = new double[128 * n];
    Arrays.setAll(rsIn, i -> r + i);
    double[] rsOut = new double[128];
    cases.add(new Case(Collective.REDUCE_SCATTER, 1024,
        () -> comm.reduceScatter(CommBuffer.of(rsIn), CommBuffer.of(rsOut), 128, DataType.FLOAT64, ReduceOp.SUM),
        () -> {
          for (int i = 0; i < 128; i++) {
            expect(rsOut[i] == n * (n - 1) / 2.0 + n * (r * 128.0 + i), comm, "reduceScatter", i, rsOut[i]);
          }
        }));
    int[] aIn = new int[256 * n];
    Arrays.setAll(aIn, i -> r * 100_000 + i);
    int[] aOut = new int[256 * n];
    cases.add(new Case(Collective.ALL_TO_ALL, 1024,
        () -> comm.allToAll(CommBuffer.of(aIn), CommBuffer.of(aOut), 256, DataType.INT32),
        () -> {
          for (int i = 0; i < aOut.length; i++) {
            int from = i / 256;
            expect(aOut[i] == from * 100_000 + r * 256 + i % 256, comm, "allToAll", i, aOut[i]);
          }
        }));
    double[] bc = new double[128];
    cases.add(new Case(Collective.BROADCAST, 1024,
        () -> {
          if (r == 0) {
            Arrays.setAll(bc, i -> i * 0.5);
          } else {
            Arrays.fill(bc, -1);
          }
          comm.broadcast(CommBuffer.of(bc), CommBuffer.of(bc), 128, DataType.FLOAT64, 0);
        },
        () -> {
          for (int i = 0; i < 128; i++) {
            expect(bc[i] == i * 0.5, comm, "broadcast", i, bc[i]);
          }
        }));
    cases.add(new Case(Collective.BARRIER, 0, comm::barrier, () -> { }));
    return cases;
  }

  private static void expect(boolean ok, Communicator comm, String what, int index, double got) {
    if (!ok) {
      throw new IllegalStateException("rank " + comm.rank() + ": " + what + " result [" + index
          + "] = " + got + " is wrong");
    }
  }

  private static void print(List<RankResult> ranks, long jobMillis, int reps) {
    System.out.println();
    System.out.println("Barrier job over " + ranks.size() + " executor JVMs took " + jobMillis
        + " ms (communicator set-up, checks, warm-up calls and " + reps + " timed repetitions per case)");
    for (RankResult r : ranks) {
      System.out.println("  rank " + r.rank() + ": executor " + r.executorId() + ", pid " + r.pid()
          + ", backend " + r.backend() + ", " + r.checked() + " collectives checked OK");
    }
    System.out.println();
    System.out.println("Path report (driver):");
    GroupReport report = awaitReport();
    System.out.println(report == null ? "  (no report arrived within 10 s)"
        : "  " + report.summaryLine().replace(", paths ", ",\n  paths "));
    System.out.println();
    System.out.println("Latency per call, " + reps + " repetitions per rank after " + warmUpCalls(1)
        + " (up to 64 KiB) or " + warmUpCalls(1 << 20) + " untimed calls (slowest rank's median / p99, µs):");
    System.out.printf("  %-14s %9s  %-18s %10s %10s%n", "collective", "bytes", "algorithm", "median", "p99");
    Map<String, List<Timing>> byCase = new LinkedHashMap<>();
    for (RankResult r : ranks) {
      for (Timing t : r.timings()) {
        byCase.computeIfAbsent(t.collective() + "/" + t.bytes(), k -> new ArrayList<>()).add(t);
      }
    }
    for (List<Timing> perRank : byCase.values()) {
      Timing first = perRank.get(0);
      double median = perRank.stream().mapToDouble(t -> percentile(t.nanos(), 0.5)).max().orElse(0);
      double p99 = perRank.stream().mapToDouble(t -> percentile(t.nanos(), 0.99)).max().orElse(0);
      System.out.printf("  %-14s %9d  %-18s %10.1f %10.1f%n", first.collective(), first.bytes(),
          first.algorithm(), median / 1000, p99 / 1000);
    }
    System.out.println();
    for (String line : readingNotes(report == null ? null : report.summaryLine(), ranks.size(),
        Runtime.getRuntime().availableProcessors(),
        java.lang.management.ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage())) {
      System.out.println(line);
    }
  }

  /** What the report's path names and the table's numbers mean, for the machine they came from. */
  static List<String> readingNotes(String summaryLine, int ranks, int cores, double load) {
    List<String> notes = new ArrayList<>();
    notes.add("Reading it:");
    // The example is this run's own one-shot count, so that the note and the report above agree.
    java.util.regex.Matcher oneShot = summaryLine == null ? null
        : java.util.regex.Pattern.compile("host-oneshotx(\\d+)").matcher(summaryLine);
    String calls = oneShot != null && oneShot.find() ? oneShot.group(1) : "612";
    notes.add("  paths: <path>x<calls> counts the group's calls per path, e.g. host-oneshotx" + calls + ": " + calls
        + " allReduce calls");
    notes.add("    on the host backend's one-shot path (each rank reduces every rank's input from shared memory);");
    notes.add("    twoshot: reduce-scatter then all-gather; bulk: the data copied through shared memory; flags: a");
    notes.add("    barrier of flags in shared memory; a GPU");
    notes.add("    group names its kernels (ll, ll128) or nccl. The algorithm column is the path of that row's calls.");
    String machine = String.format("  numbers: this machine has %d cores for %d ranks, the driver and Spark (load average"
        + " %.1f).", cores, ranks, load);
    notes.add(machine);
    if (ranks + 1 > cores || load > cores) {
      notes.add("    The ranks share cores: a waiting rank gives its core up, and a call then waits for the");
      notes.add("    scheduler (a tick is 1-4 ms): that, not the collective, is what a millisecond p99 shows");
      notes.add("    here. The medians of a machine with a core per rank are in docs/bench-host.md.");
    } else {
      notes.add("    Every rank has a core of its own; a p99 far above the median is another process taking one.");
    }
    return notes;
  }

  static double percentile(long[] nanos, double q) {
    long[] s = nanos.clone();
    Arrays.sort(s);
    return s[Math.min(s.length - 1, (int) Math.ceil(q * s.length) - 1)];
  }

  private static GroupReport awaitReport() {
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (System.nanoTime() < deadline) {
      List<GroupReport> all = GpuCollectivesPlugin.driverReports();
      if (!all.isEmpty()) {
        return all.get(all.size() - 1);
      }
      try {
        Thread.sleep(20);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return null;
      }
    }
    return null;
  }
}
