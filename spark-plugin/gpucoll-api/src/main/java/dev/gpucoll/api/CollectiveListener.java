package dev.gpucoll.api;

/** Observes completed collectives (metrics, reports). Called on the caller's thread: keep it cheap. */
@FunctionalInterface
public interface CollectiveListener {
  void onCollective(Collective collective, String algorithm, long bytes, long nanos);
}
