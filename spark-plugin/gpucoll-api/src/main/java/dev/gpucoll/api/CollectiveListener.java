package dev.gpucoll.api;

/** Observes completed collectives (metrics, reports). Called on the caller's thread: keep it cheap. */
@FunctionalInterface
public interface CollectiveListener {
  void onCollective(Collective collective, String algorithm, long bytes, long nanos);

  /**
   * A MAXLOC / MINLOC allReduce completed ({@link Communicator#allReduce(CommBuffer, CommBuffer,
   * long, PairType, LocOp)}), its bytes those its gather moved. By default it is told as the
   * allReduce it is.
   */
  default void onLocCollective(LocOp op, String algorithm, long bytes, long nanos) {
    onCollective(Collective.ALL_REDUCE, algorithm, bytes, nanos);
  }

  /**
   * A communicator was split from the one this listener observes ({@link Communicator#split}; a
   * {@link ProcessGrid}'s row and column communicators are its first and second split when formed
   * first): the listener of the new communicator's calls, or null for none (the default).
   * {@code split} counts the splits of the observed communicator from 1, the same on every rank
   * (splitting is collective), negative colors included.
   */
  default CollectiveListener onSplit(int split) {
    return null;
  }
}
