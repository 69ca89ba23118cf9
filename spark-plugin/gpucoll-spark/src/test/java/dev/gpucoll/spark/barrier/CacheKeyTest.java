package dev.gpucoll.spark.barrier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The cache key names the group's executors and the rank; settings are checked by the cache itself. */
class CacheKeyTest {
  private static final List<String> EXECUTORS = List.of("10.0.0.1:4040", "10.0.0.2:4040");

  @Test
  void sameGroupAndRankGiveTheSameKey() {
    assertEquals(TaskCommunicators.cacheKey(EXECUTORS, 1), TaskCommunicators.cacheKey(List.copyOf(EXECUTORS), 1));
  }

  @Test
  void ranksAndExecutorsAreInTheKey() {
    assertNotEquals(TaskCommunicators.cacheKey(EXECUTORS, 0), TaskCommunicators.cacheKey(EXECUTORS, 1));
    assertNotEquals(TaskCommunicators.cacheKey(EXECUTORS, 0),
        TaskCommunicators.cacheKey(List.of("10.0.0.2:4040", "10.0.0.1:4040"), 0));
  }
}
