package dev.gpucoll.spark;

import dev.gpucoll.spark.RpcMessages.RankReportMessage;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;

/**
 * Driver side: collects the ranks' reports of a group for one stage and, once every rank has
 * reported, merges them into a {@link GroupReport} and logs it.
 */
final class ReportCollector {
  /** Merged reports kept for {@link GpuCollectivesPlugin#driverReports()}; oldest dropped first. */
  private static final int KEEP = 1000;

  /** A group whose ranks have not all reported after this long (a failed task) is dropped. */
  private static final long PENDING_NANOS = 10L * 60 * 1_000_000_000L;

  private record Pending(long since, RankReportMessage[] slots) {}

  private final Map<String, Pending> pending = new ConcurrentHashMap<>();
  private final List<GroupReport> merged = new CopyOnWriteArrayList<>();
  private final Consumer<GroupReport> log;

  ReportCollector(Consumer<GroupReport> log) {
    this.log = log;
  }

  void add(RankReportMessage m) {
    if (m.size() <= 0 || m.size() > RendezvousService.MAX_RANKS || m.rank() < 0 || m.rank() >= m.size()) {
      throw new IllegalArgumentException("bad gpucoll report message: rank " + m.rank() + " of "
          + m.size() + " (groups have 1 to " + RendezvousService.MAX_RANKS + " ranks)");
    }
    String key = m.groupId() + "@" + m.stage();
    GroupReport done = null;
    long now = System.nanoTime();
    pending.values().removeIf(p -> now - p.since() > PENDING_NANOS);
    RankReportMessage[] slots = pending.computeIfAbsent(key,
        k -> new Pending(now, new RankReportMessage[m.size()])).slots();
    synchronized (slots) {
      if (slots.length != m.size() || slots[m.rank()] != null) {
        return; // a retried task or a foreign size: the first complete set wins
      }
      slots[m.rank()] = m;
      boolean complete = true;
      for (RankReportMessage s : slots) {
        complete &= s != null;
      }
      if (complete) {
        pending.remove(key);
        done = merge(slots);
      }
    }
    if (done != null) {
      merged.add(done);
      while (merged.size() > KEEP) {
        merged.remove(0);
      }
      log.accept(done);
    }
  }

  List<GroupReport> reports() {
    return List.copyOf(merged);
  }

  static GroupReport merge(RankReportMessage[] ranks) {
    List<GroupReport.Member> members = new ArrayList<>();
    Set<String> backends = new LinkedHashSet<>();
    Set<String> rendezvous = new LinkedHashSet<>();
    Map<String, Map<String, Long>> paths = new TreeMap<>();
    Set<String> findings = new LinkedHashSet<>();
    for (RankReportMessage r : ranks) {
      members.add(new GroupReport.Member(r.rank(), r.host(), r.executorId(), r.pid()));
      backends.add(r.backend());
      rendezvous.add(r.rendezvous());
      r.pathsByCollective().forEach((collective, byAlg) -> byAlg.forEach((alg, calls) ->
          paths.computeIfAbsent(collective, c -> new TreeMap<>()).merge(alg, calls, Long::sum)));
      findings.addAll(r.findings());
    }
    if (backends.size() > 1) {
      findings.add("ranks report different backends " + backends + ": a bug, please report it");
    }
    RankReportMessage first = ranks[0];
    Map<String, Map<String, Long>> frozen = new TreeMap<>();
    paths.forEach((k, v) -> frozen.put(k, Map.copyOf(v)));
    return new GroupReport(first.groupId(), first.stage(), first.size(), members,
        String.join("/", backends), String.join("/", rendezvous), frozen, first.predicted(),
        List.copyOf(findings));
  }
}
