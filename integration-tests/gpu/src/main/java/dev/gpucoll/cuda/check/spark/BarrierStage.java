package dev.gpucoll.cuda.check.spark;

import dev.gpucoll.spark.BarrierPartitionFunction;
import dev.gpucoll.spark.GpuCollectives;
import java.util.List;
import java.util.function.UnaryOperator;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;

/** One barrier stage of a GPU job: its lines printed and returned; a failed stage becomes one FAIL line. */
final class BarrierStage {
  private BarrierStage() {}

  /**
   * Runs {@code body} over {@code rdd} as barrier stage {@code name} of {@code job}, with
   * {@code spark.gpucoll.algorithm} set to {@code forced} for it when not null; prints each line
   * as {@code shown} makes it.
   */
  static List<String> run(JavaSparkContext jsc, String job, String name, String forced, JavaRDD<Integer> rdd,
      BarrierPartitionFunction<Integer, String> body, UnaryOperator<String> shown) {
    System.out.println("== stage " + name + (forced == null ? "" : " (spark.gpucoll.algorithm=" + forced + ")"));
    jsc.setJobDescription(job + " " + name);
    jsc.setLocalProperty("spark.gpucoll.algorithm", forced);
    try {
      List<String> lines = GpuCollectives.barrierMapPartitions(rdd, body).collect();
      lines.forEach(l -> System.out.println(shown.apply(l)));
      return lines;
    } catch (Exception e) { // Spark's SparkException is checked in Java terms
      String line = "FAIL stage=" + name + " the stage failed: " + e.toString().replace('\n', ' ');
      System.out.println(line);
      return List.of(line);
    } finally {
      jsc.setLocalProperty("spark.gpucoll.algorithm", null);
    }
  }
}
