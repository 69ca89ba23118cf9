package dev.gpucoll.spark;

import dev.gpucoll.spark.RpcMessages.Arrive;
import dev.gpucoll.spark.RpcMessages.GiveUp;
import dev.gpucoll.spark.RpcMessages.Poll;
import dev.gpucoll.spark.RpcMessages.RoundState;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

/**
 * The driver side of the plugin rendezvous. Every request is answered at once (Spark's RPC
 * dispatch threads are shared by all plugins and must never block here); ranks poll until their
 * round is complete. A round is identified by (group id, round number), where the group id names
 * the stage id, stage attempt and group. Rounds are dropped once every rank has fetched the
 * result, and swept when abandoned.
 */
final class RendezvousService {
  /** Largest payload one rank may register; the reply carries size of them. */
  static final int MAX_PAYLOAD_BYTES = 16 << 20;
  private static final long SWEEP_EVERY_NANOS = 1_000_000_000L;
  /** Failed or abandoned rounds linger this long past their timeout so late ranks learn why. */
  private static final long LINGER_NANOS = 60_000_000_000L;

  private final Map<String, Round> rounds = new ConcurrentHashMap<>();
  private final LongSupplier clock;
  private volatile long lastSweep;

  RendezvousService() {
    this(System::nanoTime);
  }

  RendezvousService(LongSupplier clock) {
    this.clock = clock;
    this.lastSweep = clock.getAsLong();
  }

  RoundState arrive(Arrive m) {
    checkVersion(m.version());
    sweep();
    if (m.size() <= 0 || m.rank() < 0 || m.rank() >= m.size()) {
      return failed("rank " + m.rank() + " of group " + m.groupId() + " claims group size "
          + m.size());
    }
    if (m.payload() == null || m.payload().length > MAX_PAYLOAD_BYTES) {
      return failed("rank " + m.rank() + " sent a rendezvous payload of "
          + (m.payload() == null ? "null" : m.payload().length + " bytes")
          + " to group " + m.groupId() + "; limit " + MAX_PAYLOAD_BYTES + " bytes");
    }
    Round round = rounds.computeIfAbsent(key(m.groupId(), m.round()),
        k -> new Round(m.groupId(), m.round(), m.size(), m.timeoutMillis(), clock.getAsLong()));
    synchronized (round) {
      if (round.failure == null) {
        if (m.size() != round.size) {
          round.failure = "rank " + m.rank() + " says group " + m.groupId() + " has " + m.size()
              + " ranks, rank " + round.firstRank + " said " + round.size;
        } else if (round.payloads[m.rank()] != null
            && !Arrays.equals(round.payloads[m.rank()], m.payload())) {
          round.failure = "rank " + m.rank() + " arrived twice at round " + m.round()
              + " of group " + m.groupId() + " with different payloads";
        } else {
          if (round.payloads[m.rank()] == null) {
            round.arrived++;
          }
          round.payloads[m.rank()] = m.payload();
          if (round.firstRank < 0) {
            round.firstRank = m.rank();
          }
        }
      }
      if (m.noResult() && round.failure == null) {
        markFetched(round, m.rank());
        return new RoundState(null, List.of(), null);
      }
      return stateFor(round, m.rank());
    }
  }

  RoundState poll(Poll m) {
    checkVersion(m.version());
    Round round = rounds.get(key(m.groupId(), m.round()));
    if (round == null) {
      return failed("round " + m.round() + " of group " + m.groupId()
          + " is unknown to the driver (never started, or already cleaned up)");
    }
    synchronized (round) {
      if (m.rank() < 0 || m.rank() >= round.size || round.payloads[m.rank()] == null) {
        return failed("rank " + m.rank() + " polls round " + m.round() + " of group "
            + m.groupId() + " without having arrived");
      }
      return stateFor(round, m.rank());
    }
  }

  /** The rank gave up waiting: fail the round for everyone, unless it completed meanwhile. */
  RoundState giveUp(GiveUp m) {
    checkVersion(m.version());
    Round round = rounds.get(key(m.groupId(), m.round()));
    if (round == null) {
      return failed("round " + m.round() + " of group " + m.groupId() + " is unknown");
    }
    synchronized (round) {
      if (round.failure == null && round.arrived < round.size) {
        round.failure = "rank " + m.rank() + " gave up after " + m.waitedMillis()
            + " ms waiting for ranks " + round.missing() + " at round " + m.round()
            + " of group " + m.groupId();
        round.failedMissing = round.missing();
      }
      return stateFor(round, m.rank());
    }
  }

  /** Rounds currently held, for tests and diagnostics. */
  int openRounds() {
    return rounds.size();
  }

  private RoundState stateFor(Round round, int rank) {
    if (round.failure != null) {
      round.failedAt = round.failedAt == 0 ? clock.getAsLong() : round.failedAt;
      return new RoundState(null, round.failedMissing, round.failure);
    }
    if (round.arrived < round.size) {
      return new RoundState(null, round.missing(), null);
    }
    markFetched(round, rank);
    return new RoundState(List.of(round.payloads), List.of(), null);
  }

  /** Once every rank has its result (or declined it) the round is dropped. */
  private void markFetched(Round round, int rank) {
    if (!round.fetched[rank]) {
      round.fetched[rank] = true;
      round.fetchedCount++;
      if (round.fetchedCount == round.size && round.arrived == round.size) {
        rounds.remove(key(round.groupId, round.number), round);
      }
    }
  }

  private void sweep() {
    long now = clock.getAsLong();
    if (now - lastSweep < SWEEP_EVERY_NANOS) {
      return;
    }
    lastSweep = now;
    rounds.values().removeIf(r -> {
      synchronized (r) {
        long age = now - r.createdAt;
        return age > r.timeoutNanos * 2 + LINGER_NANOS
            || (r.failedAt != 0 && now - r.failedAt > r.timeoutNanos + LINGER_NANOS);
      }
    });
  }

  private static void checkVersion(int version) {
    if (version != RpcMessages.VERSION) {
      throw new IllegalArgumentException("gpucoll rendezvous message version " + version
          + ", the driver speaks " + RpcMessages.VERSION
          + ": are the driver and all executors on the same gpucoll jar?");
    }
  }

  private static RoundState failed(String why) {
    return new RoundState(null, List.of(), why);
  }

  private static String key(String groupId, long round) {
    return groupId + "#" + round;
  }

  private static final class Round {
    final String groupId;
    final long number;
    final int size;
    final long timeoutNanos;
    final long createdAt;
    final byte[][] payloads;
    final boolean[] fetched;
    int arrived;
    int fetchedCount;
    int firstRank = -1;
    String failure;
    List<Integer> failedMissing = List.of();
    long failedAt;

    Round(String groupId, long number, int size, long timeoutMillis, long now) {
      this.groupId = groupId;
      this.number = number;
      this.size = size;
      this.timeoutNanos = Math.max(timeoutMillis, 1) * 1_000_000L;
      this.createdAt = now;
      this.payloads = new byte[size][];
      this.fetched = new boolean[size];
    }

    List<Integer> missing() {
      List<Integer> out = new ArrayList<>();
      for (int r = 0; r < size; r++) {
        if (payloads[r] == null) {
          out.add(r);
        }
      }
      return out;
    }
  }
}
