package dev.gpucoll.spark;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CollectiveListener;
import java.util.EnumMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * Listens to one communicator: feeds the executor's metrics ({@link ExecutorMetrics}) and keeps,
 * for the driver's report of the current task, the paths taken, the latency per collective and
 * message size, and the message sizes used.
 */
final class CollectiveMetrics implements CollectiveListener {
  /** Distinct message sizes kept per collective for the report's predictions at used sizes. */
  static final int USED_SIZES_KEPT = 8;

  private final ExecutorMetrics executor;
  private final Map<String, LongAdder> taskPaths = new ConcurrentHashMap<>();
  private final LatencyHistogram taskLatency = new LatencyHistogram();
  private final Map<Collective, Set<Long>> taskSizes = new EnumMap<>(Collective.class);
  private volatile long taskRendezvousNanos;
  private volatile long taskFormationNanos;

  /** @param executor the executor plugin's metrics, or null when the plugin is not active */
  CollectiveMetrics(ExecutorMetrics executor) {
    this.executor = executor;
  }

  @Override
  public void onCollective(Collective collective, String algorithm, long bytes, long nanos) {
    taskPaths.computeIfAbsent(collective.apiName() + "\u0000" + algorithm, k -> new LongAdder())
        .increment();
    taskLatency.record(collective.apiName(), bytes, nanos);
    synchronized (taskSizes) {
      Set<Long> sizes = taskSizes.computeIfAbsent(collective, c -> new TreeSet<>());
      if (sizes.size() < USED_SIZES_KEPT) {
        sizes.add(bytes);
      }
    }
    if (executor != null) {
      executor.collective(collective, algorithm, bytes, nanos);
    }
  }

  /** Collective -> algorithm -> calls since the last {@link #startTask}. */
  Map<String, Map<String, Long>> taskPaths() {
    Map<String, Map<String, Long>> out = new TreeMap<>();
    taskPaths.forEach((k, v) -> {
      int cut = k.indexOf('\u0000');
      out.computeIfAbsent(k.substring(0, cut), c -> new TreeMap<>())
          .put(k.substring(cut + 1), v.sum());
    });
    return out;
  }

  /** Collectives the current task completed (every collective and path). */
  long taskCalls() {
    long n = 0;
    for (LongAdder a : taskPaths.values()) {
      n += a.sum();
    }
    return n;
  }

  /** The current task's latency histogram cells. */
  java.util.List<LatencyHistogram.Cell> taskLatency() {
    return taskLatency.cells();
  }

  /** The message sizes the current task's calls used, per collective (the first few distinct ones), ascending. */
  Map<Collective, Set<Long>> taskSizes() {
    synchronized (taskSizes) {
      Map<Collective, Set<Long>> out = new EnumMap<>(Collective.class);
      taskSizes.forEach((c, s) -> out.put(c, java.util.Collections.unmodifiableSet(new TreeSet<>(s))));
      return out;
    }
  }

  /**
   * A task starts using the communicator: clears the task's counts and records how long the task
   * waited for every rank ({@code rendezvousNanos}) and to build the communicator
   * ({@code formationNanos}; 0 when {@code reused}, the cached one confirmed by every rank).
   */
  void startTask(long rendezvousNanos, long formationNanos, boolean reused) {
    taskPaths.clear();
    taskLatency.clear();
    synchronized (taskSizes) {
      taskSizes.clear();
    }
    taskRendezvousNanos = rendezvousNanos;
    taskFormationNanos = formationNanos;
    if (executor != null) {
      executor.rendezvous(rendezvousNanos + formationNanos, reused);
    }
  }

  long taskRendezvousNanos() {
    return taskRendezvousNanos;
  }

  long taskFormationNanos() {
    return taskFormationNanos;
  }
}
