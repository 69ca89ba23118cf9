package dev.gpucoll.spark.metrics;

import com.codahale.metrics.Counter;
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
 * <p>Counters, since each is a running total (Spark's Prometheus servlet shows them once, as
 * {@code _Count}; Spark registers a plugin's metrics once, so every name is fixed here):
 * {@code executors.collective.<name>.{calls,bytes,errors,timeouts,latencyNanos}} (every
 * {@link ExecutorMetrics#CALL_NAMES}),
 * {@code executors.path.<algorithm>.{calls,bytes}} for the algorithms the executors can run
 * ({@link ExecutorMetrics#usablePaths}) and {@code other}, {@code executors.rendezvous.count},
 * {@code executors.cache.hits}, {@code executors.cache.misses}, {@code executors.errors},
 * {@code executors.timeouts}; and a gauge, {@code executors.collective.<name>.meanLatencyMicros}.
 *
 * <p>Internal: public for the other packages of gpucoll-spark, not for users.
 */
public final class DriverMetrics {
  static final String PREFIX = "executors.";

  private final Map<String, Map<String, Long>> byExecutor = new ConcurrentHashMap<>();

  /** Executor {@code executorId}'s counts so far (the latest wins). */
  public void update(String executorId, Map<String, Long> totals) {
    byExecutor.put(executorId, Map.copyOf(totals));
  }

  /** The sum over executors of count {@code name} (0 when none reported it). */
  public long sum(String name) {
    long n = 0;
    for (Map<String, Long> totals : byExecutor.values()) {
      n += totals.getOrDefault(name, 0L);
    }
    return n;
  }

  /** The names of the counters, without the prefix, for the given algorithms. */
  static List<String> names(List<String> paths) {
    List<String> out = new ArrayList<>();
    for (String c : ExecutorMetrics.CALL_NAMES) {
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

  /** Registers a counter for each sum of {@link #names} and a gauge of each collective's mean latency. */
  public void register(MetricRegistry registry, List<String> paths) {
    for (String name : names(paths)) {
      registry.register(PREFIX + name, new Sum(() -> sum(name)));
    }
    for (String c : ExecutorMetrics.CALL_NAMES) {
      String base = "collective." + c + ".";
      registry.register(PREFIX + base + "meanLatencyMicros", (Gauge<Double>) () -> {
        long calls = sum(base + "calls");
        return calls == 0 ? 0.0 : sum(base + "latencyNanos") / 1e3 / calls;
      });
    }
  }

  /**
   * A counter whose count is a sum kept elsewhere: a running total reads as a counter in every sink
   * (a Gauge would show twice in Prometheus, as _Number and _Value, and as a level, not a total).
   */
  public static final class Sum extends Counter {
    private final java.util.function.LongSupplier total;

    public Sum(java.util.function.LongSupplier total) {
      this.total = total;
    }

    @Override
    public long getCount() {
      return total.getAsLong();
    }

    @Override
    public void inc(long n) {
      throw new UnsupportedOperationException("a sum of the executors' counts: it changes as they report");
    }

    @Override
    public void dec(long n) {
      throw new UnsupportedOperationException("a sum of the executors' counts: it changes as they report");
    }
  }
}
