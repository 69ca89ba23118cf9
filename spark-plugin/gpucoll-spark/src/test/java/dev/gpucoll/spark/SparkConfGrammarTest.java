package dev.gpucoll.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.gpucoll.core.config.GpuCollConf;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.spark.network.util.JavaUtils;
import org.junit.jupiter.api.Test;

/** The Spark-free core reads durations and sizes exactly as Spark's own JavaUtils does. */
class SparkConfGrammarTest {

  @Test
  void durationsMatchSpark() {
    for (String v : List.of("1500us", "250ms", "30s", "1m", "2min", "1h", "1d", "7S", "45", " 3 ")) {
      long ours = GpuCollConf.of(Map.of("spark.gpucoll.timeout", v)).get(GpuCollConf.TIMEOUT).toNanos();
      // Spark reads a plain number in the unit it is asked for: seconds, the key's unit.
      long sparkNanos = v.trim().matches("[0-9]+")
          ? TimeUnit.SECONDS.toNanos(JavaUtils.timeStringAsSec(v))
          : TimeUnit.MICROSECONDS.toNanos(JavaUtils.timeStringAs(v, TimeUnit.MICROSECONDS));
      assertEquals(sparkNanos, ours, v);
    }
  }

  @Test
  void sizesMatchSpark() {
    for (String v : List.of("4096", "100b", "64k", "64KB", "2m", "2mb", "1g", "3gb", "1t")) {
      long ours = GpuCollConf.of(Map.of("spark.gpucoll.gpu.oneShotMaxBytes", v))
          .get(GpuCollConf.GPU_ONE_SHOT_MAX_BYTES);
      assertEquals(JavaUtils.byteStringAsBytes(v), ours, v);
    }
  }
}
