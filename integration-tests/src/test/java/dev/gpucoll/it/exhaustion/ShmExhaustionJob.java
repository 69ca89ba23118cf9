package dev.gpucoll.it.exhaustion;

import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.examples.LocalCluster;
import dev.gpucoll.spark.GpuCollectives;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.List;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import org.apache.spark.SparkContext;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerExecutorRemoved;

/**
 * The Spark job of {@link ShmExhaustionTest}, run in a private mount namespace whose /dev/shm is a
 * tmpfs too small for one group's segment, so every executor JVM sees it: {@code ShmExhaustionJob
 * <directory with room>}. Writes one line per result ("PIDS stage ...", "ERROR stage ...",
 * "REMOVED n") to {@code results.txt} in that directory (its own file: on stdout a line could be
 * split by Spark's log lines on stderr) and exits 0 when it could run its stages.
 */
public final class ShmExhaustionJob {
  static final int EXECUTORS = 3;
  /** 16 MiB: the two-shot path moves it through most pages of the segment. */
  static final int FLOATS = 4 << 20;
  private static Path results;

  public static void main(String[] args) throws Exception {
    String roomy = args[0];
    results = Path.of(roomy, "results.txt");
    Files.deleteIfExists(results);
    SparkContext sc = new SparkContext(LocalCluster.conf("gpucoll-shm-exhaustion", EXECUTORS)
        .set("spark.gpucoll.timeout", "30s"));
    AtomicInteger removed = new AtomicInteger();
    sc.addSparkListener(new SparkListener() {
      @Override
      public void onExecutorRemoved(SparkListenerExecutorRemoved e) {
        removed.incrementAndGet();
        System.out.println("LOST executor " + e.executorId() + ": " + e.reason());
      }
    });
    JavaSparkContext jsc = new JavaSparkContext(sc);
    try {
      LocalCluster.awaitExecutors(sc, EXECUTORS, Duration.ofSeconds(180));
      JavaRDD<Integer> ranks = jsc.parallelize(IntStream.range(0, EXECUTORS).boxed().toList(), EXECUTORS);
      // /dev/shm holds less than the segment: formation must fail clearly, the executors live on.
      report("tiny-shm", () -> GpuCollectives.barrierMapPartitions(ranks, (comm, rows) -> {
        comm.allReduce(CommBuffer.of(new float[FLOATS]), CommBuffer.of(new float[FLOATS]), FLOATS, DataType.FLOAT32,
            ReduceOp.SUM);
        // 1 MiB per rank in 512 KiB chunks: every rank fills both halves of its bulk region.
        comm.allGather(CommBuffer.of(new float[1 << 18]), CommBuffer.of(new float[EXECUTORS << 18]), 1 << 18,
            DataType.FLOAT32);
        return List.of(pid()).iterator();
      }).collect(), null);
      // The next stage, pointed at a directory with room, forms a new group on the same executors.
      report("roomy", () -> GpuCollectives.barrierMapPartitions(ranks, (comm, rows) -> {
        float[] v = new float[FLOATS];
        java.util.Arrays.fill(v, 1f);
        comm.allReduce(v, ReduceOp.SUM);
        if (v[FLOATS - 1] != EXECUTORS) {
          throw new AssertionError("sum " + v[FLOATS - 1]);
        }
        return List.of(pid()).iterator();
      }).collect(), roomy);
      // An unexpected error inside a call (an InternalError, what the JVM raises for SIGBUS, here
      // from rank 1's own listener) fails the task, not the executor JVM.
      report("fault", () -> GpuCollectives.barrierMapPartitions(ranks, (comm, rows) -> {
        if (comm.rank() == 1) {
          comm.addListener((c, algorithm, bytes, nanos) -> {
            throw new InternalError("a fault occurred in an unsafe memory access operation");
          });
        }
        comm.allReduce(new float[1 << 10], ReduceOp.SUM);
        return List.of(pid()).iterator();
      }).collect(), roomy);
      report("after-fault", () -> GpuCollectives.barrierMapPartitions(ranks, (comm, rows) -> {
        long[] v = {1};
        comm.allReduce(v, ReduceOp.SUM);
        if (v[0] != EXECUTORS) {
          throw new AssertionError("sum " + v[0]);
        }
        return List.of(pid()).iterator();
      }).collect(), roomy);
      result("REMOVED " + removed.get());
    } finally {
      sc.stop();
    }
  }

  private static String pid() {
    return Long.toString(ProcessHandle.current().pid());
  }

  private interface Stage {
    List<String> run();
  }

  private static void report(String name, Stage stage, String shmDir) {
    SparkContext sc = SparkContext.getOrCreate();
    sc.setLocalProperty("spark.gpucoll.host.shmDir", shmDir);
    try {
      result("PIDS " + name + " " + new TreeSet<>(stage.run()));
    } catch (Exception e) { // a failed job: SparkException
      String why = String.valueOf(e.getMessage()).replace('\n', ' ');
      result("ERROR " + name + " " + why);
    }
  }

  private static void result(String line) {
    System.out.println(line);
    try {
      Files.writeString(results, line + "\n", StandardOpenOption.CREATE, StandardOpenOption.APPEND);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
