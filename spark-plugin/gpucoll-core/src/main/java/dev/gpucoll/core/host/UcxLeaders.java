package dev.gpucoll.core.host;


import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.CollectiveTimeoutException;
import dev.gpucoll.core.config.GpuCollConf;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The leaders' link of one {@link HostUcxCommunicator} rank, and its liveness: tagged messages to
 * the other hosts' leaders over a {@link PeerTransport}, the waits for them, and the aborts.
 *
 * <p>Waits are bounded by the call's timeout since the last progress, its cancellation, a close,
 * the peer's connection (UCX's peer error handling) and the other leaders' abort messages: a
 * leader that gives up sends every other leader an abort message (naming the call it gave up on
 * and, after a timeout, the ranks that never came) and marks its host's segment failed, so every
 * rank of the group stops waiting and names the first cause. Tags carry (kind, source rank, call
 * number), so a late message of a failed call never matches a later one.
 */
final class UcxLeaders {
  static final int KIND_HEADER = 1;
  static final int KIND_DATA1 = 2;
  static final int KIND_DATA2 = 3;
  private static final int KIND_ABORT = 15;
  /** An abort message: text length, count of missing ranks, the call it gave up on; then those ranks, the text. */
  private static final int ABORT_HEAD = 16;
  static final int TEXT_BYTES = 1000;
  private static final long SEQ_MASK = (1L << 40) - 1;

  private final AbstractHostCommunicator owner;
  private final int rank;
  private final int[][] hostRanks;
  private final int myHost;
  private final boolean leader;
  private final PeerTransport transport;
  private final HostShmCommunicator local;
  private final UcxScratch scratch;
  private final Backoff backoff;
  private final List<PeerTransport.Request> inFlight = new ArrayList<>();
  private final PeerTransport.Request[] abortRecv;
  private final ByteBuffer[] abortBuf;
  /** The call in progress, numbered from 1 (the tags' call number). */
  private long call;

  /** Connects a leader to the other hosts' leaders and listens for their abort messages. */
  UcxLeaders(AbstractHostCommunicator owner, HostTopology topology, PeerTransport transport, byte[][] addresses,
      HostShmCommunicator local, UcxScratch scratch) {
    this.owner = owner;
    this.rank = owner.rank();
    this.hostRanks = topology.hostRanks();
    this.myHost = topology.hostOf()[rank];
    this.leader = hostRanks[myHost][0] == rank;
    this.transport = transport;
    this.local = local;
    this.scratch = scratch;
    this.backoff = new Backoff(hostRanks[myHost].length * owner.conf.get(GpuCollConf.INTERNAL_WAITERS_PER_RANK),
        Backoff.hostCores());
    this.abortRecv = new PeerTransport.Request[hostRanks.length];
    this.abortBuf = new ByteBuffer[hostRanks.length];
    if (leader) {
      for (int g = 0; g < hostRanks.length; g++) {
        if (g != myHost) {
          int peer = hostRanks[g][0];
          transport.connect(peer, addresses[peer]);
          abortBuf[g] = ByteBuffer.allocateDirect(ABORT_HEAD + 4 * 64 + TEXT_BYTES);
          abortRecv[g] = transport.recv(peer, tag(KIND_ABORT, peer, 0), abortBuf[g]);
        }
      }
    }
  }

  /** Starts the next call, whose waits spin as befits a call moving {@code bytes}; returns its number. */
  long nextCall(long bytes) {
    backoff.expectRemote(++call, bytes);
    return call;
  }

  long call() {
    return call;
  }

  String describe() {
    return transport.describe();
  }

  /** Sends {@code data} to {@code peer} as this call's message of {@code kind}. */
  PeerTransport.Request send(int peer, int kind, ByteBuffer data) {
    return track(transport.send(peer, tag(kind, rank, call), data));
  }

  /** Receives this call's message of {@code kind} from {@code peer} into {@code into}. */
  PeerTransport.Request recv(int peer, int kind, ByteBuffer into) {
    return track(transport.recv(peer, tag(kind, peer, call), into));
  }

  private PeerTransport.Request track(PeerTransport.Request r) {
    inFlight.add(r);
    return r;
  }

  /** Every request of the round is done: forget them. */
  void roundDone() {
    inFlight.clear();
  }

  /** Cancels what is still in flight and waits (at most a second) until UCX let go of the buffers. */
  void drain() {
    for (PeerTransport.Request r : inFlight) {
      if (!r.done()) {
        transport.cancel(r);
      }
    }
    long deadline = System.nanoTime() + 1_000_000_000L;
    while (inFlight.stream().anyMatch(r -> !r.done()) && System.nanoTime() < deadline) {
      transport.progress();
    }
    if (inFlight.stream().anyMatch(r -> !r.done())) {
      // A buffer UCX may still write must never be reused: the group cannot go on.
      owner.markBroken("UCX requests did not finish after cancellation");
      scratch.clear();
    }
    inFlight.clear();
  }

  /**
   * Waits for {@code r}, bounded by the timeout since the last progress, the call's cancellation,
   * a close, the peer's connection and the other leaders' abort messages; the waiting follows
   * {@link Backoff} (spin while progress is likely, then yield, then park).
   */
  void await(Collective c, PeerTransport.Request r, int peer, String what) {
    if (r.done()) {
      checkDone(c, r, peer, what);
      return;
    }
    Backoff b = backoff.begin();
    long deadline = System.nanoTime() + owner.bounds.timeoutNanos();
    while (!r.done()) {
      if (transport.progress()) {
        b.begin();
        deadline = System.nanoTime() + owner.bounds.timeoutNanos();
        continue;
      }
      if (b.slowCheckDue()) {
        String why = slowCheck(peer);
        if (why != null && (transport.progress() || r.done())) {
          continue; // what the peer sent before it went is still delivered
        }
        if (why != null) {
          String text = why + " while rank " + rank + " waited for the " + what + (peer >= 0 ? " of rank " + peer : "")
              + " (call " + call + ")";
          List<Integer> missing = abortedForMissing();
          throw fail(c, missing.isEmpty() ? new CollectiveException(rank, c, text)
              : new CollectiveTimeoutException(rank, c, missing, text));
        }
      }
      if (!b.pause(deadline)) {
        throw fail(c, new CollectiveTimeoutException(rank, c, peer >= 0 ? List.of(peer) : List.of(),
            (peer >= 0 ? "rank " + peer : "a peer") + " did not arrive within " + owner.bounds.timeout()
                + " (waited for its " + what + " over UCX, call " + call + ")"));
      }
    }
    backoff.remoteWaitDone(); // a wait that had to wait: its spin budget learns from it
    checkDone(c, r, peer, what);
  }

  private void checkDone(Collective c, PeerTransport.Request r, int peer, String what) {
    if (r.error() != null) {
      String gone = peer >= 0 ? transport.peerFailure(peer) : null;
      throw fail(c, new CollectiveException(rank, c, "the " + what + (peer >= 0 ? " of rank " + peer : "")
          + " failed over UCX: " + (gone != null ? gone : r.error())));
    }
  }

  /**
   * After a round whose messages all arrived: a leader that gave up on this call (a timeout while
   * this rank was late) sent its abort after its header and data, so everything this rank needed
   * can be here while that leader failed; this rank must not complete the call either (an abort of
   * a later call, which that leader can reach only after this one completed there, waits for that
   * call). What UCX delivered is looked at once.
   */
  void failIfAbortedBefore(Collective c) {
    for (int i = 0; i < 16 && transport.progress(); i++) {
      // deliver what is already here
    }
    String aborted = abortReason();
    if (aborted != null && abortedCall() <= call) {
      List<Integer> missing = abortedForMissing();
      String text = aborted + " before rank " + rank + " completed call " + call;
      throw fail(c, missing.isEmpty() ? new CollectiveException(rank, c, text)
          : new CollectiveTimeoutException(rank, c, missing, text));
    }
  }

  private String slowCheck(int peer) {
    if (owner.isClosed()) { // closed from another thread under this call: the other leaders learn it as a close
      return "rank " + rank + " closed its communicator";
    }
    String cancelled = owner.bounds.cancellation();
    if (cancelled != null) {
      return "cancelled (" + cancelled + ")";
    }
    if (peer >= 0 && transport.peerFailure(peer) != null) {
      return "rank " + peer + " is unreachable: " + transport.peerFailure(peer);
    }
    return abortReason();
  }

  /** The first host whose abort receive has ended (its leader's abort message, or an error), or -1. */
  private int abortingHost() {
    for (int g = 0; g < abortRecv.length; g++) {
      if (abortRecv[g] != null && abortRecv[g].done()) {
        return g;
      }
    }
    return -1;
  }

  /** Why another leader's abort message (or its broken connection) ends the group, or null. */
  private String abortReason() {
    int g = abortingHost();
    if (g < 0) {
      return null;
    }
    if (abortRecv[g].error() != null) {
      return "rank " + hostRanks[g][0] + " is unreachable: " + abortRecv[g].error();
    }
    int skip = ABORT_HEAD + 4 * Math.max(0, Math.min(64, abortBuf[g].getInt(4)));
    byte[] b = new byte[Math.max(0, Math.min(TEXT_BYTES, abortBuf[g].getInt(0)))];
    abortBuf[g].get(skip, b);
    return "rank " + hostRanks[g][0] + " gave up on the group (" + new String(b, StandardCharsets.UTF_8) + ")";
  }

  /** The call an arrived abort message gave up on (an error in place of one: the current call), or MAX_VALUE. */
  private long abortedCall() {
    int g = abortingHost();
    if (g < 0) {
      return Long.MAX_VALUE;
    }
    return abortRecv[g].error() == null ? abortBuf[g].getLong(8) : call;
  }

  /**
   * The ranks a leader's abort message says never arrived (it gave up on a timeout), or empty: a
   * rank that learns of the timeout from that message fails with the same timeout.
   */
  private List<Integer> abortedForMissing() {
    for (int g = 0; g < abortRecv.length; g++) {
      if (abortRecv[g] != null && abortRecv[g].done() && abortRecv[g].error() == null) {
        int n = Math.max(0, Math.min(64, abortBuf[g].getInt(4)));
        List<Integer> missing = new ArrayList<>();
        for (int i = 0; i < n; i++) {
          missing.add(abortBuf[g].getInt(ABORT_HEAD + 4 * i));
        }
        return missing;
      }
    }
    return List.of();
  }

  /**
   * The group cannot go on: the other leaders get an abort message, the ranks of this host see
   * the segment marked failed; returns {@code e} for the caller to throw.
   */
  CollectiveException fail(Collective c, CollectiveException e) {
    owner.markBroken(e.getMessage());
    try {
      if (leader) {
        byte[] text = ShmSegment.truncate(e.getMessage(), TEXT_BYTES);
        List<PeerTransport.Request> aborts = new ArrayList<>();
        for (int g = 0; g < hostRanks.length; g++) {
          if (g != myHost && transport.peerFailure(hostRanks[g][0]) == null) {
            List<Integer> missing = e instanceof CollectiveTimeoutException t ? t.missingRanks() : List.of();
            int n = Math.min(64, missing.size());
            ByteBuffer b = ByteBuffer.allocateDirect(ABORT_HEAD + 4 * n + text.length).putInt(text.length).putInt(n)
                .putLong(call);
            for (int i = 0; i < n; i++) {
              b.putInt(missing.get(i));
            }
            b.put(text).flip();
            aborts.add(transport.send(hostRanks[g][0], tag(KIND_ABORT, rank, 0), b));
          }
        }
        long deadline = System.nanoTime() + 200_000_000L;
        while (aborts.stream().anyMatch(r -> !r.done()) && System.nanoTime() < deadline) {
          transport.progress();
        }
      }
    } catch (RuntimeException ignored) {
      // best effort: the peers' own bounds end their waits
    }
    local.abandon(e.getMessage());
    return e;
  }

  /** Stops listening for aborts and closes the transport. */
  void close() {
    for (PeerTransport.Request r : abortRecv) {
      if (r != null && !r.done()) {
        transport.cancel(r);
      }
    }
    transport.close();
  }

  private static long tag(int kind, int src, long call) {
    return ((long) kind << 60) | ((long) src << 40) | (call & SEQ_MASK);
  }
}
