package dev.gpucoll.core.rendezvous;

import java.time.Duration;
import java.util.List;

/**
 * How the ranks of one group find each other before (and, for slow paths, during) collectives:
 * an all-gather of small byte payloads. Implementations: threads of one process
 * ({@link LocalRendezvous}), processes of one host ({@link FileRendezvous}), and in the Spark layer
 * the driver-side plugin service or one BarrierTaskContext.allGather round.
 */
public interface Rendezvous extends AutoCloseable {

  /** Identifies the group, e.g. "stage-3.0/group-0"; equal on every member. */
  String groupId();

  int rank();

  int size();

  /**
   * Every rank contributes {@code payload}; returns all payloads indexed by rank. Rounds are
   * numbered implicitly: the n-th call of each rank meets the n-th call of the others.
   *
   * @throws dev.gpucoll.api.CollectiveTimeoutException naming the ranks that did not arrive
   */
  List<byte[]> allGather(byte[] payload, Duration timeout);

  /** A short description for reports, e.g. "spark-plugin-rpc" or "local-threads". */
  String kind();

  @Override
  default void close() {}
}
