package dev.gpucoll.spark.plugin;

import dev.gpucoll.core.CommunicatorFactory;
import dev.gpucoll.core.config.GpuCollConf;
import dev.gpucoll.spark.barrier.CommunicatorCache;
import dev.gpucoll.spark.barrier.ExecutorState;
import dev.gpucoll.spark.barrier.RankReports;
import dev.gpucoll.spark.metrics.ExecutorMetrics;
import dev.gpucoll.spark.python.PythonChannel;
import dev.gpucoll.spark.rpc.GroupCredential;
import dev.gpucoll.spark.rpc.PluginName;
import dev.gpucoll.spark.rpc.RpcMessages;
import dev.gpucoll.spark.rpc.Tickets;
import java.io.IOException;
import java.net.InetAddress;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.apache.spark.resource.ResourceInformation;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Executor part of {@code GpuCollectivesPlugin}: gives barrier tasks ({@link ExecutorState}) the
 * RPC channel, the settings, the executor's GPU, the metrics registry and the freshness tickets;
 * sends the running groups' progress and the metric totals; opens the Python tasks' door; checks a
 * required backend at start; closes cached communicators at shutdown.
 *
 * <p>Internal: public for the other packages of gpucoll-spark, not for users.
 */
public final class GpuCollExecutorPlugin implements ExecutorPlugin {
  private static final Logger LOG = LoggerFactory.getLogger(PluginName.CLASS);

  /** How often running groups' calls and latency so far go to the driver (the tab's running view). */
  public static final long PROGRESS_INTERVAL_MILLIS = 2000;

  private volatile java.util.concurrent.ScheduledExecutorService progress;
  /** The door of this executor's Python tasks; null where it could not open (the WARN says why). */
  private volatile PythonChannel python;

  @Override
  public void onTaskStart() {
    PythonChannel p = python;
    if (p != null) {
      p.taskStarted(org.apache.spark.TaskContext.get());
    }
  }

  @Override
  public void onTaskSucceeded() {
    taskEnded();
  }

  @Override
  public void onTaskFailed(org.apache.spark.TaskFailedReason reason) {
    taskEnded();
  }

  private void taskEnded() {
    PythonChannel p = python;
    if (p != null) {
      p.taskEnded(org.apache.spark.TaskContext.get());
    }
  }

  private static void renewTicket(Tickets tickets) {
    try {
      tickets.current();
    } catch (Exception e) { // a sender fetches it itself then, and fails with the reason
      LOG.debug("gpucoll: the executor's ticket could not be fetched ahead: {}", e.toString());
    }
  }

  @Override
  public void init(PluginContext ctx, Map<String, String> extraConf) {
    GpuCollConf conf = GpuCollConf.of(extraConf).validate();
    ResourceInformation gpu = ctx.resources().get("gpu");
    List<String> gpus = gpu == null ? List.of() : List.of(gpu.addresses());
    String required = conf.get(GpuCollConf.BACKEND);
    // Checked once here: for the driver's refusal of a job that cannot run (a required backend) and
    // for which path metrics exist (none for GPU paths where the GPU backend cannot run).
    CommunicatorFactory.BackendCheck gpuCheck = required.equals("host") ? null : CommunicatorFactory.check("gpu");
    boolean gpuUsable = gpuCheck != null && gpuCheck.unavailableReason().isEmpty();
    // Every metric now, before init returns: Spark registers the plugin's registry only then.
    Tickets tickets = new Tickets(ctx::ask);
    ExecutorState state = new ExecutorState(ctx, conf, gpus,
        new ExecutorMetrics(ctx.metricRegistry(), ExecutorMetrics.usablePaths(gpuUsable)), new AtomicReference<>(),
        tickets, new Tickets.Sender(tickets));
    ExecutorState.activate(state);
    // Not ctx.hostname(): it throws a NullPointerException in executors (Spark 4.x, client-mode RpcEnv).
    LOG.info("gpucoll executor plugin ready on executor {}, GPUs {}", ctx.executorID(),
        gpus.isEmpty() ? "none" : gpus);
    progress = java.util.concurrent.Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "gpucoll-progress");
      t.setDaemon(true);
      return t;
    });
    // The ticket is fetched (and renewed before it ages) off the tasks' path: a rank whose first
    // rendezvous waited for it would arrive later than its peers and get less of its timeout.
    progress.execute(() -> renewTicket(tickets));
    progress.scheduleWithFixedDelay(() -> {
      renewTicket(tickets);
      RankReports.sendProgress(state);
      sendTotals(state);
    }, PROGRESS_INTERVAL_MILLIS, PROGRESS_INTERVAL_MILLIS, java.util.concurrent.TimeUnit.MILLISECONDS);
    try {
      python = PythonChannel.open(java.nio.file.Path.of(conf.get(GpuCollConf.SHM_DIR)));
    } catch (IOException | RuntimeException e) {
      LOG.warn("gpucoll: Python tasks of executor {} cannot reach the plugin: {}", ctx.executorID(), e.toString());
    }
    if (!required.equals("auto")) {
      reportBackendCheck(ctx, required, gpus, required.equals("gpu") ? gpuCheck : CommunicatorFactory.check(required));
    }
  }

  /**
   * Checks, before any task runs, that the backend the settings require can run here, and tells
   * the driver, which refuses to start a barrier job on executors that cannot (BackendGate).
   */
  private static void reportBackendCheck(PluginContext ctx, String backend, List<String> gpus,
      CommunicatorFactory.BackendCheck check) {
    String reason = check.unavailableReason().orElse("");
    if (!reason.isEmpty()) {
      LOG.warn("gpucoll: spark.gpucoll.backend={} cannot run on executor {}: {}", backend, ctx.executorID(), reason);
    }
    try {
      ctx.send(RpcMessages.encode(new RpcMessages.ExecutorCheckMessage(ctx.executorID(), localHost(),
          backend, reason, gpus, check.environment())));
    } catch (IOException | RuntimeException e) {
      LOG.warn("gpucoll: could not send executor {}'s backend check to the driver", ctx.executorID(), e);
    }
  }

  private Map<String, Long> lastTotals = Map.of();

  /**
   * This executor's metric counts to the driver (its sums in Spark's endpoints), when they changed,
   * sealed with the latest job credential seen here (before any, nothing has counted yet).
   */
  private void sendTotals(ExecutorState state) {
    try {
      Map<String, Long> totals = state.metrics().totals();
      GroupCredential credential = state.latestCredential().get();
      if (credential != null && !totals.equals(lastTotals)) {
        state.sendSealed(new RpcMessages.ExecutorTotalsMessage(state.context().executorID(), totals), credential);
        lastTotals = totals;
      }
    } catch (Throwable e) { // best effort; never stops the schedule
      LOG.debug("gpucoll: could not send executor metrics to the driver", e);
    }
  }

  private static String localHost() {
    try {
      return InetAddress.getLocalHost().getHostName();
    } catch (IOException e) {
      return "unknown host";
    }
  }

  @Override
  public void shutdown() {
    java.util.concurrent.ScheduledExecutorService p = progress;
    if (p != null) {
      p.shutdownNow();
    }
    ExecutorState.activate(null);
    PythonChannel py = python;
    if (py != null) {
      py.close();
    }
    CommunicatorCache.INSTANCE.closeAll();
  }
}
