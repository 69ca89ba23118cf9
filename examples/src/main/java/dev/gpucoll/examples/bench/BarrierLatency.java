package dev.gpucoll.examples.bench;

import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.spark.GpuCollectives;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;

/**
 * The Java side of the Python benchmark (python/benchmarks/host_latency.py): a barrier stage whose
 * tasks time float32-sum allReduce calls one by one, as the Python tasks of the same run do, on the
 * same executors. Called from the Python driver through Py4J; returns rank 0's numbers as JSON.
 */
public final class BarrierLatency {
  private BarrierLatency() {}

  /**
   * Per-call allReduce latency at each of {@code bytes} (warm-up calls first, then {@code iters}
   * timed calls each timed alone): {"8": {"median_us": .., "p99_us": ..}, ...}.
   */
  public static String allReduce(JavaSparkContext jsc, int ranks, long[] bytes, int warmup, int iters) {
    JavaRDD<Integer> rdd = jsc.parallelize(java.util.stream.IntStream.range(0, ranks).boxed().toList(), ranks);
    List<String> out = GpuCollectives.barrierMapPartitions(rdd, (Communicator comm, Iterator<Integer> rows) -> {
      StringBuilder json = new StringBuilder("{");
      for (int s = 0; s < bytes.length; s++) {
        int count = (int) Math.max(1, bytes[s] / 4);
        ByteBuffer buf = ByteBuffer.allocateDirect(count * 4).order(ByteOrder.nativeOrder());
        CommBuffer b = CommBuffer.of(buf);
        for (int i = 0; i < warmup; i++) {
          comm.allReduce(b, b, count, DataType.FLOAT32, ReduceOp.SUM);
        }
        long[] ns = new long[iters];
        for (int i = 0; i < iters; i++) {
          long t0 = System.nanoTime();
          comm.allReduce(b, b, count, DataType.FLOAT32, ReduceOp.SUM);
          ns[i] = System.nanoTime() - t0;
        }
        Arrays.sort(ns);
        json.append(s == 0 ? "" : ",").append(String.format(Locale.ROOT, "\"%d\":{\"median_us\":%.3f,\"p99_us\":%.3f}",
            bytes[s], ns[iters / 2] / 1e3, ns[Math.min(iters - 1, (int) (iters * 0.99))] / 1e3));
      }
      List<String> mine = new ArrayList<>();
      if (comm.rank() == 0) {
        mine.add(json.append('}').toString());
      }
      return mine.iterator();
    }).collect();
    return out.get(0);
  }
}
