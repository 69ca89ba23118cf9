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
 * <p>allReduce by default: LL128-atomic for SUM/AVG (not 8-bit types) from {@code gpu.ll128MinRanks} ranks up to
 * {@code gpu.twoShotMaxBytes}; else LL one-shot up to {@code gpu.oneShotMaxBytes}, sentinel two-shot
 * up to {@code gpu.twoShotMaxBytes} (each capped by the kernel's capacity), the credit pipe above.
 * Other collectives: LL up to 64 KB per peer, then the pipe. A forced variant that cannot take the
 * call is an error, never a silent fallback.
 */
public final class LaunchPlanner {
  private final int rank;
  private final int nranks;
  private final KernelVariant forced;
  private final long oneShotMax;
  private final long twoShotMax;
  private final int ll128MinRanks;
  private final long llMovementMax;

  /**
   * Largest per-peer payload that data movement sends over LL slots when every rank has its own GPU.
   * Measured on 2 H200s over NVLink (docs/gpu-multi.md): LL allGather/allToAll took 5 us at 16 KB
   * per peer but ~105 us at 64 KB per peer, while the pipe took 8 us at 256 KB per peer.
   */
  public static final long LL_MOVEMENT_MAX_ACROSS_GPUS = 16 << 10;

  /** Planner with the default thresholds (64 KB one-shot, 1 MB two-shot, LL128 from 8 ranks). */
  public LaunchPlanner(int rank, int nranks, KernelVariant forced) {
    this(rank, nranks, forced, KernelAbi.LL_MAX_BYTES, KernelAbi.SENT_MAX_BYTES, 8, KernelAbi.LL_MAX_BYTES);
  }

  /**
   * @param forced null to choose by size; else every collective uses this variant where the
   *               collective has it (pipe and LL exist for all; sentinel, ll128, barrier2 are allReduce's)
   */
  public LaunchPlanner(int rank, int nranks, KernelVariant forced, long oneShotMax, long twoShotMax,
      int ll128MinRanks, long llMovementMax) {
    if (nranks < 1 || nranks > KernelAbi.MAX_RANKS) {
      throw new IllegalArgumentException("the gpu kernels serve 1.." + KernelAbi.MAX_RANKS + " ranks, not " + nranks);
    }
    this.rank = rank;
    this.nranks = nranks;
    this.forced = forced;
    this.oneShotMax = Math.min(oneShotMax, KernelAbi.LL_MAX_BYTES);
    this.twoShotMax = Math.min(twoShotMax, KernelAbi.SENT_MAX_BYTES);
    this.ll128MinRanks = ll128MinRanks;
    this.llMovementMax = Math.min(llMovementMax, KernelAbi.LL_MAX_BYTES);
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

  /** Plan for a collective with one count per rank (all but allToAllv), without reasons (the hot path). */
  public LaunchPlan plan(Collective c, DataType t, ReduceOp op, long count) {
    return plan(c, t, op, count, false);
  }

  /** Plan with the reasons for each decision when {@code reasons} (for explain and reports). */
  public LaunchPlan plan(Collective c, DataType t, ReduceOp op, long count, boolean reasons) {
    long bytes = count * t.byteSize();
    List<String> why = reasons ? new ArrayList<>() : null;
    return switch (c) {
      case ALL_REDUCE -> allReduce(t, op, count, bytes, why);
      case REDUCE_SCATTER -> {
        KernelVariant v = movement(c, bytes, why);
        yield new LaunchPlan(c, v, kernelName(c, v, t), grid(v, bytes), bytes, algorithmName(c, v), why);
      }
      case ALL_GATHER, ALL_TO_ALL, BROADCAST -> {
        KernelVariant v = movement(c, bytes, why);
        yield new LaunchPlan(c, v, kernelName(c, v, t), grid(v, bytes), bytes, algorithmName(c, v), why);
      }
      case BARRIER -> new LaunchPlan(c, KernelVariant.LL, "gc_barrier", 1, 0, "gpu-barrier",
          List.of("flag barrier kernel: every rank enters before any leaves"));
      case ALL_TO_ALLV -> throw new IllegalArgumentException("allToAllv is planned from its per-peer counts");
    };
  }

  /**
   * Plan for allToAllv. The LL kernel needs every per-peer block of every rank within its capacity,
   * but a rank knows only its own counts, and ranks that chose different kernels would wait on each
   * other forever; so the credit pipe (any size) unless LL is forced by the caller, who then vouches
   * for every rank's counts.
   */
  public LaunchPlan planAllToAllv(DataType t, long[] sendCounts, long[] recvCounts) {
    long maxBytes = AllToAllvPlan.maxBlock(sendCounts, recvCounts) * t.byteSize();
    List<String> why = new ArrayList<>();
    KernelVariant v;
    if (forced == KernelVariant.LL) {
      v = movement(Collective.ALL_TO_ALLV, maxBytes, why);
    } else if (forced != null && forced != KernelVariant.PIPE) {
      throw new CollectiveException(rank, Collective.ALL_TO_ALLV, "variant " + forced.abiName()
          + " exists for allReduce only; allToAllv has ll and pipe");
    } else {
      v = KernelVariant.PIPE;
      why.add("allToAllv: per-peer counts differ between ranks and are not known to all, so every rank takes"
          + " the credit pipe (any size); the LL kernel only when forced");
    }
    return new LaunchPlan(Collective.ALL_TO_ALLV, v, kernelName(Collective.ALL_TO_ALLV, v, t), grid(v, maxBytes),
        maxBytes, algorithmName(Collective.ALL_TO_ALLV, v), why);
  }

  private LaunchPlan allReduce(DataType t, ReduceOp op, long count, long bytes, List<String> why) {
    Collective c = Collective.ALL_REDUCE;
    KernelVariant v;
    if (forced != null) {
      v = forced;
      if (why != null) {
        why.add("variant forced to " + v.abiName());
      }
      switch (v) {
        case LL -> requireAtMost(c, v, bytes, KernelAbi.LL_MAX_BYTES);
        case SENTINEL -> requireAtMost(c, v, bytes, KernelAbi.SENT_MAX_BYTES);
        case LL128 -> {
          if (!KernelAbi.hasLl128(t)) {
            throw new CollectiveException(rank, c, "the ll128 kernels have no " + t + " variant (no 8-bit atomics)");
          }
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
    } else if (nranks >= ll128MinRanks && KernelAbi.hasLl128(t) && (op == ReduceOp.SUM || op == ReduceOp.AVG)
        && bytes <= twoShotMax
        && count <= KernelAbi.ll128MaxCount(t)) {
      v = KernelVariant.LL128;
      if (why != null) {
        why.add(nranks + " ranks >= gpu.ll128MinRanks " + ll128MinRanks + ", " + op + ", " + bytes + " B <= "
            + twoShotMax + " B: LL128-atomic reduce-scatter + all-gather (float sums in arrival order:"
            + " identical on all ranks, last bits may vary between runs)");
      }
    } else if (bytes <= oneShotMax) {
      v = KernelVariant.LL;
      if (why != null) {
        why.add(bytes + " B <= " + oneShotMax + " B: one-shot over LL slots, barrier-free");
      }
    } else if (bytes <= twoShotMax) {
      v = KernelVariant.SENTINEL;
      if (why != null) {
        why.add(bytes + " B <= " + twoShotMax + " B: two-shot with sentinel prefill, double-buffered");
      }
    } else {
      v = KernelVariant.PIPE;
      if (why != null) {
        why.add(bytes + " B > " + twoShotMax + " B: reduce-scatter + all-gather through the credit pipe");
      }
    }
    return new LaunchPlan(c, v, kernelName(c, v, t), grid(v, bytes), bytes, algorithmName(c, v), why);
  }

  /** LL up to llMovementMax per peer, else the pipe; only those two exist for the non-allReduce collectives. */
  private KernelVariant movement(Collective c, long perPeerBytes, List<String> why) {
    if (forced != null) {
      if (forced != KernelVariant.LL && forced != KernelVariant.PIPE) {
        throw new CollectiveException(rank, c, "variant " + forced.abiName() + " exists for allReduce only; "
            + c.apiName() + " has ll and pipe");
      }
      if (why != null) {
        why.add("variant forced to " + forced.abiName());
      }
      if (forced == KernelVariant.LL) {
        requireAtMost(c, forced, perPeerBytes, KernelAbi.LL_MAX_BYTES);
      }
      return forced;
    }
    if (perPeerBytes <= llMovementMax) {
      if (why != null) {
        why.add(perPeerBytes + " B per peer <= " + llMovementMax + " B: LL slots, barrier-free");
      }
      return KernelVariant.LL;
    }
    if (why != null) {
      why.add(perPeerBytes + " B per peer > " + llMovementMax + " B: credit pipe"
          + (llMovementMax < KernelAbi.LL_MAX_BYTES ? " (LL is slower from here across GPUs, measured)" : ""));
    }
    return KernelVariant.PIPE;
  }

  private void requireAtMost(Collective c, KernelVariant v, long bytes, long max) {
    if (bytes > max) {
      throw new CollectiveException(rank, c, "variant " + v.abiName() + " takes at most " + max + " bytes; this call has "
          + bytes);
    }
  }

  private static final String[][][] KERNEL_NAMES = kernelNames();

  /** Every kernel name, built once: names are looked up on every launch. */
  private static String[][][] kernelNames() {
    String[][][] n = new String[Collective.values().length][KernelVariant.values().length][DataType.values().length];
    for (Collective c : Collective.values()) {
      for (KernelVariant v : KernelVariant.values()) {
        for (DataType t : DataType.values()) {
          String suffix = KernelAbi.typeSuffix(t);
          n[c.ordinal()][v.ordinal()][t.ordinal()] = switch (c) {
            case ALL_REDUCE -> "gc_allreduce_" + v.abiName() + "_" + suffix;
            case REDUCE_SCATTER -> "gc_reducescatter_" + v.abiName() + "_" + suffix;
            case ALL_GATHER, ALL_TO_ALL, ALL_TO_ALLV, BROADCAST ->
                "gc_" + c.apiName().toLowerCase(java.util.Locale.ROOT) + "_" + v.abiName();
            case BARRIER -> "gc_barrier";
          };
        }
      }
    }
    return n;
  }

  static String kernelName(Collective c, KernelVariant v, DataType t) {
    return KERNEL_NAMES[c.ordinal()][v.ordinal()][t.ordinal()];
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
          : plan(c, DataType.FLOAT32, ReduceOp.SUM, bytes / 4, true);
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
