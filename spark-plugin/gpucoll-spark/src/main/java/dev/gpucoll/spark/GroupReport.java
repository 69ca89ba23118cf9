package dev.gpucoll.spark;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * The driver's merged view of one group after one stage: who the members were, which backend
 * and rendezvous served them, and which path each collective actually took (calls summed over
 * ranks).
 *
 * @param paths collective -> algorithm -> calls, over all ranks
 * @param predicted rank 0's predicted path per collective ("allReduce 4096 B -> host-oneshot")
 * @param findings distinct findings of all ranks (eligibility reasons, fallbacks)
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
    List<String> findings) {

  /** One rank: where it ran. */
  public record Member(int rank, String host, String executorId, long pid) {}

  public GroupReport {
    members = List.copyOf(members);
    paths = Map.copyOf(paths);
    predicted = List.copyOf(predicted);
    findings = List.copyOf(findings);
  }

  /** Distinct executor JVMs (host, pid) in the group. */
  public int distinctProcesses() {
    return (int) members.stream().map(m -> m.host() + "/" + m.pid()).distinct().count();
  }

  public Set<String> hosts() {
    return members.stream().map(Member::host).collect(Collectors.toCollection(LinkedHashSet::new));
  }

  /** The algorithms a collective ran on, e.g. paths("allReduce") = {host-oneshot=6}. */
  public Map<String, Long> paths(String collective) {
    return paths.getOrDefault(collective, Map.of());
  }

  /** One log line: members, hosts, backend, chosen path per collective. */
  public String summaryLine() {
    StringBuilder sb = new StringBuilder("gpucoll group ").append(groupId).append(" (")
        .append(stage).append("): ").append(size).append(" ranks on hosts ").append(hosts())
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

  private static final String RENDEZVOUS_PREFIX = "rendezvous: rank ";
  private static final Pattern RENDEZVOUS_FINDING = Pattern.compile(
      Pattern.quote(RENDEZVOUS_PREFIX)
          + "(\\d+) (?:formed a new|reused the cached) communicator in ([0-9.]+) ms");

  /** The finding a rank reports about its task's rendezvous (the one place that writes it). */
  static String rendezvousFinding(int rank, long nanos, boolean reused) {
    return RENDEZVOUS_PREFIX + rank + (reused ? " reused the cached" : " formed a new")
        + " communicator in " + String.format(Locale.ROOT, "%.3f", nanos / 1e6) + " ms";
  }

  /** Rank -> milliseconds its task waited for its communicator (rendezvous and setup). */
  public Map<Integer, Double> rendezvousMillis() {
    Map<Integer, Double> out = new TreeMap<>();
    for (String f : findings) {
      Matcher m = RENDEZVOUS_FINDING.matcher(f);
      if (m.matches()) {
        out.put(Integer.parseInt(m.group(1)), Double.parseDouble(m.group(2)));
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
    return findings.stream().filter(f -> !f.startsWith("zero-cta") && !isNcclProof(f)
        && !RENDEZVOUS_FINDING.matcher(f).matches()).toList();
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

  private static final com.fasterxml.jackson.databind.ObjectMapper JSON =
      new com.fasterxml.jackson.databind.ObjectMapper();

  /** The summary line, then members, predictions and findings, one per line. */
  public String verboseBlock() {
    StringBuilder sb = new StringBuilder(summaryLine());
    for (Member m : members) {
      sb.append("\n  rank ").append(m.rank()).append(": host ").append(m.host())
          .append(", executor ").append(m.executorId()).append(", pid ").append(m.pid());
    }
    predicted.forEach(p -> sb.append("\n  predicted: ").append(p));
    findings.forEach(f -> sb.append("\n  finding: ").append(f));
    return sb.toString();
  }
}
