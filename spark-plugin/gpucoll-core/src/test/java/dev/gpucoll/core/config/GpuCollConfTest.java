package dev.gpucoll.core.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.Test;

/** Spark's duration and size grammar, and Spark's leniency for unknown keys. */
class GpuCollConfTest {

  private static Duration timeout(String value) {
    return GpuCollConf.of(Map.of("spark.gpucoll.timeout", value)).validate().get(GpuCollConf.TIMEOUT);
  }

  private static long oneShotMax(String value) {
    return GpuCollConf.of(Map.of("spark.gpucoll.gpu.oneShotMaxBytes", value)).validate()
        .get(GpuCollConf.GPU_ONE_SHOT_MAX_BYTES);
  }

  @Test
  void durationsTakeEverySparkUnit() {
    assertEquals(Duration.ofNanos(1_500_000), timeout("1500us"));
    assertEquals(Duration.ofMillis(250), timeout("250ms"));
    assertEquals(Duration.ofSeconds(30), timeout("30s"));
    assertEquals(Duration.ofMinutes(1), timeout("1m"));
    assertEquals(Duration.ofMinutes(2), timeout("2min"));
    assertEquals(Duration.ofHours(1), timeout("1h"));
    assertEquals(Duration.ofDays(1), timeout("1d"));
    assertEquals(Duration.ofMinutes(3), timeout(" 3M "));
  }

  @Test
  void aPlainDurationIsInTheKeysUnit() {
    assertEquals(Duration.ofSeconds(45), timeout("45"));
    assertEquals(Duration.ofSeconds(120), GpuCollConf.defaults().get(GpuCollConf.TIMEOUT));
  }

  @Test
  void sizesTakeEverySparkUnit() {
    assertEquals(4096, oneShotMax("4096"));
    assertEquals(100, oneShotMax("100b"));
    assertEquals(64 << 10, oneShotMax("64k"));
    assertEquals(64 << 10, oneShotMax("64KB"));
    assertEquals(2 << 20, oneShotMax("2m"));
    assertEquals(2 << 20, oneShotMax("2mb"));
    assertEquals(1L << 30, oneShotMax("1g"));
    assertEquals(3L << 30, oneShotMax("3gb"));
    assertEquals(1L << 40, oneShotMax("1t"));
  }

  @Test
  void aValueThatDoesNotParseNamesTheKeyAndTheValue() {
    for (String bad : List.of("1.5s", "5 parsecs", "ten", "0s", "-3s", "99999999999999999999s", "1w")) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> timeout(bad));
      assertTrue(e.getMessage().contains("spark.gpucoll.timeout"), e.getMessage());
      assertTrue(e.getMessage().contains("'" + bad.trim() + "'"), e.getMessage());
    }
    assertTrue(assertThrows(IllegalArgumentException.class, () -> timeout("1.5s")).getMessage()
        .contains("fractional"));
    assertTrue(assertThrows(IllegalArgumentException.class, () -> timeout("1w")).getMessage()
        .contains("unknown time unit 'w'"));
    for (String bad : List.of("1.5k", "-1k", "64q", "k", "99999999p")) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> oneShotMax(bad));
      assertTrue(e.getMessage().contains("spark.gpucoll.gpu.oneShotMaxBytes"), e.getMessage());
      assertTrue(e.getMessage().contains("'" + bad + "'"), e.getMessage());
    }
  }

  /**
   * A timeout whose nanoseconds overflow a long (106752d and more) used to pass validation and fail
   * every call with an ArithmeticException; an empty shm directory put the segments in the working
   * directory. Both are refused when the settings are read, naming the key.
   */
  @Test
  void aValueNoCallCouldUseIsRefusedAtValidation() {
    for (String bad : List.of("106752d", "53376d", "1281024h", "9223372036854775807s", "9223372036854775807d")) {
      InvalidSettingException e = assertThrows(InvalidSettingException.class, () -> timeout(bad));
      assertEquals("spark.gpucoll.timeout", e.key());
      assertTrue(e.getMessage().contains("too large") || e.getMessage().contains("1ms to 24h"), e.getMessage());
    }
    for (String bad : List.of("", "  ")) {
      InvalidSettingException e = assertThrows(InvalidSettingException.class,
          () -> GpuCollConf.of(Map.of("spark.gpucoll.host.shmDir", bad)).validate());
      assertEquals("spark.gpucoll.host.shmDir", e.key());
      assertTrue(e.getMessage().contains("must name a directory"), e.getMessage());
    }
    assertEquals("/tmp/segments", GpuCollConf.of(Map.of("spark.gpucoll.host.shmDir", "/tmp/segments")).validate()
        .get(GpuCollConf.SHM_DIR));
  }

  /**
   * The timeout the driver's rendezvous serves is the one validation lets through: 1ms to 24h, the
   * bounds themselves included; a longer one (2d) or one that is 0 in whole milliseconds (1us) is
   * refused when the settings are read, naming the key, instead of failing every barrier job.
   */
  @Test
  void theTimeoutIsRefusedOutsideTheBoundsTheRendezvousServes() {
    assertEquals(Duration.ofHours(24), timeout("24h"));
    assertEquals(Duration.ofHours(24), timeout("86400s"));
    assertEquals(Duration.ofMillis(1), timeout("1ms"));
    assertEquals(Duration.ofMillis(1), timeout("1000us"));
    assertEquals(Duration.ofDays(1), timeout("1d"));
    for (String bad : List.of("2d", "86401s", "25h", "53375d", "1us", "999us")) {
      InvalidSettingException e = assertThrows(InvalidSettingException.class, () -> timeout(bad));
      assertEquals("spark.gpucoll.timeout", e.key());
      assertTrue(e.getMessage().contains("spark.gpucoll.timeout") && e.getMessage().contains("1ms to 24h"),
          e.getMessage());
    }
  }

  @Test
  void internalSettingsAreKnownGroupWideAndLeftOutOfTheDocs() {
    GpuCollConf conf = GpuCollConf.of(Map.of("spark.gpucoll.internal.kernelVariant", "SENTINEL",
        "spark.gpucoll.internal.spinOnSharedGpu", "true")).validate();
    assertEquals(List.of(), conf.unknownKeys());
    assertEquals(java.util.Optional.of("sentinel"), conf.get(GpuCollConf.INTERNAL_KERNEL_VARIANT));
    assertTrue(conf.get(GpuCollConf.INTERNAL_SPIN_ON_SHARED_GPU));
    assertEquals(java.util.Optional.empty(), GpuCollConf.defaults().get(GpuCollConf.INTERNAL_KERNEL_VARIANT));
    assertFalse(GpuCollConf.defaults().get(GpuCollConf.INTERNAL_SPIN_ON_SHARED_GPU));
    assertEquals("sentinel", conf.groupWideSettings().get("spark.gpucoll.internal.kernelVariant"));
    assertEquals("true", conf.groupWideSettings().get("spark.gpucoll.internal.spinOnSharedGpu"));
    IllegalArgumentException bad = assertThrows(IllegalArgumentException.class, () -> GpuCollConf.of(
        Map.of("spark.gpucoll.internal.spinOnSharedGpu", "yes")).validate());
    assertTrue(bad.getMessage().contains("spark.gpucoll.internal.spinOnSharedGpu"), bad.getMessage());
    String docs = GpuCollConf.markdown();
    for (ConfigEntry<?> e : GpuCollConf.entries()) {
      assertEquals(!e.internal(), docs.contains("`" + e.key() + "`"), e.key());
      assertEquals(e.internal(), e.key().startsWith("spark.gpucoll.internal."), e.key());
    }
  }

  @Test
  void anUnknownKeyWarnsOnceNamingItAndTheKnownKeysAndIsNotShipped() {
    List<LogRecord> records = new CopyOnWriteArrayList<>();
    Handler capture = new Handler() {
      @Override
      public void publish(LogRecord r) {
        records.add(r);
      }

      @Override
      public void flush() {}

      @Override
      public void close() {}
    };
    Logger log = Logger.getLogger(GpuCollConf.class.getName());
    log.addHandler(capture);
    try {
      Map<String, String> settings = Map.of("spark.gpucoll.timeuot", "5s",
          "spark.gpucoll.timeout", "7s", "spark.other", "x");
      GpuCollConf conf = GpuCollConf.of(settings).validate();
      GpuCollConf.of(settings).validate(); // a second task in the same JVM: no second WARN
      assertEquals(Duration.ofSeconds(7), conf.get(GpuCollConf.TIMEOUT));
      assertEquals(List.of("spark.gpucoll.timeuot"), conf.unknownKeys());
      assertEquals(Map.of("spark.gpucoll.timeout", "7s"), conf.asMap());
      List<LogRecord> warnings = records.stream()
          .filter(r -> r.getLevel() == Level.WARNING && r.getMessage().contains("timeuot")).toList();
      assertEquals(1, warnings.size(), records.toString());
      String text = warnings.get(0).getMessage();
      assertTrue(text.contains("unknown setting spark.gpucoll.timeuot: did you mean spark.gpucoll.timeout?"), text);
      for (ConfigEntry<?> e : GpuCollConf.entries()) {
        // the user's settings are listed; the internal knobs of the GPU checks are not offered
        assertEquals(!e.internal(), text.contains(e.key()), e.key() + ": " + text);
      }
      assertEquals(Optional.empty(), GpuCollConf.closestKey("spark.gpucoll.internal.kernelVarian"));
      assertFalse(text.contains("spark.other"), text);
    } finally {
      log.removeHandler(capture);
    }
  }

  @Test
  void aBadValueIsOneMessageWithoutACauseChainRepeatingIt() {
    InvalidSettingException e = assertThrows(InvalidSettingException.class, () -> timeout("2x"));
    assertEquals("gpucoll: invalid value '2x' for spark.gpucoll.timeout: unknown time unit 'x';"
        + " expected one of us, ms, s, m, min, h, d", e.getMessage());
    assertNull(e.getCause());
    assertEquals("spark.gpucoll.timeout", e.key());
    assertEquals("2x", e.value());
  }

  @Test
  void aCloseMatchOfAnUnknownKeyIsNamed() {
    assertEquals(Optional.of("spark.gpucoll.timeout"), GpuCollConf.closestKey("spark.gpucoll.timout"));
    assertEquals(Optional.of("spark.gpucoll.timeout"), GpuCollConf.closestKey("spark.gpucoll.Timeout"));
    assertEquals(Optional.of("spark.gpucoll.backend"), GpuCollConf.closestKey("spark.gpucoll.backedn"));
    assertEquals(Optional.of("spark.gpucoll.gpu.oneShotMaxBytes"),
        GpuCollConf.closestKey("spark.gpucoll.gpu.oneshotMaxByte"));
    // Too far from every key, or too short to guess from: no suggestion.
    assertEquals(Optional.empty(), GpuCollConf.closestKey("spark.gpucoll.fooBar"));
    assertEquals(Optional.empty(), GpuCollConf.closestKey("spark.gpucoll.x"));
    assertEquals(Optional.empty(), GpuCollConf.closestKey("spark.gpucoll.cudf.poolSize"));
  }

  @Test
  void editDistanceCountsASwapAsOneEdit() {
    assertEquals(0, GpuCollConf.editDistance("timeout", "timeout"));
    assertEquals(1, GpuCollConf.editDistance("timout", "timeout"));
    assertEquals(1, GpuCollConf.editDistance("timeuot", "timeout"));
    assertEquals(2, GpuCollConf.editDistance("tmieuot", "timeout"));
    assertEquals(7, GpuCollConf.editDistance("", "timeout"));
  }
}
