package dev.gpucoll.cuda.select;

import dev.gpucoll.cuda.eligibility.NcclPath;
import java.util.Locale;

/**
 * Every algorithm the GPU backend can run a collective on. {@link #reportName()} appears in
 * {@link dev.gpucoll.api.PathChoice} and path reports; {@link #configName()} is the value of
 * {@code spark.gpucoll.algorithm} that forces it.
 */
public enum Algorithm {
  /** Our barrier-free kernel, every rank reads every peer's slots (small messages, one node). */
  GPU_ONESHOT("gpu-oneshot", "oneshot"),
  /** Our barrier-free reduce-scatter + all-gather (medium messages, one node). */
  GPU_TWOSHOT("gpu-twoshot", "twoshot"),
  /** Our LL128-atomic two-phase kernel (many ranks, one node). */
  GPU_LL128("gpu-ll128", "ll128"),
  /** NCCL's ordinary kernels. */
  NCCL("nccl", "nccl"),
  /** NCCL's symmetric-memory kernels on registered windows. */
  NCCL_SYMMETRIC("nccl-symmetric", "nccl-symmetric"),
  /** NCCL on copy engines, zero SMs (AllGather/AlltoAll). */
  NCCL_ZERO_CTA("nccl-zero-cta", "nccl-zero-cta"),
  /** NCCL for a 1-rank group: a local copy. */
  NCCL_ONE_RANK("nccl-one-rank", "nccl"),
  /** Our kernels inside each node, NCCL between one leader per node. */
  HIERARCHICAL("hierarchical", "hierarchical");

  private final String reportName;
  private final String configName;

  Algorithm(String reportName, String configName) {
    this.reportName = reportName;
    this.configName = configName;
  }

  public String reportName() {
    return reportName;
  }

  public String configName() {
    return configName;
  }

  public boolean ourKernels() {
    return this == GPU_ONESHOT || this == GPU_TWOSHOT || this == GPU_LL128;
  }

  public boolean nccl() {
    return this == NCCL || this == NCCL_SYMMETRIC || this == NCCL_ZERO_CTA || this == NCCL_ONE_RANK;
  }

  static Algorithm of(NcclPath p) {
    return switch (p) {
      case ONE_RANK -> NCCL_ONE_RANK;
      case ZERO_CTA -> NCCL_ZERO_CTA;
      case SYMMETRIC -> NCCL_SYMMETRIC;
      case DEFAULT -> NCCL;
    };
  }

  /** The algorithm a {@code spark.gpucoll.algorithm} value forces; null for "auto". */
  public static Algorithm forced(String configValue) {
    String v = configValue.trim().toLowerCase(Locale.ROOT);
    if (v.equals("auto")) {
      return null;
    }
    for (Algorithm a : values()) {
      if (a != NCCL_ONE_RANK && a.configName.equals(v)) {
        return a;
      }
    }
    throw new IllegalArgumentException("unknown algorithm '" + configValue + "'");
  }
}
