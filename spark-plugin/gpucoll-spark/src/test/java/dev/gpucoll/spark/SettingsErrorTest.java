package dev.gpucoll.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.gpucoll.core.config.InvalidSettingException;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
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
}
