package dev.gpucoll.spark.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.codahale.metrics.MetricRegistry;
import dev.gpucoll.spark.plugin.GpuCollDriverPlugin;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The executors' counts summed on the driver, and the paths each side registers. */
class DriverMetricsTest {

  @Test
  void theDriversCountersSumEveryExecutorsLatestCounts() {
    MetricRegistry executor0 = new MetricRegistry();
    MetricRegistry executor1 = new MetricRegistry();
    List<String> hostPaths = ExecutorMetrics.usablePaths(false);
    ExecutorMetrics e0 = new ExecutorMetrics(executor0, hostPaths);
    ExecutorMetrics e1 = new ExecutorMetrics(executor1, hostPaths);
    e0.call("allReduce", "host-oneshot", 256, 10_000);
    e0.call("allReduce", "host-oneshot", 256, 30_000);
    e1.call("allReduce", "host-twoshot", 1 << 20, 80_000);
    e1.call("barrier", "host-flags", 0, 1_000);

    DriverMetrics sums = new DriverMetrics();
    MetricRegistry driver = new MetricRegistry();
    sums.register(driver, hostPaths);
    sums.update("0", e0.totals());
    sums.update("1", e1.totals());
    assertEquals(3L, driver.getCounters().get("executors.collective.allReduce.calls").getCount());
    assertEquals(256L * 2 + (1 << 20), driver.getCounters().get("executors.collective.allReduce.bytes").getCount());
    assertEquals(40.0, driver.getGauges().get("executors.collective.allReduce.meanLatencyMicros").getValue());
    assertEquals(2L, driver.getCounters().get("executors.path.host-oneshot.calls").getCount());
    assertEquals(1L, driver.getCounters().get("executors.collective.barrier.calls").getCount());
    // An executor's later counts replace its earlier ones; they are not added twice.
    e0.call("allReduce", "host-oneshot", 256, 20_000);
    sums.update("0", e0.totals());
    assertEquals(4L, driver.getCounters().get("executors.collective.allReduce.calls").getCount());
    // Without a GPU on the executors, no GPU or NCCL path has a metric on either side.
    assertFalse(driver.getNames().stream().anyMatch(n -> n.contains(".path.gpu-") || n.contains(".path.nccl")),
        driver.getNames().toString());
    assertFalse(executor0.getNames().stream().anyMatch(n -> n.startsWith("path.gpu-") || n.startsWith("path.nccl")));
    assertTrue(ExecutorMetrics.usablePaths(true).contains("nccl-zero-cta"));
    assertTrue(driver.getNames().contains("executors.path.other.calls"));
    // Running totals are counters (one line each in Prometheus), the mean a gauge.
    assertTrue(driver.getGauges().keySet().stream().allMatch(n -> n.endsWith(".meanLatencyMicros")),
        driver.getGauges().keySet().toString());
  }

  @Test
  void theDriverExpectsGpuPathsOnlyWhereExecutorsMayRunTheGpuBackend() {
    org.apache.spark.SparkConf conf = new org.apache.spark.SparkConf(false);
    assertFalse(GpuCollDriverPlugin.executorsMayUseGpus(conf));
    assertTrue(GpuCollDriverPlugin.executorsMayUseGpus(conf.clone().set("spark.executor.resource.gpu.amount", "1")));
    assertFalse(GpuCollDriverPlugin.executorsMayUseGpus(conf.clone().set("spark.executor.resource.gpu.amount", "0")));
    assertTrue(GpuCollDriverPlugin.executorsMayUseGpus(conf.clone().set("spark.gpucoll.backend", "gpu")));
    assertFalse(GpuCollDriverPlugin.executorsMayUseGpus(conf.clone().set("spark.gpucoll.backend", "host")
        .set("spark.executor.resource.gpu.amount", "1")));
  }
}
