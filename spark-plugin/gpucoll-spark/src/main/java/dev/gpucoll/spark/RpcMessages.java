package dev.gpucoll.spark;

import java.io.Serializable;
import java.util.List;
import java.util.Map;

/**
 * Messages between the executor plugin and the driver plugin (Java-serialized by Spark's RPC).
 * Every message carries {@link #VERSION} so executors on a different gpucoll jar fail clearly.
 */
final class RpcMessages {
  static final int VERSION = 1;

  private RpcMessages() {}

  /**
   * A rank contributes its payload to round {@code round} of {@code groupId}. With
   * {@code noResult} the rank will not fetch the outcome (it already knows what it needs).
   */
  record Arrive(int version, String groupId, long round, int rank, int size, byte[] payload,
      long timeoutMillis, boolean noResult) implements Serializable {}

  /** A rank asks whether the round is complete. */
  record Poll(int version, String groupId, long round, int rank) implements Serializable {}

  /** A rank stopped waiting; the round fails for everybody, late arrivals included. */
  record GiveUp(int version, String groupId, long round, int rank, long waitedMillis)
      implements Serializable {}

  /**
   * The round as the driver sees it: complete (payloads by rank), failed (why), or still waiting
   * for {@code missingRanks}.
   */
  record RoundState(List<byte[]> payloads, List<Integer> missingRanks, String failure)
      implements Serializable {
    boolean complete() {
      return payloads != null;
    }
  }

  /** One rank's description of its group after a stage, for the driver's path report. */
  record RankReportMessage(
      int version,
      String groupId,
      String stage,
      int rank,
      int size,
      String host,
      String executorId,
      long pid,
      String backend,
      String rendezvous,
      Map<String, Map<String, Long>> pathsByCollective,
      List<String> predicted,
      List<String> findings) implements Serializable {}
}
