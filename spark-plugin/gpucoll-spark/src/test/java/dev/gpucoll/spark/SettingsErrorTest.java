package dev.gpucoll.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.gpucoll.core.config.InvalidSettingException;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.api.java.JavaSparkContext;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** A bad spark.gpucoll value stops SparkContext start with one message. */
class SettingsErrorTest {

  @Test
  void aBadDurationFailsTheStartOnceNamingKeyAndValue() {
    SparkConf conf = LocalSpark.withPlugin("gpucoll-bad-setting", "local[1]").set("spark.gpucoll.timeout", "2x");
    InvalidSettingException e = assertThrows(InvalidSettingException.class, () -> new SparkContext(conf));
    assertEquals("gpucoll: invalid value '2x' for spark.gpucoll.timeout: unknown time unit 'x';"
        + " expected one of us, ms, s, m, min, h, d", e.getMessage());
    assertNull(e.getCause());
  }

  @Test
  void aBadJobLocalValueFailsTheJobAtItsSubmissionNotInItsTasks() throws Exception {
    SparkConf conf = LocalSpark.withPlugin("gpucoll-bad-job-setting", "local[2]");
    try (JavaSparkContext sc = new JavaSparkContext(conf)) {
      AtomicInteger stages = LocalSpark.countStages(sc);
      sc.setLocalProperty("spark.gpucoll.timeout", "2 minutes");
      InvalidSettingException e = assertThrows(InvalidSettingException.class,
          () -> GpuCollectives.barrierMapPartitions(sc.parallelize(List.of(1, 2), 2),
              (comm, rows) -> List.of(comm.rank()).iterator()).collect());
      assertEquals("spark.gpucoll.timeout", e.key());
      assertNull(e.getCause());
      sc.sc().listenerBus().waitUntilEmpty();
      assertEquals(0, stages.get(), "no stage may start");
    }
  }
}
