package dev.gpucoll.examples;

import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.spark.GpuCollectives;
import java.io.Serializable;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Supplier;
import java.util.stream.IntStream;
import org.apache.spark.BarrierTaskContext;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import scala.jdk.javaapi.CollectionConverters;
import scala.reflect.ClassTag$;
import scala.runtime.AbstractFunction1;

/**
 * Rendezvous benchmark: in one local-cluster run with 3 executor JVMs, barrier jobs whose tasks
 * meet and do one small allReduce, formed four ways. Prints the median job time seen by the driver
 * and the time from the last rank's arrival to every rank being ready (wall clock shared by the
 * executor JVMs of this host).
 *
 * <p>Run: {@code mvn -q -pl examples exec:exec -Dexample.main=dev.gpucoll.examples.RendezvousBench
 * -Dexample.args="[jobs (20)]"} after {@code mvn -q install -DskipTests -pl examples -am}.
 */
public final class RendezvousBench {
  static final int EXECUTORS = 3;

  private RendezvousBench() {}

  /** One rank of one job: when it arrived and when it was ready (µs since the epoch). */
  record Sample(int rank, long arrivedMicros, long readyMicros) implements Serializable {}

  enum Variant {
    PLUGIN_NEW("plugin RPC, new communicator each job"),
    PLUGIN_CACHED("plugin RPC, cached communicator reused"),
    ALLGATHER_ROUND("one BarrierTaskContext.allGather round"),
    OUR_ALLGATHER_FALLBACK("our fallback: communicator over allGather rounds");

    final String label;

    Variant(String label) {
      this.label = label;
    }
  }

  /** The barrier task body of every variant. */
  static final class Task extends AbstractFunction1<scala.collection.Iterator<Integer>,
      scala.collection.Iterator<Sample>> implements Serializable {
    private final Variant variant;

    Task(Variant variant) {
      this.variant = variant;
    }

    @Override
    public scala.collection.Iterator<Sample> apply(scala.collection.Iterator<Integer> rows) {
      BarrierTaskContext task = BarrierTaskContext.get();
      int rank = task.partitionId();
      long arrived = wallMicros();
      long ready;
      long sum;
      if (variant == Variant.ALLGATHER_ROUND) {
        String[] all = task.allGather(Long.toString(rank + 1));
        ready = wallMicros();
        sum = Arrays.stream(all).mapToLong(Long::parseLong).sum();
      } else {
        Communicator comm = GpuCollectives.communicator();
        ready = wallMicros();
        long[] v = {rank + 1};
        comm.allReduce(v, ReduceOp.SUM);
        sum = v[0];
        if (variant == Variant.PLUGIN_NEW) {
          comm.close(); // the next job must form a new one
        }
      }
      long n = task.getTaskInfos().length;
      if (sum != n * (n + 1) / 2) {
        throw new IllegalStateException("rank " + rank + ": allReduce sum " + sum);
      }
      return CollectionConverters.asScala(List.of(new Sample(rank, arrived, ready)).iterator());
    }
  }

  record Result(Variant variant, double[] jobMillis, double[] lastArrivalToReadyMillis) {}

  public static void main(String[] args) {
    int jobs = args.length > 0 ? Integer.parseInt(args[0]) : 20;
    SparkConf conf = LocalCluster.conf("gpucoll-rendezvous-bench", EXECUTORS)
        .set("spark.gpucoll.report", "off");
    try (JavaSparkContext jsc = new JavaSparkContext(conf)) {
      LocalCluster.awaitExecutors(jsc.sc(), EXECUTORS, Duration.ofSeconds(180));
      List<Integer> rows = IntStream.range(0, EXECUTORS).boxed().toList();
      JavaRDD<Integer> pinned = jsc.parallelize(rows, EXECUTORS).cache(); // partitions stay put
      pinned.count();
      List<Result> results = new ArrayList<>();
      results.add(run(jsc, Variant.PLUGIN_NEW, () -> jsc.parallelize(rows, EXECUTORS), jobs));
      results.add(run(jsc, Variant.PLUGIN_CACHED, () -> pinned, jobs));
      results.add(run(jsc, Variant.ALLGATHER_ROUND, () -> jsc.parallelize(rows, EXECUTORS),
          Math.max(3, jobs / 2)));
      jsc.setLocalProperty("spark.gpucoll.rendezvous", "allgather");
      results.add(run(jsc, Variant.OUR_ALLGATHER_FALLBACK, () -> jsc.parallelize(rows, EXECUTORS),
          Math.max(3, jobs / 4)));
      jsc.setLocalProperty("spark.gpucoll.rendezvous", null);
      print(results);
    }
  }

  static Result run(JavaSparkContext jsc, Variant variant, Supplier<JavaRDD<Integer>> input, int jobs) {
    for (int i = 0; i < 2; i++) { // warm-up: class loading, JIT, first communicator
      job(input.get(), variant);
    }
    double[] jobMillis = new double[jobs];
    double[] readyMillis = new double[jobs];
    for (int j = 0; j < jobs; j++) {
      long start = System.nanoTime();
      List<Sample> samples = job(input.get(), variant);
      jobMillis[j] = (System.nanoTime() - start) / 1e6;
      long lastArrival = samples.stream().mapToLong(Sample::arrivedMicros).max().orElseThrow();
      long allReady = samples.stream().mapToLong(Sample::readyMicros).max().orElseThrow();
      readyMillis[j] = (allReady - lastArrival) / 1e3;
    }
    return new Result(variant, jobMillis, readyMillis);
  }

  static List<Sample> job(JavaRDD<Integer> input, Variant variant) {
    List<Sample> samples = input.rdd().barrier()
        .mapPartitions(new Task(variant), false, ClassTag$.MODULE$.apply(Sample.class))
        .toJavaRDD().collect();
    if (samples.size() != EXECUTORS) {
      throw new IllegalStateException("expected " + EXECUTORS + " samples, got " + samples);
    }
    return samples;
  }

  static void print(List<Result> results) {
    System.out.println();
    System.out.printf("Rendezvous, local-cluster[%d,1,1024], %d cores, Java %s%n", EXECUTORS,
        Runtime.getRuntime().availableProcessors(), System.getProperty("java.version"));
    System.out.printf("| %-50s | %4s | %15s | %13s | %27s |%n", "barrier job: meet + one 8-byte allReduce",
        "jobs", "job median (ms)", "job min-max", "last arrival -> all ready, median (max) ms");
    System.out.println("|" + "-".repeat(52) + "|-----:|----------------:|--------------:|------------------------------------------:|");
    for (Result r : results) {
      System.out.printf("| %-50s | %4d | %15.0f | %6.0f-%-6.0f | %33.1f (%.1f) |%n", r.variant().label,
          r.jobMillis().length, median(r.jobMillis()), min(r.jobMillis()), max(r.jobMillis()),
          median(r.lastArrivalToReadyMillis()), max(r.lastArrivalToReadyMillis()));
    }
  }

  static long wallMicros() {
    Instant now = Instant.now();
    return now.getEpochSecond() * 1_000_000L + now.getNano() / 1_000;
  }

  static double median(double[] v) {
    double[] s = v.clone();
    Arrays.sort(s);
    return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  }

  static double min(double[] v) {
    return Arrays.stream(v).min().orElse(Double.NaN);
  }

  static double max(double[] v) {
    return Arrays.stream(v).max().orElse(Double.NaN);
  }
}
