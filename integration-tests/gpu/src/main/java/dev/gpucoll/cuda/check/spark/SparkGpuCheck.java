package dev.gpucoll.cuda.check.spark;

import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.GpuCommunicator;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.spark.BarrierPartitionFunction;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.IntStream;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.resource.ResourceInformation;
import scala.Tuple2;
import scala.jdk.javaapi.CollectionConverters;
import scala.reflect.ClassTag;
import scala.reflect.ClassTag$;

/**
 * The end-to-end check through Spark (run by integration-tests/gpu/spark/run.sh on a standalone cluster):
 * barrier stages whose tasks take their GPU from {@code TaskContext.resources()}, form a group
 * through the plugin, and run every collective on device buffers and on host arrays, checked on
 * every rank; a second stage on the cached communicators; a stage on NCCL symmetric windows; and
 * allReduce latency (eager and CUDA graph) with our choice and with NCCL forced
 * ({@code spark.gpucoll.algorithm=nccl} as a local property), printed as a table and as
 * "BENCH {json}" rows. With {@code --fractional} (spark.task.resource.gpu.amount=0.5) two tasks
 * share one GPU and every call gets freshly cudaMalloc'ed buffers that are cudaFree'd after it.
 * Without GPUs the same stages run on the host backend (device parts say why they are skipped).
 *
 * <p>Usage: SparkGpuCheck --ranks N --executors E [--quick] [--fractional] [--max-bytes B]
 * <br>Exit status 0 when every check passed, 1 otherwise.
 */
public final class SparkGpuCheck {
  /** Per executor JVM: the communicator each rank used in the first stage, to prove reuse later. */
  private static final Map<Integer, Integer> FIRST_COMMUNICATOR = new ConcurrentHashMap<>();

  record Options(int ranks, int executors, boolean quick, boolean fractional, long maxBytes) implements Serializable {
    static Options parse(String[] args) {
      JobArgs a = JobArgs.parse(args, Set.of("--ranks", "--executors", "--max-bytes"), Set.of("--quick", "--fractional"),
          "SparkGpuCheck --ranks N --executors E [--quick] [--fractional] [--max-bytes B]");
      int ranks = a.intValue("--ranks", 0);
      int executors = a.intValue("--executors", 0);
      boolean quick = a.has("--quick");
      boolean fractional = a.has("--fractional");
      if (ranks < 1 || executors < 1) {
        throw new IllegalArgumentException("--ranks and --executors must be at least 1 (got " + ranks + ", "
            + executors + ")");
      }
      long maxBytes = a.longValue("--max-bytes", 0);
      if (maxBytes <= 0) {
        maxBytes = quick || fractional ? 1 << 20 : 64 << 20;
      }
      return new Options(ranks, executors, quick, fractional, maxBytes);
    }
  }

  private SparkGpuCheck() {}

  public static void main(String[] args) {
    Options o = Options.parse(args);
    SparkConf conf = new SparkConf().setAppName("gpucoll SparkGpuCheck");
    int failures;
    try (JavaSparkContext jsc = new JavaSparkContext(conf)) {
      awaitExecutors(jsc, o.executors(), 180);
      failures = report(runStages(jsc, o));
    }
    System.out.println(failures == 0 ? "== SparkGpuCheck PASSED" : "== SparkGpuCheck FAILED: " + failures + " problem(s)");
    System.exit(failures == 0 ? 0 : 1);
  }

  /** Every stage of the job, in order, with the lines its ranks returned. */
  static Map<String, List<String>> runStages(JavaSparkContext jsc, Options o) {
    Map<String, List<String>> byStage = new LinkedHashMap<>();
    if (o.fractional()) {
      byStage.put("fractional", stage(jsc, o, "fractional", null, (comm, rows) -> fractional(comm, o)));
      return byStage;
    }
    byStage.put("check", stage(jsc, o, "check", null, (comm, rows) -> check(comm, o)));
    // The cache serves a rank on the executor that holds its communicator: ask Spark for the same placement.
    byStage.put("reuse", stage(jsc, o, "reuse", null, executorsOf(byStage.get("check"), o.ranks()),
        (comm, rows) -> reuse(comm)));
    byStage.put("symmetric", stage(jsc, o, "symmetric", null, (comm, rows) -> symmetric(comm, o)));
    byStage.put("latency-ours", stage(jsc, o, "latency-ours", null,
        (comm, rows) -> Latency.measure(comm, "ours", o.quick()).iterator()));
    // Forcing NCCL is an error where the group has no NCCL communicator (the host backend, or a GPU
    // group without NCCL), so that stage runs only where the first stage's group had one.
    boolean ncclGroup = byStage.get("check").stream().anyMatch(l -> l.startsWith("RANK ")
        && l.contains(" backend=gpu") && l.contains(" ncclComm=true"));
    byStage.put("latency-nccl", ncclGroup
        ? stage(jsc, o, "latency-nccl", "nccl", (comm, rows) -> Latency.measure(comm, "nccl", o.quick()).iterator())
        : List.of("SKIP stage=latency-nccl: the group of stage check has no NCCL communicator"));
    return byStage;
  }

  private static List<String> stage(JavaSparkContext jsc, Options o, String name, String forcedAlgorithm,
      BarrierPartitionFunction<Integer, String> body) {
    return stage(jsc, o, name, forcedAlgorithm, null, body);
  }

  /**
   * Runs one barrier stage of {@code o.ranks()} tasks, rank r preferring {@code executors.get(r)}
   * (Spark's "executor_host_id" location) when given; a failed stage becomes one FAIL line.
   */
  private static List<String> stage(JavaSparkContext jsc, Options o, String name, String forcedAlgorithm,
      List<String> executors, BarrierPartitionFunction<Integer, String> body) {
    JavaRDD<Integer> rdd = executors == null
        ? jsc.parallelize(IntStream.range(0, o.ranks()).boxed().toList(), o.ranks())
        : placed(jsc, executors);
    return BarrierStage.run(jsc, "SparkGpuCheck", name, forcedAlgorithm, rdd, body, l -> l);
  }

  /** One partition per rank, rank r preferring the executor location {@code executors.get(r)}. */
  private static JavaRDD<Integer> placed(JavaSparkContext jsc, List<String> executors) {
    List<Tuple2<Integer, scala.collection.immutable.Seq<String>>> rows = new ArrayList<>();
    for (int r = 0; r < executors.size(); r++) {
      rows.add(new Tuple2<>(r, CollectionConverters.asScala(List.of(executors.get(r))).toSeq()));
    }
    ClassTag<Integer> tag = ClassTag$.MODULE$.apply(Integer.class);
    return jsc.sc().makeRDD(CollectionConverters.asScala(rows).toSeq(), tag).toJavaRDD();
  }

  /** Where each rank of a stage ran, as Spark locations, from its RANK lines; null when not every rank said. */
  static List<String> executorsOf(List<String> lines, int ranks) {
    String[] where = new String[ranks];
    Pattern p = Pattern.compile("^RANK rank=(\\d+)/\\d+ executor=(\\S+) host=(\\S+)");
    for (String line : lines) {
      Matcher m = p.matcher(line);
      if (m.find() && Integer.parseInt(m.group(1)) < ranks) {
        where[Integer.parseInt(m.group(1))] = "executor_" + m.group(3) + "_" + m.group(2);
      }
    }
    return Arrays.stream(where).anyMatch(w -> w == null) ? null : Arrays.asList(where);
  }

  // ---------------------------------------------------------------- stage bodies (executors)

  private static java.util.Iterator<String> check(Communicator comm, Options o) {
    List<String> out = new ArrayList<>();
    out.add(describeRank(comm));
    FIRST_COMMUNICATOR.put(comm.rank(), System.identityHashCode(comm));
    RankChecks host = new RankChecks(comm, Memory.host(), "check");
    out.addAll(host.runAll(o.maxBytes(), o.quick()));
    closeIfBroken(comm, host.broken(), out);
    if (comm instanceof GpuCommunicator gpu && !comm.isClosed()) {
      Cuda.setDevice(gpu.device());
      try (Memory device = Memory.devicePooled(gpu, o.maxBytes())) {
        RankChecks c = new RankChecks(comm, device, "check");
        out.addAll(c.runAll(o.maxBytes(), o.quick()));
        closeIfBroken(comm, c.broken(), out);
      } catch (RuntimeException e) {
        out.add("FAIL stage=check memory=device rank=" + comm.rank() + " " + e);
        closeIfBroken(comm, true, out);
      }
    } else if (!(comm instanceof GpuCommunicator)) {
      out.add("SKIP stage=check memory=device rank=" + comm.rank() + " backend " + comm.backend()
          + ": no device buffers without the gpu backend");
    }
    out.add(paths(comm, "check"));
    return out.iterator();
  }

  private static java.util.Iterator<String> reuse(Communicator comm) {
    List<String> out = new ArrayList<>();
    Integer first = FIRST_COMMUNICATOR.get(comm.rank());
    if (first == null) {
      // Spark placed this rank elsewhere than in the first stage, so a new group had to form.
      out.add("MOVED stage=reuse rank=" + comm.rank() + ": executor " + SparkEnv.get().executorId()
          + " did not run this rank in stage check; reuse not checked for it");
    } else {
      boolean same = first == System.identityHashCode(comm);
      out.add((same ? "REUSE" : "FAIL stage=reuse") + " rank=" + comm.rank() + " communicator of the first stage "
          + (same ? "reused" : "not reused on the same executor (first " + first + ", now "
          + System.identityHashCode(comm) + ")"));
    }
    out.addAll(new RankChecks(comm, Memory.host(), "reuse").runSmall());
    if (comm instanceof GpuCommunicator gpu) {
      Cuda.setDevice(gpu.device());
      try (Memory device = Memory.devicePooled(gpu, 1 << 20)) {
        out.addAll(new RankChecks(comm, device, "reuse").runSmall());
      } catch (RuntimeException e) {
        out.add("FAIL stage=reuse memory=device rank=" + comm.rank() + " " + e);
      }
    }
    out.add(paths(comm, "reuse"));
    return out.iterator();
  }

  /** AllGather and AlltoAll (and allReduce) on NCCL symmetric windows, where Zero-CTA can be taken. */
  private static java.util.Iterator<String> symmetric(Communicator comm, Options o) {
    List<String> out = new ArrayList<>();
    if (!(comm instanceof GpuCommunicator gpu)) {
      out.add("SKIP stage=symmetric rank=" + comm.rank() + " backend " + comm.backend()
          + ": symmetric windows need the gpu backend");
      return out.iterator();
    }
    if (gpu.ncclComm() == 0) {
      out.add("SKIP stage=symmetric rank=" + comm.rank() + ": the group has no NCCL communicator (see its report)");
      return out.iterator();
    }
    Cuda.setDevice(gpu.device());
    long capacity = Math.min(o.maxBytes(), 64 << 20);
    try (Memory windows = Memory.symmetric(gpu, capacity)) {
      RankChecks c = new RankChecks(comm, windows, "symmetric");
      int n = comm.size();
      for (long bytes : new long[] {8 << 10, 4 << 20, 16 << 20, 64 << 20}) {
        if (bytes <= capacity) {
          c.allGather(DataType.FLOAT32, Math.max(1, bytes / (4L * n)));
          c.allToAll(DataType.FLOAT32, Math.max(1, bytes / (4L * n)));
        }
      }
      c.allReduce(DataType.FLOAT32, ReduceOp.SUM, Math.min(capacity, 16 << 20) / 4, false);
      out.addAll(c.finish());
      closeIfBroken(comm, c.broken(), out);
    } catch (RuntimeException e) {
      out.add("FAIL stage=symmetric rank=" + comm.rank() + " " + e.toString().replace('\n', ' '));
      closeIfBroken(comm, true, out);
    }
    out.add(paths(comm, "symmetric"));
    return out.iterator();
  }

  /** Two tasks on one GPU: every collective on buffers cudaMalloc'ed before and cudaFree'd after the call. */
  private static java.util.Iterator<String> fractional(Communicator comm, Options o) {
    List<String> out = new ArrayList<>();
    out.add(describeRank(comm));
    out.addAll(new RankChecks(comm, Memory.host(), "fractional").runSmall());
    if (comm instanceof GpuCommunicator gpu) {
      Cuda.setDevice(gpu.device());
      out.addAll(new RankChecks(comm, Memory.deviceFresh(gpu), "fractional").runAll(o.maxBytes(), o.quick()));
    } else {
      out.add("SKIP stage=fractional memory=device-fresh rank=" + comm.rank() + " backend " + comm.backend()
          + ": no device buffers without the gpu backend");
    }
    out.add(paths(comm, "fractional"));
    return out.iterator();
  }

  /**
   * Closes a communicator that failed, so the next stage forms a new group instead of reusing one
   * in an unknown state (GpuCollectives rebuilds a closed communicator).
   */
  private static void closeIfBroken(Communicator comm, boolean broken, List<String> out) {
    if (broken && !comm.isClosed()) {
      comm.close();
      out.add("CLOSED rank=" + comm.rank() + ": the communicator failed; the next stage forms a new group");
    }
  }

  private static String describeRank(Communicator comm) {
    TaskContext task = TaskContext.get();
    ResourceInformation gpu = task.resourcesJMap().get("gpu");
    return "RANK rank=" + comm.rank() + "/" + comm.size() + " executor=" + SparkEnv.get().executorId() + " host="
        + SparkEnv.get().blockManager().blockManagerId().host() + " pid="
        + ProcessHandle.current().pid() + " backend=" + comm.backend() + " taskGpus="
        + (gpu == null ? "[]" : Arrays.toString(gpu.addresses()))
        + (comm instanceof GpuCommunicator g ? " device=" + g.device() + " ncclComm=" + (g.ncclComm() != 0) : "")
        + " java.home=" + System.getProperty("java.home") + " (" + Runtime.version() + ")";
  }

  private static String paths(Communicator comm, String stage) {
    return "PATHS stage=" + stage + " rank=" + comm.rank() + " "
        + (comm.isClosed() ? "(communicator closed)" : comm.observedPaths());
  }

  // ---------------------------------------------------------------- driver report

  private static final Pattern CHECKS = Pattern.compile(
      "CHECKS stage=(\\S+) memory=(\\S+) rank=(\\d+) cases=(\\d+) failures=(\\d+)");

  /** Prints the summary and the latency table; returns the number of problems. */
  static int report(Map<String, List<String>> byStage) {
    int problems = 0;
    System.out.println();
    System.out.println("== SparkGpuCheck summary: cases and failures per stage, memory and rank");
    Map<String, String> summary = new TreeMap<>();
    List<String> latency = new ArrayList<>();
    for (List<String> lines : byStage.values()) {
      for (String line : lines) {
        Matcher m = CHECKS.matcher(line);
        if (m.find()) {
          summary.merge(m.group(1) + " / " + m.group(2), "rank " + m.group(3) + ": " + m.group(4) + " cases, "
              + m.group(5) + " wrong", (a, b) -> a + "; " + b);
        } else if (line.startsWith("LAT ")) {
          latency.add(line.substring(4));
        }
        if (line.startsWith("FAIL")) {
          problems++;
        }
        if (line.startsWith("REUSE") || line.startsWith("MOVED")) {
          Matcher r = Pattern.compile("rank=(\\d+)").matcher(line);
          summary.merge("reuse / communicator", "rank " + (r.find() ? r.group(1) : "?") + ": "
              + (line.startsWith("REUSE") ? "reused" : "placed on another executor by Spark, not checked"),
              (a, b) -> a + "; " + b);
        }
      }
    }
    summary.forEach((k, v) -> System.out.println("  " + k + ": " + v));
    if (!latency.isEmpty()) {
      printLatency(latency);
    }
    return problems;
  }

  private record Key(String dtype, long bytes) {}

  private static void printLatency(List<String> rows) {
    // Per (dtype, bytes) and label, the smallest time over ranks (the rank that started last).
    Map<Key, Map<String, double[]>> best = new TreeMap<>((a, b) -> a.dtype.equals(b.dtype)
        ? Long.compare(a.bytes, b.bytes) : a.dtype.compareTo(b.dtype));
    Map<Key, String> ourPath = new TreeMap<>((a, b) -> a.dtype.equals(b.dtype) ? Long.compare(a.bytes, b.bytes)
        : a.dtype.compareTo(b.dtype));
    List<String> errors = new ArrayList<>();
    for (String json : rows) {
      String label = field(json, "label");
      Key key = new Key(field(json, "dtype"), Long.parseLong(field(json, "bytes")));
      if (json.contains("\"error\"")) {
        errors.add(json);
        continue;
      }
      double eager = number(field(json, "eager_us"));
      double graph = number(field(json, "graph_us"));
      double[] b = best.computeIfAbsent(key, k -> new LinkedHashMap<>()).computeIfAbsent(label,
          l -> new double[] {Double.NaN, Double.NaN});
      b[0] = Double.isNaN(b[0]) ? eager : Math.min(b[0], eager);
      b[1] = Double.isNaN(b[1]) ? graph : Math.min(b[1], graph);
      if (label.equals("ours")) {
        ourPath.put(key, field(json, "path"));
      }
    }
    System.out.println();
    System.out.println("== SparkGpuCheck latency: allReduce SUM, us per call, smallest over ranks of the median over"
        + " batches; eager = events around K calls, graph = one replay of a graph of K calls; nccl ="
        + " spark.gpucoll.algorithm=nccl on the same executors and GPUs");
    System.out.printf(Locale.ROOT, "%-5s %10s %-22s %10s %10s %10s %10s %9s%n", "dtype", "bytes", "our path",
        "ours eag", "ours gr", "nccl eag", "nccl gr", "nccl/ours");
    for (Map.Entry<Key, Map<String, double[]>> e : best.entrySet()) {
      double[] ours = e.getValue().getOrDefault("ours", new double[] {Double.NaN, Double.NaN});
      double[] nccl = e.getValue().getOrDefault("nccl", new double[] {Double.NaN, Double.NaN});
      System.out.printf(Locale.ROOT, "%-5s %10d %-22s %10s %10s %10s %10s %9s%n", e.getKey().dtype, e.getKey().bytes,
          ourPath.getOrDefault(e.getKey(), "-"), cell(ours[0]), cell(ours[1]), cell(nccl[0]), cell(nccl[1]),
          Double.isNaN(ours[1]) || Double.isNaN(nccl[1]) ? "-" : String.format(Locale.ROOT, "%.2f", nccl[1] / ours[1]));
      System.out.printf(Locale.ROOT, "BENCH {\"collective\":\"allReduce\",\"dtype\":\"%s\",\"bytes\":%d,"
              + "\"ours_graph_us\":%s,\"nccl_graph_us\":%s,\"ours_eager_us\":%s,\"nccl_eager_us\":%s}%n",
          e.getKey().dtype, e.getKey().bytes, Latency.num(ours[1]), Latency.num(nccl[1]), Latency.num(ours[0]),
          Latency.num(nccl[0]));
    }
    errors.forEach(err -> System.out.println("latency row failed: " + err));
  }

  private static String cell(double v) {
    return Double.isNaN(v) ? "-" : String.format(Locale.ROOT, "%.2f", v);
  }

  /** The value of {@code name} in one of our flat JSON rows (strings unquoted). */
  static String field(String json, String name) {
    Matcher m = Pattern.compile("\"" + name + "\":(\"([^\"]*)\"|[^,}]*)").matcher(json);
    if (!m.find()) {
      throw new IllegalArgumentException("no field " + name + " in " + json);
    }
    return m.group(2) != null ? m.group(2) : m.group(1);
  }

  private static double number(String s) {
    return s.equals("null") ? Double.NaN : Double.parseDouble(s);
  }

  static void awaitExecutors(JavaSparkContext jsc, int executors, int seconds) {
    long deadline = System.nanoTime() + seconds * 1_000_000_000L;
    while (jsc.sc().statusTracker().getExecutorInfos().length - 1 < executors) { // minus the driver
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("only " + (jsc.sc().statusTracker().getExecutorInfos().length - 1) + " of "
            + executors + " executors registered within " + seconds + " s; see the workers' logs");
      }
      try {
        Thread.sleep(200);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted while waiting for executors", e);
      }
    }
  }
}
