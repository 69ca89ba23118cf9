package dev.gpucoll.cuda.select;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.PathChoice;
import dev.gpucoll.core.config.GpuCollConf;
import dev.gpucoll.cuda.eligibility.BufferRegistration;
import dev.gpucoll.cuda.eligibility.GroupFacts;
import dev.gpucoll.cuda.eligibility.GroupFacts.Link;
import dev.gpucoll.cuda.eligibility.GroupFacts.Member;
import dev.gpucoll.cuda.eligibility.Reason;
import dev.gpucoll.cuda.eligibility.Verdict;
import dev.gpucoll.cuda.eligibility.ZeroCtaDetector;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Chooses the algorithm for each collective and size on one group, and says why
 * ({@link #explain}). Inside one node, small and medium messages run on our barrier-free kernels
 * (one-shot up to {@code gpu.oneShotMaxBytes}, two-shot up to {@code gpu.twoShotMaxBytes}, LL128
 * from {@code gpu.ll128MinRanks} ranks), but only when every pair of GPUs has CUDA P2P and no GPU
 * is time-sliced between processes (spinning kernels of two processes on one GPU cost milliseconds
 * per handshake). Large messages and groups across nodes go to NCCL, on the path the
 * {@link ZeroCtaDetector} predicts; across nodes small all-reduces go hierarchical when every node
 * can run our kernels. {@code spark.gpucoll.algorithm} forces one algorithm; forcing one the group
 * cannot run is an {@link IllegalArgumentException} naming why, never a silent fallback.
 */
public final class AlgorithmSelector {
  /** Collectives our kernels implement unless the backend says otherwise. */
  public static final Set<Collective> DEFAULT_KERNEL_COLLECTIVES = EnumSet.of(Collective.ALL_REDUCE,
      Collective.ALL_GATHER, Collective.REDUCE_SCATTER, Collective.BROADCAST, Collective.ALL_TO_ALL,
      Collective.BARRIER);
  /** Collectives the hierarchical path implements (our kernels in the node, NCCL between leaders). */
  private static final Set<Collective> HIERARCHICAL_COLLECTIVES = EnumSet.of(Collective.ALL_REDUCE,
      Collective.BROADCAST, Collective.BARRIER);

  private final GroupFacts topology;
  private final int ctaPolicy;
  private final boolean ncclAvailable;
  private final Set<Collective> kernelCollectives;
  private final long oneShotMax;
  private final long twoShotMax;
  private final int ll128MinRanks;
  private final Algorithm forced;
  /** Why our kernels cannot run on the whole group (empty = they can). */
  private final List<String> kernelBlockers;
  /** Why our kernels cannot run inside some node (empty = every node can). */
  private final List<String> perNodeKernelBlockers;

  public AlgorithmSelector(GroupFacts topology, GpuCollConf conf, boolean ncclAvailable,
      Set<Collective> kernelCollectives) {
    this.topology = topology;
    this.ctaPolicy = ctaPolicy(conf.get(GpuCollConf.NCCL_CTA_POLICY));
    this.ncclAvailable = ncclAvailable;
    this.kernelCollectives = EnumSet.copyOf(kernelCollectives);
    this.oneShotMax = conf.get(GpuCollConf.GPU_ONE_SHOT_MAX_BYTES);
    this.twoShotMax = conf.get(GpuCollConf.GPU_TWO_SHOT_MAX_BYTES);
    this.ll128MinRanks = conf.get(GpuCollConf.GPU_LL128_MIN_RANKS);
    if (oneShotMax > twoShotMax) {
      throw new IllegalArgumentException(GpuCollConf.GPU_ONE_SHOT_MAX_BYTES.key() + " (" + oneShotMax
          + ") is larger than " + GpuCollConf.GPU_TWO_SHOT_MAX_BYTES.key() + " (" + twoShotMax + ")");
    }
    this.forced = Algorithm.forced(conf.get(GpuCollConf.ALGORITHM));
    this.kernelBlockers = kernelBlockers(topology.members(), !topology.singleHost());
    List<String> perNode = new ArrayList<>();
    for (List<Member> node : topology.byHost().values()) {
      perNode.addAll(kernelBlockers(node, false));
    }
    this.perNodeKernelBlockers = perNode;
  }

  /** CTAPolicy value for {@code spark.gpucoll.nccl.ctaPolicy}. */
  public static int ctaPolicy(String name) {
    return switch (name) {
      case "zero" -> ZeroCtaDetector.CTA_POLICY_ZERO;
      case "efficiency" -> ZeroCtaDetector.CTA_POLICY_EFFICIENCY;
      default -> ZeroCtaDetector.CTA_POLICY_DEFAULT;
    };
  }

  public int ctaPolicy() {
    return ctaPolicy;
  }

  /** Why our kernels cannot run over {@code ms}; empty when they can. */
  private static List<String> kernelBlockers(List<Member> ms, boolean multiHost) {
    List<String> out = new ArrayList<>();
    if (multiHost) {
      out.add("the group spans hosts; our kernels work inside one node");
      return out;
    }
    boolean oneProcess = ms.stream().map(Member::processId).distinct().count() == 1;
    for (int i = 0; i < ms.size(); i++) {
      for (int j = i + 1; j < ms.size(); j++) {
        Member a = ms.get(i);
        Member b = ms.get(j);
        boolean sameGpu = a.gpuUuid().or(a::busId).isPresent()
            && a.gpuUuid().or(a::busId).equals(b.gpuUuid().or(b::busId));
        if (sameGpu) {
          if (!a.processId().equals(b.processId())) {
            out.add("ranks " + a.rank() + " and " + b.rank() + " share GPU " + a.busId().orElse("?")
                + " from different processes: spinning kernels would time-slice (ms per handshake)");
          }
          continue;
        }
        Optional<Link> link = topologyLink(ms, a, b);
        if (link.isEmpty()) {
          if (!oneProcess) {
            out.add("P2P between " + a.label() + " and " + b.label() + " unknown (peer GPU not visible)");
          }
        } else if (!link.get().p2p()) {
          out.add(a.label() + " and " + b.label() + " have no CUDA P2P");
        }
      }
    }
    return out;
  }

  private static Optional<Link> topologyLink(List<Member> ms, Member a, Member b) {
    if (a.busId().isEmpty() || b.busId().isEmpty()) {
      return Optional.empty();
    }
    Link ab = a.peers().get(b.busId().get());
    return Optional.ofNullable(ab != null ? ab : b.peers().get(a.busId().get()));
  }

  /** The choice for a collective of {@code bytes} whose buffers are not known yet. */
  public PathChoice explain(Collective collective, long bytes) {
    return explain(collective, bytes, BufferRegistration.UNKNOWN);
  }

  /**
   * The choice for a collective of {@code bytes} (the per-rank message: count times element size),
   * with the reasons in the order they were applied.
   *
   * @throws IllegalArgumentException when a forced algorithm cannot run here, naming why
   */
  public PathChoice explain(Collective collective, long bytes, BufferRegistration buffers) {
    if (bytes < 0) {
      throw new IllegalArgumentException(collective.apiName() + ": negative size " + bytes);
    }
    List<String> reasons = new ArrayList<>();
    if (forced != null) {
      List<String> blockers = blockers(forced, collective, buffers);
      if (!blockers.isEmpty()) {
        throw new IllegalArgumentException("spark.gpucoll.algorithm=" + forced.configName() + " cannot run "
            + collective.apiName() + " on this group (" + topology.size() + " ranks): "
            + String.join("; ", blockers));
      }
      reasons.add("forced by spark.gpucoll.algorithm=" + forced.configName());
      return new PathChoice(collective, bytes, forced.reportName(), reasons);
    }
    if (!kernelCollectives.contains(collective)) {
      reasons.add("our kernels do not implement " + collective.apiName());
    } else if (!kernelBlockers.isEmpty()) {
      reasons.add("our kernels cannot run: " + String.join("; ", kernelBlockers));
    } else if (collective == Collective.BARRIER || bytes <= twoShotMax) {
      Algorithm a = kernelFor(bytes, reasons);
      return new PathChoice(collective, bytes, a.reportName(), reasons);
    } else {
      reasons.add(bytes + " B > gpu.twoShotMaxBytes " + twoShotMax + " B: NCCL moves large messages");
    }
    if (!topology.singleHost() && HIERARCHICAL_COLLECTIVES.contains(collective) && perNodeKernelBlockers.isEmpty()
        && ncclAvailable && (collective == Collective.BARRIER || bytes <= twoShotMax)) {
      reasons.add("hierarchical: our kernels inside each of " + topology.byHost().size()
          + " hosts, NCCL between the node leaders");
      return new PathChoice(collective, bytes, Algorithm.HIERARCHICAL.reportName(), reasons);
    }
    if (!ncclAvailable) {
      reasons.add("NCCL is unavailable on some rank");
      return new PathChoice(collective, bytes, "none", reasons);
    }
    Verdict v = ZeroCtaDetector.evaluate(topology, ctaPolicy, collective, buffers, null, null);
    reasons.addAll(v.findings());
    return new PathChoice(collective, bytes, Algorithm.of(v.predicted()).reportName(), reasons);
  }

  private Algorithm kernelFor(long bytes, List<String> reasons) {
    int n = topology.size();
    reasons.add("one node, " + n + " ranks, every GPU pair with P2P"
        + (topology.singleProcess() ? ", one process" : ", one process per GPU"));
    if (n >= ll128MinRanks) {
      reasons.add(n + " ranks >= gpu.ll128MinRanks " + ll128MinRanks + ": LL128-atomic two-phase");
      return Algorithm.GPU_LL128;
    }
    if (bytes <= oneShotMax) {
      reasons.add(bytes + " B <= gpu.oneShotMaxBytes " + oneShotMax + " B: one-shot");
      return Algorithm.GPU_ONESHOT;
    }
    reasons.add(bytes + " B in (" + oneShotMax + ", " + twoShotMax + "] B: two-shot");
    return Algorithm.GPU_TWOSHOT;
  }

  /** Why {@code a} cannot run {@code c} on this group; empty when it can. */
  public List<String> blockers(Algorithm a, Collective c, BufferRegistration buffers) {
    List<String> out = new ArrayList<>();
    if (a.ourKernels()) {
      if (!kernelCollectives.contains(c)) {
        out.add("our kernels do not implement " + c.apiName());
      }
      out.addAll(kernelBlockers);
      return out;
    }
    if (a == Algorithm.HIERARCHICAL) {
      if (!HIERARCHICAL_COLLECTIVES.contains(c)) {
        out.add("the hierarchical path implements " + HIERARCHICAL_COLLECTIVES + " only");
      }
      if (topology.singleHost()) {
        out.add("the group is on one host");
      }
      out.addAll(perNodeKernelBlockers);
      if (!ncclAvailable) {
        out.add("NCCL is unavailable on some rank");
      }
      return out;
    }
    if (!ncclAvailable) {
      out.add("NCCL is unavailable on some rank");
      return out;
    }
    for (List<Member> same : topology.sharedGpus()) {
      out.add("ranks " + same.stream().map(Member::rank).toList() + " share one GPU; NCCL refuses that");
    }
    Verdict v = ZeroCtaDetector.evaluate(topology, ctaPolicy, c, buffers, null, null);
    if (a == Algorithm.NCCL_ZERO_CTA) {
      v.zeroCtaFailing().stream().map(Reason::toString).forEach(out::add);
    } else if (a == Algorithm.NCCL_SYMMETRIC) {
      v.symmetricFailing().stream().map(Reason::toString).forEach(out::add);
    }
    return out;
  }

  /** One line per size range for a report: which algorithm each collective takes. */
  public List<String> summary() {
    List<String> lines = new ArrayList<>();
    long[] sizes = {1024, oneShotMax, Math.min(twoShotMax, oneShotMax * 2), twoShotMax, twoShotMax * 16};
    for (Collective c : Collective.values()) {
      if (c == Collective.BARRIER) {
        continue;
      }
      StringBuilder sb = new StringBuilder(c.apiName()).append(':');
      String last = null;
      for (long s : sizes) {
        String alg;
        try {
          alg = explain(c, s).algorithm();
        } catch (IllegalArgumentException e) {
          alg = "error";
        }
        if (!alg.equals(last)) {
          sb.append(' ').append(s).append("B->").append(alg);
          last = alg;
        }
      }
      lines.add(sb.toString());
    }
    return lines;
  }

  /** The thresholds in force, for reports. */
  public Map<String, Long> thresholds() {
    return Map.of("gpu.oneShotMaxBytes", oneShotMax, "gpu.twoShotMaxBytes", twoShotMax,
        "gpu.ll128MinRanks", (long) ll128MinRanks);
  }
}
