package dev.gpucoll.spark;

import com.codahale.metrics.Gauge;
import com.codahale.metrics.MetricRegistry;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The executors' metrics summed on the driver, under {@code executors.} in the driver plugin's
 * registry: Spark's own endpoints of the driver, {@code /metrics/json} and {@code /metrics/prometheus}
 * (its default servlet sinks), and any driver sink then show them, where the executors' own
 * registries reach only sinks on the executors. Each executor sends its counts
 * ({@link ExecutorMetrics#totals}) every few seconds when they changed; an executor that is gone
 * keeps its last counts in the sums (they count what the application did).
 *
 * <p>Gauges (Spark registers a plugin's metrics once, so every name is fixed here):
 * {@code executors.collective.<name>.{calls,bytes,errors,timeouts,latencyNanos,meanLatencyMicros}} (every
 * {@link CollectiveMetrics#CALL_NAMES}),
 * {@code executors.path.<algorithm>.{calls,bytes}} for the algorithms the executors can run
 * ({@link ExecutorMetrics#usablePaths}) and {@code other}, {@code executors.rendezvous.count},
 * {@code executors.cache.hits}, {@code executors.cache.misses}, {@code executors.errors},
 * {@code executors.timeouts}.
 */
final class DriverMetrics {
  static final String PREFIX = "executors.";

  private final Map<String, Map<String, Long>> byExecutor = new ConcurrentHashMap<>();

  /** Executor {@code executorId}'s counts so far (the latest wins). */
  void update(String executorId, Map<String, Long> totals) {
    byExecutor.put(executorId, Map.copyOf(totals));
  }

  /** The sum over executors of count {@code name} (0 when none reported it). */
  long sum(String name) {
    long n = 0;
    for (Map<String, Long> totals : byExecutor.values()) {
      n += totals.getOrDefault(name, 0L);
    }
    return n;
  }

  /** The names of the gauges, without the prefix, for the given algorithms. */
  static List<String> names(List<String> paths) {
    List<String> out = new ArrayList<>();
    for (String c : CollectiveMetrics.CALL_NAMES) {
      for (String what : List.of("calls", "bytes", "errors", "timeouts", "latencyNanos")) {
        out.add("collective." + c + "." + what);
      }
    }
    List<String> all = new ArrayList<>(paths);
    all.add(ExecutorMetrics.OTHER_PATH);
    for (String p : all) {
      out.add("path." + p + ".calls");
      out.add("path." + p + ".bytes");
    }
    out.addAll(List.of("rendezvous.count", "cache.hits", "cache.misses", "errors", "timeouts"));
    return out;
  }

  /** Registers every gauge: the sums of {@link #names}, and each collective's mean latency. */
  void register(MetricRegistry registry, List<String> paths) {
    for (String name : names(paths)) {
      registry.register(PREFIX + name, (Gauge<Long>) () -> sum(name));
    }
    for (String c : CollectiveMetrics.CALL_NAMES) {
      String base = "collective." + c + ".";
      registry.register(PREFIX + base + "meanLatencyMicros", (Gauge<Double>) () -> {
        long calls = sum(base + "calls");
        return calls == 0 ? 0.0 : sum(base + "latencyNanos") / 1e3 / calls;
      });
    }
  }
}
