package dev.gpucoll.spark.metrics;

import com.codahale.metrics.Counter;
import com.codahale.metrics.Histogram;
import com.codahale.metrics.MetricRegistry;
import com.codahale.metrics.Timer;
import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.CollectiveTimeoutException;
import dev.gpucoll.api.LocOp;
import dev.gpucoll.core.Algorithm;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The executor's Dropwizard metrics, under {@code plugin.dev.gpucoll.spark.GpuCollectivesPlugin}.
 * Every metric is created in the constructor, which the executor plugin's {@code init} calls: Spark
 * copies the plugin's registry into its metrics system only when {@code init} returns, so a metric
 * created later would reach no sink.
 *
 * <p>Names: {@code collective.<allReduce|...>.{calls,bytes,latency,messageBytes,errors,timeouts}} for
 * every call name ({@link #CALL_NAMES}: the collectives, {@code allReduceMaxloc},
 * {@code allReduceMinloc}; a sub-communicator's calls count as any),
 * {@code path.<algorithm>.{calls,bytes,latency}} for every algorithm this executor can run
 * ({@link #usablePaths}; {@code path.other} for any other), {@code rendezvous.time},
 * {@code cache.hits}, {@code cache.misses}, {@code errors}, {@code timeouts}. The same counts go to
 * the driver ({@link #totals}), which shows their sums over executors in Spark's own endpoints
 * ({@link DriverMetrics}).
 *
 * <p>Internal: public for the other packages of gpucoll-spark, not for users.
 */
public final class ExecutorMetrics {
  private static final Logger LOG = LoggerFactory.getLogger(ExecutorMetrics.class);

  /**
   * The algorithm names the backends report: the one vocabulary, {@link Algorithm}. A name outside
   * it is counted under {@link #OTHER_PATH} and named once in a WARN.
   */
  static final List<String> PATHS = Arrays.stream(Algorithm.values()).map(Algorithm::id).toList();
  static final String OTHER_PATH = "other";

  /** The name of a MAXLOC / MINLOC allReduce in reports and metrics. */
  static String callName(LocOp op) {
    return op == LocOp.MAXLOC ? "allReduceMaxloc" : "allReduceMinloc";
  }

  /**
   * Every name calls are counted under in the metrics ({@link CollectiveMetrics} counts each call
   * under one): each collective's API name, then MAXLOC's and MINLOC's.
   */
  static final List<String> CALL_NAMES = java.util.stream.Stream.concat(
      Arrays.stream(Collective.values()).map(Collective::apiName),
      Arrays.stream(LocOp.values()).map(ExecutorMetrics::callName)).toList();

  private record PerCollective(Counter calls, Counter bytes, Timer latency, Histogram messageBytes,
      Counter errors, Counter timeouts, java.util.concurrent.atomic.LongAdder latencyNanos) {}

  private record PerPath(Counter calls, Counter bytes, Timer latency) {}

  private final Map<String, PerCollective> collectives = new LinkedHashMap<>();
  private final Map<String, PerPath> paths = new LinkedHashMap<>();
  private final Timer rendezvous;
  private final Counter cacheHits;
  private final Counter cacheMisses;
  private final Counter errors;
  private final Counter timeouts;
  private final Set<String> warnedPaths = ConcurrentHashMap.newKeySet();

  /**
   * The algorithms whose metrics an executor registers: every one when the GPU backend can run
   * there, else those of the host backend (and the backend-free one-rank and empty calls).
   */
  public static List<String> usablePaths(boolean gpuUsable) {
    // The GPU backend's names are gpu-* and nccl* (Algorithm); the host backend's host-*.
    return PATHS.stream().filter(p -> gpuUsable || !(p.startsWith("gpu-") || p.startsWith("nccl"))).toList();
  }

  ExecutorMetrics(MetricRegistry registry) {
    this(registry, PATHS);
  }

  public ExecutorMetrics(MetricRegistry registry, List<String> usablePaths) {
    for (String c : CALL_NAMES) {
      String base = MetricRegistry.name("collective", c);
      collectives.put(c, new PerCollective(
          registry.counter(MetricRegistry.name(base, "calls")),
          registry.counter(MetricRegistry.name(base, "bytes")),
          registry.timer(MetricRegistry.name(base, "latency")),
          registry.histogram(MetricRegistry.name(base, "messageBytes")),
          registry.counter(MetricRegistry.name(base, "errors")),
          registry.counter(MetricRegistry.name(base, "timeouts")), new java.util.concurrent.atomic.LongAdder()));
    }
    for (String p : usablePaths) {
      paths.put(p, perPath(registry, p));
    }
    paths.put(OTHER_PATH, perPath(registry, OTHER_PATH));
    rendezvous = registry.timer("rendezvous.time");
    cacheHits = registry.counter("cache.hits");
    cacheMisses = registry.counter("cache.misses");
    errors = registry.counter("errors");
    timeouts = registry.counter("timeouts");
  }

  private static PerPath perPath(MetricRegistry registry, String path) {
    String base = MetricRegistry.name("path", path);
    return new PerPath(registry.counter(MetricRegistry.name(base, "calls")),
        registry.counter(MetricRegistry.name(base, "bytes")),
        registry.timer(MetricRegistry.name(base, "latency")));
  }

  /** A call of {@code name} (one of {@link #CALL_NAMES}) completed on {@code algorithm}. */
  void call(String name, String algorithm, long bytes, long nanos) {
    PerCollective c = collectives.get(name);
    if (c == null) {
      throw new IllegalArgumentException("no metrics for call '" + name + "'; known: " + collectives.keySet());
    }
    c.calls.inc();
    c.bytes.inc(bytes);
    c.latency.update(nanos, TimeUnit.NANOSECONDS);
    c.messageBytes.update(bytes);
    c.latencyNanos.add(nanos);
    PerPath p = paths.get(algorithm);
    if (p == null) {
      p = paths.get(OTHER_PATH);
      if (warnedPaths.add(algorithm)) {
        LOG.warn("gpucoll: algorithm '{}' has no metric of its own; counted under path.{} (known: {})",
            algorithm, OTHER_PATH, PATHS);
      }
    }
    p.calls.inc();
    p.bytes.inc(bytes);
    p.latency.update(nanos, TimeUnit.NANOSECONDS);
  }

  /**
   * Every count so far, by the name {@link DriverMetrics} shows its sum under: per collective
   * calls, bytes, errors, timeouts and latencyNanos (the sum of the calls' latencies), per path
   * calls and bytes, and the executor-wide counts.
   */
  public Map<String, Long> totals() {
    Map<String, Long> out = new LinkedHashMap<>();
    collectives.forEach((coll, c) -> {
      String base = "collective." + coll + ".";
      out.put(base + "calls", c.calls.getCount());
      out.put(base + "bytes", c.bytes.getCount());
      out.put(base + "errors", c.errors.getCount());
      out.put(base + "timeouts", c.timeouts.getCount());
      out.put(base + "latencyNanos", c.latencyNanos.sum());
    });
    paths.forEach((name, p) -> {
      out.put("path." + name + ".calls", p.calls.getCount());
      out.put("path." + name + ".bytes", p.bytes.getCount());
    });
    out.put("rendezvous.count", rendezvous.getCount());
    out.put("cache.hits", cacheHits.getCount());
    out.put("cache.misses", cacheMisses.getCount());
    out.put("errors", errors.getCount());
    out.put("timeouts", timeouts.getCount());
    return out;
  }

  /** A task got its communicator after {@code nanos}: a cached one ({@code reused}) or a new one. */
  void rendezvous(long nanos, boolean reused) {
    rendezvous.update(nanos, TimeUnit.NANOSECONDS);
    (reused ? cacheHits : cacheMisses).inc();
  }

  /**
   * A task failed: counted when a collective or its setup caused it (a {@link CollectiveException}
   * in the cause chain), per collective when known; timeouts also count as timeouts.
   */
  public void failure(Throwable error) {
    for (Throwable t = error; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (t instanceof CollectiveException ce) {
        boolean timeout = ce instanceof CollectiveTimeoutException;
        errors.inc();
        if (timeout) {
          timeouts.inc();
        }
        PerCollective c = ce.collective() == null ? null : collectives.get(ce.collective().apiName());
        if (c != null) {
          c.errors.inc();
          if (timeout) {
            c.timeouts.inc();
          }
        }
        return;
      }
    }
  }
}
