package dev.gpucoll.examples.bench;

import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.core.CommunicatorFactory;
import dev.gpucoll.core.config.GpuCollConf;
import dev.gpucoll.core.rendezvous.FileRendezvous;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Host backend latency and bandwidth: allReduce (float32 sum), allGather and allToAll (float32) from 8 B to
 * 64 MiB between separate JVM processes on this machine, the way executors use it. The same sizes,
 * iteration counts and table as scripts/mpi-anchor/ (Open MPI), so the two can be compared.
 *
 * <pre>
 *   java -cp ... dev.gpucoll.examples.bench.HostCollectivesBenchmark [ranks] [--sizes=8,4096,...]
 *       [--collectives=allReduce,allToAll] [--no-bind] [key=value ...]
 * </pre>
 * key=value pairs are spark.gpucoll settings without the prefix (e.g. algorithm=host-twoshot). Ranks
 * are bound to cores (taskset) like mpirun's default binding unless --no-bind is given.
 * Bytes are the message size per rank (allReduce: the vector; allGather: the whole receive buffer;
 * allToAll: the whole send buffer; both at least one element per peer).
 * Time is per call on rank 0 (median, p99 and max over back-to-back calls); GB/s = bytes / median.
 * After the algorithm: the slowest call, the JIT's compile time and the GC's collections in the timed
 * loop (the most of every rank), and how often the loop was rerun because the JIT or a GC ran in it.
 */
public final class HostCollectivesBenchmark {
  /** Message sizes in bytes; scripts/mpi-anchor/collectives_bench.c uses the same list. */
  static final String SIZES = "8,64,512,4096,32768,262144,1048576,4194304,16777216,67108864";

  /** Timed calls per size: many for small messages, few for large ones; same as the MPI anchor. */
  static int iterations(long bytes) {
    if (bytes <= 4096) {
      return 20000;
    }
    if (bytes <= (256 << 10)) {
      return 2000;
    }
    if (bytes <= (4 << 20)) {
      return 200;
    }
    return 30;
  }

  public static void main(String[] args) throws Exception {
    if (args.length > 0 && args[0].equals("--rank")) {
      rank(args);
      return;
    }
    int ranks = 2;
    boolean noBind = false;
    List<String> settings = new ArrayList<>();
    for (String a : args) {
      if (a.equals("--no-bind")) {
        noBind = true;
      } else if (a.contains("=")) {
        settings.add(a);
      } else {
        ranks = Integer.parseInt(a);
      }
    }
    int cpus = Runtime.getRuntime().availableProcessors();
    boolean bind = !noBind && ranks <= cpus && canRun("taskset", "-V");
    System.out.println("# ranks bound to cores: " + (bind ? "yes (taskset -c rank)" : "no"));
    Path dir = Files.createTempDirectory("gpucoll-bench-");
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    List<Process> procs = new ArrayList<>();
    for (int r = 0; r < ranks; r++) {
      List<String> cmd = new ArrayList<>();
      if (bind) {
        // Rank r on core r, as mpirun binds by default: otherwise a loaded machine may run both
        // ranks on one core, where every wait costs a scheduler time slice.
        cmd.addAll(List.of("taskset", "-c", Integer.toString(r % cpus)));
      }
      cmd.addAll(List.of(java, "-Xmx2g", "-XX:+UseParallelGC", "-cp",
          System.getProperty("java.class.path"), HostCollectivesBenchmark.class.getName(), "--rank",
          dir.toString(), Integer.toString(r), Integer.toString(ranks)));
      cmd.addAll(settings);
      ProcessBuilder pb = new ProcessBuilder(cmd);
      pb.redirectErrorStream(true);
      if (r == 0) {
        pb.redirectOutput(ProcessBuilder.Redirect.INHERIT);
      } else {
        pb.redirectOutput(ProcessBuilder.Redirect.DISCARD);
      }
      procs.add(pb.start());
    }
    int failed = 0;
    for (Process p : procs) {
      if (!p.waitFor(30, TimeUnit.MINUTES) || p.exitValue() != 0) {
        failed++;
      }
    }
    try (var files = Files.walk(dir)) {
      files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
    }
    if (failed > 0) {
      System.err.println(failed + " benchmark rank(s) failed");
      System.exit(1);
    }
  }

  /**
   * Runs the small-message paths until the JIT has compiled them: with every core busy spinning,
   * the compiler threads get little CPU, and the first thousands of calls run interpreted.
   */
  private static void warmUp(Communicator comm, int calls) {
    float[] a = new float[1024];
    float[] b = new float[1024];
    for (int i = 0; i < calls; i++) {
      int count = (i & 1) == 0 ? 2 : 1024;
      comm.allReduce(CommBuffer.of(a), CommBuffer.of(b), count, DataType.FLOAT32, ReduceOp.SUM);
      comm.allToAll(CommBuffer.of(a), CommBuffer.of(b), count / comm.size(), DataType.FLOAT32);
    }
    comm.barrier();
  }

  /** Untimed calls, without a JIT compiler thread running on any rank, that a timing waits for. */
  private static final long SETTLE_QUIET_NANOS = 100_000_000L;
  /**
   * Untimed calls of a size before its timing: HotSpot compiles a method at its top tier by its
   * 5000th call (Tier4InvocationThreshold, looked at every 1024th), so a path a call runs once is
   * compiled by then, not in the middle of the timed calls; quiet batches alone are no sign of that
   * (measured: the two-shot allReduce compiled at the top tier, 70-90 ms of one core, in the timed
   * calls of 128 KiB after 100 ms without a compile).
   */
  private static final int SETTLE_CALLS = 5120;
  /**
   * Untimed time after which a size waits only for quiet batches, short of {@link #SETTLE_CALLS}:
   * its paths are those of the smaller sizes timed before it (measured: 5120 calls of the first
   * two-shot size took 0.7-0.9 s; with 1 s, one run ended short of them and compiled in the timed calls).
   */
  private static final long SETTLE_MIN_NANOS = 3_000_000_000L;
  /** Longest wait for quiet batches: a call is timed after this anyway. */
  private static final long SETTLE_MAX_NANOS = 10_000_000_000L;

  /**
   * Runs {@code call} in batches of {@code batch} until {@link #SETTLE_CALLS} calls (or
   * {@link #SETTLE_MIN_NANOS}) have run and batches that ran while no JIT compiler thread ran on any
   * rank took {@link #SETTLE_QUIET_NANOS} in a row; returns false when it gave up. Until then the JIT
   * compiles the paths that this size takes (and recompiles those whose profile it breaks), and on
   * a machine whose cores are busy with spinning ranks a compiler thread gets a core only by taking
   * a rank's: the rank's peer then waits a scheduler tick (4 ms). Measured on 2 simulated hosts on
   * 2 cores: with warm-up rounds over every size until CompilationMXBean's total stayed put (it
   * grows when a compile ends; one starved of a core spans rounds), 30-100 compiles fell in the
   * timed calls of the first collective, whichever it was, and gave its sizes p99s of 3-8 ms.
   */
  private static boolean settle(Communicator comm, Runnable call, int batch) {
    List<Path> jit = compilerThreads();
    // [a compiler thread ran, the batch's time in ms], the most of every rank: all ranks decide alike.
    float[] batchState = new float[2];
    long quiet = 0;
    long spent = 0;
    long calls = 0;
    while (quiet < SETTLE_QUIET_NANOS || (calls < SETTLE_CALLS && spent < SETTLE_MIN_NANOS)) {
      if (spent > SETTLE_MAX_NANOS) {
        return false;
      }
      long t0 = System.nanoTime();
      long before = jitNanos(jit);
      for (int i = 0; i < batch; i++) {
        call.run();
      }
      long after = jitNanos(jit);
      batchState[0] = before < 0 || after != before ? 1 : 0;
      batchState[1] = (System.nanoTime() - t0) / 1e6f;
      if (after < 0) {
        jit = compilerThreads();
      }
      comm.allReduce(CommBuffer.of(batchState), CommBuffer.of(batchState), 2, DataType.FLOAT32, ReduceOp.MAX);
      long took = (long) (batchState[1] * 1e6);
      quiet = batchState[0] == 0 ? quiet + took : 0;
      spent += took;
      calls += batch;
    }
    return true;
  }

  /**
   * The schedstat files of this JVM's JIT compiler threads (Linux: /proc/self/task), whose CPU time
   * counts a compile while it runs; empty where there are none.
   */
  private static List<Path> compilerThreads() {
    List<Path> out = new ArrayList<>();
    try (var tasks = Files.newDirectoryStream(Path.of("/proc/self/task"))) {
      for (Path t : tasks) {
        if (Files.readString(t.resolve("comm")).contains("CompilerThre")) {
          out.add(t.resolve("schedstat"));
        }
      }
    } catch (java.io.IOException e) {
      out.clear();
    }
    return out;
  }

  /**
   * CPU time of the compiler threads {@code jit} in ns, -1 when one has ended (the JIT stops idle
   * ones); without them, the compile time CompilationMXBean reports (it grows when a compile ends).
   * Only their files are read per look: listing every thread each time kept the JIT busy itself.
   */
  private static long jitNanos(List<Path> jit) {
    if (jit.isEmpty()) {
      return java.lang.management.ManagementFactory.getCompilationMXBean().getTotalCompilationTime() * 1_000_000;
    }
    long sum = 0;
    for (Path p : jit) {
      try {
        String stat = Files.readString(p);
        sum += Long.parseLong(stat.substring(0, stat.indexOf(' ')));
      } catch (java.io.IOException e) {
        return -1;
      }
    }
    return sum;
  }

  /**
   * Timed loops of a size rerun at most this often when the JIT or a GC ran in them (then the
   * line says "disturbed"): a compile or a collection on a rank takes its core for milliseconds,
   * which lands in the tail, and with 2 ranks on 2 cores in the median too.
   */
  private static final int MAX_RERUNS = 2;
  /** Compiler threads' CPU in a timed loop below this is not a compile that took a core (ms). */
  private static final float JIT_NOISE_MS = 1f;

  /**
   * Runs {@code call} {@code t.length} times, each call's ns into {@code t} (sorted), and what ran
   * beside it on this rank into {@code seen}: [the JIT compiler threads' CPU ms (a compile in
   * progress counts), CompilationMXBean's compile ms (compiles that ended), collections of every GC].
   */
  private static void timedLoop(Runnable call, long[] t, float[] seen) {
    List<Path> jit = compilerThreads();
    var compiler = java.lang.management.ManagementFactory.getCompilationMXBean();
    long jit0 = jitNanos(jit);
    long compile0 = compiler.getTotalCompilationTime();
    long gc0 = collections();
    for (int i = 0; i < t.length; i++) {
      long t0 = System.nanoTime();
      call.run();
      t[i] = System.nanoTime() - t0;
    }
    long jit1 = jitNanos(jit);
    seen[0] = jit0 < 0 || jit1 < 0 ? JIT_NOISE_MS : (jit1 - jit0) / 1e6f;
    seen[1] = compiler.getTotalCompilationTime() - compile0;
    seen[2] = collections() - gc0;
    Arrays.sort(t);
  }

  private static boolean disturbed(float[] seen) {
    return seen[0] >= JIT_NOISE_MS || seen[1] > 0 || seen[2] > 0;
  }

  /** Collections so far of every garbage collector of this JVM. */
  private static long collections() {
    long n = 0;
    for (var gc : java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()) {
      n += Math.max(0, gc.getCollectionCount());
    }
    return n;
  }

  private static boolean canRun(String... cmd) {
    try {
      Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD)
          .start();
      return p.waitFor(10, TimeUnit.SECONDS) && p.exitValue() == 0;
    } catch (Exception e) {
      return false;
    }
  }

  private static void rank(String[] args) throws Exception {
    Path dir = Path.of(args[1]);
    int rank = Integer.parseInt(args[2]);
    int size = Integer.parseInt(args[3]);
    Map<String, String> settings = new HashMap<>();
    settings.put("spark.gpucoll.timeout", "120s");
    String sizes = SIZES;
    String collectives = "allReduce,allToAll";
    // Ranks on several hosts (scripts/multihost/bench.sh) name theirs; a slow path caps its calls.
    String host = "localhost";
    int maxIters = Integer.MAX_VALUE;
    int warmUpCalls = 60_000;
    for (int i = 4; i < args.length; i++) {
      String[] kv = args[i].split("=", 2);
      switch (kv[0]) {
        case "--sizes" -> sizes = kv[1];
        case "--collectives" -> collectives = kv[1];
        case "--host" -> host = kv[1];
        case "--maxIters" -> maxIters = Integer.parseInt(kv[1]);
        case "--warmUp" -> warmUpCalls = Integer.parseInt(kv[1]);
        default -> settings.put("spark.gpucoll." + kv[0], kv[1]);
      }
    }
    GpuCollConf conf = GpuCollConf.of(settings).validate();
    try (FileRendezvous rv = new FileRendezvous(dir, "bench", rank, size);
        Communicator comm = CommunicatorFactory.create(rv, conf, host)) {
      if (rank == 0) {
        System.out.printf(Locale.ROOT, "# gpucoll host backend (%s), %d processes, settings %s%n", comm.backend(),
            size, settings);
        System.out.printf(Locale.ROOT, "%-10s %10s %8s %12s %12s %10s  %-18s %10s %7s %7s %3s%n", "collective", "bytes",
            "iters", "median_us", "p99_us", "GB/s", "algorithm", "max_us", "jit_ms", "gcs", "rerun");
      }
      warmUp(comm, warmUpCalls);
      for (String coll : collectives.split(",")) {
        for (long bytes : Arrays.stream(sizes.split(",")).mapToLong(Long::parseLong).toArray()) {
          int count = (int) (bytes / 4);
          // allGather and allToAll move count / size elements per peer, at least one (as the MPI anchor).
          int perPeer = Math.max(1, count / size);
          float[] send = new float[Math.max(count, perPeer * size)];
          float[] recv = new float[Math.max(count, perPeer * size)];
          Arrays.fill(send, rank + 1);
          CommBuffer s = CommBuffer.of(send);
          CommBuffer r = CommBuffer.of(recv);
          int iters = Math.min(maxIters, iterations(bytes));
          Runnable call = switch (coll) {
            case "allReduce" -> () -> comm.allReduce(s, r, count, DataType.FLOAT32, ReduceOp.SUM);
            case "allGather" -> () -> comm.allGather(s, r, perPeer, DataType.FLOAT32);
            case "allToAll" -> () -> comm.allToAll(s, r, perPeer, DataType.FLOAT32);
            default -> throw new IllegalArgumentException("unknown collective " + coll);
          };
          if (!settle(comm, call, Math.min(iters, 200)) && rank == 0) {
            System.out.printf(Locale.ROOT, "# %s %d: the JIT still compiled after %d s of untimed calls%n", coll, bytes,
                SETTLE_MAX_NANOS / 1_000_000_000L);
          }
          long[] t = new long[iters];
          // [compiler threads' CPU ms, compile ms, collections], the most of every rank.
          float[] seen = new float[3];
          int reruns = 0;
          while (true) {
            comm.barrier();
            timedLoop(call, t, seen);
            comm.allReduce(CommBuffer.of(seen), CommBuffer.of(seen), 3, DataType.FLOAT32, ReduceOp.MAX);
            if (!disturbed(seen) || reruns == MAX_RERUNS) {
              break;
            }
            reruns++;
          }
          if (coll.equals("allReduce") && recv[count - 1] != size * (size + 1) / 2f) {
            throw new AssertionError("wrong allReduce result " + recv[count - 1]);
          }
          double median = t[iters / 2] / 1e3;
          double p99 = t[Math.min(iters - 1, (int) Math.ceil(iters * 0.99) - 1)] / 1e3;
          if (rank == 0) {
            long shown = coll.equals("allReduce") ? bytes : (long) perPeer * size * 4;
            String algo = comm.explain(switch (coll) {
              case "allReduce" -> dev.gpucoll.api.Collective.ALL_REDUCE;
              case "allGather" -> dev.gpucoll.api.Collective.ALL_GATHER;
              default -> dev.gpucoll.api.Collective.ALL_TO_ALL;
            }, shown).algorithm();
            System.out.printf(Locale.ROOT, "%-10s %10d %8d %12.2f %12.2f %10.3f  %-18s %10.2f %7.1f %7.0f %3d%s%n", coll,
                shown, iters, median, p99, shown / (median * 1e3), algo, t[iters - 1] / 1e3, Math.max(seen[0], seen[1]),
                seen[2], reruns, disturbed(seen) ? "  disturbed" : "");
          }
          comm.barrier();
        }
      }
    }
  }
}
