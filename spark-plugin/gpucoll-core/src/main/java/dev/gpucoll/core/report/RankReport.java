package dev.gpucoll.core.report;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.PathChoice;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * What one rank knows about its group's paths: the backend, the predicted algorithm per collective
 * and size, what actually ran, and named findings (eligibility reasons, contradictions). The
 * driver merges the ranks' reports of a group into one block.
 *
 * @param observed "collective/algorithm" ({@link #pathKey}) -> number of calls that really ran on it
 * @param findings free-form facts, one per line, e.g. "zero-cta: not eligible: ..."
 */
public record RankReport(
    String groupId,
    int rank,
    int size,
    String host,
    String backend,
    String rendezvous,
    List<PathChoice> predicted,
    Map<String, Long> observed,
    List<String> findings) {

  /** Message sizes at which both backends' reports list the predicted algorithm: the default thresholds' edges. */
  public static final long[] PREDICTED_SIZES = {8, 4096, 64 << 10, (64 << 10) + 1, 1 << 20, (1 << 20) + 1, 64 << 20};

  public RankReport {
    predicted = List.copyOf(predicted);
    observed = Map.copyOf(observed);
    findings = List.copyOf(findings);
  }

  /** The key of {@link #observed()}, e.g. "allReduce/gpu-ll-oneshot". */
  public static String pathKey(Collective c, String algorithm) {
    return c.apiName() + "/" + algorithm;
  }

  /** {@code Communicator.observedPaths()} of both backends: "allReduce/gpu-ll-oneshot=3", in key order. */
  public static List<String> observedPaths(Map<String, Long> counts) {
    List<String> out = new ArrayList<>();
    new java.util.TreeMap<>(counts).forEach((k, n) -> out.add(k + "=" + n));
    return out;
  }

  /** Minimal JSON without a library, so the core stays dependency-free. */
  public String toJson() {
    StringBuilder sb = new StringBuilder("{");
    field(sb, "groupId", groupId).append(',');
    sb.append("\"rank\":").append(rank).append(",\"size\":").append(size).append(',');
    field(sb, "host", host).append(',');
    field(sb, "backend", backend).append(',');
    field(sb, "rendezvous", rendezvous).append(",\"predicted\":[");
    for (int i = 0; i < predicted.size(); i++) {
      PathChoice p = predicted.get(i);
      sb.append(i == 0 ? "" : ",").append('{');
      field(sb, "collective", p.collective().apiName()).append(",\"bytes\":").append(p.bytes()).append(',');
      field(sb, "algorithm", p.algorithm()).append(",\"reasons\":[");
      for (int j = 0; j < p.reasons().size(); j++) {
        sb.append(j == 0 ? "" : ",").append(quote(p.reasons().get(j)));
      }
      sb.append("]}");
    }
    sb.append("],\"observed\":{");
    int i = 0;
    for (Map.Entry<String, Long> e : new java.util.TreeMap<>(observed).entrySet()) {
      sb.append(i++ == 0 ? "" : ",").append(quote(e.getKey())).append(':').append(e.getValue());
    }
    sb.append("},\"findings\":[");
    for (int j = 0; j < findings.size(); j++) {
      sb.append(j == 0 ? "" : ",").append(quote(findings.get(j)));
    }
    return sb.append("]}").toString();
  }

  private static StringBuilder field(StringBuilder sb, String name, String value) {
    return sb.append(quote(name)).append(':').append(quote(value));
  }

  static String quote(String s) {
    if (s == null) {
      return "null";
    }
    StringBuilder sb = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      switch (c) {
        case '"' -> sb.append("\\\"");
        case '\\' -> sb.append("\\\\");
        case '\n' -> sb.append("\\n");
        case '\r' -> sb.append("\\r");
        case '\t' -> sb.append("\\t");
        default -> {
          if (c < 0x20) {
            sb.append(String.format("\\u%04x", (int) c));
          } else {
            sb.append(c);
          }
        }
      }
    }
    return sb.append('"').toString();
  }
}
