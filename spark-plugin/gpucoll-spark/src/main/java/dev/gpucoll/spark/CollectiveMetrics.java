package dev.gpucoll.spark;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CollectiveListener;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * Listens to one communicator: feeds the executor's metrics ({@link ExecutorMetrics}) and counts
 * the paths taken during the current task for the driver's report.
 */
final class CollectiveMetrics implements CollectiveListener {
  private final ExecutorMetrics executor;
  private final Map<String, LongAdder> taskPaths = new ConcurrentHashMap<>();
  private volatile String taskRendezvous = "";

  /** @param executor the executor plugin's metrics, or null when the plugin is not active */
  CollectiveMetrics(ExecutorMetrics executor) {
    this.executor = executor;
  }

  @Override
  public void onCollective(Collective collective, String algorithm, long bytes, long nanos) {
    taskPaths.computeIfAbsent(collective.apiName() + "\u0000" + algorithm, k -> new LongAdder())
        .increment();
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

  /**
   * A task starts using the communicator: clears the task's path counts and records how long the
   * task waited for it ({@code reused}: the cached one, confirmed by every rank).
   */
  void startTask(int rank, long rendezvousNanos, boolean reused) {
    taskPaths.clear();
    taskRendezvous = GroupReport.rendezvousFinding(rank, rendezvousNanos, reused);
    if (executor != null) {
      executor.rendezvous(rendezvousNanos, reused);
    }
  }

  /** The current task's rendezvous time, as a report finding. */
  String taskRendezvousFinding() {
    return taskRendezvous;
  }
}
