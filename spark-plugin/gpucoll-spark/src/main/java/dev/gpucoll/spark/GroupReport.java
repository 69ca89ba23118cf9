package dev.gpucoll.spark;

import dev.gpucoll.core.config.Durations;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;

/**
 * The driver's merged view of one group after one stage: who the members were, which backend
 * and rendezvous served them, which path each collective actually took (calls summed over
 * ranks), how long the calls took per message size, and why ranks failed.
 *
 * <p>Reports written by an older version (an event log replayed by the History Server) lack the
 * later components: they read back as empty, never as null.
 *
 * @param paths collective -> algorithm -> calls, over all ranks
 * @param predicted rank 0's predicted path per collective at the reference sizes
 *     ({@code RankReport.PREDICTED_SIZES}: "allReduce 4096 B -> host-oneshot")
 * @param findings distinct findings of all ranks (eligibility reasons, fallbacks)
 * @param formedIn the stage that formed the group when this stage reused it from the executors'
 *     cache ("stage 0.0"), else empty
 * @param predictedUsed rank 0's predicted path at each message size the group's calls used
 * @param latency calls and latency per collective and message-size class, over all ranks
 */
public record GroupReport(
    String groupId,
    String stage,
    int size,
    List<Member> members,
    String backend,
    String rendezvous,
    Map<String, Map<String, Long>> paths,
    List<String> predicted,
    List<String> findings,
    String formedIn,
    List<String> predictedUsed,
    List<Latency> latency) {

  /**
   * One rank: where it ran, how long it waited for the other ranks (rendezvous) and to build the
   * communicator (formation; 0 when reused), and why it failed (empty when it did not). A rank that
   * never reported has pid -1 and its reason says so.
   */
  public record Member(int rank, String host, String executorId, long pid, long rendezvousNanos,
      long formationNanos, boolean reused, String failure) {
    public Member {
      host = host == null ? "" : host;
      executorId = executorId == null ? "" : executorId;
      failure = failure == null ? "" : failure;
    }

    public Member(int rank, String host, String executorId, long pid) {
      this(rank, host, executorId, pid, 0, 0, false, "");
    }

    public boolean failed() {
      return !failure.isEmpty();
    }
  }

  /**
   * Calls of one collective whose messages were at most {@code maxBytes} (and more than half of
   * it), over all ranks, with their median, 99th percentile and largest latency.
   */
  public record Latency(String collective, long maxBytes, long calls, long p50Nanos, long p99Nanos,
      long maxNanos) {}

  public GroupReport {
    members = members == null ? List.of() : List.copyOf(members);
    paths = paths == null ? Map.of() : Map.copyOf(paths);
    predicted = predicted == null ? List.of() : List.copyOf(predicted);
    findings = findings == null ? List.of() : List.copyOf(findings);
    formedIn = formedIn == null ? "" : formedIn;
    predictedUsed = predictedUsed == null ? List.of() : List.copyOf(predictedUsed);
    latency = latency == null ? List.of() : List.copyOf(latency);
  }

  /** A report without the timings, sizes and reuse of later versions. */
  public GroupReport(String groupId, String stage, int size, List<Member> members, String backend,
      String rendezvous, Map<String, Map<String, Long>> paths, List<String> predicted,
      List<String> findings) {
    this(groupId, stage, size, members, backend, rendezvous, paths, predicted, findings, "", List.of(),
        List.of());
  }

  /** This report with one more finding at the end. */
  public GroupReport withFinding(String finding) {
    List<String> more = new java.util.ArrayList<>(findings);
    more.add(finding);
    return new GroupReport(groupId, stage, size, members, backend, rendezvous, paths, predicted, more, formedIn,
        predictedUsed, latency);
  }

  /** True when a rank failed (or never reported): the stage's group did not complete. */
  public boolean failed() {
    return members.stream().anyMatch(Member::failed);
  }

  /** Distinct executor JVMs (host, pid) in the group. */
  public int distinctProcesses() {
    return (int) members.stream().map(m -> m.host() + "/" + m.pid()).distinct().count();
  }

  /** The members' hosts in rank order (a rank that never reported has none). */
  public Set<String> hosts() {
    return members.stream().map(Member::host).filter(h -> !h.isEmpty())
        .collect(Collectors.toCollection(LinkedHashSet::new));
  }

  /** The algorithms a collective ran on, e.g. paths("allReduce") = {host-oneshot=6}. */
  public Map<String, Long> paths(String collective) {
    return paths.getOrDefault(collective, Map.of());
  }

  /** One log line: members, hosts, backend, chosen path per collective. */
  public String summaryLine() {
    StringBuilder sb = new StringBuilder("gpucoll group ").append(groupId).append(" (")
        .append(stage).append(formedIn.isEmpty() ? "" : ", reused from " + formedIn).append("): ")
        .append(failed() ? "FAILED, " : "").append(size).append(" ranks on hosts ").append(hosts())
        .append(", executors ").append(members.stream().map(Member::executorId).toList())
        .append(", backend ").append(backend).append(", rendezvous ").append(rendezvous)
        .append(", paths ");
    List<String> parts = new ArrayList<>();
    new TreeMap<>(paths).forEach((collective, byAlg) -> parts.add(collective + "="
        + new TreeMap<>(byAlg).entrySet().stream().map(e -> e.getKey() + "x" + e.getValue())
            .collect(Collectors.joining("+"))));
    sb.append(parts.isEmpty() ? "(no collectives ran)" : String.join(", ", parts));
    return sb.toString();
  }

  /** True when the GPU backend served the group: NCCL, Zero-CTA and our kernels apply only then. */
  public boolean usedGpuBackend() {
    return backend.startsWith("gpu");
  }

  /**
   * A failed group in a few lines: the summary line, then each distinct reason once with the ranks
   * that gave it (a group of 64 ranks failing alike is two lines, not 64 blocks of predictions).
   */
  public String failureBlock() {
    Map<String, List<Integer>> byReason = new java.util.LinkedHashMap<>();
    for (Member m : members) {
      if (m.failed()) {
        byReason.computeIfAbsent(m.failure(), k -> new ArrayList<>()).add(m.rank());
      }
    }
    StringBuilder sb = new StringBuilder(summaryLine());
    byReason.forEach((reason, ranks) -> sb.append("\n  ").append(ranks.size() == 1 ? "rank " : "ranks ")
        .append(ranks.stream().map(String::valueOf).collect(Collectors.joining(", "))).append(": ").append(reason));
    return sb.toString();
  }

  /** Rank -> milliseconds its task waited for its communicator (rendezvous and formation). */
  public Map<Integer, Double> rendezvousMillis() {
    Map<Integer, Double> out = new TreeMap<>();
    for (Member m : members) {
      if (m.pid() >= 0) {
        out.put(m.rank(), (m.rendezvousNanos() + m.formationNanos()) / 1e6);
      }
    }
    return out;
  }

  /** The Zero-CTA verdict of every collective, with its reasons ("zero-cta allGather: ..."). */
  public List<String> zeroCtaVerdicts() {
    return findings.stream().filter(f -> f.startsWith("zero-cta")).toList();
  }

  /** What NCCL's own log proved or refuted about the paths (observed paths, contradictions). */
  public List<String> ncclProof() {
    return findings.stream().filter(GroupReport::isNcclProof).toList();
  }

  /** Findings that are neither Zero-CTA verdicts, NCCL proof nor rendezvous times. */
  public List<String> otherFindings() {
    return findings.stream().filter(f -> !f.startsWith("zero-cta") && !isNcclProof(f)).toList();
  }

  private static boolean isNcclProof(String f) {
    return f.startsWith("CONTRADICTION") || f.startsWith("observed ") || f.startsWith("nccl")
        || f.startsWith("runtime proof") || f.startsWith("contradictions:");
  }

  /** Findings where NCCL's own log refuted the predicted path (never silent: WARN, metric, report). */
  public long contradictions() {
    return findings.stream().filter(f -> f.startsWith("CONTRADICTION")).count();
  }

  /** The report as JSON (the same form the event log keeps). */
  public String toJson() {
    try {
      return JSON.writeValueAsString(this);
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new IllegalStateException("cannot render gpucoll group report " + groupId + " as JSON", e);
    }
  }

  /**
   * The report as the page's JSON shows it ({@code /gpucoll/json/}): {@code "status"} (RUNNING,
   * FAILED or OK), {@code "endedAtMillis"} when its tasks had ended (0 while running or when not
   * recorded), then the report's own fields.
   */
  public String toJson(String status, long endedAtMillis) {
    return withStatus(status, this, Map.of("endedAtMillis", endedAtMillis));
  }

  /** {@code value}'s JSON fields after {@code "status"} and {@code extra}: one form for every entry of the page's JSON. */
  static String withStatus(String status, Object value, Map<String, Long> extra) {
    try {
      com.fasterxml.jackson.databind.node.ObjectNode node = JSON.createObjectNode().put("status", status);
      extra.forEach(node::put);
      node.setAll((com.fasterxml.jackson.databind.node.ObjectNode) JSON.valueToTree(value));
      return JSON.writeValueAsString(node);
    } catch (com.fasterxml.jackson.core.JsonProcessingException | IllegalArgumentException e) {
      throw new IllegalStateException("cannot render " + value.getClass().getSimpleName() + " as JSON", e);
    }
  }

  private static final com.fasterxml.jackson.databind.ObjectMapper JSON =
      new com.fasterxml.jackson.databind.ObjectMapper();

  /** The summary line, then members, predictions and findings, one per line. */
  public String verboseBlock() {
    StringBuilder sb = new StringBuilder(summaryLine());
    for (Member m : members) {
      sb.append("\n  rank ").append(m.rank()).append(": host ").append(m.host())
          .append(", executor ").append(m.executorId()).append(", pid ").append(m.pid())
          .append(", rendezvous ").append(Durations.format(m.rendezvousNanos()))
          .append(m.reused() ? ", reused" : ", formation " + Durations.format(m.formationNanos()))
          .append(m.failed() ? ", FAILED: " + m.failure() : "");
    }
    for (Latency l : latency) {
      sb.append("\n  latency ").append(l.collective()).append(" <= ").append(l.maxBytes()).append(" B: ")
          .append(l.calls()).append(" calls, p50 ").append(Durations.format(l.p50Nanos())).append(", p99 ")
          .append(Durations.format(l.p99Nanos())).append(", max ").append(Durations.format(l.maxNanos()));
    }
    predictedUsed.forEach(p -> sb.append("\n  predicted at a used size: ").append(p));
    predicted.forEach(p -> sb.append("\n  predicted: ").append(p));
    findings.forEach(f -> sb.append("\n  finding: ").append(f));
    return sb.toString();
  }
}
