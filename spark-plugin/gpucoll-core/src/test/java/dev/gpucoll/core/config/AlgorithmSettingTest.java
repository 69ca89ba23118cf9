package dev.gpucoll.core.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.core.Algorithm;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class AlgorithmSettingTest {
  private static Optional<Algorithm> setting(String value) {
    return GpuCollConf.of(Map.of(GpuCollConf.ALGORITHM.key(), value)).get(GpuCollConf.ALGORITHM);
  }

  @Test
  void autoForcesNothing() {
    assertEquals(Optional.empty(), GpuCollConf.defaults().get(GpuCollConf.ALGORITHM));
    assertEquals(Optional.empty(), setting(" AUTO "));
  }

  @Test
  void everyForceableNameParsesToItself() {
    for (Algorithm a : Algorithm.values()) {
      if (a.forceable()) {
        assertEquals(Optional.of(a), setting(a.id()));
      } else {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> setting(a.id()));
        assertTrue(e.getMessage().contains("expected one of"), e.getMessage());
      }
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"hierarchical", "oneshot", "twoshot", "ll128", "bogus"})
  void retiredAndUnknownValuesNameTheValidOnes(String value) {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> setting(value));
    assertTrue(e.getMessage().contains(GpuCollConf.ALGORITHM.key()), e.getMessage());
    assertTrue(e.getMessage().contains("gpu-ll-oneshot") && e.getMessage().contains("host-twoshot"), e.getMessage());
    if (value.equals("hierarchical")) {
      assertTrue(e.getMessage().contains("not built"), e.getMessage());
    }
  }

  @Test
  void namesAreUniqueAndDocumentedValuesAreTheForceableOnes() {
    assertEquals(Algorithm.values().length,
        new HashSet<>(Arrays.stream(Algorithm.values()).map(Algorithm::id).toList()).size());
    assertEquals(Algorithm.settingValues(), GpuCollConf.ALGORITHM.allowed());
    assertTrue(GpuCollConf.markdown().contains("gpu-sentinel-twoshot"));
    assertTrue(!GpuCollConf.markdown().contains("hierarchical"));
  }
}
