package dev.gpucoll.spark.plugin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URL;
import java.net.URLClassLoader;
import java.util.List;
import org.junit.jupiter.api.Test;

class ClassPathCheckTest {

  @Test
  void theBuildClassPathHoldsEveryPart() {
    assertEquals(List.of(), ClassPathCheck.missing(ClassPathCheckTest.class.getClassLoader()));
    ClassPathCheck.require(ClassPathCheckTest.class.getClassLoader(), "driver");
  }

  @Test
  void aLoaderWithoutOurJarsGetsAnErrorNamingEveryMissingPart() throws Exception {
    // Sees only the JDK: as an executor that was given the thin jar and nothing else sees the rest.
    try (URLClassLoader bare = new URLClassLoader(new URL[0], ClassLoader.getPlatformClassLoader())) {
      assertEquals(ClassPathCheck.REQUIRED, ClassPathCheck.missing(bare));
      IllegalStateException e = assertThrows(IllegalStateException.class,
          () -> ClassPathCheck.require(bare, "executor"));
      for (String part : List.of("gpucoll-core (dev.gpucoll.core.CommunicatorFactory)",
          "JavaCPP (org.bytedeco.javacpp.Loader)", "gpucoll_kernels.fatbin", "libjnicudart.so",
          "gpucoll-dist_2.13-<version>.jar on --jars", "on the executor")) {
        assertTrue(e.getMessage().contains(part), part + " in: " + e.getMessage());
      }
    }
  }
}
