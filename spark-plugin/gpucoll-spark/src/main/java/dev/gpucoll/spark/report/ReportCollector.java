package dev.gpucoll.spark.report;

import dev.gpucoll.spark.GroupReport;
import dev.gpucoll.spark.metrics.LatencyHistogram;
import dev.gpucoll.spark.rpc.RendezvousService;
import dev.gpucoll.spark.rpc.RpcMessages.RankReportMessage;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;

/**
 * Driver side: collects the ranks' reports of a group for one stage and, once every rank has
 * reported, merges them into a {@link GroupReport} and hands it on (log, metrics, event).
 *
 * <p>A failed group is handed on too: once every rank has reported, or {@link #FAILED_GRACE_NANOS}
 * after its first failure report, with the ranks that never reported marked as such (their task
 * ended before reaching the group, or their executor was lost). A group whose ranks stop reporting
 * without any failure report is handed on as failed after {@link #PENDING_NANOS}.
 *
 * <p>Internal: public for the other packages of gpucoll-spark, not for users.
 */
public final class ReportCollector {
  /** Merged reports kept for {@code GpuCollectivesPlugin.driverReports()}; oldest dropped first. */
  private static final int KEEP = 1000;

  /** A group whose ranks have not all reported after this long is handed on as failed. */
  static final long PENDING_NANOS = 10L * 60 * 1_000_000_000L;

  /** After a rank reported a failure, how long the other ranks' reports are awaited. */
  static final long FAILED_GRACE_NANOS = 5L * 1_000_000_000L;

  static final String NO_REPORT = "no report from this rank: its task ended before it reached the"
      + " group, or its executor was lost";

  private static final class Pending {
    final long since;
    final RankReportMessage[] slots;
    long failedSince;

    Pending(long since, int size) {
      this.since = since;
      this.slots = new RankReportMessage[size];
    }
  }

  /** A rank of a running group that has sent no progress yet. */
  static final String NO_PROGRESS_YET = "";

  /** Running groups whose ranks sent no progress for this long are no longer shown as running. */
  static final long PROGRESS_STALE_NANOS = 30L * 1_000_000_000L;

  /** The latest progress of each rank of a running group, and when any of it last arrived. */
  private static final class Running {
    final RankReportMessage[] slots;
    long updated;

    Running(int size) {
      this.slots = new RankReportMessage[size];
    }
  }

  private final Map<String, Pending> pending = new LinkedHashMap<>();
  private final Map<String, Running> running = new LinkedHashMap<>();
  private final List<GroupReport> merged = new CopyOnWriteArrayList<>();
  /** Keys (group@stage) of the reports handed on lately, so that late progress cannot revive them. */
  private final Set<String> handedOn = java.util.Collections.newSetFromMap(new LinkedHashMap<>() {
    @Override
    protected boolean removeEldestEntry(Map.Entry<String, Boolean> eldest) {
      return size() > KEEP;
    }
  });
  private final Consumer<GroupReport> log;
  /** What the driver adds to a merged report before it is kept and handed on. */
  private final java.util.function.UnaryOperator<GroupReport> annotate;

  ReportCollector(Consumer<GroupReport> log) {
    this(r -> r, log);
  }

  public ReportCollector(java.util.function.UnaryOperator<GroupReport> annotate, Consumer<GroupReport> log) {
    this.annotate = annotate;
    this.log = log;
  }

  public void add(RankReportMessage m) {
    add(m, System.nanoTime());
  }

  void add(RankReportMessage m, long now) {
    if (m.size() <= 0 || m.size() > RendezvousService.MAX_RANKS || m.rank() < 0 || m.rank() >= m.size()) {
      throw new IllegalArgumentException("bad gpucoll report message: rank " + m.rank() + " of "
          + m.size() + " (groups have 1 to " + RendezvousService.MAX_RANKS + " ranks)");
    }
    List<GroupReport> done = new ArrayList<>();
    synchronized (this) {
      String key = m.groupId() + "@" + m.stage();
      Running live = running.get(key);
      if (live != null && live.slots.length == m.size()) {
        live.slots[m.rank()] = m; // a rank that finished shows its final numbers while the others run
      }
      Pending p = pending.computeIfAbsent(key, k -> new Pending(now, m.size()));
      if (p.slots.length == m.size() && p.slots[m.rank()] == null) {
        // else a retried task or a foreign size: the first report of each rank wins
        p.slots[m.rank()] = m;
        if (m.failed() && p.failedSince == 0) {
          p.failedSince = now;
        }
        boolean complete = true;
        for (RankReportMessage s : p.slots) {
          complete &= s != null;
        }
        if (complete) {
          pending.remove(key);
          done.add(merge(p.slots));
        }
      }
      done.addAll(expired(now));
    }
    done.forEach(this::handOn);
  }

  /**
   * A rank's progress while its task runs: kept (the latest per rank) until the group's report is
   * handed on, for {@link #running}. Progress of a group already handed on is dropped.
   */
  public synchronized void progress(RankReportMessage m, long now) {
    if (m.size() <= 0 || m.size() > RendezvousService.MAX_RANKS || m.rank() < 0 || m.rank() >= m.size()) {
      throw new IllegalArgumentException("bad gpucoll progress message: rank " + m.rank() + " of " + m.size());
    }
    String key = m.groupId() + "@" + m.stage();
    Pending p = pending.get(key);
    if (p != null && p.slots.length == m.size() && p.slots[m.rank()] != null) {
      return; // this rank's task has ended: its report is in, a late progress message must not hide it
    }
    if (!running.containsKey(key) && handedOn.contains(key)) {
      return;
    }
    Running r = running.computeIfAbsent(key, k -> new Running(m.size()));
    if (r.slots.length == m.size()) {
      r.slots[m.rank()] = m;
      r.updated = now;
    }
  }

  /**
   * The groups whose tasks are running, merged from their ranks' latest progress (a rank without
   * any yet is listed with pid -1 and no failure), oldest first.
   */
  public synchronized List<GroupReport> running(long now) {
    List<GroupReport> out = new ArrayList<>();
    for (Iterator<Running> it = running.values().iterator(); it.hasNext(); ) {
      Running r = it.next();
      if (now - r.updated > PROGRESS_STALE_NANOS) {
        it.remove();
      } else {
        out.add(merge(r.slots, NO_PROGRESS_YET));
      }
    }
    return out;
  }

  /**
   * Whether a group of {@code stage} has formed on some rank: it sent progress or a report at its
   * task's end. (A stage that reuses a cached group reports under that group's id, so the stage decides.)
   */
  public synchronized boolean hasFormed(String stage) {
    String suffix = "@" + stage;
    for (String key : running.keySet()) {
      if (key.endsWith(suffix)) {
        return true;
      }
    }
    for (String key : handedOn) {
      if (key.endsWith(suffix)) {
        return true;
      }
    }
    return false;
  }

  /** Hands on the failed groups whose wait for missing ranks is over (called every second or so). */
  public void flush(long now) {
    List<GroupReport> done;
    synchronized (this) {
      done = expired(now);
    }
    done.forEach(this::handOn);
  }

  private List<GroupReport> expired(long now) {
    List<GroupReport> out = new ArrayList<>();
    for (Iterator<Pending> it = pending.values().iterator(); it.hasNext(); ) {
      Pending p = it.next();
      if ((p.failedSince != 0 && now - p.failedSince > FAILED_GRACE_NANOS) || now - p.since > PENDING_NANOS) {
        it.remove();
        out.add(merge(p.slots));
      }
    }
    return out;
  }

  private void handOn(GroupReport report) {
    GroupReport r = annotate.apply(report);
    synchronized (this) {
      String key = r.groupId() + "@" + r.stage();
      running.remove(key);
      handedOn.add(key);
    }
    merged.add(r);
    while (merged.size() > KEEP) {
      merged.remove(0);
    }
    log.accept(r);
  }

  public List<GroupReport> reports() {
    return List.copyOf(merged);
  }

  /** Merges the ranks' reports; a null slot is a rank that never reported. */
  static GroupReport merge(RankReportMessage[] ranks) {
    return merge(ranks, NO_REPORT);
  }

  /** Merges the ranks' reports; a null slot is a rank without one, whose failure is {@code missing}. */
  static GroupReport merge(RankReportMessage[] ranks, String missing) {
    RankReportMessage first = null;
    for (RankReportMessage r : ranks) {
      if (r != null) {
        first = r;
        break;
      }
    }
    if (first == null) {
      throw new IllegalArgumentException("no rank report to merge");
    }
    List<GroupReport.Member> members = new ArrayList<>();
    Set<String> backends = new LinkedHashSet<>();
    Set<String> rendezvous = new LinkedHashSet<>();
    Map<String, Map<String, Long>> paths = new TreeMap<>();
    Set<String> findings = new LinkedHashSet<>();
    LatencyHistogram latency = new LatencyHistogram();
    String formedIn = "";
    for (int rank = 0; rank < ranks.length; rank++) {
      RankReportMessage r = ranks[rank];
      if (r == null) {
        members.add(new GroupReport.Member(rank, "", "", -1, 0, 0, false, missing));
        continue;
      }
      members.add(new GroupReport.Member(r.rank(), r.host(), r.executorId(), r.pid(), r.rendezvousNanos(),
          r.formationNanos(), r.reused(), r.failure()));
      if (!r.backend().isEmpty()) {
        backends.add(r.backend());
      }
      rendezvous.add(r.rendezvous());
      r.pathsByCollective().forEach((collective, byAlg) -> byAlg.forEach((alg, calls) ->
          paths.computeIfAbsent(collective, c -> new TreeMap<>()).merge(alg, calls, Long::sum)));
      findings.addAll(r.findings());
      r.latency().forEach(latency::add);
      if (formedIn.isEmpty()) {
        formedIn = r.formedIn();
      }
    }
    if (backends.size() > 1) {
      findings.add("ranks report different backends " + backends + ": a bug, please report it");
    }
    RankReportMessage lead = ranks[0] != null ? ranks[0] : first;
    Map<String, Map<String, Long>> frozen = new TreeMap<>();
    paths.forEach((k, v) -> frozen.put(k, Map.copyOf(v)));
    return new GroupReport(first.groupId(), first.stage(), first.size(), members,
        backends.isEmpty() ? "none" : String.join("/", backends), String.join("/", rendezvous), frozen,
        lead.predicted(), List.copyOf(findings), formedIn, lead.predictedUsed(), latency.rows());
  }
}
