package dev.gpucoll.spark.barrier;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.PathChoice;
import dev.gpucoll.core.report.RankReport;
import dev.gpucoll.core.report.ReportingCommunicator;
import dev.gpucoll.spark.rpc.GroupCredential;
import dev.gpucoll.spark.rpc.RpcMessages.RankProgressMessage;
import dev.gpucoll.spark.rpc.RpcMessages.RankReportMessage;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A rank's reports of its group to the driver, sealed with its job's credential: at its task's end
 * (members, backend, paths, predictions, findings, timings, latency, and why it failed), while its
 * task runs (the calls and latency so far, for the tab's running view), and when its group never
 * formed (why). The driver merges them per group and stage ({@code report.ReportCollector}).
 *
 * <p>Internal: public for the other packages of gpucoll-spark, not for users.
 */
public final class RankReports {
  private static final Logger LOG = LoggerFactory.getLogger(RankReports.class);
  /** Longest failure reason a rank report carries. */
  static final int MAX_REASON_CHARS = 2000;
  /** Warned once per JVM: reports that cannot be sealed are not sent. */
  private static final AtomicBoolean UNSEALED_WARNED = new AtomicBoolean();
  /** The progress report of each running task's group, by task attempt, for {@link #sendProgress}. */
  private static final Map<Long, Progress> RUNNING = new ConcurrentHashMap<>();

  /** A running task's progress so far, and the credential that seals it. */
  private record Progress(Supplier<RankProgressMessage> message, GroupCredential credential) {}

  private RankReports() {}

  /**
   * A failure as one line for the report: the exception's message, then each cause whose message
   * adds something (a wrapper often repeats its cause), bounded in length.
   */
  public static String failureReason(Throwable error) {
    StringBuilder sb = new StringBuilder();
    Set<Throwable> seen = Collections.newSetFromMap(new IdentityHashMap<>());
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

  /**
   * The group never formed on this rank ({@code error}, after {@code waitedNanos}): the driver's
   * report of the stage says why.
   */
  static void notFormed(ExecutorState plugin, GroupCredential credential, String groupId, String stage, int rank,
      int size, String host, String rendezvousKind, long waitedNanos, Throwable error) {
    send(plugin, credential, new RankReportMessage(groupId, stage, rank, size, host,
        plugin.context().executorID(), ProcessHandle.current().pid(), "", rendezvousKind,
        Map.of(), List.of(), List.of(), "", false, waitedNanos, 0, failureReason(error),
        List.of(), List.of()), groupId);
  }

  /** Task {@code taskId}'s group {@code e} reports its progress from now on, until {@link #taskEnded}. */
  static void taskRunning(long taskId, CommunicatorCache.Entry e, String stage, String host, ExecutorState plugin,
      GroupCredential credential) {
    RUNNING.put(taskId, new Progress(() -> new RankProgressMessage(progressOf(e, stage, host, plugin)), credential));
  }

  /**
   * Task {@code taskId} ended: its progress stops, and with the plugin running its final report of
   * group {@code e} goes to the driver ({@code failure}: why it failed, empty when it did not).
   */
  static void taskEnded(long taskId, CommunicatorCache.Entry e, String stage, String host, ExecutorState plugin,
      GroupCredential credential, String failure) {
    RUNNING.remove(taskId);
    if (plugin != null) {
      send(plugin, credential, reportOf(e, stage, host, plugin, failure), e.id());
    }
  }

  /**
   * Sends the driver the calls and latency so far of every group a running task of this executor
   * uses (called every few seconds by the executor plugin).
   */
  public static void sendProgress(ExecutorState plugin) {
    for (Progress progress : RUNNING.values()) {
      try {
        plugin.sendSealed(progress.message().get(), progress.credential());
      } catch (Throwable e) { // best effort (the report at the task's end is the record); never stops the schedule
        LOG.debug("gpucoll: could not send a running group's progress to the driver", e);
      }
    }
  }

  /**
   * Sends {@code m} sealed with the task's job credential: the driver drops a report it cannot
   * verify. A job without one (rendezvous=allgather from a thread without the property) sends none.
   */
  private static void send(ExecutorState plugin, GroupCredential credential, RankReportMessage m, String what) {
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

  private static RankReportMessage reportOf(CommunicatorCache.Entry e, String stage, String host,
      ExecutorState plugin, String failure) {
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
   * What a running task's group did so far. Read from another thread than the task's: only what
   * the listener keeps thread-safely (paths, latency) and fixed facts; no explain() (a
   * communicator serves one thread), so no predictions.
   */
  private static RankReportMessage progressOf(CommunicatorCache.Entry e, String stage, String host,
      ExecutorState plugin) {
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
}
