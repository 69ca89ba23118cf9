package dev.gpucoll.it;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.examples.LocalCluster;
import dev.gpucoll.spark.GpuCollectives;
import java.time.Duration;
import java.util.List;
import java.util.stream.IntStream;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Barrier stages over local-cluster[3,1,1024]: three executor JVMs, one shared SparkContext. */
class LocalClusterCollectivesTest {
  static final int EXECUTORS = 3;
  static SparkContext sc;
  static JavaSparkContext jsc;

  @BeforeAll
  static void startCluster() {
    SparkConf conf = LocalCluster.conf("gpucoll-integration", EXECUTORS)
        .set("spark.gpucoll.timeout", "20s")
        .set("spark.gpucoll.report", "verbose");
    sc = new SparkContext(conf);
    jsc = new JavaSparkContext(sc);
    LocalCluster.awaitExecutors(sc, EXECUTORS, Duration.ofSeconds(120));
  }

  @AfterAll
  static void stopCluster() {
    if (sc != null) {
      sc.stop();
    }
  }

  static JavaRDD<Integer> oneRowPerRank() {
    return jsc.parallelize(IntStream.range(0, EXECUTORS).boxed().toList(), EXECUTORS);
  }

  @Test
  void allReduceAcrossThreeExecutorJvms() {
    List<String> out = GpuCollectives.barrierMapPartitions(oneRowPerRank(), (comm, rows) -> {
      double[] v = {comm.rank() + 1, 10.0 * (comm.rank() + 1)};
      comm.allReduce(v, ReduceOp.SUM);
      return List.of(comm.rank() + " " + ProcessHandle.current().pid() + " " + v[0] + " " + v[1])
          .iterator();
    }).collect();
    System.out.println(out);
    assertEquals(EXECUTORS, out.stream().map(s -> s.split(" ")[1]).distinct().count(), out::toString);
    for (String line : out) {
      String[] f = line.split(" ");
      assertEquals(6.0, Double.parseDouble(f[2]), line);
      assertEquals(60.0, Double.parseDouble(f[3]), line);
    }
  }
}
