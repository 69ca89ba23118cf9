package dev.gpucoll.cuda.nccl;

import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What one process's NCCL log says about paths, as parsed by {@link NcclLogParser}.
 *
 * @param version             "2.28.3+cuda13.0" from "NCCL version ...", or null
 * @param configPolicies      every "Comm config CTA policy flags set to N" value, in log order
 * @param policyResets        every "Comm config CTAPolicy reset to NCCL_CTA_POLICY=N" value (2.29+)
 * @param environment         "X set by environment to V" lines: X to V
 * @param communicators       "comm 0x.. rank R nRanks N nNodes K" lines
 * @param ceInitRanks         ranks that logged "Init CE, rank R" (copy engines used at least once)
 * @param copyEngineBytes     per NCCL collective name ("AllGather"), bytes of each "[Copy Engine]" call
 * @param symmetricKernels    per NCCL collective name, kernel name to call count ("[Symmetric]" lines)
 * @param symmetricUnsupported "Symmetric memory is not supported ..." lines
 * @param warnings            NCCL WARN lines
 */
public record NcclLogSummary(
    String version,
    List<Integer> configPolicies,
    List<Integer> policyResets,
    Map<String, String> environment,
    List<Comm> communicators,
    Set<Integer> ceInitRanks,
    Map<String, List<Long>> copyEngineBytes,
    Map<String, Map<String, Long>> symmetricKernels,
    List<String> symmetricUnsupported,
    List<String> warnings) {

  /** One communicator's init line. */
  public record Comm(String address, int rank, int nRanks, int nNodes) {}

  public NcclLogSummary {
    configPolicies = List.copyOf(configPolicies);
    policyResets = List.copyOf(policyResets);
    environment = Map.copyOf(environment);
    communicators = List.copyOf(communicators);
    ceInitRanks = Set.copyOf(ceInitRanks);
    copyEngineBytes = Map.copyOf(copyEngineBytes);
    symmetricKernels = Map.copyOf(symmetricKernels);
    symmetricUnsupported = List.copyOf(symmetricUnsupported);
    warnings = List.copyOf(warnings);
  }

  /** The CTA policy NCCL ended up with: the last env reset or the last value NCCL reported. */
  public Integer effectivePolicy() {
    if (!policyResets.isEmpty()) {
      return policyResets.get(policyResets.size() - 1);
    }
    String env = environment.get("NCCL_CTA_POLICY");
    if (env != null) {
      try {
        return Integer.parseInt(env.trim());
      } catch (NumberFormatException e) {
        return null; // 2.29+ prints names; the reset line carries the number
      }
    }
    return configPolicies.isEmpty() ? null : configPolicies.get(configPolicies.size() - 1);
  }

  public boolean empty() {
    return version == null && communicators.isEmpty() && configPolicies.isEmpty();
  }
}
