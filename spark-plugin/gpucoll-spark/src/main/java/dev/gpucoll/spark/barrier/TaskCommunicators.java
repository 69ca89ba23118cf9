package dev.gpucoll.spark.barrier;

import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.core.CommunicatorFactory;
import dev.gpucoll.core.UnexpectedError;
import dev.gpucoll.core.config.ConfigEntry;
import dev.gpucoll.core.config.GpuCollConf;
import dev.gpucoll.core.rendezvous.Rendezvous;
import dev.gpucoll.core.wait.CallBounds;
import dev.gpucoll.core.wait.CancellationCheck;
import dev.gpucoll.spark.metrics.CollectiveMetrics;
import dev.gpucoll.spark.rpc.GroupCredential;
import dev.gpucoll.spark.rpc.GroupId;
import dev.gpucoll.spark.rpc.PluginName;
import dev.gpucoll.spark.rpc.PluginRpcRendezvous;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.spark.BarrierTaskContext;
import org.apache.spark.BarrierTaskInfo;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.resource.ResourceInformation;
import org.apache.spark.util.TaskFailureListener;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.Tuple2;

/**
 * The communicator of each barrier task: rank = partition id, size = number of tasks in the stage,
 * hosts from {@code BarrierTaskContext.getTaskInfos()}. A task's first call forms it with the other
 * ranks, through the plugin's RPC and the executor's {@link CommunicatorCache} (one round confirms
 * a cached one that every rank still holds), or without the plugin in {@code BarrierTaskContext}
 * allGather rounds for the task alone; later calls in the same task return it. The task's timeout
 * and Spark's kill bound every wait, and the rank's report goes to the driver when the task ends.
 *
 * <p>Internal: public for the other packages of gpucoll-spark, not for users.
 */
public final class TaskCommunicators {
  private static final Logger LOG = LoggerFactory.getLogger(TaskCommunicators.class);
  private static final String NO_COMMUNICATOR = "-";
  /** Communicators handed out per running task attempt, so repeated calls return the same one. */
  private static final Map<Long, Communicator> BY_TASK = new ConcurrentHashMap<>();

  private TaskCommunicators() {}

  /**
   * The communicator of {@code task}, formed on the calling thread, which then makes its calls: the
   * task's own thread for Java, the task's Python session for a Python task. {@code settings}
   * override the task's own (the Python session's).
   *
   * @throws IllegalStateException outside a barrier stage task
   * @throws dev.gpucoll.api.CollectiveTimeoutException when ranks do not arrive in time
   */
  public static Communicator of(TaskContext task, Map<String, String> settings) {
    if (task == null) {
      throw new IllegalStateException("GpuCollectives.communicator() was called outside a Spark"
          + " task (on the driver?); call it inside rdd.barrier().mapPartitions(...), or from Java"
          + " use GpuCollectives.barrierMapPartitions(rdd, (comm, rows) -> ...)");
    }
    if (!(task instanceof BarrierTaskContext barrier)) {
      throw new IllegalStateException("GpuCollectives.communicator() was called in partition "
          + task.partitionId() + " of stage " + task.stageId() + ", which is not a barrier stage;"
          + " collectives need every task running at once: use rdd.barrier().mapPartitions(...),"
          + " or from Java GpuCollectives.barrierMapPartitions(rdd, (comm, rows) -> ...)");
    }
    Communicator existing = BY_TASK.get(task.taskAttemptId());
    if (existing != null) {
      if (existing.isClosed()) {
        throw new IllegalStateException("the communicator of partition " + task.partitionId()
            + " in stage " + task.stageId() + " was closed earlier in this task; a stage forms"
            + " one group, a later stage forms a new one");
      }
      return existing;
    }
    Communicator c;
    try {
      c = form(barrier, settings);
    } catch (Throwable t) {
      // A raw Error (OutOfMemoryError, InternalError) escaping the task would end the executor
      // JVM; as a CollectiveException it fails this task only.
      RuntimeException e = t instanceof RuntimeException r ? r
          : new CollectiveException(task.partitionId(), null, "forming the group failed: " + t,
              UnexpectedError.causeFor(t));
      ExecutorState plugin = ExecutorState.active();
      if (plugin != null) {
        plugin.metrics().failure(e);
      }
      throw e;
    }
    BY_TASK.put(task.taskAttemptId(), c);
    return c;
  }

  private static Communicator form(BarrierTaskContext task, Map<String, String> overrides) {
    BarrierTaskInfo[] infos = task.getTaskInfos();
    int rank = task.partitionId();
    String host = rankHost(infos[rank]);
    String groupId = GroupId.of(SparkEnv.get().conf().getAppId(), task.stageId(), task.stageAttemptNumber());
    ExecutorState plugin = ExecutorState.active();
    GpuCollConf conf = settingsOf(task, plugin, overrides);
    long taskId = task.taskAttemptId();
    long startNanos = System.nanoTime();
    // This job's timeout and Spark's kill bound every wait of this task: the rendezvous that forms
    // the group, and every call, also on a cached communicator that an earlier job formed.
    CallBounds.bind(conf.get(GpuCollConf.TIMEOUT), killCheck(task));
    try {
      return formBound(task, infos, rank, host, groupId, plugin, conf, taskId, startNanos);
    } catch (RuntimeException | Error e) {
      CallBounds.unbind();
      if (plugin != null) {
        RankReports.notFormed(plugin, BackendCheckedRDD.credentialOf(task), groupId, stageOf(task), rank,
            infos.length, host, conf.get(GpuCollConf.RENDEZVOUS).equals("allgather")
                ? BarrierAllGatherRendezvous.KIND : PluginRpcRendezvous.KIND,
            System.nanoTime() - startNanos, e);
      }
      throw e;
    }
  }

  private static String stageOf(TaskContext task) {
    return "stage " + task.stageId() + "." + task.stageAttemptNumber();
  }

  private static Communicator formBound(BarrierTaskContext task, BarrierTaskInfo[] infos, int rank, String host,
      String groupId, ExecutorState plugin, GpuCollConf conf, long taskId, long startNanos) {
    useTaskGpu(task);

    List<String> addresses = new ArrayList<>();
    for (BarrierTaskInfo info : infos) {
      addresses.add(info.address());
    }
    String key = cacheKey(addresses, rank);
    CommunicatorCache cache = CommunicatorCache.INSTANCE;
    CommunicatorCache.Entry entry;
    if (plugin == null && !MissingPlugin.allowed(conf.get(GpuCollConf.RENDEZVOUS))) {
      // A stage built on rdd.barrier() directly: no submission check ran on the driver.
      throw new IllegalStateException(MissingPlugin.refusal("on executor "
          + SparkEnv.get().executorId() + " (stage " + task.stageId() + ")"));
    }
    if (plugin == null || conf.get(GpuCollConf.RENDEZVOUS).equals("allgather")) {
      if (rank == 0 && plugin == null) {
        LOG.warn("gpucoll: {} is not enabled (spark.plugins) and spark.gpucoll.rendezvous=allgather, so"
            + " stage {} forms its communicator with BarrierTaskContext.allGather rounds, which cost about"
            + " 1 s each (Spark polls them with a 1 s sleep), and cannot cache it for later stages",
            PluginName.CLASS, task.stageId());
      }
      // Lives for this task only: the rendezvous cannot outlive the barrier stage.
      Rendezvous rdv = new BarrierAllGatherRendezvous(task, groupId);
      entry = newEntry(key, rdv, conf, host, plugin, stageOf(task)); // not cached: closed when the task ends
    } else {
      entry = joinWithPluginRpc(task, cache, key, groupId, conf, host, plugin);
    }
    long waited = System.nanoTime() - startNanos;
    long formation = entry.reusedByTask ? 0 : Math.min(entry.formationNanos, waited);
    entry.metrics.startTask(waited - formation, formation, entry.reusedByTask);
    CommunicatorCache.Entry lent = entry;
    String stage = stageOf(task);
    AtomicReference<Throwable> failure = new AtomicReference<>();
    GroupCredential credential = BackendCheckedRDD.credentialOf(task);
    if (plugin != null && credential != null) {
      plugin.latestCredential().set(credential); // seals this executor's metric totals
    }
    TaskFailureListener onFailure = (ctx, error) -> {
      failure.set(error);
      if (plugin != null) {
        plugin.metrics().failure(error);
      }
    };
    task.addTaskFailureListener(onFailure);
    if (plugin != null && credential != null) {
      RankReports.taskRunning(taskId, lent, stage, host, plugin, credential);
    }
    task.addTaskCompletionListener(ctx -> {
      CallBounds.unbind();
      BY_TASK.remove(taskId);
      String why = plugin != null && ctx.isFailed()
          ? RankReports.failureReason(failure.get(), lent.metrics.taskCalls()) : "";
      RankReports.taskEnded(taskId, lent, stage, host, plugin, credential, why);
      if (ctx.isFailed()) {
        if (RankReports.fromCollective(failure.get())) {
          cache.evict(lent); // the peers know already: they fail alike
        } else {
          cache.evictLater(lent, CommunicatorCache.FAILED_TASK_CLOSE_DELAY); // the task's own error: see there
        }
        return;
      }
      cache.release(lent);
    });
    return entry.communicator;
  }

  /**
   * Spark's kill of the task, for the waits of its calls. Spark cancels the tasks of a failed
   * barrier stage without interrupting their threads, so the wait must ask the task itself.
   */
  private static CancellationCheck killCheck(TaskContext task) {
    String which = "task " + task.taskAttemptId() + " (stage " + task.stageId() + "." + task.stageAttemptNumber()
        + ", partition " + task.partitionId() + ")";
    return () -> task.isInterrupted()
        ? "Spark killed " + which + ": " + task.getKillReason().getOrElse(() -> "no reason given")
        : null;
  }

  /**
   * Meets the other ranks through the driver. Reuses this executor's cached communicator when
   * every rank offers the same one, else forms a new group (and caches it).
   */
  private static CommunicatorCache.Entry joinWithPluginRpc(BarrierTaskContext task,
      CommunicatorCache cache, String key, String groupId, GpuCollConf conf, String host,
      ExecutorState plugin) {
    long startNanos = System.nanoTime();
    GroupCredential credential = BackendCheckedRDD.credentialOf(task);
    if (credential == null) {
      throw new CollectiveException(task.partitionId(), null, "the job of " + stageOf(task)
          + " carries no group credential for the rendezvous (the local property " + GroupCredential.PROPERTY
          + ", which the driver plugin sets): submit it through GpuCollectives.barrierMapPartitions or"
          + " mapPartitionsWithCommunicator, or from the thread that created the SparkContext or a thread"
          + " started after it by that thread (local properties are inherited), or set"
          + " spark.gpucoll.rendezvous=allgather");
    }
    PluginRpcRendezvous rdv = new PluginRpcRendezvous(plugin.context()::ask, plugin.tickets(), credential, groupId,
        task.partitionId(), task.getTaskInfos().length);
    CommunicatorCache.Entry cached = cache.acquire(key, conf.groupWideSettings());
    try {
      // Reuse only if every rank offers the same cached communicator. A rank with none knows the
      // answer already: it posts its vote without waiting and goes on to form a new group.
      boolean reuse = cached != null;
      if (cached == null) {
        rdv.contribute(NO_COMMUNICATOR.getBytes(StandardCharsets.UTF_8), conf.get(GpuCollConf.TIMEOUT));
      } else {
        String vote = cached.id();
        for (byte[] v : rdv.allGather(vote.getBytes(StandardCharsets.UTF_8), conf.get(GpuCollConf.TIMEOUT))) {
          reuse &= vote.equals(new String(v, StandardCharsets.UTF_8));
        }
      }
      long votedNanos = System.nanoTime();
      CommunicatorCache.Entry entry = cached;
      if (reuse) {
        cached.reusedByTask = true;
      } else {
        if (cached != null) {
          cache.evict(cached);
          cached = null;
        }
        entry = newEntry(key, rdv, conf, host, plugin, stageOf(task));
        cache.putLent(entry);
      }
      if (LOG.isDebugEnabled()) {
        LOG.debug("gpucoll: rank {} {} communicator {} in {} us (reuse vote {} us)",
            task.partitionId(), reuse ? "reused" : "formed", entry.id(),
            (System.nanoTime() - startNanos) / 1000, (votedNanos - startNanos) / 1000);
      }
      return entry;
    } catch (RuntimeException | Error e) {
      if (cached != null) {
        cache.evict(cached); // the group's state is unknown after a failed rendezvous
      }
      throw e;
    }
  }

  private static CommunicatorCache.Entry newEntry(String key, Rendezvous rdv, GpuCollConf conf,
      String host, ExecutorState plugin, String stage) {
    long start = System.nanoTime();
    CommunicatorFactory.Formed formed = CommunicatorFactory.form(rdv, conf, host);
    Communicator c = formed.communicator();
    CollectiveMetrics metrics = new CollectiveMetrics(plugin == null ? null : plugin.metrics());
    c.addListener(metrics);
    CommunicatorCache.Entry entry = new CommunicatorCache.Entry(key, c, rdv, metrics, formed.findings(),
        conf.groupWideSettings(), stage);
    entry.formationNanos = Math.max(0, System.nanoTime() - start - formed.meetNanos());
    return entry;
  }

  /**
   * Makes the task's GPU (spark.task.resource.gpu) current on this thread: the GPU backend builds
   * its communicator on the calling thread's current device. No GPU resource: nothing to do.
   */
  private static void useTaskGpu(TaskContext task) {
    ResourceInformation gpu = task.resourcesJMap().get("gpu");
    if (gpu == null || gpu.addresses().length == 0) {
      return;
    }
    String address = gpu.addresses()[0];
    try {
      CommunicatorFactory.useDevice(Integer.parseInt(address.trim()));
    } catch (RuntimeException | LinkageError e) {
      LOG.warn("gpucoll: cannot make the task's GPU {} current ({}); the group may fall back to"
          + " the host backend", address, e.toString());
    }
  }

  /** The task's settings: the executor's (shipped by the driver plugin) overridden by the job's local properties. */
  public static GpuCollConf settingsOf(TaskContext task) {
    return settingsOf(task, ExecutorState.active(), Map.of());
  }

  /**
   * The executor's settings (shipped by the driver plugin) overridden by the job's local properties,
   * then by the caller's (the Python session's).
   */
  private static GpuCollConf settingsOf(TaskContext task, ExecutorState plugin, Map<String, String> overrides) {
    Map<String, String> settings = new HashMap<>();
    if (plugin != null) {
      settings.putAll(plugin.conf().asMap());
    } else {
      for (Tuple2<String, String> kv : SparkEnv.get().conf().getAll()) {
        settings.put(kv._1(), kv._2());
      }
    }
    for (ConfigEntry<?> e : GpuCollConf.entries()) {
      String local = task.getLocalProperty(e.key());
      if (local != null) {
        settings.put(e.key(), local);
      }
    }
    settings.putAll(overrides);
    return GpuCollConf.of(settings).validate();
  }

  /**
   * The communicator cache key: every rank's executor address in rank order and this rank. Whether
   * the cached communicator suits this job's settings is the cache's decision ({@link
   * CommunicatorCache#acquire}).
   */
  static String cacheKey(List<String> addresses, int rank) {
    return String.join(",", addresses) + "#" + rank;
  }

  /** The host of an executor's address ("host:port"). */
  /**
   * This rank's host: the one Spark gave its executor (its Worker's host), which Spark's locality and
   * UI name too. Not the host of the task's address: that is where the driver saw the executor connect
   * from, so executors of Workers bound to 127.0.0.2, 127.0.0.3, ... all come from 127.0.0.1 to a driver
   * there, while to Spark (and, through NCCL_HOSTID, to NCCL) they are hosts of their own.
   */
  public static String rankHost(BarrierTaskInfo task) {
    SparkEnv env = SparkEnv.get();
    if (env != null && env.blockManager() != null && env.blockManager().blockManagerId() != null) {
      return env.blockManager().blockManagerId().host();
    }
    return hostOf(task.address());
  }

  public static String hostOf(String address) {
    int colon = address.lastIndexOf(':');
    return colon > 0 ? address.substring(0, colon) : address;
  }
}
