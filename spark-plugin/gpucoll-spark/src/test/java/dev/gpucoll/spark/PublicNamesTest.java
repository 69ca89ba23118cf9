package dev.gpucoll.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.gpucoll.spark.barrier.UserCallSite;
import dev.gpucoll.spark.rpc.PluginName;
import org.junit.jupiter.api.Test;

/**
 * The classes beneath the entry points name them by name, not by class (they stand below them):
 * those names are the entry points' own.
 */
class PublicNamesTest {
  @Test
  void thePluginsNameIsItsClasss() {
    assertEquals(GpuCollectivesPlugin.class.getName(), PluginName.CLASS);
    assertEquals(GpuCollectivesPlugin.class.getSimpleName(), PluginName.SIMPLE);
  }

  @Test
  void theBarrierApisNamesAreItsClasses() throws ClassNotFoundException {
    assertEquals(GpuCollectives.class.getName(), UserCallSite.JAVA_API);
    assertEquals(UserCallSite.SCALA_API, Class.forName(UserCallSite.SCALA_API).getName());
    assertEquals(UserCallSite.SCALA_API + "$", syntax$.MODULE$.getClass().getName());
  }
}
