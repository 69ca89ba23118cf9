package dev.gpucoll.spark;

import dev.gpucoll.spark.RpcMessages.RankReportMessage;
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
 */
final class ReportCollector {
  /** Merged reports kept for {@link GpuCollectivesPlugin#driverReports()}; oldest dropped first. */
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

  private final Map<String, Pending> pending = new LinkedHashMap<>();
  private final List<GroupReport> merged = new CopyOnWriteArrayList<>();
  private final Consumer<GroupReport> log;

  ReportCollector(Consumer<GroupReport> log) {
    this.log = log;
  }

  void add(RankReportMessage m) {
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

  /** Hands on the failed groups whose wait for missing ranks is over (called every second or so). */
  void flush(long now) {
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

  private void handOn(GroupReport r) {
    merged.add(r);
    while (merged.size() > KEEP) {
      merged.remove(0);
    }
    log.accept(r);
  }

  List<GroupReport> reports() {
    return List.copyOf(merged);
  }

  /** Merges the ranks' reports; a null slot is a rank that never reported. */
  static GroupReport merge(RankReportMessage[] ranks) {
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
        members.add(new GroupReport.Member(rank, "", "", -1, 0, 0, false, NO_REPORT));
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
