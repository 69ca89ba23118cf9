package dev.gpucoll.core.host;


import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.InvalidArgumentException;
import dev.gpucoll.api.CollectiveMismatchException;
import dev.gpucoll.api.CollectiveTimeoutException;
import dev.gpucoll.api.DataType;
import dev.gpucoll.core.Algorithm;
import dev.gpucoll.core.buffers.HostBuffers;
import dev.gpucoll.core.config.Durations;
import dev.gpucoll.core.config.GpuCollConf;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Steps over one shared-memory segment, with the barrier-free protocol of the GPU kernels.
 *
 * <p>Step e uses the half (e & 1) of each rank's block. In a step each rank publishes its payload
 * and a header (signature, status) flagged with e, then reads what it needs from every peer.
 * Because each step reads every peer's header, seeing a peer's step-e flag proves that peer
 * finished step e-1, and so finished reading the half that step e+1 will overwrite: no barrier is
 * ever needed (epoch double-buffering).
 *
 * <p>Payloads move in one of two modes, as {@link HostRoute#llStep} decides by size: up to 16
 * bytes inside the step header, in the cache line of its epoch flag (so a reader touches one line
 * per peer and step), and larger ones in the rank's bulk region. Either way the payload is written
 * first and the header's flag, stored last with release ordering, publishes it; the reader loads
 * the flag with acquire ordering before the data.
 */
final class ShmSteps extends Steps {
  private static final int MODE_INLINE = 0;
  private static final int MODE_BULK = 1;
  private static final int STATUS_OK = 0;
  private static final int STATUS_ERROR = 1;
  private static final int ERROR_TEXT_MAX = ShmSegment.HEADER_BYTES - 48;
  /** How often a waiting rank asks whether the peer's process still exists (a /proc read). */
  private static final long LIVENESS_CHECK_NANOS = 50_000_000;

  private final AbstractHostCommunicator owner;
  private final ShmSegment seg;
  private final ByteBuffer buf;
  private final HostRoute route;
  private final Backoff backoff;
  private final HostBuffers.Views segViews;
  private long epoch;
  /** The opened step's payload bytes and mode. */
  private int bytes;
  private boolean inline;

  /** Peers' processes, looked up on the first wait for each; null: same process or not visible. */
  private final ProcessHandle[] peerProcess;
  private final boolean[] peerLookedUp;
  private long nextLivenessCheck;

  // Peer headers of the current step.
  private final long[] hSig;
  private final long[] hCount;
  private final int[] hStatus;
  private final int[] hMode;
  private final int[] hBytes;

  ShmSteps(AbstractHostCommunicator owner, ShmSegment seg, HostRoute route) {
    super(owner.rank, seg.ranks);
    this.owner = owner;
    this.seg = seg;
    this.buf = seg.buf;
    this.route = route;
    // Every rank of a segment is on this host.
    this.backoff = new Backoff(seg.ranks * owner.conf.get(GpuCollConf.INTERNAL_WAITERS_PER_RANK), Backoff.hostCores());
    this.segViews = new HostBuffers.Views(buf.duplicate());
    hSig = new long[ranks];
    hCount = new long[ranks];
    hStatus = new int[ranks];
    hMode = new int[ranks];
    hBytes = new int[ranks];
    peerProcess = new ProcessHandle[ranks];
    peerLookedUp = new boolean[ranks];
  }

  boolean oversubscribed() {
    return backoff.oversubscribed();
  }

  @Override
  int maxPayload() {
    return seg.bulkBytes;
  }

  @Override
  HostBuffers.Views open(int payloadBytes) {
    epoch++;
    bytes = payloadBytes;
    inline = route.llStep(payloadBytes);
    base = payloadOff(rank, half(epoch), inline);
    return segViews;
  }

  @Override
  void exchange(Collective c, Signature sig) {
    commit(sig, null);
    awaitHeaders(c, sig, null);
  }

  @Override
  Algorithm refuse(Collective c, Signature sig, String problem) {
    open(0);
    commit(sig, problem);
    awaitHeaders(c, sig, problem);
    throw new IllegalStateException("unreachable: awaitHeaders must throw for a problem");
  }

  @Override
  List<byte[]> allGatherBytes(Signature sig, byte[] payload) {
    if (payload.length > seg.bulkBytes) {
      throw new CollectiveException(rank, null, "setup payload of " + payload.length + " bytes is too big");
    }
    ByteBuffer out = (ByteBuffer) open(payload.length).of(DataType.INT8);
    out.put(base, payload);
    exchange(null, sig);
    List<byte[]> result = new ArrayList<>(ranks);
    for (int p = 0; p < ranks; p++) {
      ByteBuffer in = (ByteBuffer) peer(null, p, 0, hBytes[p]).of(DataType.INT8);
      byte[] b = new byte[hBytes[p]];
      in.get(base, b);
      result.add(b);
    }
    return result;
  }

  private static int half(long e) {
    return (int) (e & 1);
  }

  private int payloadOff(int p, int h, boolean inHeader) {
    return inHeader ? seg.headerOff(p, h) + ShmSegment.INLINE_OFF : seg.bulkOff(p, h);
  }

  /**
   * Publishes the opened step: its payload is in place (in the header or the bulk region), so the
   * header's flag, stored last with release ordering, publishes both.
   */
  private void commit(Signature sig, String problem) {
    long e = epoch;
    int h = half(e);
    int off = seg.headerOff(rank, h);
    // Header: flag, signature word, count, meta (payload bytes, status, mode), payload or error text.
    buf.putLong(off + 8, sig.packed());
    buf.putLong(off + 16, sig.count());
    buf.putLong(off + 24, ((long) bytes << 32) | ((problem == null ? STATUS_OK : STATUS_ERROR) << 1)
        | (inline ? MODE_INLINE : MODE_BULK));
    if (problem != null) {
      byte[] text = ShmSegment.truncate(problem, ERROR_TEXT_MAX);
      buf.putInt(off + 44, text.length);
      buf.put(off + 48, text);
    }
    ShmSegment.LONGS.setRelease(buf, off, e);
    backoff.expectBytes(bytes);
  }

  /**
   * Waits for every rank's header of this step, then fails alike on every rank if any rank
   * published a problem or a different signature.
   */
  private void awaitHeaders(Collective c, Signature sig, String ownProblem) {
    long e = epoch;
    int h = half(e);
    boolean trouble = ownProblem != null;
    long sigWord = sig.packed();
    long sigCount = sig.count();
    for (int p = 0; p < ranks; p++) {
      int off = seg.headerOff(p, h);
      if ((long) ShmSegment.LONGS.getAcquire(buf, off) != e) {
        waitFlag(c, p, off);
      }
      hSig[p] = buf.getLong(off + 8);
      hCount[p] = buf.getLong(off + 16);
      long meta = buf.getLong(off + 24);
      hBytes[p] = (int) (meta >>> 32);
      hStatus[p] = (int) (meta >>> 1) & 1;
      hMode[p] = (int) meta & 1;
      trouble |= hStatus[p] != STATUS_OK || hSig[p] != sigWord || hCount[p] != sigCount;
    }
    if (trouble) {
      reportTrouble(c, ownProblem);
    }
    // This rank's step flag is published; a rank that gave up marked the group before it stopped
    // waiting, so a rank arriving after that fails here instead of completing a step its peers
    // abandoned (the fence keeps the load after the flag store; only an arrival at the very
    // instant of giving up can still complete).
    VarHandle.fullFence();
    int abortedBy = seg.abortedBy();
    if (abortedBy >= 0) {
      String why = stopped(abortedBy);
      owner.markBroken(why);
      throw new CollectiveException(rank, c, why + " before this rank completed its " + owner.callLabel()
          + " on this communicator; the group is unusable");
    }
  }

  /** How peers name why rank {@code r} stopped: it closed its communicator, or gave up and why. */
  private String stopped(int r) {
    return seg.state(r) == ShmSegment.STATE_CLOSED ? "rank " + r + " closed its communicator"
        : "rank " + r + " gave up on the group (" + seg.reason(r) + ")";
  }

  private void reportTrouble(Collective c, String ownProblem) {
    if (ownProblem != null) {
      throw new InvalidArgumentException(rank, c, ownProblem);
    }
    int h = half(epoch);
    List<String> errors = new ArrayList<>();
    for (int p = 0; p < ranks; p++) {
      if (hStatus[p] != STATUS_OK) {
        int off = seg.headerOff(p, h);
        int len = Math.max(0, Math.min(ERROR_TEXT_MAX, buf.getInt(off + 44)));
        byte[] text = new byte[len];
        buf.get(off + 48, text);
        errors.add("rank " + p + " rejected its call: " + new String(text, StandardCharsets.UTF_8));
      }
    }
    if (!errors.isEmpty()) {
      throw new CollectiveException(rank, c, String.join("; ", errors));
    }
    Signature first = Signature.unpack(hSig[0], hCount[0]);
    for (int p = 1; p < ranks; p++) {
      Signature other = Signature.unpack(hSig[p], hCount[p]);
      if (!other.equals(first)) {
        throw new CollectiveMismatchException(rank, c, "ranks called different collectives: rank 0 called "
            + first.describe() + " but rank " + p + " called " + other.describe());
      }
    }
  }

  @Override
  HostBuffers.Views peer(Collective c, int p, int off, int len) {
    if (off + len > hBytes[p]) {
      throw new CollectiveException(rank, c, "rank " + p + " published " + hBytes[p]
          + " payload bytes in " + owner.callLabel() + ", this rank needs " + (off + len));
    }
    base = payloadOff(p, half(epoch), hMode[p] == MODE_INLINE);
    return segViews;
  }

  /**
   * Waits until rank p's header flag at {@code off} holds this step's epoch, or fails naming p. The
   * timeout runs from the start of this wait: it bounds the time without progress, so a long call
   * whose peers keep arriving never times out. A cancellation of the call ends the wait at the
   * next slow check.
   */
  private void waitFlag(Collective c, int p, int off) {
    long e = epoch;
    var bounds = owner.bounds;
    Backoff b = backoff.begin();
    long deadline = System.nanoTime() + bounds.timeoutNanos();
    while (true) {
      long v = (long) ShmSegment.LONGS.getAcquire(buf, off);
      if (v == e) {
        return;
      }
      if (v > e) {
        fail(new CollectiveException(rank, c, "rank " + p + " has gone on to a later call than this rank's "
            + owner.callLabel() + ": the ranks' call sequences diverged"));
      }
      if (b.slowCheckDue()) {
        if (owner.isClosed()) {
          // Closed from another thread under this call: the peers learn it as this rank's close.
          fail(new CollectiveException(rank, c, "the communicator was closed while this rank waited for rank "
              + p + " in " + owner.callLabel()), ShmSegment.STATE_CLOSED, "rank " + rank + " closed its communicator");
        }
        String cancelled = bounds.cancellation();
        if (cancelled != null) {
          fail(new CollectiveException(rank, c, "cancelled while waiting for rank " + p + " in "
              + owner.callLabel() + ": " + cancelled));
        }
        if (p != rank) {
          long state = seg.state(p);
          int by = seg.abortedBy();
          // A peer that looks alive in a group marked failed may have died: look now, not next period.
          String dead = state == ShmSegment.STATE_ALIVE ? deadProcess(p, by >= 0) : null;
          if ((state != ShmSegment.STATE_ALIVE || dead != null || by >= 0)
              && (long) ShmSegment.LONGS.getAcquire(buf, off) != e) {
            if (dead != null) {
              fail(new CollectiveTimeoutException(rank, c, List.of(p), "rank " + p + " is gone: " + dead
                  + " while this rank waited for its header in " + owner.callLabel()));
            }
            // The mark ends the wait whichever rank it waits for: a rank that left on seeing it
            // publishes nothing more while its state stays alive. Name the first cause.
            int cause = by >= 0 ? by : p;
            String why = stopped(cause) + " while this rank waited for "
                + (cause == p ? "its header" : "the header of rank " + p) + " in " + owner.callLabel();
            if (cause != p && state == ShmSegment.STATE_ALIVE && seg.state(cause) != ShmSegment.STATE_CLOSED) {
              // Another rank gave up while p, alive, had not arrived here either (typically its own
              // timeout on p, reached a moment before this rank's): p is missing for this rank too.
              fail(new CollectiveTimeoutException(rank, c, List.of(p), why));
            }
            fail(new CollectiveException(rank, c, why));
          }
        }
      }
      if (!b.pause(deadline)) {
        fail(new CollectiveTimeoutException(rank, c, List.of(p), "rank " + p + " did not arrive within "
            + Durations.format(bounds.timeout()) + " (waited for its header in " + owner.callLabel() + ")"));
      }
    }
  }

  /**
   * Why peer p's process no longer exists, or null (alive, not checked yet this period, in this
   * process, or not visible from here). Checked at most every {@link #LIVENESS_CHECK_NANOS} unless
   * {@code now} asks for it.
   */
  private String deadProcess(int p, boolean now) {
    long t = System.nanoTime();
    if (!now && t - nextLivenessCheck < 0) {
      return null;
    }
    nextLivenessCheck = t + LIVENESS_CHECK_NANOS;
    if (!peerLookedUp[p]) {
      long pid = seg.pid(p);
      if (pid == 0) {
        return null; // not recorded yet
      }
      peerLookedUp[p] = true;
      if (pid == ProcessHandle.current().pid() || !seg.pidVisible(p)) {
        return null;
      }
      java.util.Optional<ProcessHandle> h = ProcessHandle.of(pid);
      if (h.isEmpty()) {
        return "its process (pid " + pid + ") died";
      }
      peerProcess[p] = h.get();
    }
    ProcessHandle h = peerProcess[p];
    return h == null || h.isAlive() ? null : "its process (pid " + h.pid() + ") died";
  }

  /** Marks this rank's state and the whole group aborted, so peers waiting on it fail naming it. */
  void abort(String why) {
    mark(ShmSegment.STATE_ABORTED, why);
  }

  private void mark(long state, String why) {
    seg.setState(rank, state, why);
    seg.abortGroup(rank);
  }

  /**
   * The group cannot go on: mark it failed for every rank (a rank arriving later must not complete
   * this step: it sees the mark after publishing its own), tell the peers (they fail fast naming
   * this rank) and throw.
   */
  private void fail(CollectiveException error) {
    fail(error, ShmSegment.STATE_ABORTED, error.getMessage());
  }

  /** {@link #fail(CollectiveException)}, publishing this rank's {@code state} with {@code why} for the peers. */
  private void fail(CollectiveException error, long state, String why) {
    owner.markBroken(error.getMessage());
    mark(state, why);
    throw error;
  }
}
