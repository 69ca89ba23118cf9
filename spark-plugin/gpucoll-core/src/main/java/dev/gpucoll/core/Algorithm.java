package dev.gpucoll.core;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * Every path a collective can run on, by the name path reports, {@code explain()}, listeners,
 * metrics and docs print. The {@link #forceable()} ones are also the values of
 * {@code spark.gpucoll.algorithm} (parsed here, by {@link #parseSetting}, and nowhere else).
 */
public enum Algorithm {
  // The GPU backend's own kernels (allReduce variants, then data movement).
  GPU_LL_ONESHOT("gpu-ll-oneshot", true, "one-shot allReduce over LL slots (8 B data + 8 B flag), barrier-free"),
  GPU_SENTINEL_TWOSHOT("gpu-sentinel-twoshot", true,
      "two-shot allReduce with sentinel prefill and epoch double buffering"),
  GPU_LL128_ATOMIC("gpu-ll128-atomic", true, "two-phase allReduce over 128-byte lines with an arrival counter"),
  GPU_LL("gpu-ll", false, "data movement over LL slots"),
  GPU_PIPE("gpu-pipe", false, "credit-based chunk pipeline, any size"),
  GPU_BARRIER("gpu-barrier", false, "flag barrier kernel"),
  /** Device buffers through pinned host memory and the host backend: ranks that must not spin. */
  GPU_STAGED_HOST("gpu-staged-host", false, "device -> pinned host -> host backend -> device"),
  // NCCL.
  NCCL("nccl", true, "NCCL's ordinary ring/tree kernels"),
  NCCL_SYMMETRIC("nccl-symmetric", true, "NCCL's symmetric-memory kernels on registered windows"),
  NCCL_ZERO_CTA("nccl-zero-cta", true, "NCCL on copy engines, zero SMs (AllGather/AlltoAll)"),
  NCCL_ONE_RANK("nccl-one-rank", false, "NCCL on a 1-rank group: a local copy"),
  NCCL_BARRIER("nccl-barrier", false, "a 1-element NCCL allReduce"),
  // The host backend.
  HOST_LL_ONESHOT("host-ll-oneshot", false, "one-shot allReduce, payload in the step header in shared memory"),
  HOST_ONESHOT("host-oneshot", true, "one-shot allReduce through shared memory"),
  HOST_TWOSHOT("host-twoshot", true, "reduce-scatter then all-gather through shared memory"),
  HOST_LL("host-ll", false, "data movement in the step header in shared memory"),
  HOST_BULK("host-bulk", false, "data movement in bulk chunks through shared memory"),
  HOST_FLAGS("host-flags", false, "one step of epoch flags"),
  HOST_RELAY("host-relay", false, "data through the rendezvous (ranks on several hosts)"),
  HOST_UCX_ONESHOT("host-ucx-oneshot", false,
      "ranks on several hosts: shared memory inside each host, every host's inputs to every leader over UCX"),
  HOST_UCX_TWOSHOT("host-ucx-twoshot", false,
      "ranks on several hosts: each leader reduces its host's slice over UCX, then the slices are exchanged"),
  HOST_UCX_HALVING("host-ucx-halving", false,
      "ranks on 2 hosts: the leaders exchange halves, each reduces its own, and the reduced halves go back"
          + " (recursive halving and doubling), each half one message"),
  HOST_UCX("host-ucx", false, "ranks on several hosts: shared memory inside each host, leaders over UCX"),
  /** A call with count 0: every rank skips it. */
  NOOP_EMPTY("noop-empty", false, "count 0: nothing moves"),
  /** A group of one rank: every collective's result is its input. */
  ONE_RANK_COPY("one-rank-copy", false, "a 1-rank group: one copy of the input (nothing in place)");

  /** Values that name nothing built: each gets its own message instead of the plain list. */
  private static final List<String[]> RETIRED = List.of(
      new String[] {"hierarchical", "the hierarchical algorithm is not built yet (groups across hosts run on NCCL)"},
      new String[] {"oneshot", "renamed: gpu-ll-oneshot (gpu backend) or host-oneshot (host backend)"},
      new String[] {"twoshot", "renamed: gpu-sentinel-twoshot (gpu backend) or host-twoshot (host backend)"},
      new String[] {"ll128", "renamed: gpu-ll128-atomic"});

  private final String id;
  private final boolean forceable;
  private final String description;

  Algorithm(String id, boolean forceable, String description) {
    this.id = id;
    this.forceable = forceable;
    this.description = description;
  }

  /** The name reports print, e.g. "gpu-ll-oneshot". */
  public String id() {
    return id;
  }

  /** True when {@code spark.gpucoll.algorithm} may name it. */
  public boolean forceable() {
    return forceable;
  }

  public String description() {
    return description;
  }

  public boolean isNccl() {
    return id.startsWith("nccl");
  }

  /** The values {@code spark.gpucoll.algorithm} accepts: "auto" and every forceable name. */
  public static List<String> settingValues() {
    List<String> out = new ArrayList<>(List.of("auto"));
    for (Algorithm a : values()) {
      if (a.forceable) {
        out.add(a.id);
      }
    }
    return out;
  }

  /**
   * The algorithm a {@code spark.gpucoll.algorithm} value forces; empty for "auto".
   *
   * @throws IllegalArgumentException for any other value, naming the valid ones
   */
  public static Optional<Algorithm> parseSetting(String value) {
    String v = value.trim().toLowerCase(Locale.ROOT);
    if (v.equals("auto")) {
      return Optional.empty();
    }
    for (Algorithm a : values()) {
      if (a.forceable && a.id.equals(v)) {
        return Optional.of(a);
      }
    }
    for (String[] r : RETIRED) {
      if (r[0].equals(v)) {
        throw new IllegalArgumentException("'" + v + "': " + r[1] + "; expected one of " + settingValues());
      }
    }
    throw new IllegalArgumentException("expected one of " + settingValues());
  }

  /** The algorithm whose report name is {@code id}. */
  public static Algorithm ofId(String id) {
    for (Algorithm a : values()) {
      if (a.id.equals(id)) {
        return a;
      }
    }
    throw new IllegalArgumentException("no algorithm named " + id);
  }

  @Override
  public String toString() {
    return id;
  }
}
