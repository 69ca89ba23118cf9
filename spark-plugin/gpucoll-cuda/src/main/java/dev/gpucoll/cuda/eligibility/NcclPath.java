package dev.gpucoll.cuda.eligibility;

/**
 * The NCCL paths a collective can take, as predicted by {@link ZeroCtaDetector} and as observed in
 * NCCL's own log. The names are the algorithm names in path reports.
 */
public enum NcclPath {
  /** 1-rank communicator: NCCL copies send to recv itself (ncclLaunchOneRank). */
  ONE_RANK("nccl-one-rank"),
  /** Copy engines, zero SMs: AllGather/AlltoAll on registered symmetric windows, CTA policy ZERO. */
  ZERO_CTA("nccl-zero-cta"),
  /** NCCL's symmetric-memory kernels (SM kernels on registered windows). */
  SYMMETRIC("nccl-symmetric"),
  /** NCCL's ordinary ring/tree kernels. */
  DEFAULT("nccl");

  private final String algorithm;

  NcclPath(String algorithm) {
    this.algorithm = algorithm;
  }

  /** The algorithm name used in {@link dev.gpucoll.api.PathChoice} and reports. */
  public String algorithm() {
    return algorithm;
  }
}
