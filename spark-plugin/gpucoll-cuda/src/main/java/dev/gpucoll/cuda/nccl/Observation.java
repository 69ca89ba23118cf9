package dev.gpucoll.cuda.nccl;

import dev.gpucoll.api.Collective;
import dev.gpucoll.cuda.eligibility.NcclPath;
import java.util.EnumSet;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Which NCCL path a collective took, as NCCL's log shows it.
 *
 * @param path       the path, empty when the log cannot tell
 * @param conclusive true when a line names this collective's path; false when inferred (NCCL 2.28
 *                   logs "Init CE" once per communicator, not per call, and "[Symmetric]" on rank 0
 *                   only with TUNING)
 * @param evidence   the lines or absences this rests on, for the report
 */
public record Observation(Collective collective, Optional<NcclPath> path, boolean conclusive, String evidence) {

  private static final Set<Collective> CE_COLLECTIVES = EnumSet.of(Collective.ALL_GATHER, Collective.ALL_TO_ALL);

  /** NCCL's name of a collective in its log lines. */
  public static String ncclName(Collective c) {
    return switch (c) {
      case ALL_REDUCE -> "AllReduce";
      case ALL_GATHER -> "AllGather";
      case REDUCE_SCATTER -> "ReduceScatter";
      case ALL_TO_ALL -> "AlltoAll";
      case ALL_TO_ALLV -> "SendRecv";
      case BROADCAST -> "Broadcast";
      case BARRIER -> "Barrier";
    };
  }

  /**
   * @param log           this process's parsed NCCL log
   * @param collective    a collective that ran at least once on the communicator
   * @param tuningLogged  whether NCCL_DEBUG_SUBSYS included TUNING (or ALL), so "[Symmetric]" /
   *                      "[Copy Engine]" lines would have been printed on rank 0
   * @param rank0         whether this process holds the communicator's rank 0
   */
  public static Observation of(NcclLogSummary log, Collective collective, boolean tuningLogged, boolean rank0) {
    if (log.empty()) {
      return new Observation(collective, Optional.empty(), false, "no NCCL log lines (NCCL_DEBUG not INFO?)");
    }
    String name = ncclName(collective);
    if (!log.communicators().isEmpty() && log.communicators().stream().allMatch(c -> c.nRanks() == 1)) {
      return new Observation(collective, Optional.of(NcclPath.ONE_RANK), true,
          "'comm ... nRanks 1': NCCL copies locally for a 1-rank communicator");
    }
    if (log.copyEngineBytes().containsKey(name)) {
      return new Observation(collective, Optional.of(NcclPath.ZERO_CTA), true,
          log.copyEngineBytes().get(name).size() + " '" + name + " [Copy Engine]' lines");
    }
    Map<String, Long> kernels = log.symmetricKernels().get(name);
    if (kernels != null) {
      return new Observation(collective, Optional.of(NcclPath.SYMMETRIC), true,
          "'" + name + " [Symmetric]' lines, kernels " + kernels);
    }
    boolean ceCollective = CE_COLLECTIVES.contains(collective);
    if (ceCollective && !log.ceInitRanks().isEmpty()) {
      return new Observation(collective, Optional.of(NcclPath.ZERO_CTA), false,
          "'Init CE' on ranks " + log.ceInitRanks() + " (logged once per communicator, not per call)"
              + (tuningLogged && rank0 ? "; no '" + name + " [Symmetric]' line" : ""));
    }
    if (ceCollective) {
      // No Init CE after the collective ran: copy engines were never used in this process.
      return new Observation(collective, Optional.of(NcclPath.DEFAULT),
          tuningLogged && rank0, "no 'Init CE' line" + (tuningLogged && rank0 ? " and no '" + name
              + " [Symmetric]' line: NCCL's ordinary kernels" : " (not a CE path; symmetric vs ordinary kernels"
              + " needs TUNING on rank 0)"));
    }
    if (tuningLogged && rank0) {
      return new Observation(collective, Optional.of(NcclPath.DEFAULT), true,
          "no '" + name + " [Symmetric]' line with TUNING on rank 0: NCCL's ordinary kernels");
    }
    return new Observation(collective, Optional.empty(), false,
        "no path line for " + name + " (symmetric kernels are logged with TUNING on rank 0 only)");
  }
}
