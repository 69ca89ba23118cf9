package dev.gpucoll.core.host;

import dev.gpucoll.core.buffers.HostBuffers;
import dev.gpucoll.core.config.Durations;
import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.CollectiveMismatchException;
import dev.gpucoll.api.CollectiveTimeoutException;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.PathChoice;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.core.Algorithm;
import dev.gpucoll.core.config.GpuCollConf;
import dev.gpucoll.core.spi.GroupContext;
import java.nio.Buffer;
import java.nio.ByteBuffer;
import java.nio.LongBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Ranks of one host over one shared-memory segment, with the barrier-free protocols of the GPU
 * kernels.
 *
 * <p>Every collective is a sequence of steps; step e uses the half (e & 1) of each rank's block. In
 * a step each rank publishes its payload and a header (signature, status) flagged with e, then
 * reads what it needs from every peer. Because each step reads every peer's header, seeing a
 * peer's step-e flag proves that peer finished step e-1, and so finished reading the half that
 * step e+1 will overwrite: no barrier is ever needed (epoch double-buffering).
 *
 * <p>Payloads move in one of two modes, chosen by size: LL slots (16 bytes: 8 B data, then an 8 B
 * flag = epoch; the reader waits per slot, so it can consume while the writer still writes) for
 * payloads up to the LL limit, and bulk copies published by the header flag for larger ones. The
 * GPU kernels write an LL slot with one 16-byte store; Java has no 16-byte atomic store, so the
 * data is stored first and the flag after it with release ordering, and the reader loads the flag
 * with acquire ordering before the data. Large messages go through the bounded bulk region in
 * chunks, one step (one-shot) or two steps (two-shot: reduce-scatter then all-gather) per chunk.
 *
 * <p>Reductions always combine ranks 0..n-1 in order, so all ranks (and one-shot and two-shot) get
 * the same bits.
 */
final class HostShmCommunicator extends AbstractHostCommunicator {
  static final String BACKEND = "host-shm";
  /**
   * Largest payload sent as LL slots. In Java each slot costs a VarHandle store on the writer and
   * an acquire load on every reader, so beyond two slots one bulk copy plus one header flag is
   * faster (measured with HostCollectivesBenchmark, 2 processes: 512 B allReduce 1.4 us with LL,
   * 0.5 us bulk); the GPU kernels, with one 16-byte store per slot, use LL much further.
   */
  static final int LL_MAX_BYTES = 16;
  /** Bulk region per rank and half: the chunk size of large messages. */
  static final int BULK_BYTES = 512 << 10;

  private static final int MODE_LL = 0;
  private static final int MODE_BULK = 1;
  private static final int STATUS_OK = 0;
  private static final int STATUS_ERROR = 1;
  private static final int ERROR_TEXT_MAX = ShmSegment.HEADER_BYTES - 48;

  private final ShmSegment seg;
  private final ByteBuffer buf;
  private final HostBuffers.Views segViews;
  private final HostBuffers.Views stageOut;
  private final HostBuffers.Views[] stageIn;
  private final int ll;
  private final int bulk;
  private final long oneShotMax;
  private final HostRoute route;
  private final Backoff backoff;
  private long epoch;
  /** Peers' processes, looked up on the first wait for each; null: same process or not visible. */
  private final ProcessHandle[] peerProcess;
  private final boolean[] peerLookedUp;
  private long nextLivenessCheck;
  /** How often a waiting rank asks whether the peer's process still exists (a /proc read). */
  private static final long LIVENESS_CHECK_NANOS = 50_000_000;

  // Peer headers of the current step.
  private final long[] hSig;
  private final long[] hCount;
  private final int[] hStatus;
  private final int[] hMode;
  private final int[] hBytes;
  // Scratch for reductions.
  private final Buffer[] srcs;
  private final int[] srcIdx;

  HostShmCommunicator(ShmSegment seg, int rank, String groupId, String host, String rendezvousKind,
      GpuCollConf conf) {
    super(rank, seg.ranks, groupId, host, rendezvousKind, conf);
    this.seg = seg;
    this.buf = seg.buf;
    this.ll = seg.llBytes;
    this.bulk = seg.bulkBytes;
    this.oneShotMax = conf.get(GpuCollConf.HOST_ONE_SHOT_MAX_BYTES);
    this.route = HostRoute.oneHost(seg.ranks, host, seg.size(), ll, bulk, conf);
    // Every rank of a segment is on this host.
    this.backoff = new Backoff(seg.ranks, Backoff.hostCores());
    this.segViews = new HostBuffers.Views(buf.duplicate());
    this.stageOut = new HostBuffers.Views(ByteBuffer.allocateDirect(ll + 8));
    this.stageIn = new HostBuffers.Views[size];
    for (int p = 0; p < size; p++) {
      stageIn[p] = new HostBuffers.Views(ByteBuffer.allocateDirect(ll + 8));
    }
    hSig = new long[size];
    hCount = new long[size];
    hStatus = new int[size];
    hMode = new int[size];
    hBytes = new int[size];
    srcs = new Buffer[size];
    srcIdx = new int[size];
    peerProcess = new ProcessHandle[size];
    peerLookedUp = new boolean[size];
  }

  /** Forms the group's segment through the rendezvous (two rounds) and returns this rank's communicator. */
  static HostShmCommunicator create(GroupContext group) {
    GpuCollConf conf = group.conf();
    HostRoute.checkForced(conf, group.rank(), HostRoute.Between.NONE, BACKEND, List.of());
    Duration timeout = conf.get(GpuCollConf.TIMEOUT);
    int n = group.size();
    int[] members = new int[n];
    Arrays.setAll(members, i -> i);
    ShmSegment seg = SegmentSetup.establish(p -> group.rendezvous().allGather(p, timeout), group.rank(),
        members, Path.of(conf.get(GpuCollConf.SHM_DIR)), llBytesFor(conf), BULK_BYTES);
    return new HostShmCommunicator(seg, group.rank(), group.rendezvous().groupId(), group.self().host(),
        group.rendezvous().kind(), conf);
  }

  static int llBytesFor(GpuCollConf conf) {
    long oneShot = conf.get(GpuCollConf.HOST_ONE_SHOT_MAX_BYTES);
    long capped = Math.min(Math.max(oneShot, 8), LL_MAX_BYTES);
    return (int) ((capped + 7) / 8 * 8);
  }

  @Override
  public String backend() {
    return BACKEND;
  }

  @Override
  HostRoute route() {
    return route;
  }

  @Override
  List<String> findings() {
    return List.of(
        "shm segment " + seg.path + " (" + seg.size() + " bytes, unlinked once every rank mapped it)",
        "LL limit " + ll + " bytes, bulk chunk " + bulk + " bytes, one-shot up to " + oneShotMax + " bytes",
        "timeout " + Durations.format(timeout) + " per wait without progress",
        "waits " + (backoff.oversubscribed() ? "yield from the first look (" + size + " ranks on "
            + Backoff.hostCores() + " cores)" : "spin, then yield, then park"));
  }

  // ---- collectives ----

  @Override
  Algorithm runAllReduce(Signature sig, String problem, Buffer send, Buffer recv, int count, DataType type,
      ReduceOp op) {
    Collective c = Collective.ALL_REDUCE;
    if (problem != null) {
      return failStep(c, sig, problem);
    }
    int es = type.byteSize();
    long bytes = (long) count * es;
    Algorithm algo = route.allReduce(bytes);
    if (algo != Algorithm.HOST_TWOSHOT) {
      int per = route.llStep(bytes) ? count : Math.max(1, bulk / es);
      int off = 0;
      do {
        int len = Math.min(per, count - off);
        long e = publishParts(sig, type, len * es, send, off, len);
        awaitHeaders(c, e, sig, null);
        for (int p = 0; p < size; p++) {
          HostBuffers.Views v = peerPayload(c, p, e, 0, len * es);
          srcs[p] = v.of(type);
          srcIdx[p] = viewBase / es;
        }
        reducer.reduce(type, op, size, srcs, srcIdx, size, recv, off, len);
        off += len;
      } while (off < count);
      return algo;
    }
    int per = Math.max(size, bulk / es);
    int off = 0;
    do {
      int len = Math.min(per, count - off);
      int lo = slice(len, rank);
      int hi = slice(len, rank + 1);
      // Step 1: everyone publishes the chunk but its own slice (no peer reads that); each rank
      // reduces its own slice, taking its own contribution straight from the send buffer.
      long e = ++epoch;
      boolean llMode = route.llStep((long) len * es);
      Buffer out = llMode ? stageOut.of(type) : segViews.of(type);
      int base = llMode ? 0 : seg.bulkOff(rank, half(e)) / es;
      HostBuffers.copy(out, base, send, off, lo);
      HostBuffers.copy(out, base + hi, send, off + hi, len - hi);
      commit(e, sig, null, len * es, llMode);
      awaitHeaders(c, e, sig, null);
      for (int p = 0; p < size; p++) {
        if (p == rank) {
          srcs[p] = send;
          srcIdx[p] = off + lo;
          continue;
        }
        HostBuffers.Views v = peerPayload(c, p, e, lo * es, (hi - lo) * es);
        srcs[p] = v.of(type);
        srcIdx[p] = (viewBase + lo * es) / es;
      }
      reducer.reduce(type, op, size, srcs, srcIdx, size, recv, off + lo, hi - lo);
      // Step 2: everyone publishes its reduced slice; each rank gathers the others'.
      e = publishParts(sig, type, (hi - lo) * es, recv, off + lo, hi - lo);
      awaitHeaders(c, e, sig, null);
      for (int p = 0; p < size; p++) {
        if (p != rank) {
          int plo = slice(len, p);
          int phi = slice(len, p + 1);
          HostBuffers.Views v = peerPayload(c, p, e, 0, (phi - plo) * es);
          HostBuffers.copy(recv, off + plo, v.of(type), viewBase / es, phi - plo);
        }
      }
      off += len;
    } while (off < count);
    return algo;
  }

  private int slice(int len, int r) {
    return (int) ((long) len * r / size);
  }

  @Override
  Algorithm runAllGather(Signature sig, String problem, Buffer send, Buffer recv, int count, DataType type) {
    Collective c = Collective.ALL_GATHER;
    if (problem != null) {
      return failStep(c, sig, problem);
    }
    int es = type.byteSize();
    int per = route.llStep((long) count * es) ? count : Math.max(1, bulk / es);
    int off = 0;
    do {
      int len = Math.min(per, count - off);
      long e = publishParts(sig, type, len * es, send, off, len);
      awaitHeaders(c, e, sig, null);
      for (int p = 0; p < size; p++) {
        HostBuffers.Views v = peerPayload(c, p, e, 0, len * es);
        HostBuffers.copy(recv, p * count + off, v.of(type), viewBase / es, len);
      }
      off += len;
    } while (off < count);
    return route.movement((long) count * es);
  }

  /** Elements per destination block for collectives whose payload holds one block per rank. */
  private int blockElements(long countPerRank, int es) {
    if (route.llStep(countPerRank * es * size)) {
      return (int) countPerRank;
    }
    return Math.max(1, bulk / (es * size));
  }

  @Override
  Algorithm runReduceScatter(Signature sig, String problem, Buffer send, Buffer recv, int count,
      DataType type, ReduceOp op) {
    Collective c = Collective.REDUCE_SCATTER;
    if (problem != null) {
      return failStep(c, sig, problem);
    }
    int es = type.byteSize();
    int per = blockElements(count, es);
    int off = 0;
    do {
      int len = Math.min(per, count - off);
      long e = publishBlocks(sig, type, send, count, off, len);
      awaitHeaders(c, e, sig, null);
      for (int p = 0; p < size; p++) {
        if (p == rank) {
          srcs[p] = send;
          srcIdx[p] = rank * count + off;
          continue;
        }
        HostBuffers.Views v = peerPayload(c, p, e, rank * len * es, len * es);
        srcs[p] = v.of(type);
        srcIdx[p] = (viewBase + rank * len * es) / es;
      }
      reducer.reduce(type, op, size, srcs, srcIdx, size, recv, off, len);
      off += len;
    } while (off < count);
    return route.movement((long) count * es * size);
  }

  @Override
  Algorithm runAllToAll(Signature sig, String problem, Buffer send, Buffer recv, int count, DataType type) {
    Collective c = Collective.ALL_TO_ALL;
    if (problem != null) {
      return failStep(c, sig, problem);
    }
    int es = type.byteSize();
    int per = blockElements(count, es);
    int off = 0;
    do {
      int len = Math.min(per, count - off);
      long e = publishBlocks(sig, type, send, count, off, len);
      awaitHeaders(c, e, sig, null);
      for (int p = 0; p < size; p++) {
        if (p == rank) {
          HostBuffers.copy(recv, p * count + off, send, rank * count + off, len);
          continue;
        }
        HostBuffers.Views v = peerPayload(c, p, e, rank * len * es, len * es);
        HostBuffers.copy(recv, p * count + off, v.of(type), (viewBase + rank * len * es) / es, len);
      }
      off += len;
    } while (off < count);
    return route.movement((long) count * es * size);
  }

  /**
   * Publishes send[q * count + off, +len) for every peer q at payload element q * len; this rank's
   * own block stays out (it takes that straight from its send buffer).
   */
  private long publishBlocks(Signature sig, DataType type, Buffer send, int count, int off, int len) {
    int es = type.byteSize();
    int bytes = len * es * size;
    long e = ++epoch;
    boolean llMode = route.llStep(bytes);
    Buffer out = llMode ? stageOut.of(type) : segViews.of(type);
    int base = llMode ? 0 : seg.bulkOff(rank, half(e)) / es;
    for (int q = 0; q < size; q++) {
      if (q != rank) {
        HostBuffers.copy(out, base + q * len, send, q * count + off, len);
      }
    }
    commit(e, sig, null, bytes, llMode);
    return e;
  }

  @Override
  Algorithm runAllToAllv(Signature sig, String problem, Buffer send, int[] sendCounts, int[] sendDispls,
      Buffer recv, int[] recvCounts, int[] recvDispls, DataType type) {
    Collective c = Collective.ALL_TO_ALLV;
    if (problem != null) {
      return failStep(c, sig, problem);
    }
    // Step 1: every rank publishes its send and receive counts; all check the whole matrix alike.
    long e = ++epoch;
    boolean llMode = route.llStep(16L * size);
    LongBuffer out = (LongBuffer) (llMode ? stageOut.of(DataType.INT64) : segViews.of(DataType.INT64));
    int base = llMode ? 0 : seg.bulkOff(rank, half(e)) / 8;
    for (int q = 0; q < size; q++) {
      out.put(base + q, sendCounts[q]);
      out.put(base + size + q, recvCounts[q]);
    }
    commit(e, sig, null, 16 * size, llMode);
    awaitHeaders(c, e, sig, null);
    long[][] sends = new long[size][size];
    long[][] recvs = new long[size][size];
    for (int p = 0; p < size; p++) {
      HostBuffers.Views v = peerPayload(c, p, e, 0, 16 * size);
      LongBuffer in = (LongBuffer) v.of(DataType.INT64);
      for (int q = 0; q < size; q++) {
        sends[p][q] = in.get(viewBase / 8 + q);
        recvs[p][q] = in.get(viewBase / 8 + size + q);
      }
    }
    long maxEntry = 0;
    for (int p = 0; p < size; p++) {
      for (int q = 0; q < size; q++) {
        if (sends[p][q] != recvs[q][p]) {
          throw new CollectiveMismatchException(rank, c, "rank " + p + " sends " + sends[p][q]
              + " elements to rank " + q + " but rank " + q + " expects " + recvs[q][p] + " from rank " + p);
        }
        maxEntry = Math.max(maxEntry, sends[p][q]);
      }
    }
    int es = type.byteSize();
    int per = blockElements(maxEntry, es);
    Algorithm algo = route.movement((long) per * es * size);
    // Steps 2..: block k of every pair moves in round k.
    for (long start = 0; start < maxEntry; start += per) {
      e = ++epoch;
      int bytes = per * es * size;
      llMode = route.llStep(bytes);
      Buffer o = llMode ? stageOut.of(type) : segViews.of(type);
      int ob = llMode ? 0 : seg.bulkOff(rank, half(e)) / es;
      for (int q = 0; q < size; q++) {
        int len = (int) Math.max(0, Math.min(per, sendCounts[q] - start));
        HostBuffers.copy(o, ob + q * per, send, (int) (sendDispls[q] + start), len);
      }
      commit(e, sig, null, bytes, llMode);
      awaitHeaders(c, e, sig, null);
      for (int p = 0; p < size; p++) {
        int len = (int) Math.max(0, Math.min(per, recvCounts[p] - start));
        if (len > 0) {
          HostBuffers.Views v = peerPayload(c, p, e, rank * per * es, len * es);
          HostBuffers.copy(recv, (int) (recvDispls[p] + start), v.of(type), (viewBase + rank * per * es) / es, len);
        }
      }
    }
    return algo;
  }

  @Override
  Algorithm runBroadcast(Signature sig, String problem, Buffer send, Buffer recv, int count, DataType type,
      int root) {
    Collective c = Collective.BROADCAST;
    if (problem != null) {
      return failStep(c, sig, problem);
    }
    int es = type.byteSize();
    int per = route.llStep((long) count * es) ? count : Math.max(1, bulk / es);
    int off = 0;
    do {
      int len = Math.min(per, count - off);
      long e = rank == root
          ? publishParts(sig, type, len * es, send, off, len)
          : publishParts(sig, type, 0, null, 0, 0);
      awaitHeaders(c, e, sig, null);
      HostBuffers.Views v = peerPayload(c, root, e, 0, len * es);
      HostBuffers.copy(recv, off, v.of(type), viewBase / es, len);
      off += len;
    } while (off < count);
    return route.movement((long) count * es);
  }

  @Override
  Algorithm runBarrier(Signature sig) {
    long e = publishParts(sig, DataType.INT8, 0, null, 0, 0);
    awaitHeaders(Collective.BARRIER, e, sig, null);
    return route.barrier();
  }

  /** A step that carries only this rank's problem; throws after every peer has seen it. */
  private Algorithm failStep(Collective c, Signature sig, String problem) {
    long e = ++epoch;
    commit(e, sig, problem, 0, true);
    awaitHeaders(c, e, sig, problem);
    throw new IllegalStateException("unreachable: awaitHeaders must throw for a problem");
  }

  @Override
  Communicator splitGroup(int color, int key) {
    // Round 0: colors and keys.
    ByteBuffer mine = ByteBuffer.allocate(8).putInt(color).putInt(key);
    List<byte[]> all = exchangeBytes(Signature.setup(1), mine.array());
    int[] members = splitMembers(all, color);
    ShmSegment child = SegmentSetup.establish(p -> exchangeBytes(Signature.setup(2), p), rank,
        members, seg.path.getParent(), ll, bulk);
    if (child == null) {
      return null;
    }
    int newRank = 0;
    while (members[newRank] != rank) {
      newRank++;
    }
    return new HostShmCommunicator(child, newRank, groupId + "/split(" + color + ")", host, rendezvousKind,
        conf);
  }

  /** One step moving a small byte array from every rank to every rank (split, setup). */
  private List<byte[]> exchangeBytes(Signature sig, byte[] payload) {
    if (payload.length > bulk) {
      throw new CollectiveException(rank, null, "setup payload of " + payload.length + " bytes is too big");
    }
    long e = ++epoch;
    boolean llMode = route.llStep(payload.length);
    ByteBuffer out = (ByteBuffer) (llMode ? stageOut.of(DataType.INT8) : segViews.of(DataType.INT8));
    int base = llMode ? 0 : seg.bulkOff(rank, half(e));
    out.put(base, payload);
    commit(e, sig, null, payload.length, llMode);
    awaitHeaders(null, e, sig, null);
    List<byte[]> result = new ArrayList<>(size);
    for (int p = 0; p < size; p++) {
      HostBuffers.Views v = peerPayload(null, p, e, 0, hBytes[p]);
      byte[] b = new byte[hBytes[p]];
      ((ByteBuffer) v.of(DataType.INT8)).get(viewBase, b);
      result.add(b);
    }
    return result;
  }

  @Override
  void abandonGroup(String reason) {
    seg.setState(rank, ShmSegment.STATE_ABORTED, reason);
    seg.abortGroup(rank);
  }

  @Override
  void closeTransport() {
    if (seg.state(rank) != ShmSegment.STATE_ABORTED) { // peers still learn why this rank gave up
      seg.setState(rank, ShmSegment.STATE_CLOSED, "rank " + rank + " closed its communicator");
    }
    seg.close();
  }

  // ---- the step protocol ----

  private static int half(long e) {
    return (int) (e & 1);
  }

  /** Starts step e with payload src[off, off+len) and publishes it; returns e. */
  private long publishParts(Signature sig, DataType type, int bytes, Buffer src, int off, int len) {
    long e = ++epoch;
    boolean llMode = route.llStep(bytes);
    if (len > 0) {
      int es = type.byteSize();
      Buffer out = llMode ? stageOut.of(type) : segViews.of(type);
      int base = llMode ? 0 : seg.bulkOff(rank, half(e)) / es;
      HostBuffers.copy(out, base, src, off, len);
    }
    commit(e, sig, null, bytes, llMode);
    return e;
  }

  /**
   * Publishes step e. Bulk mode: the payload is already in the bulk region and the header's flag,
   * stored last with release ordering, publishes both. LL mode: the header goes first, then each
   * 8-byte word of the staged payload with its own flag.
   */
  private void commit(long e, Signature sig, String problem, int bytes, boolean llMode) {
    int h = half(e);
    int off = seg.headerOff(rank, h);
    // Header: flag, signature word, count, meta (payload bytes, status, mode), error text.
    buf.putLong(off + 8, sig.packed());
    buf.putLong(off + 16, sig.count());
    buf.putLong(off + 24, ((long) bytes << 32) | ((problem == null ? STATUS_OK : STATUS_ERROR) << 1)
        | (llMode ? MODE_LL : MODE_BULK));
    if (problem != null) {
      byte[] text = ShmSegment.truncate(problem, ERROR_TEXT_MAX);
      buf.putInt(off + 44, text.length);
      buf.put(off + 48, text);
    }
    ShmSegment.LONGS.setRelease(buf, off, e);
    backoff.expectBytes(bytes);
    if (llMode && bytes > 0) {
      ByteBuffer staged = stageOut.bytes();
      int slot = seg.llOff(rank, h);
      int words = (bytes + 7) >>> 3;
      for (int w = 0; w < words; w++, slot += 16) {
        buf.putLong(slot, staged.getLong(w << 3));
        ShmSegment.LONGS.setRelease(buf, slot + 8, e);
      }
    }
  }

  /**
   * Waits for every rank's step-e header, then fails alike on every rank if any rank published a
   * problem or a different signature.
   */
  private void awaitHeaders(Collective c, long e, Signature sig, String ownProblem) {
    int h = half(e);
    boolean trouble = ownProblem != null;
    long sigWord = sig.packed();
    long sigCount = sig.count();
    for (int p = 0; p < size; p++) {
      int off = seg.headerOff(p, h);
      if ((long) ShmSegment.LONGS.getAcquire(buf, off) != e) {
        waitFlag(c, p, e, off, "header");
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
      reportTrouble(c, e, ownProblem);
    }
    // This rank's step flag is published; a rank that gave up marked the group before it stopped
    // waiting, so a rank arriving after that fails here instead of completing a step its peers
    // abandoned (the fence keeps the load after the flag store; only an arrival at the very
    // instant of giving up can still complete).
    java.lang.invoke.VarHandle.fullFence();
    int abortedBy = seg.abortedBy();
    if (abortedBy >= 0) {
      String why = seg.reason(abortedBy);
      markBroken("rank " + abortedBy + " gave up on the group: " + why);
      throw new CollectiveException(rank, c, "rank " + abortedBy + " gave up on the group (" + why
          + ") before this rank completed its " + callLabel() + " on this communicator; the group is unusable");
    }
  }

  private void reportTrouble(Collective c, long e, String ownProblem) {
    if (ownProblem != null) {
      throw new CollectiveException(rank, c, ownProblem);
    }
    int h = half(e);
    List<String> errors = new ArrayList<>();
    for (int p = 0; p < size; p++) {
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
    Signature first = peerSignature(0);
    for (int p = 1; p < size; p++) {
      Signature other = peerSignature(p);
      if (!other.equals(first)) {
        throw new CollectiveMismatchException(rank, c, "ranks called different collectives: rank 0 called "
            + first.describe() + " but rank " + p + " called " + other.describe());
      }
    }
  }

  private Signature peerSignature(int p) {
    return Signature.unpack(hSig[p], hCount[p]);
  }

  /** Byte offset of payload byte 0 in the views the last {@link #peerPayload} returned. */
  private int viewBase;

  /**
   * Makes bytes [off, off+len) of peer p's step-e payload readable and returns the views holding
   * them; payload byte 0 sits at {@link #viewBase}. LL payloads are unpacked into p's stage,
   * waiting for each slot's flag.
   */
  private HostBuffers.Views peerPayload(Collective c, int p, long e, int off, int len) {
    if (off + len > hBytes[p]) {
      throw new CollectiveException(rank, c, "rank " + p + " published " + hBytes[p]
          + " payload bytes in " + callLabel() + ", this rank needs " + (off + len));
    }
    int h = half(e);
    if (hMode[p] == MODE_BULK) {
      viewBase = seg.bulkOff(p, h);
      return segViews;
    }
    ByteBuffer stage = stageIn[p].bytes();
    int first = off >>> 3;
    int end = (off + len + 7) >>> 3;
    int slot = seg.llOff(p, h) + first * 16;
    for (int w = first; w < end; w++, slot += 16) {
      if ((long) ShmSegment.LONGS.getAcquire(buf, slot + 8) != e) {
        waitFlag(c, p, e, slot + 8, "LL slot " + w);
      }
      stage.putLong(w << 3, buf.getLong(slot));
    }
    viewBase = 0;
    return stageIn[p];
  }

  /**
   * Waits until the flag at {@code off} holds e, or fails naming rank p and the step. The timeout
   * runs from the start of this wait: it bounds the time without progress, so a long call whose
   * peers keep arriving never times out. A cancellation of the call ends the wait at the next slow
   * check.
   */
  private void waitFlag(Collective c, int p, long e, int off, String what) {
    Backoff b = backoff.begin();
    long deadline = System.nanoTime() + bounds.timeoutNanos();
    while (true) {
      long v = (long) ShmSegment.LONGS.getAcquire(buf, off);
      if (v == e) {
        return;
      }
      if (v > e) {
        fail(c, new CollectiveException(rank, c, "rank " + p + " has gone on to a later call than this rank's " + callLabel()
            + ": the ranks' call sequences diverged"));
      }
      if (b.slowCheckDue()) {
        if (isClosed()) {
          fail(c, new CollectiveException(rank, c, "the communicator was closed while this rank waited for rank "
              + p + " in " + callLabel()));
        }
        String cancelled = bounds.cancellation();
        if (cancelled != null) {
          fail(c, new CollectiveException(rank, c, "cancelled while waiting for rank " + p + " in " + callLabel()
              + ": " + cancelled));
        }
        if (p != rank) {
          long state = seg.state(p);
          if (state != ShmSegment.STATE_ALIVE && (long) ShmSegment.LONGS.getAcquire(buf, off) != e) {
            // A peer that stopped after another rank gave up on the group: name the first cause.
            int by = seg.abortedBy();
            if (by >= 0 && by != p) {
              fail(c, new CollectiveException(rank, c, "rank " + by + " gave up on the group (" + seg.reason(by)
                  + ") while this rank waited for the " + what + " of rank " + p + " in " + callLabel()));
            }
            String what2 = state == ShmSegment.STATE_CLOSED ? "closed its communicator" : "gave up";
            fail(c, new CollectiveException(rank, c, "rank " + p + " " + what2 + " while this rank waited for its "
                + what + " in " + callLabel() + ": " + seg.reason(p)));
          }
          String dead = deadProcess(p);
          if (dead != null && (long) ShmSegment.LONGS.getAcquire(buf, off) != e) {
            fail(c, new CollectiveTimeoutException(rank, c, List.of(p), "rank " + p + " is gone: " + dead
                + " while this rank waited for its " + what + " in " + callLabel()));
          }
        }
      }
      if (!b.pause(deadline)) {
        fail(c, new CollectiveTimeoutException(rank, c, List.of(p), "rank " + p + " did not arrive within "
            + Durations.format(bounds.timeout()) + " (waited for its " + what + " in " + callLabel() + ")"));
      }
    }
  }

  /**
   * Why peer p's process no longer exists, or null (alive, not checked yet this period, in this
   * process, or not visible from here). Checked at most every {@link #LIVENESS_CHECK_NANOS}.
   */
  private String deadProcess(int p) {
    long now = System.nanoTime();
    if (now - nextLivenessCheck < 0) {
      return null;
    }
    nextLivenessCheck = now + LIVENESS_CHECK_NANOS;
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

  /**
   * Gives up on the group from outside a call (a communicator built on this one failed): the
   * ranks waiting in this segment fail naming this rank instead of waiting out their timeout.
   */
  void abandon(String why) {
    markBroken(why);
    seg.setState(rank, ShmSegment.STATE_ABORTED, why);
    seg.abortGroup(rank);
  }

  /**
   * The group cannot go on: mark it failed for every rank (a rank arriving later must not complete
   * this step: it sees the mark after publishing its own), tell the peers (they fail fast naming
   * this rank) and throw.
   */
  private void fail(Collective c, CollectiveException error) {
    markBroken(error.getMessage());
    seg.setState(rank, ShmSegment.STATE_ABORTED, error.getMessage());
    seg.abortGroup(rank);
    throw error;
  }
}
