package dev.gpucoll.core.rendezvous;

import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.core.config.Durations;
import dev.gpucoll.api.CollectiveTimeoutException;
import dev.gpucoll.core.wait.CallBounds;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Rendezvous for ranks that are threads of one JVM (tests, benchmarks): groups live in an
 * in-process registry keyed by group id; each rank joins with {@link #join}. A group id names one
 * group at a time: it is freed when every rank has closed.
 */
public final class LocalRendezvous implements Rendezvous {
  private static final Map<String, Group> REGISTRY = new ConcurrentHashMap<>();

  private final Group group;
  private final int rank;
  private long round;
  private boolean closed;

  private LocalRendezvous(Group group, int rank) {
    this.group = group;
    this.rank = rank;
  }

  /** Joins (creating if needed) the group {@code groupId} of {@code size} ranks as {@code rank}. */
  public static LocalRendezvous join(String groupId, int rank, int size) {
    if (size < 1 || rank < 0 || rank >= size) {
      throw new IllegalArgumentException("rank " + rank + " is not in a group of " + size);
    }
    Group g = REGISTRY.computeIfAbsent(groupId, id -> new Group(id, size));
    synchronized (g) {
      if (g.size != size) {
        throw new IllegalArgumentException("group " + groupId + " has " + g.size + " ranks, rank " + rank
            + " asked for " + size);
      }
      if (g.joined[rank]) {
        throw new IllegalArgumentException("rank " + rank + " already joined group " + groupId);
      }
      g.joined[rank] = true;
    }
    return new LocalRendezvous(g, rank);
  }

  @Override
  public String groupId() {
    return group.id;
  }

  @Override
  public int rank() {
    return rank;
  }

  @Override
  public int size() {
    return group.size;
  }

  @Override
  public String kind() {
    return "local-threads";
  }

  @Override
  public List<byte[]> allGather(byte[] payload, Duration timeout) {
    RendezvousLimits.check(group.id, rank, payload);
    long n = round++;
    long deadline = System.nanoTime() + timeout.toNanos();
    CallBounds bounds = CallBounds.current(timeout);
    Group g = group;
    synchronized (g) {
      if (closed) {
        throw new IllegalStateException("rendezvous " + g.id + ", rank " + rank + " is closed");
      }
      Round r = g.rounds.computeIfAbsent(n, k -> new Round(g.size));
      r.payloads[rank] = payload.clone();
      r.arrived++;
      g.notifyAll();
      while (r.arrived < g.size && g.failure == null) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          List<Integer> missing = new ArrayList<>();
          for (int i = 0; i < g.size; i++) {
            if (r.payloads[i] == null) {
              missing.add(i);
            }
          }
          g.failure = "rank " + rank + " timed out in round " + n + " waiting for ranks " + missing;
          g.notifyAll();
          throw new CollectiveTimeoutException(rank, null, missing, "rendezvous " + g.id + " round " + n
              + ": ranks " + missing + " did not arrive within " + Durations.format(timeout));
        }
        String cancelled = bounds.cancellation();
        if (cancelled != null) {
          g.failure = "rank " + rank + " was cancelled in round " + n + ": " + cancelled;
          g.notifyAll();
          throw new CollectiveException(rank, null, "rendezvous " + g.id + " round " + n + " cancelled: " + cancelled);
        }
        try {
          // Short waits: the task's kill is a check to ask, it notifies nobody.
          g.wait(Math.max(1, Math.min(left / 1_000_000, 50)), 0);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          g.failure = "rank " + rank + " was interrupted in round " + n;
          g.notifyAll();
          throw new CollectiveException(rank, null, "rendezvous " + g.id + " round " + n
              + " cancelled: the calling thread was interrupted", e);
        }
      }
      if (r.arrived < g.size) {
        List<Integer> missing = new ArrayList<>();
        for (int i = 0; i < g.size; i++) {
          if (r.payloads[i] == null) {
            missing.add(i);
          }
        }
        throw new CollectiveTimeoutException(rank, null, missing, "rendezvous " + g.id + " failed: "
            + g.failure);
      }
      List<byte[]> out = new ArrayList<>(g.size);
      for (byte[] p : r.payloads) {
        out.add(p.clone());
      }
      if (++r.read == g.size) {
        g.rounds.remove(n);
      }
      return out;
    }
  }

  @Override
  public void close() {
    Group g = group;
    synchronized (g) {
      if (closed) {
        return;
      }
      closed = true;
      if (++g.closed == g.size) {
        REGISTRY.remove(g.id, g);
      }
    }
  }

  private static final class Group {
    final String id;
    final int size;
    final boolean[] joined;
    final Map<Long, Round> rounds = new HashMap<>();
    int closed;
    String failure;

    Group(String id, int size) {
      this.id = id;
      this.size = size;
      this.joined = new boolean[size];
    }
  }

  private static final class Round {
    final byte[][] payloads;
    int arrived;
    int read;

    Round(int size) {
      payloads = new byte[size][];
    }
  }
}
