package dev.gpucoll.api;

/** The collectives a {@link Communicator} offers; used in errors, reports and metrics. */
public enum Collective {
  ALL_REDUCE("allReduce"),
  ALL_GATHER("allGather"),
  REDUCE_SCATTER("reduceScatter"),
  ALL_TO_ALL("allToAll"),
  ALL_TO_ALLV("allToAllv"),
  BROADCAST("broadcast"),
  BARRIER("barrier");

  private final String apiName;

  Collective(String apiName) {
    this.apiName = apiName;
  }

  /** The method name users call, e.g. {@code allReduce}. */
  public String apiName() {
    return apiName;
  }
}
