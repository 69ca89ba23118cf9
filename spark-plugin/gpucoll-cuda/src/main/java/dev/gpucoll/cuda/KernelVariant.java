package dev.gpucoll.cuda;

/** The kernel protocols the GPU checks force, each naming its {@link KernelTable.Protocol}. */
public enum KernelVariant {
  /** One-shot over LL slots (8 B data + 8 B flag per 16-byte store), barrier-free; at most 64 KB per peer. */
  LL(KernelTable.Protocol.LL),
  /** Two-shot (reduce-scatter + all-gather) with sentinel prefill and epoch double buffering; at most 1 MB. */
  SENTINEL(KernelTable.Protocol.SENTINEL),
  /** Reduce-scatter + all-gather over 128-byte lines with a 4-byte arrival counter; SUM/AVG only. */
  LL128(KernelTable.Protocol.LL128),
  /** Credit-based chunk pipeline; any size. */
  PIPE(KernelTable.Protocol.PIPE),
  /** The LL data movement with a flag barrier before and after (the vLLM scheme), for comparison. */
  BARRIER2(KernelTable.Protocol.TWO_BARRIER);

  private final KernelTable.Protocol protocol;

  KernelVariant(KernelTable.Protocol protocol) {
    this.protocol = protocol;
  }

  public KernelTable.Protocol protocol() {
    return protocol;
  }

  /** The protocol's part of a kernel name, e.g. "ll" in gc_allreduce_ll_f32. */
  public String abiName() {
    return protocol.abiName();
  }
}
