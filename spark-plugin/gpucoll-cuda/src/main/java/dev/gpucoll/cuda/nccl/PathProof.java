package dev.gpucoll.cuda.nccl;

import dev.gpucoll.api.Collective;
import dev.gpucoll.core.report.RankReport;
import dev.gpucoll.cuda.eligibility.NcclPath;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.logging.Logger;

/**
 * Confirms or refutes a group's predicted NCCL paths from NCCL's own log. A prediction the log
 * contradicts is never silent: it is logged as a WARNING, counted in {@link #contradictions()}
 * (process-wide, for metrics) and returned as a report finding.
 */
public final class PathProof {
  private static final Logger LOG = Logger.getLogger(PathProof.class.getName());
  private static final AtomicLong CONTRADICTIONS = new AtomicLong();

  private final String groupId;
  private final int rank;
  private final Map<Collective, NcclPath> predicted = new EnumMap<>(Collective.class);
  private final Map<Collective, Long> calls = new EnumMap<>(Collective.class);
  private final List<String> findings = new ArrayList<>();
  private final Map<Collective, Observation> observed = new EnumMap<>(Collective.class);

  public PathProof(String groupId, int rank) {
    this.groupId = groupId;
    this.rank = rank;
  }

  /** Contradicted predictions in this process since start. */
  public static long contradictions() {
    return CONTRADICTIONS.get();
  }

  public synchronized void predict(Collective c, NcclPath path) {
    predicted.put(c, path);
  }

  /** One NCCL call of {@code c} was made on the group's communicator. */
  public synchronized void recordCall(Collective c) {
    calls.merge(c, 1L, Long::sum);
  }

  /**
   * Compares every collective that ran with what the log shows; returns the new findings (also kept
   * for {@link #findings()}). Call it after the collectives completed (stream synchronized), as NCCL
   * logs "Init CE" when it sets the copy-engine path up.
   */
  public synchronized List<String> check(NcclLogSummary log, boolean tuningLogged, boolean rank0) {
    List<String> fresh = new ArrayList<>();
    for (Map.Entry<Collective, Long> e : calls.entrySet()) {
      Collective c = e.getKey();
      Observation o = Observation.of(log, c, tuningLogged, rank0);
      Observation before = observed.put(c, o);
      NcclPath p = predicted.get(c);
      Optional<String> contradiction = contradiction(p, o);
      String line;
      if (contradiction.isPresent()) {
        line = "CONTRADICTION " + c.apiName() + ": " + contradiction.get();
        if (before == null || !before.equals(o)) {
          CONTRADICTIONS.incrementAndGet();
          LOG.warning("gpucoll group " + groupId + " rank " + rank + ": " + line);
        }
      } else {
        line = "observed " + c.apiName() + ": " + o.path().map(NcclPath::algorithm).orElse("unknown")
            + (o.conclusive() ? "" : " (inferred)") + " after " + e.getValue() + " calls; " + o.evidence()
            + (p == null ? "" : "; predicted " + p.algorithm());
      }
      if (!findings.contains(line)) {
        findings.add(line);
        fresh.add(line);
      }
    }
    if (!log.symmetricUnsupported().isEmpty()) {
      String line = "nccl: " + log.symmetricUnsupported().get(0);
      if (!findings.contains(line)) {
        findings.add(line);
        fresh.add(line);
      }
    }
    return fresh;
  }

  /**
   * Checks against this process's NCCL log: {@code env} is the process environment (NCCL read it at
   * start), {@code pid} this process. When the environment does not ask NCCL for the lines, or the
   * file is missing, the finding says so: "runtime proof unavailable: ...".
   */
  public synchronized List<String> checkLog(Map<String, String> env, long pid, boolean rank0) {
    Optional<String> missing = NcclDebugLog.missingSetup(env);
    Optional<NcclDebugLog> log = missing.isPresent() ? Optional.empty()
        : NcclDebugLog.find(env.get("NCCL_DEBUG_FILE"), pid);
    if (missing.isPresent() || log.isEmpty()) {
      String line = "runtime proof unavailable: " + missing.orElse("no NCCL log file for pid " + pid + " matches "
          + env.get("NCCL_DEBUG_FILE")) + " (set spark.executorEnv.NCCL_DEBUG=INFO,"
          + " NCCL_DEBUG_SUBSYS=INIT,ENV,TUNING, NCCL_DEBUG_FILE=<dir>/nccl.%h.%p.log)";
      if (!findings.contains(line)) {
        findings.add(line);
        return List.of(line);
      }
      return List.of();
    }
    return check(log.get().parse(), NcclDebugLog.tuningLogged(env), rank0);
  }

  /** Why the observation refutes the prediction; empty when it agrees or cannot tell. */
  static Optional<String> contradiction(NcclPath predicted, Observation o) {
    if (predicted == null || o.path().isEmpty()) {
      return Optional.empty();
    }
    NcclPath seen = o.path().get();
    if (seen == predicted) {
      return Optional.empty();
    }
    boolean ceInvolved = predicted == NcclPath.ZERO_CTA || seen == NcclPath.ZERO_CTA;
    boolean oneRankInvolved = predicted == NcclPath.ONE_RANK || seen == NcclPath.ONE_RANK;
    // Symmetric vs ordinary kernels is only settled by a conclusive (TUNING, rank 0) observation.
    if (!ceInvolved && !oneRankInvolved && !o.conclusive()) {
      return Optional.empty();
    }
    return Optional.of("predicted " + predicted.algorithm() + ", NCCL ran " + seen.algorithm() + " ("
        + o.evidence() + ")");
  }

  public synchronized List<String> findings() {
    return List.copyOf(findings);
  }

  /** "collective/observed algorithm" to calls, for {@link dev.gpucoll.core.report.RankReport#observed()}. */
  public synchronized Map<String, Long> observedCounts() {
    Map<String, Long> out = new TreeMap<>();
    calls.forEach((c, n) -> {
      Observation o = observed.get(c);
      String name = o == null || o.path().isEmpty() ? "nccl-unconfirmed" : o.path().get().algorithm();
      out.merge(RankReport.pathKey(c, name), n, Long::sum);
    });
    return out;
  }
}
