package dev.gpucoll.core.host;

import dev.gpucoll.core.buffers.HostBuffers;
import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.InvalidArgumentException;
import dev.gpucoll.api.CollectiveMismatchException;
import dev.gpucoll.api.CollectiveTimeoutException;
import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.DataType;
import dev.gpucoll.core.host.UcxScratch.Slot;
import java.nio.Buffer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The one frame of every {@link HostUcxCommunicator} call, so every rank fails alike on bad input
 * or mismatched calls: (1) {@link #open}: the ranks of a host gather their 32-byte headers
 * (signature, status; the problem texts in a second round only when a rank has one) and their
 * inputs into the leader through shared memory; (2) {@link #round}: each leader sends its host's
 * header block, then its data, to the other leaders, and reads every leader's headers before it
 * uses any data, so all leaders reach the same verdict from the same headers in rank order; (3)
 * {@link #close}: each leader broadcasts the verdict and the host's result to its ranks through
 * shared memory. The recipes of the collectives run between (1) and (3).
 */
final class LeaderFrame {
  static final int HEADER_BYTES = 32;
  static final int TEXT_BYTES = UcxLeaders.TEXT_BYTES;
  static final int HOST_HEADER_MAX = 64 * 1024;
  /**
   * Data up to this size rides in the header's message of a round (one message per pair of
   * leaders instead of two: each costs a round of UCX's TCP transport, some microseconds, and one
   * above UCX's rendezvous threshold a round trip more); larger data goes as a message of its own,
   * received in place.
   */
  static final int INLINE_MAX = 64 * 1024;
  /**
   * Chunk of a pipelined round ({@link #pipelinedRound}): small enough that the first chunk's
   * reduction starts early, large enough that a message's fixed cost (some microseconds over TCP)
   * stays small against its transfer.
   */
  static final int CHUNK_BYTES = 128 * 1024;

  /** The work on chunk j of this leader's part, between its arrival and its sending on. */
  @FunctionalInterface
  interface ChunkStep {
    /** Reduces chunk j (every host's part of it has arrived) and returns what goes to the other leaders. */
    ByteBuffer run(int j);
  }

  /** What a recipe does with a piece of a streamed round's data as soon as it has arrived. */
  @FunctionalInterface
  interface Arrival {
    /** Bytes [off, off+len) of {@code in}, what leader g sent, have arrived. */
    void run(int g, ByteBuffer in, long off, long len);
  }

  private final int rank;
  private final int size;
  private final HostTopology topology;
  private final String host;
  private final int[][] hostRanks;
  private final int myHost;
  private final boolean leader;
  private final HostShmCommunicator local;
  private final UcxLeaders leaders;
  private final UcxScratch scratch;

  LeaderFrame(int rank, String host, HostTopology topology, HostShmCommunicator local, UcxLeaders leaders,
      UcxScratch scratch) {
    this.rank = rank;
    this.topology = topology;
    this.size = topology.hostOf().length;
    this.host = host;
    this.hostRanks = topology.hostRanks();
    this.myHost = topology.hostOf()[rank];
    this.leader = hostRanks[myHost][0] == rank;
    this.local = local;
    this.leaders = leaders;
    this.scratch = scratch;
  }

  int rank() {
    return rank;
  }

  HostTopology topology() {
    return topology;
  }

  HostShmCommunicator local() {
    return local;
  }

  UcxScratch scratch() {
    return scratch;
  }

  /** One call in progress on this rank. */
  final class Call {
    final Collective collective;
    final String problem;
    /** Leader: the host's header block (each rank's header, then the problem texts). */
    ByteBuffer header;
    /** Leader: the inputs of the host's ranks, in local-rank order (this rank's alone on a one-rank host). */
    ByteBuffer gathered;
    /** Why the call fails on every rank ("M" + text: a mismatch), or null. */
    String verdict;
    boolean localTrouble;

    Call(Collective c, String problem) {
      this.collective = c;
      this.problem = problem;
    }

    boolean ok() {
      return !localTrouble && verdict == null;
    }
  }

  /**
   * Steps (1) of every call: the host's headers and problem texts, then (when the host has no
   * trouble) its inputs, gathered through shared memory. A recipe on a one-rank host may stage its
   * input itself ({@code input} null: {@code inputBytes} only sets the waits' spin).
   */
  Call open(Collective c, Signature sig, String problem, long inputBytes, Buffer input, DataType type) {
    return open(c, sig, problem, inputBytes, input, type, null);
  }

  /**
   * {@link #open}, gathering the host's inputs into {@code into} (the host's ranks' share of the
   * call's result, {@code inputBytes} per rank), so a recipe that returns them unchanged does not
   * copy them again; null: into the frame's own buffer.
   */
  Call open(Collective c, Signature sig, String problem, long inputBytes, Buffer input, DataType type,
      ByteBuffer into) {
    leaders.nextCall(inputBytes);
    Call f = new Call(c, problem);
    int mine = hostRanks[myHost].length;
    ByteBuffer h = scratch.get(Slot.HEADER, HEADER_BYTES);
    h.putLong(0, sig.packed()).putLong(8, sig.count()).putInt(16, problem == null ? 0 : 1).putInt(20, 0);
    ByteBuffer headers = mine == 1 ? h : localGather(c, h, HEADER_BYTES, Slot.HEADERS);
    boolean trouble = false;
    for (int l = 0; l < mine; l++) {
      trouble |= headers.getInt(l * HEADER_BYTES + 16) != 0 || headers.getLong(l * HEADER_BYTES) != sig.packed()
          || headers.getLong(l * HEADER_BYTES + 8) != sig.count();
    }
    ByteBuffer texts = null;
    boolean anyText = false;
    for (int l = 0; l < mine; l++) {
      anyText |= headers.getInt(l * HEADER_BYTES + 16) != 0;
    }
    if (anyText) {
      ByteBuffer t = scratch.get(Slot.TEXT, TEXT_BYTES + 4);
      byte[] text = problem == null ? new byte[0] : ShmSegment.truncate(problem, TEXT_BYTES);
      t.putInt(0, text.length).put(4, text);
      texts = mine == 1 ? t : localGather(c, t, TEXT_BYTES + 4, Slot.TEXTS);
    }
    f.localTrouble = trouble;
    if (leader) {
      // The block starts with its length: a receiver cannot rely on UCX reporting the received size
      // (JUCX leaves it 0 when a receive completes at once).
      ByteBuffer block = scratch.get(Slot.HOST_HEADER, HOST_HEADER_MAX);
      int at = 4;
      for (int l = 0; l < mine; l++) {
        copyBytes(headers, l * HEADER_BYTES, block, at, HEADER_BYTES);
        at += HEADER_BYTES;
      }
      if (texts != null) {
        for (int l = 0; l < mine && at + TEXT_BYTES + 4 <= HOST_HEADER_MAX; l++) {
          copyBytes(texts, l * (TEXT_BYTES + 4), block, at, TEXT_BYTES + 4);
          at += TEXT_BYTES + 4;
        }
      }
      block.putInt(0, at);
      f.header = range(block, 0, at);
    }
    if (trouble && leader) {
      // The other leaders wait for this host's headers: they learn of the trouble, nothing else moves.
      f.verdict = round(c, UcxLeaders.KIND_DATA1, f.header, new ByteBuffer[hostRanks.length],
          new ByteBuffer[hostRanks.length]);
    }
    if (!trouble && inputBytes > 0 && input != null) {
      // A one-rank host's input goes straight where it is gathered.
      ByteBuffer in = mine == 1 && into != null ? into : scratch.get(Slot.INPUT, inputBytes);
      HostBuffers.copy(HostBuffers.typedView(in, type), 0, input, 0, (int) (inputBytes / type.byteSize()));
      f.gathered = mine == 1 ? in : localGather(c, in, inputBytes, into);
    } else {
      f.gathered = scratch.get(Slot.GATHERED, 0);
    }
    return f;
  }

  /**
   * Step (3): the leader's verdict and then the host's result ({@code resultBytes} of
   * {@code result}; null: the ranks hold it already) reach every rank of the host; a failed call
   * throws here on every rank alike.
   */
  void close(Call f, ByteBuffer result, long resultBytes) {
    int mine = hostRanks[myHost].length;
    String verdict = f.verdict;
    if (f.localTrouble && leader && verdict == null) {
      verdict = "Einternal: the host's trouble reached no verdict";
    }
    if (mine > 1) {
      ByteBuffer v = scratch.get(Slot.VERDICT, 16);
      byte[] text = verdict == null ? new byte[0] : ShmSegment.truncate(verdict, 60_000);
      v.putInt(0, verdict == null ? 0 : 1).putInt(4, text.length);
      localCall(f.collective, () -> local.broadcast(CommBuffer.of(v.duplicate()), CommBuffer.of(v.duplicate()), 16,
          DataType.INT8, 0));
      int status = v.getInt(0);
      int len = v.getInt(4);
      if (status != 0) {
        ByteBuffer t = scratch.get(Slot.VERDICT_TEXT, len);
        if (leader) {
          t.put(0, text);
        }
        if (len > 0) {
          localCall(f.collective, () -> local.broadcast(CommBuffer.of(t.duplicate()), CommBuffer.of(t.duplicate()), len,
              DataType.INT8, 0));
        }
        byte[] b = new byte[len];
        t.get(0, b);
        verdict = new String(b, StandardCharsets.UTF_8);
      } else if (result != null && resultBytes > 0) {
        localCall(f.collective, () -> local.broadcast(CommBuffer.of(result.duplicate()),
            CommBuffer.of(result.duplicate()), resultBytes, DataType.INT8, 0));
      }
    }
    f.verdict = verdict;
    if (verdict != null) {
      if (f.problem != null) {
        throw new InvalidArgumentException(rank, f.collective, f.problem);
      }
      if (verdict.startsWith("M")) {
        throw new CollectiveMismatchException(rank, f.collective, verdict.substring(1));
      }
      throw new CollectiveException(rank, f.collective, verdict.substring(1));
    }
  }

  /** The verdict of all headers in rank order: "E" + problems, "M" + a mismatch, or null. */
  private String verdictOf(Collective c, ByteBuffer[] hostHeaders) {
    List<String> errors = new ArrayList<>();
    long[] sigs = new long[size];
    long[] counts = new long[size];
    for (int g = 0; g < hostRanks.length; g++) {
      ByteBuffer b = hostHeaders[g];
      int n = hostRanks[g].length;
      int textAt = 4 + n * HEADER_BYTES;
      for (int i = 0; i < n; i++) {
        int r = hostRanks[g][i];
        int h = 4 + i * HEADER_BYTES;
        sigs[r] = b.getLong(h);
        counts[r] = b.getLong(h + 8);
        if (b.getInt(h + 16) != 0) {
          String text = "(text lost)";
          int at = textAt + i * (TEXT_BYTES + 4);
          if (at + 4 <= b.limit()) {
            int len = Math.max(0, Math.min(TEXT_BYTES, b.getInt(at)));
            byte[] t = new byte[len];
            b.get(at + 4, t);
            text = new String(t, StandardCharsets.UTF_8);
          }
          errors.add("rank " + r + " rejected its call: " + text);
        }
      }
    }
    List<String> sorted = new ArrayList<>(errors);
    sorted.sort((a, b2) -> Integer.compare(rankOf(a), rankOf(b2)));
    if (!sorted.isEmpty()) {
      return "E" + String.join("; ", sorted);
    }
    for (int r = 1; r < size; r++) {
      if (sigs[r] != sigs[0] || counts[r] != counts[0]) {
        return "Mranks called different collectives: rank 0 called " + Signature.unpack(sigs[0], counts[0]).describe()
            + " but rank " + r + " called " + Signature.unpack(sigs[r], counts[r]).describe();
      }
    }
    return null;
  }

  private static int rankOf(String error) {
    return Integer.parseInt(error.substring(5, error.indexOf(' ', 5)));
  }

  /**
   * Step (2) on a leader: sends {@code header} (when not null) and then {@code out[g]} to leader g,
   * receives {@code in[g]} from each; null or empty buffers move nothing. With a header, reads
   * every leader's header first and returns the verdict (the data requests are then cancelled);
   * else returns null.
   */
  String round(Collective c, int kind, ByteBuffer header, ByteBuffer[] out, ByteBuffer[] in) {
    return round(c, kind, header, out, in, false, null);
  }

  /**
   * {@link #round}, with data larger than {@link #INLINE_MAX} in chunks of {@link #CHUNK_BYTES},
   * each handed to {@code arrival} as soon as it is here (in chunk order, the hosts in turn; inline
   * data too), so that a recipe's copy of a chunk overlaps the transfer of the later ones. Every
   * leader of a call must take the same kind of round (the chunks are messages of their own).
   * Measured: allToAll of 16 MiB on 2 simulated hosts 1.2x Open MPI's time with it, 1.8x without;
   * allGather on 3 simulated hosts on 2 cores 1.5-2x slower with it (more waits, each a context
   * switch when the ranks outnumber the cores), so only allToAll takes it.
   */
  String streamedRound(Collective c, int kind, ByteBuffer header, ByteBuffer[] out, ByteBuffer[] in, Arrival arrival) {
    return round(c, kind, header, out, in, true, arrival);
  }

  private String round(Collective c, int kind, ByteBuffer header, ByteBuffer[] out, ByteBuffer[] in, boolean chunked,
      Arrival arrival) {
    int hosts = hostRanks.length;
    PeerTransport.Request[] hdrIn = new PeerTransport.Request[hosts];
    ByteBuffer[] hdrBufs = new ByteBuffer[hosts];
    PeerTransport.Request[][] dataIn = new PeerTransport.Request[hosts][];
    ByteBuffer[][] inChunks = new ByteBuffer[hosts][];
    boolean[] inlineIn = new boolean[hosts];
    List<PeerTransport.Request> sends = new ArrayList<>();
    int most = 0;
    for (int g = 0; g < hosts; g++) {
      if (g == myHost) {
        continue;
      }
      int peer = hostRanks[g][0];
      if (header != null) {
        hdrBufs[g] = scratch.get(Slot.PEER_HEADER, g, HOST_HEADER_MAX + INLINE_MAX);
        hdrIn[g] = leaders.recv(peer, UcxLeaders.KIND_HEADER, hdrBufs[g]);
      }
      if (in[g] != null && in[g].remaining() > 0) {
        // Leader g makes the same choice from the same size (the verdict fails calls whose sizes differ).
        inlineIn[g] = inline(header, in[g]);
        if (!inlineIn[g]) {
          inChunks[g] = chunked ? chunks(in[g]) : new ByteBuffer[] {in[g]};
          dataIn[g] = new PeerTransport.Request[inChunks[g].length];
          for (int j = 0; j < inChunks[g].length; j++) {
            dataIn[g][j] = leaders.recv(peer, kind, inChunks[g][j].duplicate());
          }
          most = Math.max(most, inChunks[g].length);
        }
      }
    }
    for (int g = 0; g < hosts; g++) {
      if (g == myHost) {
        continue;
      }
      int peer = hostRanks[g][0];
      if (header != null) {
        ByteBuffer message = header.duplicate();
        if (out[g] != null && out[g].remaining() > 0 && inline(header, out[g])) {
          message = scratch.get(Slot.HEADER_OUT, g, (long) header.remaining() + out[g].remaining());
          message.put(header.duplicate()).put(out[g].duplicate()).flip();
        }
        sends.add(leaders.send(peer, UcxLeaders.KIND_HEADER, message));
      }
    }
    for (int g = 0; g < hosts; g++) {
      if (g != myHost && out[g] != null && out[g].remaining() > 0 && !inline(header, out[g])) {
        for (ByteBuffer chunk : chunked ? chunks(out[g]) : new ByteBuffer[] {out[g].duplicate()}) {
          sends.add(leaders.send(hostRanks[g][0], kind, chunk));
        }
      }
    }
    String verdict = null;
    if (header != null) {
      ByteBuffer[] all = new ByteBuffer[hosts];
      all[myHost] = header;
      for (int g = 0; g < hosts; g++) {
        if (g != myHost) {
          leaders.await(c, hdrIn[g], hostRanks[g][0], "header");
          all[g] = checkedHeader(c, g, hdrBufs[g]);
        }
      }
      verdict = verdictOf(c, all);
    }
    if (verdict != null) {
      leaders.drain();
      return verdict;
    }
    for (int g = 0; g < hosts; g++) {
      if (inlineIn[g]) {
        ByteBuffer data = hdrBufs[g].duplicate();
        int at = hdrBufs[g].getInt(0);
        data.limit(at + in[g].remaining()).position(at);
        in[g].duplicate().put(data);
        if (arrival != null) {
          arrival.run(g, in[g], 0, in[g].remaining());
        }
      }
    }
    for (int j = 0; j < most; j++) {
      for (int g = 0; g < hosts; g++) {
        if (dataIn[g] != null && j < dataIn[g].length) {
          // The verdict says every rank made this call, so the sizes agree (a longer message fails as truncated).
          leaders.await(c, dataIn[g][j], hostRanks[g][0], dataIn[g].length == 1 ? "data" : "data (chunk " + j + ")");
          if (arrival != null) {
            arrival.run(g, in[g], (long) j * CHUNK_BYTES, inChunks[g][j].remaining());
          }
        }
      }
    }
    for (PeerTransport.Request s : sends) {
      leaders.await(c, s, -1, "send");
    }
    leaders.roundDone();
    leaders.failIfAbortedBefore(c);
    return null;
  }

  /** Runs a call on the host's shared-memory group; its failure fails this group. */
  void localCall(Collective c, Runnable call) {
    try {
      call.run();
    } catch (CollectiveException e) {
      String text = "inside host " + host + " (ranks " + Arrays.toString(hostRanks[myHost]) + "): " + e.getMessage();
      if (e instanceof CollectiveTimeoutException t) {
        // The host group's ranks, named as this group's.
        List<Integer> missing = t.missingRanks().stream().map(l -> hostRanks[myHost][l]).toList();
        throw leaders.fail(c, new CollectiveTimeoutException(rank, c, missing, text));
      }
      throw leaders.fail(c, new CollectiveException(rank, c, text, e));
    }
  }

  /** The host's ranks' {@code bytes} each, in local-rank order, on every rank of the host. */
  ByteBuffer localGather(Collective c, ByteBuffer mine, long bytes, UcxScratch.Slot slot) {
    return localGather(c, mine, bytes, scratch.get(slot, (long) hostRanks[myHost].length * bytes));
  }

  /** {@link #localGather(Collective, ByteBuffer, long, UcxScratch.Slot)} into {@code all} (null: the frame's). */
  private ByteBuffer localGather(Collective c, ByteBuffer mine, long bytes, ByteBuffer all) {
    int n = hostRanks[myHost].length;
    if (all == null) {
      all = scratch.get(Slot.GATHERED, (long) n * bytes);
    }
    if (n == 1) {
      copyBytes(mine, 0, all, 0, (int) bytes);
      return all;
    }
    if (bytes > 0) {
      ByteBuffer into = all;
      localCall(c, () -> local.allGather(CommBuffer.of(range(mine, 0, (int) bytes)), CommBuffer.of(into.duplicate()), bytes,
          DataType.INT8));
    }
    return all;
  }

  /**
   * Step (2) of a pipelined call, on a leader: two phases in one round. Phase 1 sends the header and
   * then {@code out1[g]}'s chunks to leader g and receives {@code in1[g]}'s; phase 2 receives
   * {@code in2[g]}'s chunks from leader g and sends every leader what {@code step} returns for
   * chunk j, as soon as chunk j of phase 1 has arrived from every host: later chunks are still in
   * flight while it runs. Every receive is posted before anything is sent; chunks of one kind
   * from one leader arrive in order (tag matching keeps a sender's order). Returns the verdict of
   * the headers (nothing else then moves), or null.
   */
  String pipelinedRound(Collective c, ByteBuffer header, ByteBuffer[][] out1, ByteBuffer[][] in1, ByteBuffer[][] in2,
      int myChunks, ChunkStep step) {
    int hosts = hostRanks.length;
    PeerTransport.Request[] hdrIn = new PeerTransport.Request[hosts];
    ByteBuffer[] hdrBufs = new ByteBuffer[hosts];
    PeerTransport.Request[][] phase1 = new PeerTransport.Request[hosts][];
    PeerTransport.Request[][] phase2 = new PeerTransport.Request[hosts][];
    List<PeerTransport.Request> sends = new ArrayList<>();
    for (int g = 0; g < hosts; g++) {
      if (g == myHost) {
        continue;
      }
      int peer = hostRanks[g][0];
      hdrBufs[g] = scratch.get(Slot.PEER_HEADER, g, HOST_HEADER_MAX + INLINE_MAX);
      hdrIn[g] = leaders.recv(peer, UcxLeaders.KIND_HEADER, hdrBufs[g]);
      phase1[g] = new PeerTransport.Request[in1[g].length];
      for (int j = 0; j < in1[g].length; j++) {
        phase1[g][j] = leaders.recv(peer, UcxLeaders.KIND_DATA1, in1[g][j].duplicate());
      }
      phase2[g] = new PeerTransport.Request[in2[g].length];
      for (int j = 0; j < in2[g].length; j++) {
        phase2[g][j] = leaders.recv(peer, UcxLeaders.KIND_DATA2, in2[g][j].duplicate());
      }
    }
    for (int g = 0; g < hosts; g++) {
      if (g != myHost) {
        sends.add(leaders.send(hostRanks[g][0], UcxLeaders.KIND_HEADER, header.duplicate()));
      }
    }
    for (int g = 0; g < hosts; g++) {
      if (g != myHost) {
        for (ByteBuffer chunk : out1[g]) {
          sends.add(leaders.send(hostRanks[g][0], UcxLeaders.KIND_DATA1, chunk.duplicate()));
        }
      }
    }
    ByteBuffer[] all = new ByteBuffer[hosts];
    all[myHost] = header;
    for (int g = 0; g < hosts; g++) {
      if (g != myHost) {
        leaders.await(c, hdrIn[g], hostRanks[g][0], "header");
        all[g] = checkedHeader(c, g, hdrBufs[g]);
      }
    }
    String verdict = verdictOf(c, all);
    if (verdict != null) {
      leaders.drain();
      return verdict;
    }
    for (int j = 0; j < myChunks; j++) {
      for (int g = 0; g < hosts; g++) {
        if (g != myHost) {
          leaders.await(c, phase1[g][j], hostRanks[g][0], "data (chunk " + j + ")");
        }
      }
      ByteBuffer reduced = step.run(j);
      for (int g = 0; g < hosts; g++) {
        if (g != myHost) {
          sends.add(leaders.send(hostRanks[g][0], UcxLeaders.KIND_DATA2, reduced.duplicate()));
        }
      }
    }
    for (int g = 0; g < hosts; g++) {
      if (g != myHost) {
        for (int j = 0; j < phase2[g].length; j++) {
          leaders.await(c, phase2[g][j], hostRanks[g][0], "reduced data (chunk " + j + ")");
        }
      }
    }
    for (PeerTransport.Request s : sends) {
      leaders.await(c, s, -1, "send");
    }
    leaders.roundDone();
    leaders.failIfAbortedBefore(c);
    return null;
  }

  /** {@code b} in chunks of {@link #CHUNK_BYTES} (none when empty). */
  private static ByteBuffer[] chunks(ByteBuffer b) {
    int n = (b.remaining() + CHUNK_BYTES - 1) / CHUNK_BYTES;
    ByteBuffer[] out = new ByteBuffer[n];
    for (int j = 0; j < n; j++) {
      out[j] = range(b, b.position() + (long) j * CHUNK_BYTES, Math.min(CHUNK_BYTES, b.remaining() - (long) j * CHUNK_BYTES));
    }
    return out;
  }

  /** Leader g's header block as received, checked for a plausible length. */
  private ByteBuffer checkedHeader(Collective c, int g, ByteBuffer received) {
    int len = received.getInt(0);
    if (len < 4 + hostRanks[g].length * HEADER_BYTES || len > HOST_HEADER_MAX) {
      throw leaders.fail(c, new CollectiveException(rank, c, "rank " + hostRanks[g][0] + " sent a header block of "
          + len + " bytes for " + hostRanks[g].length + " ranks: a different gpucoll build?"));
    }
    return range(received, 0, len);
  }

  /** True when {@code data} rides in the header's message of a round that has a header. */
  private static boolean inline(ByteBuffer header, ByteBuffer data) {
    return header != null && data.remaining() <= INLINE_MAX;
  }

  /** Bytes [off, off+len) of {@code b} as a buffer of their own (offsets inside one buffer: under 2 GiB). */
  static ByteBuffer range(ByteBuffer b, long off, long len) {
    ByteBuffer d = b.duplicate().order(ByteOrder.nativeOrder());
    d.limit(Math.toIntExact(off + len)).position(Math.toIntExact(off));
    return d.slice().order(ByteOrder.nativeOrder());
  }

  static void copyBytes(ByteBuffer src, long srcOff, ByteBuffer dst, long dstOff, long len) {
    if (len > 0) {
      dst.put(Math.toIntExact(dstOff), src, Math.toIntExact(srcOff), Math.toIntExact(len));
    }
  }
}
