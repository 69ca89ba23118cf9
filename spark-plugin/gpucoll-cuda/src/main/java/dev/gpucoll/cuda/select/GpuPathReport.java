package dev.gpucoll.cuda.select;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.PathChoice;
import dev.gpucoll.core.report.RankReport;
import dev.gpucoll.cuda.eligibility.GroupFacts;
import dev.gpucoll.cuda.eligibility.Verdict;
import dev.gpucoll.cuda.eligibility.ZeroCtaDetector;
import dev.gpucoll.cuda.nccl.PathProof;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.BiFunction;

/**
 * One GPU rank's path report, in {@link RankReport}'s fields: the chosen algorithm per collective
 * and size range ({@code predicted}), what ran ({@code observed}: our kernels' call counts plus the
 * NCCL paths the log confirmed), and findings: the group's topology, the Zero-CTA verdict with every
 * reason per collective, the runtime proof's observations and contradictions. {@link #render}
 * turns it into the readable block the executor logs; {@link RankReport#toJson()} is the JSON.
 */
public final class GpuPathReport {
  private GpuPathReport() {}

  /**
   * @param explain      the communicator's own answer per collective and size (our kernel variant or
   *                     the NCCL algorithm, with reasons)
   * @param ctaPolicy    the CTA policy the NCCL communicator was (or would be) created with
   * @param backendFindings what the backend found while forming the group (topology, route, workspace...)
   * @param kernelCalls  calls that did not run on NCCL, by {@link RankReport#pathKey} ("allReduce/gpu-ll-oneshot")
   * @param proof        the NCCL communicator's proof, or null when the group has none
   */
  public static RankReport build(String groupId, int rank, String host, String rendezvousKind,
      GroupFacts facts, BiFunction<Collective, Long, PathChoice> explain, int ctaPolicy,
      List<String> backendFindings, Map<String, Long> kernelCalls, PathProof proof) {
    List<PathChoice> predicted = new ArrayList<>();
    for (Collective c : Collective.values()) {
      String last = null;
      for (long bytes : RankReport.PREDICTED_SIZES) {
        PathChoice p;
        try {
          p = explain.apply(c, bytes);
        } catch (RuntimeException e) {
          p = new PathChoice(c, bytes, "error", List.of(String.valueOf(e.getMessage())));
        }
        if (!p.algorithm().equals(last)) {
          predicted.add(p);
          last = p.algorithm();
        }
        if (c == Collective.BARRIER) {
          break;
        }
      }
    }
    List<String> findings = new ArrayList<>(backendFindings);
    if (backendFindings.stream().noneMatch(f -> f.startsWith("topology:"))) {
      facts.describe().forEach(l -> findings.add("topology: " + l));
    }
    for (Collective c : List.of(Collective.ALL_GATHER, Collective.ALL_TO_ALL, Collective.ALL_REDUCE,
        Collective.REDUCE_SCATTER, Collective.BROADCAST)) {
      Verdict v = ZeroCtaDetector.evaluate(facts, ctaPolicy, c);
      v.findings().stream().filter(f -> f.startsWith("zero-cta")).forEach(findings::add);
    }
    Map<String, Long> observed = new TreeMap<>(kernelCalls);
    if (proof != null) {
      findings.addAll(proof.findings());
      proof.observedCounts().forEach((k, v) -> observed.merge(k, v, Long::sum));
      long contradictions = proof.findings().stream().filter(f -> f.startsWith("CONTRADICTION")).count();
      if (contradictions > 0) {
        findings.add("contradictions: " + contradictions + " prediction(s) refuted by NCCL's log (see above)");
      }
    } else {
      findings.add("nccl path proof: none (this group has no NCCL communicator)");
    }
    return new RankReport(groupId, rank, facts.size(), host, "gpu", rendezvousKind, predicted, observed, findings);
  }

  /** The readable block: header, predicted algorithm per collective and size, observed counts, findings. */
  public static String render(RankReport r) {
    StringBuilder sb = new StringBuilder();
    sb.append("gpucoll group ").append(r.groupId()).append(" rank ").append(r.rank()).append('/').append(r.size())
        .append(" on ").append(r.host()).append(", backend ").append(r.backend()).append(", rendezvous ")
        .append(r.rendezvous()).append('\n');
    Map<String, List<String>> byCollective = new TreeMap<>();
    for (PathChoice p : r.predicted()) {
      byCollective.computeIfAbsent(p.collective().apiName(), k -> new ArrayList<>())
          .add(">=" + p.bytes() + " B: " + p.algorithm());
    }
    sb.append("  predicted:\n");
    byCollective.forEach((c, parts) -> sb.append("    ").append(c).append(": ").append(String.join(", ", parts))
        .append('\n'));
    sb.append("  observed: ").append(r.observed().isEmpty() ? "(nothing ran yet)" : r.observed().toString()).append('\n');
    for (String f : r.findings()) {
      sb.append(f.startsWith("CONTRADICTION") ? "  WARN " : "  ").append(f).append('\n');
    }
    return sb.toString();
  }
}
