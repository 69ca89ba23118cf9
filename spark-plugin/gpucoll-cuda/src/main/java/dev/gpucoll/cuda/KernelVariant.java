package dev.gpucoll.cuda;

/** Kernel variants of kernel_abi.h (GC_VAR_*), in GC_VAR order. */
public enum KernelVariant {
  /** One-shot over LL slots (8 B data + 8 B flag per 16-byte store), barrier-free; at most 64 KB per peer. */
  LL("ll"),
  /** Two-shot (reduce-scatter + all-gather) with sentinel prefill and epoch double buffering; at most 1 MB. */
  SENTINEL("sentinel"),
  /** Reduce-scatter + all-gather over 128-byte lines with a 4-byte arrival counter; SUM/AVG only. */
  LL128("ll128"),
  /** Credit-based chunk pipeline; any size. */
  PIPE("pipe"),
  /** The LL data movement with a flag barrier before and after (the vLLM scheme), for comparison. */
  BARRIER2("barrier2");

  private final String abiName;

  KernelVariant(String abiName) {
    this.abiName = abiName;
  }

  /** The variant's part of a kernel name, e.g. "ll" in gc_allreduce_ll_f32. */
  public String abiName() {
    return abiName;
  }
}
