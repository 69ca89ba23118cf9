package dev.gpucoll.cuda.check;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CollectiveBatch;
import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.GpuCommunicator;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.check.Elements;
import dev.gpucoll.core.rendezvous.LocalRendezvous;
import dev.gpucoll.cuda.CudaEnvironment;
import dev.gpucoll.cuda.CudaNative;
import dev.gpucoll.cuda.DeviceFacts;
import dev.gpucoll.cuda.KernelTable;
import dev.gpucoll.cuda.eligibility.ZeroCtaDetector;
import dev.gpucoll.cuda.nccl.NcclCommunicator;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.function.Consumer;

/**
 * The GPU benchmark: a program that prints tables (p50 / p99 / max per size) and writes one JSON
 * record per kind into {@code --json-dir} as {@code <kind>-<date>-<commit>.json}. Ranks are threads of
 * this JVM on one GPU. Kinds:
 * <ul>
 *   <li>{@code gpu-launch}: host cost of one Java allReduce (1 rank, the LL kernel forced, 4 bytes, device
 *       buffers: checks, route, GcArgs patch, cuLaunchKernel(Ex)) against the C++ cuLaunchKernel of the
 *       same kernel from the same fatbin, measured by gc_bench in the same run ({@code --cpp-us-per-launch});
 *   <li>{@code gpu-1rank}: a one-rank allReduce (ours: one copy) against NCCL's one-rank allReduce, per call
 *       under graph replay (no host code in the timed region) and eager;
 *   <li>{@code gpu-group}: batches of allReduces (16 x 4 KB, 16 x 256 B, 64 x 1 KB) in one {@code group()}
 *       (one batch-kernel launch at 2 and 4 ranks) against the same calls separate, and NCCL's group of
 *       the same (NCCL takes one rank per GPU, so only at one rank here);
 *   <li>{@code gpu-allreduce}: allReduce fp32 SUM by size on the auto path: per call under graph replay,
 *       and the blocking round trip (call + synchronize) of single calls, whose tail the table shows;
 *       beside it the same samples from the moment the last rank entered the call, which leaves out
 *       how late the host threads of the other ranks started (a call cannot finish before they launch).
 * </ul>
 * Each section runs bounded ({@code --section-timeout-s}, default 240): one that does not finish is
 * reported with where its thread was, and the program stops with the tables measured so far (a GPU
 * kernel that never ends cannot be cancelled from the host).
 * Usage: GpuBench [--quick] [--group-only] [--section-timeout-s S] [--device N] [--cpp-us-per-launch X] [--json-dir DIR] [--commit SHA]
 */
public final class GpuBench {
  /**
   * How long a rank thread of a section may take: shorter than the section's own bound, so that a
   * stuck rank is reported with its stack (RankGroup's HarnessTimeout) before the section is.
   */
  private final Duration rankLimit;

  /** p50 / p99 / max of samples, in us. */
  record Dist(double p50, double p99, double max, int n) {
    static Dist of(double[] v) {
      double[] s = v.clone();
      Arrays.sort(s);
      return new Dist(pct(s, 0.50), pct(s, 0.99), s[s.length - 1], s.length);
    }

    private static double pct(double[] sorted, double q) {
      return sorted[Math.min(sorted.length - 1, (int) Math.ceil(q * sorted.length) - 1)];
    }

    String json(String name) {
      return String.format(Locale.ROOT, "\"%s\":%.3f,\"%s_p99\":%.3f,\"%s_max\":%.3f", name, p50, name, p99, name, max);
    }

    @Override
    public String toString() {
      return String.format(Locale.ROOT, "%8.2f %8.2f %8.2f", p50, p99, max);
    }
  }

  private final int device;
  private final boolean quick;
  private final Double cppUs;
  private final Path jsonDir;
  private final String commit;
  private final String machine;

  private GpuBench(int device, boolean quick, Double cppUs, Path jsonDir, String commit, String machine,
      Duration sectionTimeout) {
    this.rankLimit = Duration.ofSeconds(Math.max(10, Math.min(120, sectionTimeout.toSeconds() - 15)));
    this.device = device;
    this.quick = quick;
    this.cppUs = cppUs;
    this.jsonDir = jsonDir;
    this.commit = commit;
    this.machine = machine;
  }

  public static void main(String[] args) throws Exception {
    int device = 0;
    boolean quick = false;
    boolean groupOnly = false;
    Duration sectionTimeout = Duration.ofSeconds(240);
    Double cppUs = null;
    Path jsonDir = Path.of(System.getenv().getOrDefault("OUT", "/tmp/gpucoll-out"), "bench");
    String commit = "unknown";
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--quick" -> quick = true;
        case "--group-only" -> groupOnly = true;
        case "--section-timeout-s" -> sectionTimeout = Duration.ofSeconds(Long.parseLong(args[++i]));
        case "--device" -> device = Integer.parseInt(args[++i]);
        case "--cpp-us-per-launch" -> cppUs = Double.parseDouble(args[++i]);
        case "--json-dir" -> jsonDir = Path.of(args[++i]);
        case "--commit" -> commit = args[++i];
        default -> throw new IllegalArgumentException("unknown argument " + args[i]);
      }
    }
    if (!CudaEnvironment.probe().available()) {
      System.out.println("GPU backend unavailable: " + CudaEnvironment.probe().unavailableReason().get());
      System.exit(1);
    }
    CudaNative.setDevice(device);
    DeviceFacts f = CudaNative.deviceFacts(device);
    String machine = f.name() + ", " + f.multiprocessors() + " SMs, sm_" + f.computeCapability()
        + "; ranks as threads of one process";
    System.out.println("== GpuBench on " + f.name() + " " + f.uuid() + ", ranks as threads of one process");
    GpuBench b = new GpuBench(device, quick, cppUs, jsonDir, commit, machine, sectionTimeout);
    List<String> tables = new ArrayList<>();
    // gpu-group last: it is the newest section, so a problem there does not cost the others' numbers.
    Map<String, Section> sections = new LinkedHashMap<>();
    if (!groupOnly) {
      sections.put("gpu-launch", b::launch);
      sections.put("gpu-1rank", b::oneRank);
      sections.put("gpu-allreduce", b::allReduceBySize);
    }
    sections.put("gpu-group", b::grouped);
    for (Map.Entry<String, Section> s : sections.entrySet()) {
      String outcome = runBounded(s.getKey(), s.getValue(), sectionTimeout);
      tables.add(outcome);
      if (outcome.startsWith("section " + s.getKey() + " did not finish")) {
        // A kernel that never ends cannot be cancelled from the host: report what was measured, stop.
        printTables(tables);
        System.out.flush();
        Runtime.getRuntime().halt(3);
      }
    }
    printTables(tables);
    long failed = tables.stream().filter(t -> t.startsWith("section ")).count();
    if (failed > 0) {
      System.out.println("GpuBench: " + failed + " section(s) failed");
      System.out.flush();
      Runtime.getRuntime().halt(1); // rank threads of a failed section may still hold the GPU
    }
  }

  private static void printTables(List<String> tables) {
    System.out.println();
    System.out.println("== GpuBench table (us; p50 / p99 / max over samples)");
    tables.forEach(System.out::println);
  }

  /** Runs one section on its own thread, bounded: its table, its failure, or that it did not finish. */
  private static String runBounded(String name, Section s, Duration limit) throws InterruptedException {
    java.util.concurrent.FutureTask<String> task = new java.util.concurrent.FutureTask<>(s::run);
    Thread t = new Thread(task, "gpubench-" + name);
    t.setDaemon(true);
    t.start();
    try {
      return task.get(limit.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
    } catch (java.util.concurrent.TimeoutException e) {
      StringBuilder where = new StringBuilder();
      for (StackTraceElement el : t.getStackTrace()) {
        if (where.length() < 600) {
          where.append("\n    at ").append(el);
        }
      }
      return "section " + name + " did not finish within " + limit.toSeconds() + " s; its thread:" + where;
    } catch (java.util.concurrent.ExecutionException e) {
      e.getCause().printStackTrace(System.out);
      return "section " + name + " FAILED: " + e.getCause();
    }
  }

  interface Section {
    String run() throws Exception;
  }

  // ---------------------------------------------------------------- gpu-launch

  /**
   * Host cost per call: 20,000 back-to-back allReduces of one fp32 on a one-rank group with the LL
   * kernel forced (so a kernel launches: an unforced one-rank group copies), per call the mean of a
   * batch as the C++ loop reports it, 11 batches; and each call timed alone for the tail.
   */
  private String launch() {
    int calls = 20_000;
    int batches = quick ? 5 : 11;
    try (RankGroup g = RankGroup.create(1, device, KernelTable.Protocol.LL.abiName(), Duration.ofSeconds(20), 1 << 20)) {
      double[][] out = g.onAll(rankLimit, r -> {
        CommBuffer s = CommBuffer.device(r.send, 4);
        CommBuffer d = CommBuffer.device(r.recv, 4);
        double[] means = new double[batches];
        double[] single = new double[calls];
        for (int b = -1; b < batches; b++) { // b = -1 warms up
          r.comm.synchronize();
          long t0 = System.nanoTime();
          for (int i = 0; i < calls; i++) {
            r.comm.allReduce(s, d, 1, DataType.FLOAT32, ReduceOp.SUM);
          }
          long t1 = System.nanoTime();
          r.comm.synchronize();
          if (b >= 0) {
            means[b] = (t1 - t0) / 1e3 / calls;
          }
        }
        for (int i = 0; i < calls; i++) {
          long t0 = System.nanoTime();
          r.comm.allReduce(s, d, 1, DataType.FLOAT32, ReduceOp.SUM);
          single[i] = (System.nanoTime() - t0) / 1e3;
        }
        r.comm.synchronize();
        return new double[][] {means, single, {r.comm.observedPaths().toString().contains("gpu-ll-oneshot") ? 1 : 0}};
      }).get(0);
      Dist mean = Dist.of(out[0]);
      Dist single = Dist.of(out[1]);
      StringBuilder t = new StringBuilder("-- gpu-launch: host us per Java allReduce (1 rank, LL kernel, 4 B, device buffers)\n");
      t.append(String.format(Locale.ROOT, "%-44s %8s %8s %8s%n", "", "p50", "p99", "max"));
      t.append(String.format(Locale.ROOT, "%-44s %s%n", "Java, mean of 20k back-to-back (per batch)", mean));
      t.append(String.format(Locale.ROOT, "%-44s %s%n", "Java, each call timed alone", single));
      if (cppUs != null) {
        t.append(String.format(Locale.ROOT, "C++ cuLaunchKernel, same kernel, same run (gc_bench): %.3f us -> Java/C++ = %.3f"
            + " (target <= 1.05)%n", cppUs, mean.p50 / cppUs));
      } else {
        t.append("C++ cuLaunchKernel: not measured in this run\n");
      }
      if (out[2][0] == 0) {
        t.append("WARNING: the launches did not run gpu-ll-oneshot\n");
      }
      write("gpu-launch", "[{" + mean.json("java_us") + ",\"java_single_call_us\":" + String.format(Locale.ROOT,
          "%.3f", single.p50) + ",\"cpp_us\":" + (cppUs == null ? "null" : String.format(Locale.ROOT, "%.3f", cppUs))
          + ",\"calls\":" + calls + ",\"batches\":" + batches + "}]");
      return t.toString();
    }
  }

  // ---------------------------------------------------------------- gpu-1rank

  private static final long[] ONE_RANK_SIZES = {8, 4 << 10, 64 << 10, 1 << 20, 16 << 20};

  /** Ours (a one-rank group: one copy) against NCCL's one-rank allReduce, out of place, fp32 SUM. */
  private String oneRank() throws Exception {
    long cap = 16 << 20;
    StringBuilder t = new StringBuilder("-- gpu-1rank: allReduce fp32 SUM on one rank, us per call (graph replay of K"
        + " calls; eager = K back-to-back calls between events)\n");
    t.append(String.format(Locale.ROOT, "%9s %-26s %-26s %-26s %-26s %7s%n", "bytes", "ours graph p50/p99/max",
        "NCCL graph", "ours eager", "NCCL eager", "ours/NCCL"));
    List<String> rows = new ArrayList<>();
    try (RankGroup g = RankGroup.create(1, device, null, Duration.ofSeconds(20), cap)) {
      RankGroup.Rank r = g.ranks[0];
      NcclCommunicator nccl = g.onAll(rankLimit, x -> NcclCommunicator.create(LocalRendezvous.join("bench-nccl-1", 0, 1),
          device, ZeroCtaDetector.CTA_POLICY_DEFAULT, Duration.ofSeconds(20))).get(0);
      try {
        for (long bytes : ONE_RANK_SIZES) {
          long count = bytes / 4;
          int k = bytes <= (64 << 10) ? 200 : 20;
          Dist[] d = g.onAll(rankLimit, x -> new Dist[] {
              timeGraph(r, k, () -> ours1(r, count)),
              timeGraph(r, k, () -> nccl.allReduce(r.send, r.recv, count, DataType.FLOAT32, ReduceOp.SUM, r.stream())),
              timeEager(r, k, () -> ours1(r, count)),
              timeEager(r, k, () -> nccl.allReduce(r.send, r.recv, count, DataType.FLOAT32, ReduceOp.SUM, r.stream()))
          }).get(0);
          t.append(String.format(Locale.ROOT, "%9d %-26s %-26s %-26s %-26s %7.2f%n", bytes, d[0], d[1], d[2], d[3],
              d[0].p50 / d[1].p50));
          rows.add("{\"bytes\":" + bytes + "," + d[0].json("ours_us") + "," + d[1].json("nccl_us") + ","
              + d[2].json("ours_eager_us") + "," + d[3].json("nccl_eager_us") + "}");
        }
        String paths = g.onAll(rankLimit, x -> x.comm.observedPaths().toString()).get(0);
        t.append("ours ran: ").append(paths).append('\n');
      } finally {
        g.onAll(rankLimit, x -> {
          nccl.close();
          return null;
        });
      }
    }
    write("gpu-1rank", "[" + String.join(",", rows) + "]");
    return t.toString();
  }

  private static void ours1(RankGroup.Rank r, long count) {
    r.comm.allReduce(CommBuffer.device(r.send, r.capacity), CommBuffer.device(r.recv, r.capacity), count,
        DataType.FLOAT32, ReduceOp.SUM);
  }

  // ---------------------------------------------------------------- gpu-group

  /** The batches timed: {calls, bytes per call}. */
  private static final int[][] GROUP_SHAPES = {{16, 4 << 10}, {16, 256}, {64, 1 << 10}};

  /**
   * Batches of allReduces fp32 SUM (16 x 4 KB, 16 x 256 B, 64 x 1 KB) grouped (at 2 and 4 ranks on
   * the one GPU: one launch of the batch kernel) vs the same calls separate, and at 1 rank (a
   * one-rank group copies) with NCCL's group of the same (NCCL refuses two ranks on one GPU).
   */
  private String grouped() throws Exception {
    StringBuilder t = new StringBuilder("-- gpu-group: allReduce fp32 SUM batches, us per batch (graph replay of K"
        + " batches; eager = K batches between events)\n");
    t.append(String.format(Locale.ROOT, "%5s %5s %6s %-26s %-26s %-26s %-26s %-26s%n", "ranks", "calls", "bytes",
        "grouped graph", "separate graph", "NCCL group graph", "grouped eager", "separate eager"));
    List<String> rows = new ArrayList<>();
    for (int n : quick ? new int[] {1, 2} : new int[] {1, 2, 4}) {
      long cap = 2L * 64 * (1 << 10);
      for (int[] shape : GROUP_SHAPES) {
        cap = Math.max(cap, 2L * shape[0] * shape[1]);
      }
      try (RankGroup g = RankGroup.create(n, device, null, Duration.ofSeconds(20), cap)) {
        NcclCommunicator nccl = n == 1 ? g.onAll(rankLimit, x -> NcclCommunicator.create(
            LocalRendezvous.join("bench-nccl-group", 0, 1), device, ZeroCtaDetector.CTA_POLICY_DEFAULT,
            Duration.ofSeconds(20))).get(0) : null;
        try {
          for (int[] shape : GROUP_SHAPES) {
            int calls = shape[0];
            long bytes = shape[1];
            long count = bytes / 4;
            int k = 50;
            List<Dist[]> d = g.onAll(rankLimit, r -> {
              Runnable groupedCall = () -> r.comm.group(batch(r, calls, bytes));
              Runnable separate = () -> separate(r, calls, bytes);
              Runnable ncclGroup = nccl == null ? null : () -> nccl.group(() -> {
                for (int c = 0; c < calls; c++) {
                  nccl.allReduce(r.send + c * bytes, r.recv + c * bytes, count, DataType.FLOAT32, ReduceOp.SUM,
                      r.stream());
                }
              });
              String at = "gpu-group " + n + " rank(s), " + calls + " x " + bytes + " B: ";
              Dist groupedGraph = progress(r, at + "grouped, graph", () -> timeGraph(r, k, groupedCall));
              Dist separateGraph = progress(r, at + "separate, graph", () -> timeGraph(r, k, separate));
              Dist ncclGraph = ncclGroup == null ? null : progress(r, at + "NCCL group, graph",
                  () -> timeGraph(r, k, ncclGroup));
              Dist groupedEager = progress(r, at + "grouped, eager", () -> timeEager(r, k, groupedCall));
              Dist separateEager = progress(r, at + "separate, eager", () -> timeEager(r, k, separate));
              return new Dist[] {groupedGraph, separateGraph, ncclGraph, groupedEager, separateEager};
            });
            Dist[] m = lastStarter(d);
            t.append(String.format(Locale.ROOT, "%5d %5d %6d %-26s %-26s %-26s %-26s %-26s%n", n, calls, bytes, m[0],
                m[1], m[2] == null ? "n/a (one rank per GPU)" : m[2], m[3], m[4]));
            rows.add("{\"ranks\":" + n + ",\"calls\":" + calls + ",\"bytes\":" + bytes + "," + m[0].json(
                "grouped_us") + "," + m[1].json("separate_us") + "," + (m[2] == null ? "\"nccl_group_us\":null"
                : m[2].json("nccl_group_us")) + "," + m[3].json("grouped_eager_us") + ","
                + m[4].json("separate_eager_us") + ",\"grouped_path\":\"" + (n == 1 ? "one-rank copies"
                : "one batch-kernel launch") + "\"}");
          }
        } finally {
          if (nccl != null) {
            g.onAll(rankLimit, x -> {
              nccl.close();
              return null;
            });
          }
        }
      }
    }
    write("gpu-group", "[" + String.join(",", rows) + "]");
    return t.toString();
  }

  /** Runs one measure, rank 0 saying which first: a section that stops names the measure it stopped in. */
  private static Dist progress(RankGroup.Rank r, String what, java.util.function.Supplier<Dist> measure) {
    r.awaitPeers(); // the previous measure's graphs destroyed on every rank before anyone launches again
    if (r.rank == 0) {
      System.out.println("  .. " + what);
      System.out.flush();
    }
    return measure.get();
  }

  private static Consumer<CollectiveBatch> batch(RankGroup.Rank r, int calls, long bytes) {
    return b -> {
      for (int c = 0; c < calls; c++) {
        b.allReduce(CommBuffer.device(r.send + c * bytes, bytes), CommBuffer.device(r.recv + c * bytes, bytes),
            bytes / 4, DataType.FLOAT32, ReduceOp.SUM);
      }
    };
  }

  private static void separate(RankGroup.Rank r, int calls, long bytes) {
    for (int c = 0; c < calls; c++) {
      r.comm.allReduce(CommBuffer.device(r.send + c * bytes, bytes), CommBuffer.device(r.recv + c * bytes, bytes),
          bytes / 4, DataType.FLOAT32, ReduceOp.SUM);
    }
  }

  // ---------------------------------------------------------------- gpu-allreduce

  private static final long[] SIZES = {8, 1 << 10, 4 << 10, 64 << 10, 1 << 20, 16 << 20};

  /** The auto path by size: per call under graph replay, and the tail of single blocking calls. */
  private String allReduceBySize() throws Exception {
    StringBuilder t = new StringBuilder("-- gpu-allreduce: fp32 SUM on the auto path, us per call (graph replay of K"
        + " calls; round trip = one call + synchronize, 300 samples)\n");
    t.append(String.format(Locale.ROOT, "%5s %9s %-22s %-26s %-26s %-26s%n", "ranks", "bytes", "path",
        "graph p50/p99/max", "round trip p50/p99/max", "from last rank's call"));
    List<String> rows = new ArrayList<>();
    long cap = 16 << 20;
    for (int n : quick ? new int[] {2} : new int[] {2, 8}) {
      try (RankGroup g = RankGroup.create(n, device, null, Duration.ofSeconds(20), cap)) {
        g.onAll(rankLimit, r -> {
          Elements.fillForReduction(r.hostIn, DataType.FLOAT32, ReduceOp.SUM, cap / 4, new SplittableRandom(r.rank));
          r.upload(cap, cap);
          r.comm.synchronize();
          return null;
        });
        for (long bytes : SIZES) {
          long count = bytes / 4;
          int k = bytes <= (64 << 10) ? 200 : bytes <= (1 << 20) ? 50 : 10;
          String path = g.ranks[0].comm.explain(Collective.ALL_REDUCE, bytes).algorithm();
          long[][] starts = new long[n][ROUND_TRIPS];
          long[][] ends = new long[n][ROUND_TRIPS];
          Dist[] m = lastStarter(g.onAll(rankLimit, r -> new Dist[] {timeGraph(r, k, () -> ours1(r, count)),
              roundTrips(r, () -> ours1(r, count), starts[r.rank], ends[r.rank])}));
          Dist fromLast = fromLastStart(starts, ends);
          t.append(String.format(Locale.ROOT, "%5d %9d %-22s %-26s %-26s %-26s%n", n, bytes, path, m[0], m[1], fromLast));
          rows.add("{\"ranks\":" + n + ",\"bytes\":" + bytes + ",\"path\":\"" + path + "\"," + m[0].json("graph_us")
              + "," + m[1].json("round_trip_us") + "," + fromLast.json("round_trip_from_last_call_us") + "}");
        }
      }
    }
    write("gpu-allreduce", "[" + String.join(",", rows) + "]");
    return t.toString();
  }

  // ---------------------------------------------------------------- timing

  /**
   * Per call: {@code k} calls captured into one graph through {@link GpuCommunicator#capture}, replayed
   * between events after one warm replay; one sample per replay.
   */
  private Dist timeGraph(RankGroup.Rank r, int k, Runnable call) {
    try (GpuCommunicator.CapturedGraph graph = r.comm.capture(() -> repeat(k, call))) {
      r.awaitPeers(); // every rank's graph instantiated before any replays (RankGroup.Rank.awaitPeers says why)
      return timeEvents(r, k, graph::replay);
    }
  }

  /** Per call: {@code k} eager calls between events (host launch cost included). */
  private Dist timeEager(RankGroup.Rank r, int k, Runnable call) {
    return timeEvents(r, k, () -> repeat(k, call));
  }

  private static void repeat(int k, Runnable call) {
    for (int i = 0; i < k; i++) {
      call.run();
    }
  }

  /** {@code timed} (k calls) between two events on the stream, once to warm up, then 11 samples (5 quick). */
  private Dist timeEvents(RankGroup.Rank r, int k, Runnable timed) {
    double[] v = new double[quick ? 5 : 11];
    long s = CudaNative.eventCreate();
    long e = CudaNative.eventCreate();
    try {
      timed.run();
      r.comm.synchronize();
      for (int i = 0; i < v.length; i++) {
        CudaNative.eventRecord(s, r.stream());
        timed.run();
        CudaNative.eventRecord(e, r.stream());
        r.comm.synchronize();
        v[i] = CudaNative.eventElapsedMs(s, e) * 1000 / k;
      }
    } finally {
      CudaNative.eventDestroy(s);
      CudaNative.eventDestroy(e);
    }
    return Dist.of(v);
  }

  private static final int ROUND_TRIPS = 300;

  /**
   * One call and a synchronize, timed on the host, {@link #ROUND_TRIPS} times after 20 warm ones; each
   * sample's start and end (System.nanoTime, one clock for every rank thread) into {@code starts} and
   * {@code ends}: sample i is the same collective on every rank.
   */
  private static Dist roundTrips(RankGroup.Rank r, Runnable call, long[] starts, long[] ends) {
    double[] v = new double[ROUND_TRIPS];
    for (int i = -20; i < ROUND_TRIPS; i++) {
      long t0 = System.nanoTime();
      call.run();
      r.comm.synchronize();
      long t1 = System.nanoTime();
      if (i >= 0) {
        v[i] = (t1 - t0) / 1e3;
        starts[i] = t0;
        ends[i] = t1;
      }
    }
    return Dist.of(v);
  }

  /**
   * The round trips from the moment the last rank entered each call to each rank's end, all ranks'
   * samples together: what is left of the tail once the host threads' start skew is taken out.
   */
  private static Dist fromLastStart(long[][] starts, long[][] ends) {
    int n = starts.length;
    double[] v = new double[n * ROUND_TRIPS];
    for (int i = 0; i < ROUND_TRIPS; i++) {
      long last = Long.MIN_VALUE;
      for (long[] s : starts) {
        last = Math.max(last, s[i]);
      }
      for (int r = 0; r < n; r++) {
        v[r * ROUND_TRIPS + i] = (ends[r][i] - last) / 1e3;
      }
    }
    return Dist.of(v);
  }

  /**
   * Per measure, the rank with the smallest p50: ranks start their timed regions at different host
   * times but finish together (each call waits for every peer), so the shortest is the steady state
   * without the start skew between rank threads.
   */
  private static Dist[] lastStarter(List<Dist[]> perRank) {
    Dist[] best = perRank.get(0).clone();
    for (Dist[] d : perRank) {
      for (int i = 0; i < d.length; i++) {
        if (d[i] != null && d[i].p50 < best[i].p50) {
          best[i] = d[i];
        }
      }
    }
    return best;
  }

  /** The median of {@code v} (MultiGpuRank's batches). */
  static double median(double[] v) {
    double[] s = v.clone();
    Arrays.sort(s);
    return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  }

  private void write(String kind, String rowsJson) {
    String date = LocalDate.now(ZoneOffset.UTC).toString();
    String shortCommit = commit.length() > 7 ? commit.substring(0, 7) : commit;
    String json = "{\"kind\":\"" + kind + "\",\"date\":\"" + date + "\",\"commit\":\"" + commit + "\",\"machine\":\""
        + machine + "\",\"rows\":" + rowsJson + "}\n";
    try {
      Files.createDirectories(jsonDir);
      Path p = jsonDir.resolve(kind + "-" + date + "-" + shortCommit + ".json");
      Files.writeString(p, json);
      System.out.println("wrote " + p);
    } catch (IOException e) {
      System.out.println("could not write the " + kind + " record: " + e);
    }
  }
}
