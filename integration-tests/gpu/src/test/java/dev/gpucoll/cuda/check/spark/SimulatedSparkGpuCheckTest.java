package dev.gpucoll.cuda.check.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.cuda.SimulatedDevice;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The Spark GPU job's stages through Spark (local mode, the plugin on, the gpu backend) on a
 * simulated device: the checks of every stage whose paths need no kernel of ours, on host arrays,
 * pooled device memory and device memory allocated per call. Two ranks share the simulated GPU and
 * take the staged path. A group of one is not run here: its MAXLOC/MINLOC run the pair kernel (the
 * NaN check), which the simulated device cannot run; the GPU acceptance's Spark step runs one rank per
 * Worker on the GPU.
 */
class SimulatedSparkGpuCheckTest {

  @ParameterizedTest(name = "{0} rank(s), fractional={1}")
  @CsvSource({"2, false", "2, true"})
  void everyStagePassesOnASimulatedDevice(int ranks, boolean fractional) {
    try (SimulatedDevice.Installed sim = SimulatedDevice.install()) {
      SparkConf conf = new SparkConf().setAppName("simulated-gpu-check").setMaster("local[" + ranks + "]")
          .set("spark.plugins", "dev.gpucoll.spark.GpuCollectivesPlugin")
          .set("spark.gpucoll.backend", "gpu")
          .set("spark.gpucoll.timeout", "30s")
          .set("spark.ui.enabled", "false")
          .set("spark.driver.host", "127.0.0.1")
          .set("spark.driver.bindAddress", "127.0.0.1")
          .set("spark.task.maxFailures", "1");
      SparkGpuCheck.Options o = new SparkGpuCheck.Options(ranks, 1, true, fractional, 1 << 20);
      Map<String, List<String>> byStage;
      try (JavaSparkContext jsc = new JavaSparkContext(conf)) {
        byStage = SparkGpuCheck.runStages(jsc, o);
      }
      List<String> all = byStage.values().stream().flatMap(List::stream).toList();
      List<String> failed = all.stream().filter(l -> l.startsWith("FAIL")).toList();
      assertTrue(failed.isEmpty(), failed.size() + " FAIL lines:\n" + failed.stream().limit(20)
          .collect(Collectors.joining("\n")));
      String first = fractional ? "fractional" : "check";
      long ranksOnGpu = byStage.get(first).stream().filter(l -> l.startsWith("RANK ") && l.contains(" backend=gpu"))
          .count();
      assertEquals(ranks, ranksOnGpu, "every rank on the gpu backend: " + byStage.get(first));
      String memory = fractional ? "device-fresh" : "device";
      long deviceCases = all.stream().filter(l -> l.startsWith("CHECKS stage=" + first + " memory=" + memory + " "))
          .mapToLong(l -> Long.parseLong(l.replaceAll(".* cases=(\\d+) .*", "$1"))).sum();
      assertTrue(deviceCases > 100 * ranks, "device-memory cases run: " + deviceCases);
      assertEquals(0, sim.device().refusedLaunches(), "a stage tried to launch a kernel of ours");
    }
  }
}
