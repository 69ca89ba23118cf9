package dev.gpucoll.api;

import java.util.List;

/** Peers did not arrive within the timeout; {@link #missingRanks()} names them. */
public class CollectiveTimeoutException extends CollectiveException {
  private final List<Integer> missingRanks;

  public CollectiveTimeoutException(
      int rank, Collective collective, List<Integer> missingRanks, String problem) {
    super(rank, collective, problem);
    this.missingRanks = List.copyOf(missingRanks);
  }

  public List<Integer> missingRanks() {
    return missingRanks;
  }
}
