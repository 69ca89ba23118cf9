package dev.gpucoll.spark.rpc;

import dev.gpucoll.core.config.GpuCollConf;
import dev.gpucoll.core.rendezvous.RendezvousLimits;
import dev.gpucoll.spark.FormingGroup;
import dev.gpucoll.spark.rpc.RpcMessages.Arrive;
import dev.gpucoll.spark.rpc.RpcMessages.GiveUp;
import dev.gpucoll.spark.rpc.RpcMessages.Poll;
import dev.gpucoll.spark.rpc.RpcMessages.RoundState;
import dev.gpucoll.spark.rpc.RpcMessages.Sealed;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The driver side of the plugin rendezvous. Every request is answered at once (Spark's RPC
 * dispatch threads are shared by all plugins and must never block here); ranks poll until their
 * round is complete. A round is identified by (group id, round number), where the group id names
 * the stage id, stage attempt and group. Rounds are dropped once every rank has fetched the
 * result, and evicted when abandoned.
 *
 * <p>Requests come from executors and are checked before anything is allocated: group size,
 * rank, group id and payload are bounded, and so are the bytes one round carries and the bytes
 * all rounds retain, so no request can exhaust the driver's memory on Spark's RPC thread. The
 * retained bytes are what the payloads cost on the heap ({@link HeldPayload}: small chunks, never
 * the humongous objects a 1 MiB array is under G1, which take twice its size). Every
 * refusal is a failed {@link RoundState} naming the limit, which the asking rank raises.
 *
 * <p>Before any of that, {@link #serve} verifies the message's {@link GroupCredential}: a message
 * that fails it (unsealed, unknown credential, wrong MAC, or sealed for another group or round)
 * is dropped and counted ({@link #credentialFailures}) without touching any round, and so is one
 * that verifies but is no fresh one ({@link Freshness}: a copy of a rank's message, within its
 * round, after it or in a later job, so that no finished round is reopened). Rounds are
 * keyed by credential id as well, so a holder of one job's credential cannot reach another's.
 *
 * <p>Internal: public for the other packages of gpucoll-spark, not for users.
 */
public final class RendezvousService {
  /** Largest group the driver serves. */
  public static final int MAX_RANKS = 4096;
  /** Largest payload one rank may register (the core's limit for every rendezvous). */
  static final int MAX_PAYLOAD_BYTES = RendezvousLimits.MAX_PAYLOAD_BYTES;
  /** Largest sum of payloads in one round: the complete round's reply carries all of them. */
  static final long MAX_ROUND_BYTES = 64L << 20;
  /** Largest number of bytes all open rounds may retain together. */
  static final long MAX_RETAINED_BYTES = 256L << 20;
  static final int MAX_GROUP_ID_CHARS = 512;
  /** Longest wait a rank may announce (spark.gpucoll.timeout's bound); it bounds how long an abandoned round is kept. */
  static final long MAX_TIMEOUT_MILLIS = GpuCollConf.LONGEST_TIMEOUT.toMillis();
  static final long MIN_TIMEOUT_MILLIS = GpuCollConf.SHORTEST_TIMEOUT.toMillis();
  /** Bookkeeping bytes charged per round and per rank slot (arrays, flags, map entry). */
  private static final long ROUND_OVERHEAD_BYTES = 256;
  private static final long SLOT_OVERHEAD_BYTES = 24;

  private static final long SWEEP_EVERY_NANOS = 1_000_000_000L;
  /** Failed or abandoned rounds linger this long past their timeout so late ranks learn why. */
  private static final long LINGER_NANOS = 60_000_000_000L;

  private static final Logger LOG = LoggerFactory.getLogger(PluginName.CLASS);

  private final Map<String, Round> rounds = new ConcurrentHashMap<>();
  private final GroupCredential.Issuer credentials;
  private final Freshness.Guard freshness;
  private final AtomicLong credentialFailures = new AtomicLong();
  private final AtomicLong retainedBytes = new AtomicLong();
  private final LongSupplier clock;
  private final long maxRetainedBytes;
  private volatile long lastSweep;

  public RendezvousService(GroupCredential.Issuer credentials, Freshness.Guard freshness) {
    this(credentials, freshness, System::nanoTime, MAX_RETAINED_BYTES);
  }

  RendezvousService(GroupCredential.Issuer credentials, Freshness.Guard freshness, LongSupplier clock,
      long maxRetainedBytes) {
    this.credentials = credentials;
    this.freshness = freshness;
    this.clock = clock;
    this.maxRetainedBytes = maxRetainedBytes;
    this.lastSweep = clock.getAsLong();
  }

  /**
   * Answers one decoded rendezvous message from the plugin endpoint: a ticket request with a
   * {@link Freshness.Ticket}; a {@link Sealed} request whose credential verifies and that is fresh
   * is served and its answer sealed; anything else is dropped, counted and answered with an
   * unsealed failure, which only the sender sees.
   */
  public byte[] serve(Object message) {
    if (message instanceof RpcMessages.TicketRequest) {
      return RpcMessages.encode(freshness.issue()); // anyone may have one: it is worth nothing without a credential
    }
    GroupCredential credential = message instanceof Sealed s ? credentials.forId(s.credentialId()) : null;
    Object request = credential == null ? null : RpcMessages.open((Sealed) message, credential);
    String stale = request == null ? null : freshness.admit(((Sealed) message).stamp());
    if (stale != null) {
      return RpcMessages.encode(failed(drop(RpcMessages.describeStale((Sealed) message, stale))));
    }
    RoundState answer;
    if (request instanceof Arrive a) {
      answer = arrive(credential.id(), a);
    } else if (request instanceof Poll p) {
      answer = poll(credential.id(), p);
    } else if (request instanceof GiveUp g) {
      answer = giveUp(credential.id(), g);
    } else {
      return RpcMessages.encode(failed(drop(RpcMessages.describeDropped(message))));
    }
    return RpcMessages.sealReply(answer, credential, ((Sealed) message).mac());
  }

  /** Messages dropped so far because they failed the group credential. */
  public long credentialFailures() {
    return credentialFailures.get();
  }

  private String drop(String what) {
    long n = credentialFailures.incrementAndGet();
    // The first, then at each power of two: a flood must not flood the log.
    if (Long.bitCount(n) == 1) {
      LOG.warn("gpucoll: dropped {} rendezvous message(s) that failed the group credential (latest: {});"
          + " some process that is no task of this application reaches the driver's plugin endpoint", n, what);
    }
    return "dropped " + what + ": it failed the group credential (are the driver and all"
        + " executors on the same gpucoll jar and in the same application?)";
  }

  RoundState arrive(String credentialId, Arrive m) {
    sweep(false);
    String invalid = invalidArrival(m);
    if (invalid != null) {
      return failed(invalid);
    }
    String key = key(credentialId, m.groupId(), m.round());
    Round round = rounds.get(key);
    if (round == null) {
      long charge = ROUND_OVERHEAD_BYTES + SLOT_OVERHEAD_BYTES * m.size();
      String full = reserve(charge);
      if (full != null) {
        return failed("rank " + m.rank() + " cannot open round " + m.round() + " of group "
            + m.groupId() + ": " + full);
      }
      Round fresh = new Round(key, m.groupId(), m.round(), m.size(), m.timeoutMillis(), charge,
          clock.getAsLong());
      round = rounds.putIfAbsent(key, fresh);
      if (round == null) {
        round = fresh;
      } else {
        retainedBytes.addAndGet(-charge); // another rank opened it first
      }
    }
    // Charged before taking the round's lock: freeing space may evict other rounds, whose locks
    // must never be taken while holding this one.
    long charge = HeldPayload.heapBytes(m.payload().length);
    String full = reserve(charge);
    boolean stored = false;
    try {
      synchronized (round) {
        if (round.failure == null) {
          if (full != null) {
            fail(round, "rank " + m.rank() + " cannot register its " + m.payload().length
                + "-byte payload at round " + m.round() + " of group " + m.groupId() + ": " + full);
          } else if (m.size() != round.size) {
            fail(round, "rank " + m.rank() + " says group " + m.groupId() + " has " + m.size()
                + " ranks, rank " + round.firstRank + " said " + round.size);
          } else if (round.payloads[m.rank()] != null) {
            if (!HeldPayload.equals(round.payloads[m.rank()], m.payload())) {
              fail(round, "rank " + m.rank() + " arrived twice at round " + m.round()
                  + " of group " + m.groupId() + " with different payloads");
            }
          } else if (round.bytes + m.payload().length > MAX_ROUND_BYTES) {
            fail(round, "round " + m.round() + " of group " + m.groupId() + " would carry "
                + (round.bytes + m.payload().length) + " bytes of payloads with rank "
                + m.rank() + "'s; limit " + MAX_ROUND_BYTES + " bytes per round");
          } else if (!round.removed) {
            round.payloads[m.rank()] = HeldPayload.split(m.payload());
            round.bytes += m.payload().length;
            round.charged += charge;
            round.arrived++;
            stored = true;
            if (round.firstRank < 0) {
              round.firstRank = m.rank();
            }
          }
        }
        if (round.removed && !stored) {
          return failed("round " + m.round() + " of group " + m.groupId()
              + " was evicted after its timeout; rank " + m.rank() + " arrived too late");
        }
        if (m.noResult() && round.failure == null) {
          markFetched(round, m.rank());
          return new RoundState(null, List.of(), null);
        }
        return stateFor(round, m.rank());
      }
    } finally {
      if (full == null && !stored) {
        retainedBytes.addAndGet(-charge);
      }
    }
  }

  RoundState poll(String credentialId, Poll m) {
    Round round = m.groupId() == null ? null : rounds.get(key(credentialId, m.groupId(), m.round()));
    if (round == null) {
      return failed("round " + m.round() + " of group " + m.groupId()
          + " is unknown to the driver (never started, timed out and evicted, or already cleaned up)");
    }
    synchronized (round) {
      if (m.rank() < 0 || m.rank() >= round.size || !round.hasArrived(m.rank())) {
        return failed("rank " + m.rank() + " polls round " + m.round() + " of group "
            + m.groupId() + " without having arrived");
      }
      return stateFor(round, m.rank());
    }
  }

  /** The rank gave up waiting: fail the round for everyone, unless it completed meanwhile. */
  RoundState giveUp(String credentialId, GiveUp m) {
    Round round = m.groupId() == null ? null : rounds.get(key(credentialId, m.groupId(), m.round()));
    if (round == null) {
      return failed("round " + m.round() + " of group " + m.groupId() + " is unknown");
    }
    synchronized (round) {
      if (m.rank() < 0 || m.rank() >= round.size) {
        return failed("rank " + m.rank() + " gives up round " + m.round() + " of group "
            + m.groupId() + ", which has " + round.size + " ranks");
      }
      if (round.failure == null && round.arrived < round.size) {
        List<Integer> missing = round.missing();
        fail(round, "rank " + m.rank() + " gave up after " + m.waitedMillis()
            + " ms waiting for ranks " + missing + " at round " + m.round()
            + " of group " + m.groupId());
        round.failedMissing = missing;
      }
      return stateFor(round, m.rank());
    }
  }

  /** Rounds currently held, for tests and diagnostics. */
  int openRounds() {
    return rounds.size();
  }

  /**
   * The groups some of whose ranks wait at a round that others have not reached, none given up:
   * per group the ranks that arrived at any such round, the others, and how long since the
   * earliest of those rounds opened (its first arrival). What the tab shows as FORMING.
   */
  public List<FormingGroup> waitingGroups() {
    long now = clock.getAsLong();
    Map<String, Forming> byGroup = new java.util.TreeMap<>();
    for (Round r : rounds.values()) {
      synchronized (r) {
        if (r.failure != null || r.removed || r.arrived == 0 || r.arrived == r.size) {
          continue;
        }
        Forming g = byGroup.computeIfAbsent(r.groupId, id -> new Forming(id, r.size));
        g.round(now - r.createdAt, r.arrivedRanks());
      }
    }
    List<FormingGroup> out = new ArrayList<>();
    byGroup.values().forEach(g -> out.add(g.build()));
    return out;
  }

  /** Collects a group's open rounds: a rank that arrived at any of them has arrived. */
  private static final class Forming {
    private final String groupId;
    private final int size;
    private final java.util.TreeSet<Integer> arrived = new java.util.TreeSet<>();
    private long waitingNanos;

    Forming(String groupId, int size) {
      this.groupId = groupId;
      this.size = size;
    }

    void round(long openNanos, List<Integer> ranks) {
      arrived.addAll(ranks);
      waitingNanos = Math.max(waitingNanos, openNanos);
    }

    FormingGroup build() {
      List<Integer> missing = new ArrayList<>();
      for (int r = 0; r < size; r++) {
        if (!arrived.contains(r)) {
          missing.add(r);
        }
      }
      return new FormingGroup(groupId, GroupId.stageOf(groupId), size, List.copyOf(arrived), missing, waitingNanos);
    }
  }

  /** Bytes charged to the rounds currently held, for tests and diagnostics. */
  long retainedBytes() {
    return retainedBytes.get();
  }

  /** Why an arrival is refused before it touches any state, or null when it is acceptable. */
  private static String invalidArrival(Arrive m) {
    String who = "rank " + m.rank() + " of group " + m.groupId();
    if (m.groupId() == null || m.groupId().isEmpty() || m.groupId().length() > MAX_GROUP_ID_CHARS) {
      return "rendezvous group id must have 1 to " + MAX_GROUP_ID_CHARS + " characters, got "
          + (m.groupId() == null ? "none" : m.groupId().length());
    }
    if (m.size() <= 0 || m.size() > MAX_RANKS) {
      return who + " claims group size " + m.size() + "; the driver serves groups of 1 to "
          + MAX_RANKS + " ranks";
    }
    if (m.rank() < 0 || m.rank() >= m.size()) {
      return who + " is outside the group's ranks 0.." + (m.size() - 1);
    }
    if (m.round() < 0) {
      return who + " names round " + m.round() + "; rounds count up from 0";
    }
    if (m.payload() == null || m.payload().length > MAX_PAYLOAD_BYTES) {
      return who + " sent a rendezvous payload of "
          + (m.payload() == null ? "null" : m.payload().length + " bytes")
          + "; limit " + MAX_PAYLOAD_BYTES + " bytes";
    }
    if (m.timeoutMillis() < MIN_TIMEOUT_MILLIS || m.timeoutMillis() > MAX_TIMEOUT_MILLIS) {
      return who + " announces a timeout of " + m.timeoutMillis() + " ms; " + GpuCollConf.TIMEOUT.key()
          + " must be 1ms to 24h (" + MIN_TIMEOUT_MILLIS + " to " + MAX_TIMEOUT_MILLIS + " ms)";
    }
    return null;
  }

  /**
   * Charges {@code bytes} to the retained total, or says why not. When the budget is spent,
   * rounds past their timeout are evicted first.
   */
  private String reserve(long bytes) {
    for (int attempt = 0; attempt < 2; attempt++) {
      long now = retainedBytes.get();
      while (now + bytes <= maxRetainedBytes) {
        if (retainedBytes.compareAndSet(now, now + bytes)) {
          return null;
        }
        now = retainedBytes.get();
      }
      if (attempt == 0) {
        sweep(true);
      }
    }
    return "the driver's rendezvous already holds " + retainedBytes.get() + " bytes in "
        + rounds.size() + " open rounds (limit " + maxRetainedBytes
        + " bytes; rounds are freed when complete or past their timeout)";
  }

  private RoundState stateFor(Round round, int rank) {
    if (round.failure != null) {
      return new RoundState(null, round.failedMissing, round.failure);
    }
    if (round.arrived < round.size) {
      return new RoundState(null, round.missing(), null);
    }
    markFetched(round, rank);
    List<byte[]> payloads = new ArrayList<>(round.size);
    for (byte[][] p : round.payloads) {
      payloads.add(HeldPayload.join(p));
    }
    return new RoundState(payloads, List.of(), null);
  }

  /** Fails the round and frees its payloads; the failure itself lingers for late ranks. */
  private void fail(Round round, String why) {
    round.failure = why;
    round.failedAt = clock.getAsLong();
    long payloadBytes = round.charged - round.overhead;
    if (payloadBytes > 0) {
      retainedBytes.addAndGet(-payloadBytes);
      round.charged = round.overhead;
    }
    for (int r = 0; r < round.size; r++) {
      if (round.payloads[r] != null) {
        round.payloads[r] = Round.RELEASED;
      }
    }
  }

  /** Once every rank has its result (or declined it) the round is dropped. */
  private void markFetched(Round round, int rank) {
    if (!round.fetched[rank]) {
      round.fetched[rank] = true;
      round.fetchedCount++;
      if (round.fetchedCount == round.size && round.arrived == round.size) {
        remove(round);
      }
    }
  }

  private void remove(Round round) {
    if (rounds.remove(round.key, round)) {
      retainedBytes.addAndGet(-round.charged);
      round.charged = 0;
      round.removed = true;
    }
  }

  /** Evicts rounds abandoned past their timeout (every second, or at once when {@code force}). */
  private void sweep(boolean force) {
    long now = clock.getAsLong();
    if (!force && now - lastSweep < SWEEP_EVERY_NANOS) {
      return;
    }
    lastSweep = now;
    for (Round r : rounds.values()) {
      synchronized (r) {
        long age = now - r.createdAt;
        boolean abandoned = age > r.timeoutNanos * 2 + LINGER_NANOS
            || (r.failedAt != 0 && now - r.failedAt > r.timeoutNanos + LINGER_NANOS);
        // Under memory pressure a round past its own timeout is dead: every waiting rank has
        // already given up on it.
        boolean expired = force && age > r.timeoutNanos;
        if (abandoned || expired) {
          remove(r);
        }
      }
    }
  }

  private static RoundState failed(String why) {
    return new RoundState(null, List.of(), why);
  }

  private static String key(String credentialId, String groupId, long round) {
    return credentialId + ":" + groupId + "#" + round;
  }

  private static final class Round {
    /** Stands for a payload freed after the round failed: the rank did arrive. */
    static final byte[][] RELEASED = new byte[0][];

    final String key;
    final String groupId;
    final long number;
    final int size;
    final long timeoutNanos;
    final long createdAt;
    final long overhead;
    /** Each rank's payload as {@link HeldPayload} chunks. */
    final byte[][][] payloads;
    final boolean[] fetched;
    /** Bytes of this round counted in the service's retained total. */
    long charged;
    long bytes;
    int arrived;
    int fetchedCount;
    int firstRank = -1;
    /** Evicted or finished: no longer in the map, so nothing more may be charged to it. */
    boolean removed;
    String failure;
    List<Integer> failedMissing = List.of();
    long failedAt;

    Round(String key, String groupId, long number, int size, long timeoutMillis, long overhead, long now) {
      this.key = key;
      this.groupId = groupId;
      this.number = number;
      this.size = size;
      this.timeoutNanos = timeoutMillis * 1_000_000L;
      this.createdAt = now;
      this.overhead = overhead;
      this.charged = overhead;
      this.payloads = new byte[size][][];
      this.fetched = new boolean[size];
    }

    boolean hasArrived(int rank) {
      return payloads[rank] != null;
    }

    List<Integer> arrivedRanks() {
      List<Integer> out = new ArrayList<>();
      for (int r = 0; r < size; r++) {
        if (payloads[r] != null) {
          out.add(r);
        }
      }
      return out;
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
