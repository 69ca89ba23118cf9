package dev.gpucoll.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.gpucoll.core.config.InvalidSettingException;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerStageSubmitted;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** A bad spark.gpucoll value stops SparkContext start with one message. */
class SettingsErrorTest {

  @Test
  void aBadDurationFailsTheStartOnceNamingKeyAndValue() {
    SparkConf conf = new SparkConf()
        .setMaster("local[1]")
        .setAppName("gpucoll-bad-setting")
        .set("spark.ui.enabled", "false")
        .set("spark.driver.host", "127.0.0.1")
        .set("spark.driver.bindAddress", "127.0.0.1")
        .set("spark.plugins", GpuCollectivesPlugin.class.getName())
        .set("spark.gpucoll.timeout", "2x");
    InvalidSettingException e = assertThrows(InvalidSettingException.class, () -> new SparkContext(conf));
    assertEquals("gpucoll: invalid value '2x' for spark.gpucoll.timeout: unknown time unit 'x';"
        + " expected one of us, ms, s, m, min, h, d", e.getMessage());
    assertNull(e.getCause());
  }

  @Test
  void aBadJobLocalValueFailsTheJobAtItsSubmissionNotInItsTasks() throws Exception {
    SparkConf conf = new SparkConf()
        .setMaster("local[2]")
        .setAppName("gpucoll-bad-job-setting")
        .set("spark.ui.enabled", "false")
        .set("spark.driver.host", "127.0.0.1")
        .set("spark.driver.bindAddress", "127.0.0.1")
        .set("spark.plugins", GpuCollectivesPlugin.class.getName());
    AtomicInteger stages = new AtomicInteger();
    try (JavaSparkContext sc = new JavaSparkContext(conf)) {
      sc.sc().addSparkListener(new SparkListener() {
        @Override
        public void onStageSubmitted(SparkListenerStageSubmitted submitted) {
          stages.incrementAndGet();
        }
      });
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
