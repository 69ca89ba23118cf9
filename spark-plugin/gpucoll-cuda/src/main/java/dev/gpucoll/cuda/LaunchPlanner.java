package dev.gpucoll.cuda;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.PathChoice;
import dev.gpucoll.api.ReduceOp;
import java.util.ArrayList;
import java.util.List;

/**
 * Chooses the kernel, variant and grid of each collective from kernel_abi.h's capacities. Pure
 * Java: every rank computes the same plan from the same arguments, which the per-block channel
 * variants (pipe, barrier2) need, and it is unit-tested without a GPU.
 *
 * <p>Default by message size: LL one-shot up to 64 KB, sentinel two-shot up to 1 MB (allReduce),
 * the credit pipe above. A forced variant that cannot take the call is an error, never a silent
 * fallback.
 */
public final class LaunchPlanner {
  private final int rank;
  private final int nranks;
  private final KernelVariant forced;

  /**
   * @param forced null to choose by size; else every collective uses this variant where the
   *               collective has it (pipe and LL exist for all; sentinel, ll128, barrier2 are allReduce's)
   */
  public LaunchPlanner(int rank, int nranks, KernelVariant forced) {
    if (nranks < 1 || nranks > KernelAbi.MAX_RANKS) {
      throw new IllegalArgumentException("the gpu kernels serve 1.." + KernelAbi.MAX_RANKS + " ranks, not " + nranks);
    }
    this.rank = rank;
    this.nranks = nranks;
    this.forced = forced;
  }

  /** The variant spark.gpucoll.algorithm asks for; null for auto, or when it names a non-kernel path. */
  public static KernelVariant fromAlgorithmSetting(String algorithm) {
    return switch (algorithm) {
      case "oneshot" -> KernelVariant.LL;
      case "twoshot" -> KernelVariant.SENTINEL;
      case "ll128" -> KernelVariant.LL128;
      default -> null;
    };
  }

  public KernelVariant forced() {
    return forced;
  }

  /** Plan for a collective with one count per rank (all but allToAllv and barrier). */
  public LaunchPlan plan(Collective c, DataType t, ReduceOp op, long count) {
    long bytes = count * t.byteSize();
    List<String> why = new ArrayList<>();
    return switch (c) {
      case ALL_REDUCE -> allReduce(t, op, count, bytes, why);
      case REDUCE_SCATTER -> {
        String suffix = reductionSuffix(c, t);
        KernelVariant v = movement(c, bytes, why);
        yield new LaunchPlan(c, v, "gc_reducescatter_" + v.abiName() + "_" + suffix, grid(v, bytes), bytes,
            algorithmName(c, v), why);
      }
      case ALL_GATHER, ALL_TO_ALL, BROADCAST -> {
        KernelVariant v = movement(c, bytes, why);
        yield new LaunchPlan(c, v, "gc_" + c.apiName().toLowerCase() + "_" + v.abiName(), grid(v, bytes), bytes,
            algorithmName(c, v), why);
      }
      case BARRIER -> new LaunchPlan(c, KernelVariant.LL, "gc_barrier", 1, 0, "gpu-barrier",
          List.of("flag barrier kernel: every rank enters before any leaves"));
      case ALL_TO_ALLV -> throw new IllegalArgumentException("allToAllv is planned from its per-peer counts");
    };
  }

  /** Plan for allToAllv: LL when every per-peer block fits an LL slot range, else the pipe. */
  public LaunchPlan planAllToAllv(DataType t, long[] sendCounts, long[] recvCounts) {
    long maxBytes = AllToAllvPlan.maxBlock(sendCounts, recvCounts) * t.byteSize();
    List<String> why = new ArrayList<>();
    KernelVariant v = movement(Collective.ALL_TO_ALLV, maxBytes, why);
    return new LaunchPlan(Collective.ALL_TO_ALLV, v, "gc_alltoallv_" + v.abiName(), grid(v, maxBytes), maxBytes,
        algorithmName(Collective.ALL_TO_ALLV, v), why);
  }

  private LaunchPlan allReduce(DataType t, ReduceOp op, long count, long bytes, List<String> why) {
    Collective c = Collective.ALL_REDUCE;
    String suffix = reductionSuffix(c, t);
    KernelVariant v;
    if (forced != null) {
      v = forced;
      why.add("variant forced to " + v.abiName());
      switch (v) {
        case LL -> requireAtMost(c, v, bytes, KernelAbi.LL_MAX_BYTES);
        case SENTINEL -> requireAtMost(c, v, bytes, KernelAbi.SENT_MAX_BYTES);
        case LL128 -> {
          if (op != ReduceOp.SUM && op != ReduceOp.AVG) {
            throw new CollectiveException(rank, c, "the ll128 kernels reduce with SUM or AVG only, not " + op);
          }
          if (count > KernelAbi.ll128MaxCount(t)) {
            throw new CollectiveException(rank, c, "the ll128 kernels take at most " + KernelAbi.ll128MaxCount(t)
                + " " + t + " elements; this call has " + count);
          }
        }
        default -> { }
      }
    } else if (bytes <= KernelAbi.LL_MAX_BYTES) {
      v = KernelVariant.LL;
      why.add(bytes + " B <= " + KernelAbi.LL_MAX_BYTES + " B: one-shot over LL slots, barrier-free");
    } else if (bytes <= KernelAbi.SENT_MAX_BYTES) {
      v = KernelVariant.SENTINEL;
      why.add(bytes + " B <= " + KernelAbi.SENT_MAX_BYTES + " B: two-shot with sentinel prefill, double-buffered");
    } else {
      v = KernelVariant.PIPE;
      why.add(bytes + " B > " + KernelAbi.SENT_MAX_BYTES + " B: reduce-scatter + all-gather through the credit pipe");
    }
    return new LaunchPlan(c, v, "gc_allreduce_" + v.abiName() + "_" + suffix, grid(v, bytes), bytes,
        algorithmName(c, v), why);
  }

  /** LL up to 64 KB per peer, else the pipe; only those two exist for the non-allReduce collectives. */
  private KernelVariant movement(Collective c, long perPeerBytes, List<String> why) {
    if (forced != null) {
      if (forced != KernelVariant.LL && forced != KernelVariant.PIPE) {
        throw new CollectiveException(rank, c, "variant " + forced.abiName() + " exists for allReduce only; "
            + c.apiName() + " has ll and pipe");
      }
      why.add("variant forced to " + forced.abiName());
      if (forced == KernelVariant.LL) {
        requireAtMost(c, forced, perPeerBytes, KernelAbi.LL_MAX_BYTES);
      }
      return forced;
    }
    if (perPeerBytes <= KernelAbi.LL_MAX_BYTES) {
      why.add(perPeerBytes + " B per peer <= " + KernelAbi.LL_MAX_BYTES + " B: LL slots, barrier-free");
      return KernelVariant.LL;
    }
    why.add(perPeerBytes + " B per peer > " + KernelAbi.LL_MAX_BYTES + " B: credit pipe");
    return KernelVariant.PIPE;
  }

  private void requireAtMost(Collective c, KernelVariant v, long bytes, long max) {
    if (bytes > max) {
      throw new CollectiveException(rank, c, "variant " + v.abiName() + " takes at most " + max + " bytes; this call has "
          + bytes);
    }
  }

  private String reductionSuffix(Collective c, DataType t) {
    String s = KernelAbi.typeSuffix(t);
    if (s == null) {
      throw new CollectiveException(rank, c, "the gpu kernels do not reduce " + t
          + " (fp32, fp64, fp16, bf16, int32, int64 only)");
    }
    return s;
  }

  /** gridDim.x: the pipe's fixed channel count, else GC_GRID_FOR_BYTES of the per-peer payload. */
  static int grid(KernelVariant v, long bytes) {
    return v == KernelVariant.PIPE ? KernelAbi.PIPE_BLOCKS : KernelAbi.gridForBytes(bytes);
  }

  static String algorithmName(Collective c, KernelVariant v) {
    if (c == Collective.ALL_REDUCE) {
      return switch (v) {
        case LL -> "gpu-ll-oneshot";
        case SENTINEL -> "gpu-sentinel-twoshot";
        case LL128 -> "gpu-ll128-atomic";
        case PIPE -> "gpu-pipe";
        case BARRIER2 -> "gpu-barrier2";
      };
    }
    return "gpu-" + v.abiName();
  }

  /** The path a collective of {@code bytes} would take, for reports (reductions assume fp32 SUM). */
  public PathChoice explain(Collective c, long bytes) {
    try {
      LaunchPlan p = c == Collective.ALL_TO_ALLV
          ? planAllToAllv(DataType.FLOAT32, fill(bytes / 4), fill(bytes / 4))
          : plan(c, DataType.FLOAT32, ReduceOp.SUM, bytes / 4);
      List<String> reasons = new ArrayList<>(p.reasons());
      reasons.add("kernel " + p.kernel() + ", grid " + p.grid() + " x " + KernelAbi.BLOCK_THREADS);
      return new PathChoice(c, bytes, p.algorithm(), reasons);
    } catch (CollectiveException e) {
      return new PathChoice(c, bytes, "unsupported", List.of(e.getMessage()));
    }
  }

  private long[] fill(long v) {
    long[] a = new long[nranks];
    java.util.Arrays.fill(a, v);
    return a;
  }
}
