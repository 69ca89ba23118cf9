package dev.gpucoll.spark;

import com.codahale.metrics.MetricRegistry;
import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CollectiveListener;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;

/**
 * Listens to one communicator: feeds the executor's Dropwizard registry (calls, bytes and latency
 * per collective and path, under plugin.dev.gpucoll.spark.GpuCollectivesPlugin) and counts the
 * paths taken during the current task for the driver's report.
 */
final class CollectiveMetrics implements CollectiveListener {
  private final MetricRegistry registry;
  private final Map<String, LongAdder> taskPaths = new ConcurrentHashMap<>();

  /** @param registry the executor plugin's registry, or null when the plugin is not active */
  CollectiveMetrics(MetricRegistry registry) {
    this.registry = registry;
  }

  @Override
  public void onCollective(Collective collective, String algorithm, long bytes, long nanos) {
    taskPaths.computeIfAbsent(collective.apiName() + "\u0000" + algorithm, k -> new LongAdder())
        .increment();
    if (registry != null) {
      String base = MetricRegistry.name(collective.apiName(), algorithm);
      registry.counter(MetricRegistry.name(base, "calls")).inc();
      registry.counter(MetricRegistry.name(base, "bytes")).inc(bytes);
      registry.timer(MetricRegistry.name(base, "latency")).update(nanos, TimeUnit.NANOSECONDS);
    }
  }

  /** Collective -> algorithm -> calls since the last {@link #resetTask()}. */
  Map<String, Map<String, Long>> taskPaths() {
    Map<String, Map<String, Long>> out = new TreeMap<>();
    taskPaths.forEach((k, v) -> {
      int cut = k.indexOf('\u0000');
      out.computeIfAbsent(k.substring(0, cut), c -> new TreeMap<>())
          .put(k.substring(cut + 1), v.sum());
    });
    return out;
  }

  void resetTask() {
    taskPaths.clear();
  }
}
