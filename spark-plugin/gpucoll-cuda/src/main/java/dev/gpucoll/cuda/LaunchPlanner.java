package dev.gpucoll.cuda;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.core.Algorithm;

/**
 * The launch of one kernel variant for one call: kernel name, grid, and the capacity checks of
 * kernel_abi.h. Which variant runs is {@link GroupRoute}'s decision; a variant that cannot take
 * the call (a forced one) is an error here, never a silent fallback. Pure Java: every rank builds
 * the same plan from the same arguments, which the per-block channel variants (pipe, barrier2) need.
 */
final class LaunchPlanner {
  private LaunchPlanner() {}

  /**
   * @param bytes the per-rank message (count times element size); for allToAllv the largest per-peer block
   * @throws CollectiveException when {@code v} cannot take the call, naming the limit
   */
  static LaunchPlan plan(int rank, Collective c, KernelVariant v, DataType t, ReduceOp op, long bytes) {
    if (c == Collective.BARRIER) {
      return new LaunchPlan(c, KernelVariant.LL, "gc_barrier", 1, 0, Algorithm.GPU_BARRIER);
    }
    if (c == Collective.ALL_REDUCE) {
      switch (v) {
        case LL -> requireAtMost(rank, c, v, bytes, KernelAbi.LL_MAX_BYTES);
        case SENTINEL -> requireAtMost(rank, c, v, bytes, KernelAbi.SENT_MAX_BYTES);
        case LL128 -> {
          if (!KernelAbi.hasLl128(t)) {
            throw new CollectiveException(rank, c, "the ll128 kernels have no " + t + " variant (no 8-bit atomics)");
          }
          if (op != ReduceOp.SUM && op != ReduceOp.AVG) {
            throw new CollectiveException(rank, c, "the ll128 kernels reduce with SUM or AVG only, not " + op);
          }
          long count = bytes / t.byteSize();
          if (count > KernelAbi.ll128MaxCount(t)) {
            throw new CollectiveException(rank, c, "the ll128 kernels take at most " + KernelAbi.ll128MaxCount(t)
                + " " + t + " elements; this call has " + count);
          }
        }
        default -> { }
      }
    } else if (v != KernelVariant.LL && v != KernelVariant.PIPE) {
      throw new CollectiveException(rank, c, "variant " + v.abiName() + " exists for allReduce only; "
          + c.apiName() + " has ll and pipe");
    } else if (v == KernelVariant.LL) {
      requireAtMost(rank, c, v, bytes, KernelAbi.LL_MAX_BYTES);
    }
    return new LaunchPlan(c, v, kernelName(c, v, t), grid(v, bytes), bytes, algorithm(c, v));
  }

  private static void requireAtMost(int rank, Collective c, KernelVariant v, long bytes, long max) {
    if (bytes > max) {
      throw new CollectiveException(rank, c, "variant " + v.abiName() + " takes at most " + max
          + " bytes; this call has " + bytes);
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

  static Algorithm algorithm(Collective c, KernelVariant v) {
    if (c == Collective.ALL_REDUCE) {
      return switch (v) {
        case LL -> Algorithm.GPU_LL_ONESHOT;
        case SENTINEL -> Algorithm.GPU_SENTINEL_TWOSHOT;
        case LL128 -> Algorithm.GPU_LL128_ATOMIC;
        case PIPE -> Algorithm.GPU_PIPE;
        case BARRIER2 -> Algorithm.GPU_BARRIER2;
      };
    }
    return switch (v) {
      case PIPE -> Algorithm.GPU_PIPE;
      case BARRIER2 -> Algorithm.GPU_BARRIER2;
      default -> Algorithm.GPU_LL;
    };
  }
}
