package dev.gpucoll.spark.metrics;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CollectiveListener;
import dev.gpucoll.api.LocOp;
import java.util.EnumMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * Listens to one communicator and to those split from it ({@link #onSplit}, so a
 * {@link dev.gpucoll.api.ProcessGrid}'s rows and columns too): feeds the executor's metrics
 * ({@link ExecutorMetrics}) and keeps, for the driver's report of the current task, the paths
 * taken, the latency per call and message size, and the message sizes used.
 *
 * <p>Calls are counted under their {@linkplain ExecutorMetrics#callName names}: a collective's API name, MAXLOC and
 * MINLOC under their own; in the report a sub-communicator's calls carry its split
 * ("split 1: allReduce"), in the executor's metrics they count under the collective's name.
 *
 * <p>Internal: public for the other packages of gpucoll-spark, not for users.
 */
public final class CollectiveMetrics implements CollectiveListener {
  /** Distinct message sizes kept per collective for the report's predictions at used sizes. */
  static final int USED_SIZES_KEPT = 8;

  private final ExecutorMetrics executor;
  private final Map<String, LongAdder> taskPaths = new ConcurrentHashMap<>();
  private final LatencyHistogram taskLatency = new LatencyHistogram();
  private final Map<Collective, Set<Long>> taskSizes = new EnumMap<>(Collective.class);
  private volatile long taskRendezvousNanos;
  private volatile long taskFormationNanos;

  /** @param executor the executor plugin's metrics, or null when the plugin is not active */
  public CollectiveMetrics(ExecutorMetrics executor) {
    this.executor = executor;
  }

  @Override
  public void onCollective(Collective collective, String algorithm, long bytes, long nanos) {
    record(collective.apiName(), collective.apiName(), algorithm, bytes, nanos);
    synchronized (taskSizes) { // the report predicts at the sizes the group's own calls used
      Set<Long> sizes = taskSizes.computeIfAbsent(collective, c -> new TreeSet<>());
      if (sizes.size() < USED_SIZES_KEPT) {
        sizes.add(bytes);
      }
    }
  }

  @Override
  public void onLocCollective(LocOp op, String algorithm, long bytes, long nanos) {
    record(ExecutorMetrics.callName(op), ExecutorMetrics.callName(op), algorithm, bytes, nanos);
  }

  @Override
  public CollectiveListener onSplit(int split) {
    return new SubCommunicator("split " + split);
  }

  /**
   * A communicator split from this one (or from one of those): its calls count in this one's report
   * under "split n: " ("split 1.2: " for the second split of the first), in the metrics as any call.
   */
  private final class SubCommunicator implements CollectiveListener {
    private final String label;
    private final String prefix;

    SubCommunicator(String label) {
      this.label = label;
      this.prefix = label + ": ";
    }

    @Override
    public void onCollective(Collective collective, String algorithm, long bytes, long nanos) {
      record(prefix + collective.apiName(), collective.apiName(), algorithm, bytes, nanos);
    }

    @Override
    public void onLocCollective(LocOp op, String algorithm, long bytes, long nanos) {
      record(prefix + ExecutorMetrics.callName(op), ExecutorMetrics.callName(op), algorithm, bytes, nanos);
    }

    @Override
    public CollectiveListener onSplit(int split) {
      return new SubCommunicator(label + "." + split);
    }
  }

  /** One call: under {@code reported} in the task's report, under {@code name} in the executor's metrics. */
  private void record(String reported, String name, String algorithm, long bytes, long nanos) {
    taskPaths.computeIfAbsent(reported + "\u0000" + algorithm, k -> new LongAdder()).increment();
    taskLatency.record(reported, bytes, nanos);
    if (executor != null) {
      executor.call(name, algorithm, bytes, nanos);
    }
  }

  /** Collective -> algorithm -> calls since the last {@link #startTask}. */
  public Map<String, Map<String, Long>> taskPaths() {
    Map<String, Map<String, Long>> out = new TreeMap<>();
    taskPaths.forEach((k, v) -> {
      int cut = k.indexOf('\u0000');
      out.computeIfAbsent(k.substring(0, cut), c -> new TreeMap<>())
          .put(k.substring(cut + 1), v.sum());
    });
    return out;
  }

  /** Collectives the current task completed (every collective and path). */
  public long taskCalls() {
    long n = 0;
    for (LongAdder a : taskPaths.values()) {
      n += a.sum();
    }
    return n;
  }

  /** The current task's latency histogram cells. */
  public java.util.List<LatencyHistogram.Cell> taskLatency() {
    return taskLatency.cells();
  }

  /** The message sizes the current task's calls used, per collective (the first few distinct ones), ascending. */
  public Map<Collective, Set<Long>> taskSizes() {
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
  public void startTask(long rendezvousNanos, long formationNanos, boolean reused) {
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

  public long taskRendezvousNanos() {
    return taskRendezvousNanos;
  }

  public long taskFormationNanos() {
    return taskFormationNanos;
  }
}
