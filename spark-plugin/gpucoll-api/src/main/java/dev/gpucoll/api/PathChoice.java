package dev.gpucoll.api;

import java.util.List;

/**
 * Which algorithm a collective of a given size takes on this communicator, and why.
 *
 * @param algorithm e.g. "host-oneshot", "gpu-ll-oneshot", "nccl-zero-cta"
 * @param reasons   facts that led to the choice, in the order they were applied
 */
public record PathChoice(Collective collective, long bytes, String algorithm, List<String> reasons) {
  public PathChoice {
    reasons = List.copyOf(reasons);
  }
}
