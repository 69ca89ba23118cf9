package dev.gpucoll.spark;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.PathChoice;
import dev.gpucoll.core.CommunicatorFactory;
import dev.gpucoll.core.UnexpectedError;
import dev.gpucoll.core.config.ConfigEntry;
import dev.gpucoll.core.config.GpuCollConf;
import dev.gpucoll.core.rendezvous.Rendezvous;
import dev.gpucoll.core.report.RankReport;
import dev.gpucoll.core.report.ReportingCommunicator;
import dev.gpucoll.core.wait.CallBounds;
import dev.gpucoll.core.wait.CancellationCheck;
import dev.gpucoll.spark.RpcMessages.RankReportMessage;
import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.BarrierTaskContext;
import org.apache.spark.BarrierTaskInfo;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.rdd.RDD;
import org.apache.spark.resource.ResourceInformation;
import org.apache.spark.util.TaskFailureListener;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.Tuple2;
// scala.collection.JavaConverters, not scala.jdk.javaapi (Scala 2.13 only): one source for both Scala binaries.
import scala.collection.JavaConverters;
import scala.reflect.ClassTag;
import scala.reflect.ClassTag$;
import scala.runtime.AbstractFunction1;

/**
 * The barrier-stage API. Inside {@code rdd.barrier().mapPartitions(...)},
 * {@link #communicator()} returns the task's communicator: rank = partition id, size = number of
 * tasks in the stage, hosts from {@code BarrierTaskContext.getTaskInfos()}.
 *
 * <p>With {@link GpuCollectivesPlugin} enabled, the ranks meet through the plugin's RPC
 * (milliseconds) and communicators are cached per executor: when the same group (same ranks on
 * the same executors) meets again in a later stage, one rendezvous round confirms that every rank
 * still holds the same communicator and it is reused. Without the plugin a barrier job is refused
 * (naming {@code spark.plugins}) unless {@code spark.gpucoll.rendezvous=allgather} asks for the
 * path without it: the ranks then meet in one {@code BarrierTaskContext.allGather} round (about one
 * second) and the communicator lives for the task only.
 *
 * <p>The returned communicator belongs to the plugin: do not close it unless it failed (a closed
 * communicator is rebuilt at the next stage). Settings come from {@code spark.gpucoll.*}; a job
 * may override them with {@code sc.setLocalProperty("spark.gpucoll.timeout", "10s")}.
 */
public final class GpuCollectives {
  private static final Logger LOG = LoggerFactory.getLogger(GpuCollectives.class);
  private static final String NO_COMMUNICATOR = "-";
  /** Communicators handed out per running task attempt, so repeated calls return the same one. */
  private static final Map<Long, Communicator> BY_TASK = new ConcurrentHashMap<>();
  /** The progress report of each running task's group, by task attempt, for {@link #sendProgress}. */
  private static final Map<Long, Progress> RUNNING = new ConcurrentHashMap<>();

  /** A running task's progress so far, and the credential that seals it. */
  private record Progress(java.util.function.Supplier<RpcMessages.RankProgressMessage> message,
      GroupCredential credential) {}

  private GpuCollectives() {}

  /**
   * The communicator of the current barrier task; the first call in a task forms it (or
   * confirms the cached one) with the other ranks, later calls in the same task return it.
   *
   * @throws IllegalStateException outside a barrier stage task
   * @throws dev.gpucoll.api.CollectiveTimeoutException when ranks do not arrive in time
   */
  public static Communicator communicator() {
    return communicatorOf(TaskContext.get(), Map.of());
  }

  /**
   * The communicator of {@code task}, formed on the calling thread, which then makes its calls: the
   * task's own thread for Java, the task's {@link PythonSession} for a Python task.
   */
  static Communicator communicatorOf(TaskContext task, Map<String, String> settings) {
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
      GpuCollExecutorPlugin.ExecutorState plugin = GpuCollExecutorPlugin.active;
      if (plugin != null) {
        plugin.metrics().failure(e);
      }
      throw e;
    }
    BY_TASK.put(task.taskAttemptId(), c);
    return c;
  }

  /**
   * Java entry point: runs {@code body} as a barrier stage over {@code rdd}, giving each task its
   * communicator. ({@code JavaRDD} has no {@code barrier()}, and the Scala form needs a ClassTag
   * and a {@code scala.Function1}.) The Spark UI names the stage after the caller's line
   * ({@code barrierMapPartitions at Train.java:42}).
   */
  public static <T, R> JavaRDD<R> barrierMapPartitions(JavaRDD<T> rdd,
      BarrierPartitionFunction<T, R> body) {
    @SuppressWarnings("unchecked")
    ClassTag<R> tag = (ClassTag<R>) ClassTag$.MODULE$.AnyRef();
    RDD<R> out = UserCallSite.around(rdd.context(), "barrierMapPartitions",
        () -> checked(rdd.rdd(), rdd.classTag()).barrier().mapPartitions(new ScalaBody<>(body), false, tag));
    return new JavaRDD<>(out, tag);
  }

  /**
   * {@code rdd} behind a check, made at the job's submission, that the backend the settings require
   * can run on the executors: a job that cannot run fails there, naming each executor's reason,
   * instead of inside its barrier tasks.
   */
  static <T> RDD<T> checked(RDD<T> rdd, ClassTag<T> tag) {
    return new BackendCheckedRDD<>(rdd, tag);
  }

  /** Adapts the Java body to the scala.Function1 over Scala iterators that RDDBarrier wants. */
  private static final class ScalaBody<T, R>
      extends AbstractFunction1<scala.collection.Iterator<T>, scala.collection.Iterator<R>>
      implements Serializable {
    private static final long serialVersionUID = 1L;
    private final BarrierPartitionFunction<T, R> body;

    ScalaBody(BarrierPartitionFunction<T, R> body) {
      this.body = body;
    }

    @Override
    @SuppressWarnings("deprecation") // JavaConverters, deprecated in Scala 2.13 only: one source for both Scala binaries
    public scala.collection.Iterator<R> apply(scala.collection.Iterator<T> rows) {
      try {
        return JavaConverters.asScalaIterator(body.call(communicator(), JavaConverters.asJavaIterator(rows)));
      } catch (RuntimeException e) {
        throw e;
      } catch (Exception e) {
        throw new RuntimeException(e);
      }
    }
  }

  private static Communicator form(BarrierTaskContext task, Map<String, String> overrides) {
    BarrierTaskInfo[] infos = task.getTaskInfos();
    int rank = task.partitionId();
    String host = rankHost(infos[rank]);
    String groupId = groupId(SparkEnv.get().conf().getAppId(), task.stageId(), task.stageAttemptNumber());
    GpuCollExecutorPlugin.ExecutorState plugin = GpuCollExecutorPlugin.active;
    GpuCollConf conf = confFor(task, plugin, overrides);
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
        // The group never formed on this rank: the driver's report of the stage says why.
        sendReport(plugin, GroupCredential.of(task), new RankReportMessage(groupId, stageOf(task), rank, infos.length, host,
            plugin.context().executorID(), ProcessHandle.current().pid(), "",
            conf.get(GpuCollConf.RENDEZVOUS).equals("allgather") ? BarrierAllGatherRendezvous.KIND : PluginRpcRendezvous.KIND,
            Map.of(), List.of(), List.of(), "", false, System.nanoTime() - startNanos, 0, failureReason(e),
            List.of(), List.of()), groupId);
      }
      throw e;
    }
  }

  private static String stageOf(TaskContext task) {
    return "stage " + task.stageId() + "." + task.stageAttemptNumber();
  }

  private static final String STAGE_MARK = "-stage";

  /** The group of a barrier stage's attempt: "app-20261204-0001-stage3.0". */
  static String groupId(String appId, int stageId, int stageAttempt) {
    return sanitize(appId) + STAGE_MARK + stageId + "." + stageAttempt;
  }

  /** The stage ("stage 3.0") a {@link #groupId} names, or "" for another id. */
  static String stageOfGroup(String groupId) {
    int at = groupId.lastIndexOf(STAGE_MARK);
    String rest = at < 0 ? "" : groupId.substring(at + STAGE_MARK.length());
    return rest.matches("[0-9]+\\.[0-9]+") ? "stage " + rest : "";
  }

  /** Longest failure reason a rank report carries. */
  static final int MAX_REASON_CHARS = 2000;

  /**
   * A failure as one line for the report: the exception's message, then each cause whose message
   * adds something (a wrapper often repeats its cause), bounded in length.
   */
  static String failureReason(Throwable error) {
    StringBuilder sb = new StringBuilder();
    java.util.Set<Throwable> seen = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
    for (Throwable t = error; t != null && seen.add(t); t = t.getCause()) {
      String part = t.getMessage() == null || t.getMessage().isBlank() ? t.getClass().getName() : t.getMessage();
      if (sb.indexOf(part) < 0) {
        sb.append(sb.length() == 0 ? "" : "; caused by: ").append(part);
      }
    }
    if (sb.length() == 0) {
      sb.append("the task failed without an exception");
    }
    return sb.length() <= MAX_REASON_CHARS ? sb.toString() : sb.substring(0, MAX_REASON_CHARS - 3) + "...";
  }

  /**
   * The failure of a task that had completed {@code completedCalls} collectives on its group: when a
   * collective failed, the reason says which of the user's calls it was ("allReduce, the task's
   * collective call 10"), the number the user's own loop counts, whatever the backend counts inside.
   */
  static String failureReason(Throwable error, long completedCalls) {
    for (Throwable t = error; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (t instanceof CollectiveException ce && ce.collective() != null) {
        String reason = "in " + ce.collective().apiName() + ", the task's collective call " + (completedCalls + 1)
            + ": " + failureReason(error);
        return reason.length() <= MAX_REASON_CHARS ? reason : reason.substring(0, MAX_REASON_CHARS - 3) + "...";
      }
    }
    return failureReason(error);
  }

  /** Whether a collective or the group's formation raised {@code error} (a CollectiveException in its causes). */
  static boolean fromCollective(Throwable error) {
    for (Throwable t = error; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (t instanceof CollectiveException) {
        return true;
      }
    }
    return false;
  }

  /** Warned once per JVM: reports that cannot be sealed are not sent. */
  private static final java.util.concurrent.atomic.AtomicBoolean UNSEALED_WARNED = new java.util.concurrent.atomic.AtomicBoolean();

  /**
   * Sends {@code m} sealed with the task's job credential: the driver drops a report it cannot
   * verify. A job without one (rendezvous=allgather from a thread without the property) sends none.
   */
  private static void sendReport(GpuCollExecutorPlugin.ExecutorState plugin, GroupCredential credential,
      RankReportMessage m, String what) {
    if (credential == null) {
      if (UNSEALED_WARNED.compareAndSet(false, true)) {
        LOG.warn("gpucoll: the path report of {} is not sent: its job carries no group credential (the local"
            + " property {}), and the driver drops reports it cannot verify", what, GroupCredential.PROPERTY);
      }
      return;
    }
    try {
      plugin.sendSealed(m, credential);
    } catch (Throwable e) { // called from task listeners: no error of ours may end the executor here
      LOG.warn("gpucoll: could not send the path report of {} to the driver", what, e);
    }
  }

  private static Communicator formBound(BarrierTaskContext task, BarrierTaskInfo[] infos, int rank, String host,
      String groupId, GpuCollExecutorPlugin.ExecutorState plugin, GpuCollConf conf, long taskId, long startNanos) {
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
            GpuCollectivesPlugin.class.getName(), task.stageId());
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
    java.util.concurrent.atomic.AtomicReference<Throwable> failure = new java.util.concurrent.atomic.AtomicReference<>();
    GroupCredential credential = GroupCredential.of(task);
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
      RUNNING.put(taskId, new Progress(() -> new RpcMessages.RankProgressMessage(progressOf(lent, stage, host, plugin)),
          credential));
    }
    task.addTaskCompletionListener(ctx -> {
      CallBounds.unbind();
      BY_TASK.remove(taskId);
      RUNNING.remove(taskId);
      if (plugin != null) {
        String why = ctx.isFailed() ? failureReason(failure.get(), lent.metrics.taskCalls()) : "";
        sendReport(plugin, credential, reportOf(lent, stage, host, plugin, why), lent.id());
      }
      if (ctx.isFailed()) {
        if (fromCollective(failure.get())) {
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
      GpuCollExecutorPlugin.ExecutorState plugin) {
    long startNanos = System.nanoTime();
    GroupCredential credential = GroupCredential.of(task);
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
      String host, GpuCollExecutorPlugin.ExecutorState plugin, String stage) {
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

  private static RankReportMessage reportOf(CommunicatorCache.Entry e, String stage, String host,
      GpuCollExecutorPlugin.ExecutorState plugin, String failure) {
    Communicator c = e.communicator;
    List<String> predicted = new ArrayList<>();
    List<String> findings = new ArrayList<>();
    if (c instanceof ReportingCommunicator rc) {
      RankReport r = rc.report();
      r.predicted().forEach(p -> predicted.add(describe(p)));
      findings.addAll(r.findings());
    } else if (!c.isClosed()) {
      for (Collective coll : Collective.values()) {
        try {
          predicted.add(describe(c.explain(coll, 4096)));
        } catch (RuntimeException ex) {
          predicted.add(coll.apiName() + ": " + ex.getMessage());
        }
      }
    }
    findings.addAll(e.formationFindings);
    if (!plugin.gpus().isEmpty()) {
      findings.add("executor GPUs " + plugin.gpus());
    }
    List<String> predictedUsed = new ArrayList<>();
    if (c.rank() == 0 && !c.isClosed()) { // the driver shows rank 0's predictions
      e.metrics.taskSizes().forEach((coll, sizes) -> sizes.forEach(bytes -> {
        try {
          predictedUsed.add(describe(c.explain(coll, bytes)));
        } catch (RuntimeException ex) {
          predictedUsed.add(coll.apiName() + " " + bytes + " B: " + ex.getMessage());
        }
      }));
    }
    boolean reused = e.reusedByTask && !e.formedIn.equals(stage);
    return new RankReportMessage(e.id(), stage, c.rank(), c.size(), host,
        plugin.context().executorID(), ProcessHandle.current().pid(), c.backend(),
        e.rendezvous.kind(), e.metrics.taskPaths(), predicted, findings, reused ? e.formedIn : "",
        e.reusedByTask, e.metrics.taskRendezvousNanos(), e.metrics.taskFormationNanos(), failure,
        predictedUsed, e.metrics.taskLatency());
  }

  /**
   * Sends the driver the calls and latency so far of every group a running task of this executor
   * uses (called every {@link GpuCollExecutorPlugin#PROGRESS_INTERVAL_MILLIS} by the executor plugin).
   */
  static void sendProgress(GpuCollExecutorPlugin.ExecutorState plugin) {
    for (Progress progress : RUNNING.values()) {
      try {
        plugin.sendSealed(progress.message().get(), progress.credential());
      } catch (Throwable e) { // best effort (the report at the task's end is the record); never stops the schedule
        LOG.debug("gpucoll: could not send a running group's progress to the driver", e);
      }
    }
  }

  /**
   * What a running task's group did so far. Read from another thread than the task's: only what
   * the listener keeps thread-safely (paths, latency) and fixed facts; no explain() (a
   * communicator serves one thread), so no predictions.
   */
  private static RankReportMessage progressOf(CommunicatorCache.Entry e, String stage, String host,
      GpuCollExecutorPlugin.ExecutorState plugin) {
    Communicator c = e.communicator;
    boolean reused = e.reusedByTask && !e.formedIn.equals(stage);
    return new RankReportMessage(e.id(), stage, c.rank(), c.size(), host, plugin.context().executorID(),
        ProcessHandle.current().pid(), c.backend(), e.rendezvous.kind(), e.metrics.taskPaths(), List.of(),
        e.formationFindings, reused ? e.formedIn : "", e.reusedByTask, e.metrics.taskRendezvousNanos(),
        e.metrics.taskFormationNanos(), "", List.of(), e.metrics.taskLatency());
  }

  private static String describe(PathChoice p) {
    return p.collective().apiName() + " " + p.bytes() + " B -> " + p.algorithm()
        + (p.reasons().isEmpty() ? "" : " (" + String.join("; ", p.reasons()) + ")");
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
  static GpuCollConf confFor(TaskContext task) {
    return confFor(task, GpuCollExecutorPlugin.active, Map.of());
  }

  /**
   * The executor's settings (shipped by the driver plugin) overridden by the job's local properties,
   * then by the caller's (the Python session's).
   */
  private static GpuCollConf confFor(TaskContext task, GpuCollExecutorPlugin.ExecutorState plugin,
      Map<String, String> overrides) {
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

  /**
   * This rank's host: the one Spark gave its executor (its Worker's host), which Spark's locality and
   * UI name too. Not the host of the task's address: that is where the driver saw the executor connect
   * from, so executors of Workers bound to 127.0.0.2, 127.0.0.3, ... all come from 127.0.0.1 to a driver
   * there, while to Spark (and, through NCCL_HOSTID, to NCCL) they are hosts of their own.
   */
  static String rankHost(BarrierTaskInfo task) {
    SparkEnv env = SparkEnv.get();
    if (env != null && env.blockManager() != null && env.blockManager().blockManagerId() != null) {
      return env.blockManager().blockManagerId().host();
    }
    return hostOf(task.address());
  }

  static String hostOf(String address) {
    int colon = address.lastIndexOf(':');
    return colon > 0 ? address.substring(0, colon) : address;
  }

  private static String sanitize(String s) {
    return s == null ? "app" : s.replaceAll("[^A-Za-z0-9._-]", "_");
  }

}
