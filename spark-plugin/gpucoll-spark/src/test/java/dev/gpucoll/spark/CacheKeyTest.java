package dev.gpucoll.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import dev.gpucoll.core.config.GpuCollConf;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class CacheKeyTest {
  private static final List<String> EXECUTORS = List.of("10.0.0.1:4040", "10.0.0.2:4040");

  @Test
  void sameGroupAndSettingsGiveTheSameKey() {
    GpuCollConf a = GpuCollConf.of(Map.of("spark.gpucoll.timeout", "30s"));
    GpuCollConf b = GpuCollConf.of(Map.of("spark.gpucoll.timeout", "30s"));
    assertEquals(GpuCollectives.cacheKey(EXECUTORS, 1, a), GpuCollectives.cacheKey(EXECUTORS, 1, b));
  }

  @Test
  void aStageWithOtherSettingsDoesNotReuseTheCommunicator() {
    GpuCollConf auto = GpuCollConf.defaults();
    GpuCollConf nccl = GpuCollConf.of(Map.of("spark.gpucoll.algorithm", "nccl"));
    assertNotEquals(GpuCollectives.cacheKey(EXECUTORS, 0, auto), GpuCollectives.cacheKey(EXECUTORS, 0, nccl));
  }

  @Test
  void ranksAndExecutorsAreInTheKey() {
    GpuCollConf conf = GpuCollConf.defaults();
    assertNotEquals(GpuCollectives.cacheKey(EXECUTORS, 0, conf), GpuCollectives.cacheKey(EXECUTORS, 1, conf));
    assertNotEquals(GpuCollectives.cacheKey(EXECUTORS, 0, conf),
        GpuCollectives.cacheKey(List.of("10.0.0.2:4040", "10.0.0.1:4040"), 0, conf));
  }
}
