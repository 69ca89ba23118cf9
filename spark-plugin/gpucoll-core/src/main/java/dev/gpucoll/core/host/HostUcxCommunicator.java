package dev.gpucoll.core.host;

import dev.gpucoll.core.buffers.HostBuffers;
import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.CollectiveMismatchException;
import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.core.Algorithm;
import dev.gpucoll.core.config.Durations;
import dev.gpucoll.core.config.GpuCollConf;
import dev.gpucoll.core.spi.GroupContext;
import dev.gpucoll.core.spi.MemberInfo;
import dev.gpucoll.core.spi.SplitOrder;
import dev.gpucoll.core.host.UcxScratch.Slot;
import java.nio.Buffer;
import java.nio.ByteBuffer;
import java.nio.LongBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.IntFunction;

/**
 * Ranks on several hosts: inside each host the shared-memory communicator
 * ({@link HostShmCommunicator}), between hosts one leader per host (its lowest rank) over a
 * {@link PeerTransport} (UCX).
 *
 * <p>Three parts, by concern: this class holds the recipes of the collectives (what each leader
 * sends, receives and reduces) and the group's formation and split; {@link LeaderFrame} is the one
 * frame every call runs in (gather into the leader, the leaders' round with every host's headers
 * read before any data, release to the host's ranks), so every rank fails alike on bad input or
 * mismatched calls; {@link UcxLeaders} is the leaders' link and its liveness (tagged messages,
 * bounded waits, abort messages). {@link HostRoute} decides one-shot or two-shot.
 *
 * <p>Reductions combine the raw inputs of ranks 0..n-1 in rank order with the same
 * {@link Reducer} as the shared-memory path, so the results are bit-identical to a one-host group
 * and equal on every rank (leaders move raw inputs, never partial sums of their host: those would
 * change the order of floating-point additions). One-shot (small): every leader gets every host's
 * inputs and reduces the whole vector. Two-shot (larger): leader h reduces slice h of the vector
 * from every host's inputs, then the leaders exchange the reduced slices (pairwise, so each link
 * carries each byte once per phase, as a ring would, with one round trip per phase).
 */
final class HostUcxCommunicator extends AbstractHostCommunicator {
  static final String BACKEND = "host-ucx";
  private static final int MAX_RANKS = 1 << 20;

  /** Host index of each rank; hosts are numbered in the order of their lowest rank. */
  private final int[] hostOf;
  /** The ranks of each host, ascending; the first is the host's leader. */
  private final int[][] hostRanks;
  private final String[] hostNames;
  private final int myHost;
  private final int localRank;
  private final boolean leader;
  private final HostShmCommunicator local;
  private final PeerTransport transport;
  private final byte[][] addresses;
  private final IntFunction<PeerTransport> transports;
  private final long oneShotMax;
  private final HostRoute route;
  private final UcxScratch scratch;
  /** The leaders' link: messages between hosts, waits, aborts. */
  private final UcxLeaders leaders;
  /** The frame of every call: gather into the leader, the leaders' round, release. */
  private final LeaderFrame frame;

  private HostUcxCommunicator(int rank, String groupId, String host, String rendezvousKind, GpuCollConf conf,
      String[] hostByRank, HostShmCommunicator local, PeerTransport transport, byte[][] addresses,
      IntFunction<PeerTransport> transports) {
    super(rank, hostByRank.length, groupId, host, rendezvousKind, conf);
    HostTopology topology = new HostTopology(hostByRank);
    this.hostOf = topology.hostOf();
    this.hostRanks = topology.hostRanks();
    this.hostNames = topology.hostNames();
    this.myHost = hostOf[rank];
    this.localRank = indexOf(hostRanks[myHost], rank);
    this.leader = localRank == 0;
    this.local = local;
    if (local.rank() != localRank || local.size() != hostRanks[myHost].length) {
      throw new IllegalStateException("host group of rank " + rank + " is rank " + local.rank() + " of "
          + local.size() + ", expected " + localRank + " of " + hostRanks[myHost].length);
    }
    this.transport = transport;
    this.addresses = addresses;
    this.transports = transports;
    this.oneShotMax = conf.get(GpuCollConf.HOST_ONE_SHOT_MAX_BYTES);
    this.route = HostRoute.ucx(hostByRank, conf);
    this.scratch = new UcxScratch(hostRanks.length);
    this.leaders = new UcxLeaders(this, topology, transport, addresses, local, scratch);
    this.frame = new LeaderFrame(rank, host, topology, local, leaders, scratch);
  }

  /**
   * Forms the group: one rendezvous round for the transport addresses (every rank opens one, since
   * a split may make any rank a leader), then the shared-memory segment of each host.
   */
  static HostUcxCommunicator create(GroupContext group, IntFunction<PeerTransport> transports) {
    GpuCollConf conf = group.conf();
    int rank = group.rank();
    int n = group.size();
    HostRoute.checkForced(conf, rank, HostRoute.Between.UCX, BACKEND, List.of());
    if (n > MAX_RANKS) {
      throw new CollectiveException(rank, null, BACKEND + " serves at most " + MAX_RANKS + " ranks, got " + n);
    }
    Duration timeout = conf.get(GpuCollConf.TIMEOUT);
    PeerTransport transport = null;
    String problem = null;
    try {
      transport = transports.apply(n);
    } catch (RuntimeException | LinkageError e) {
      problem = "cannot open a UCX worker: " + e;
    }
    try {
      byte[] mine = transport == null ? ("ERR " + problem).getBytes(StandardCharsets.UTF_8) : join("OK ", transport.address());
      List<byte[]> all = group.rendezvous().allGather(mine, timeout);
      byte[][] addresses = new byte[n][];
      List<String> failures = new ArrayList<>();
      for (int r = 0; r < n; r++) {
        byte[] a = all.get(r);
        String head = new String(a, 0, Math.min(3, a.length), StandardCharsets.UTF_8);
        if (head.equals("OK ")) {
          addresses[r] = Arrays.copyOfRange(a, 3, a.length);
        } else {
          failures.add("rank " + r + " (" + group.members().get(r).host() + "): "
              + new String(a, Math.min(4, a.length), Math.max(0, a.length - 4), StandardCharsets.UTF_8));
        }
      }
      if (!failures.isEmpty()) {
        throw new CollectiveException(rank, null, "the group spans hosts but UCX failed on "
            + String.join("; ", failures));
      }
      String[] hostByRank = group.members().stream().map(MemberInfo::host).toArray(String[]::new);
      int[] mates = java.util.stream.IntStream.range(0, n).filter(r -> hostByRank[r].equals(hostByRank[rank]))
          .toArray();
      ShmSegment seg = SegmentSetup.establish(p -> group.rendezvous().allGather(p, timeout), rank, mates,
          Path.of(conf.get(GpuCollConf.SHM_DIR)), HostShmCommunicator.llBytesFor(conf),
          HostShmCommunicator.BULK_BYTES);
      String gid = group.rendezvous().groupId();
      HostShmCommunicator local = new HostShmCommunicator(seg, indexOf(mates, rank), gid + "/host",
          group.self().host(), group.rendezvous().kind(), conf);
      HostUcxCommunicator comm = new HostUcxCommunicator(rank, gid, group.self().host(), group.rendezvous().kind(),
          conf, hostByRank, local, transport, addresses, transports);
      transport = null;
      return comm;
    } finally {
      if (transport != null) {
        transport.close();
      }
    }
  }

  @Override
  public String backend() {
    return BACKEND;
  }

  /** The leader gathers its host's inputs, and the results, in one direct buffer each (2 GiB at most). */
  @Override
  long maxCallBytes() {
    return Integer.MAX_VALUE - 8;
  }

  @Override
  HostRoute route() {
    return route;
  }

  private List<Integer> leaders() {
    List<Integer> out = new ArrayList<>();
    for (int[] h : hostRanks) {
      out.add(h[0]);
    }
    return out;
  }

  @Override
  List<String> findings() {
    List<String> out = new ArrayList<>();
    StringBuilder hosts = new StringBuilder();
    for (int h = 0; h < hostRanks.length; h++) {
      hosts.append(h == 0 ? "" : ", ").append(hostNames[h]).append(" ranks ").append(Arrays.toString(hostRanks[h]));
    }
    out.add("cross-host: " + hostRanks.length + " hosts (" + hosts + "), leaders " + leaders() + " over "
        + transport.describe());
    out.add("inside host " + host + ": shared memory with " + hostRanks[myHost].length + " ranks ("
        + local.findings().get(0) + ")");
    out.add("one-shot up to " + oneShotMax + " bytes, two-shot above; timeout " + Durations.format(timeout) + " per wait without progress");
    return out;
  }

  // ---- collectives ----

  @Override
  Algorithm runAllReduce(Signature sig, String problem, Buffer send, Buffer recv, int count, DataType type,
      ReduceOp op) {
    Collective c = Collective.ALL_REDUCE;
    int es = problem == null ? type.byteSize() : 0;
    long bytes = (long) count * es;
    Algorithm algo = route.allReduce(bytes);
    boolean two = algo == Algorithm.HOST_UCX_TWOSHOT;
    LeaderFrame.Call f = frame.open(c, sig, problem, bytes, send, type);
    ByteBuffer result = scratch.get(Slot.RESULT, bytes);
    if (leader && f.ok()) {
      int hosts = hostRanks.length;
      if (!two) {
        ByteBuffer[] in = exchangeGathered(c, f, bytes);
        if (f.verdict == null) {
          reduceRanks(type, op, f.gathered, in, bytes, 0, count, result, 0);
        }
      } else {
        twoShot(c, f, type, op, count, result, hostRanks[myHost].length == 1 ? recv : null);
      }
    }
    frame.close(f, result, bytes);
    if (f.ok() && !(two && hostRanks[myHost].length == 1)) {
      HostBuffers.copy(recv, 0, HostBuffers.typedView(result, type), 0, count);
    }
    return algo;
  }

  /**
   * Two-shot allReduce on a leader, pipelined: leader h reduces slice h of the vector, in chunks of
   * {@link LeaderFrame#CHUNK_BYTES}; every chunk of every host's inputs is in flight at once, and
   * each reduced chunk goes to the other leaders as soon as it is reduced, while later chunks still
   * arrive (one pass over each link per phase, as a ring would, with the reduction overlapped).
   * With {@code recv} (a one-rank host's output), every chunk of the result goes there as soon as
   * it is reduced or has arrived, overlapping the transfer of the later ones.
   */
  private void twoShot(Collective c, LeaderFrame.Call f, DataType type, ReduceOp op, int count, ByteBuffer result,
      Buffer recv) {
    int hosts = hostRanks.length;
    int mine = hostRanks[myHost].length;
    int es = type.byteSize();
    long bytes = (long) count * es;
    int chunk = Math.max(1, LeaderFrame.CHUNK_BYTES / es);
    int lo = slice(count, myHost, hosts);
    int len = slice(count, myHost + 1, hosts) - lo;
    int myChunks = (len + chunk - 1) / chunk;
    ByteBuffer[][] out1 = new ByteBuffer[hosts][];
    ByteBuffer[][] in1 = new ByteBuffer[hosts][];
    ByteBuffer[][] in2 = new ByteBuffer[hosts][];
    for (int g = 0; g < hosts; g++) {
      if (g == myHost) {
        continue;
      }
      int ng = hostRanks[g].length;
      int glo = slice(count, g, hosts);
      int glen = slice(count, g + 1, hosts) - glo;
      int gChunks = (glen + chunk - 1) / chunk;
      // To g: chunk j of slice g from each of this host's ranks, chunk after chunk (rank-major within
      // one); a host of one rank sends straight from its input.
      ByteBuffer packed = mine == 1 ? f.gathered : scratch.get(Slot.OUT, g, (long) mine * glen * es);
      out1[g] = new ByteBuffer[gChunks];
      in2[g] = new ByteBuffer[gChunks];
      long at = mine == 1 ? (long) glo * es : 0;
      for (int j = 0; j < gChunks; j++) {
        int jlen = Math.min(chunk, glen - j * chunk);
        for (int i = 0; i < mine && mine > 1; i++) {
          LeaderFrame.copyBytes(f.gathered, i * bytes + (long) (glo + j * chunk) * es, packed, at + (long) i * jlen * es,
              (long) jlen * es);
        }
        out1[g][j] = LeaderFrame.range(packed, at, (long) mine * jlen * es);
        at += (long) mine * jlen * es;
        in2[g][j] = LeaderFrame.range(result, (long) (glo + j * chunk) * es, (long) jlen * es);
      }
      // From g: chunk j of this host's slice from each of g's ranks.
      ByteBuffer from = scratch.get(Slot.IN, g, (long) ng * len * es);
      in1[g] = new ByteBuffer[myChunks];
      at = 0;
      for (int j = 0; j < myChunks; j++) {
        int jlen = Math.min(chunk, len - j * chunk);
        in1[g][j] = LeaderFrame.range(from, at, (long) ng * jlen * es);
        at += (long) ng * jlen * es;
      }
    }
    ByteBuffer[] chunkIn = new ByteBuffer[hosts];
    f.verdict = frame.pipelinedRound(c, f.header, out1, in1, in2, myChunks, j -> {
      int jlo = lo + j * chunk;
      int jlen = Math.min(chunk, len - j * chunk);
      for (int g = 0; g < hosts; g++) {
        chunkIn[g] = g == myHost ? null : in1[g][j];
      }
      reduceSlice(type, op, f.gathered, bytes, (long) jlo * es, chunkIn, jlen, result, jlo);
      if (recv != null) {
        HostBuffers.copy(recv, jlo, HostBuffers.typedView(result, type), jlo, jlen);
      }
      return LeaderFrame.range(result, (long) jlo * es, (long) jlen * es);
    }, recv == null ? null : (g, from, off, n) -> {
      int at = slice(count, g, hosts) + (int) (off / es);
      HostBuffers.copy(recv, at, HostBuffers.typedView(result, type), at, (int) (n / es));
    });
  }

  @Override
  Algorithm runAllGather(Signature sig, String problem, Buffer send, Buffer recv, int count, DataType type) {
    Collective c = Collective.ALL_GATHER;
    int es = problem == null ? type.byteSize() : 0;
    long bytes = (long) count * es;
    ByteBuffer result = scratch.get(Slot.RESULT, size * bytes);
    LeaderFrame.Call f = frame.open(c, sig, problem, bytes, send, type, inPlace(result, myHost, bytes));
    if (hostRanks[myHost].length == 1) {
      // The only rank of its host: each piece received goes to the output as soon as it has
      // arrived, its own block straight from its input.
      gatherHosts(c, f, result, bytes, (g, from, off, len) -> toOutput(recv, type, from, g, bytes, off, len));
      HostBuffers.copy(recv, rank * count, send, 0, count);
      return route.movement(0);
    }
    gatherHosts(c, f, result, bytes, null);
    if (f.ok()) {
      HostBuffers.copy(recv, 0, HostBuffers.typedView(result, type), 0, size * count);
    }
    return route.movement(0);
  }

  /**
   * Bytes [off, off+len) of what leader g sent, arrived in {@code from} (g's ranks' {@code block}
   * bytes each, in rank order from {@code from}'s position), to the output at those ranks' places.
   */
  private void toOutput(Buffer recv, DataType type, ByteBuffer from, int g, long block, long off, long len) {
    int es = type.byteSize();
    int[] ranks = hostRanks[g];
    Buffer src = HostBuffers.typedView(from, type);
    for (long at = off; at < off + len; ) {
      int i = (int) (at / block);
      long upTo = Math.min(off + len, (i + 1) * block);
      HostBuffers.copy(recv, (int) ((ranks[i] * block + at - i * block) / es), src, (int) (at / es),
          (int) ((upTo - at) / es));
      at = upTo;
    }
  }

  /**
   * Where host g's ranks' {@code bytes} each lie in a result of every rank's, by rank: a range of
   * {@code result} when g's ranks are consecutive (then they are gathered and received there, with
   * no assembly), else null.
   */
  private ByteBuffer inPlace(ByteBuffer result, int g, long bytes) {
    int[] ranks = hostRanks[g];
    boolean consecutive = ranks[ranks.length - 1] - ranks[0] == ranks.length - 1;
    return consecutive ? LeaderFrame.range(result, ranks[0] * bytes, ranks.length * bytes) : null;
  }

  /**
   * The all-gather after {@link LeaderFrame#open} (with {@link #inPlace} of this host): every
   * leader sends its host's inputs to every other, receiving each host's in place where it can;
   * leaves every rank's {@code bytes}, by rank, in {@code result} on every rank, or, on a one-rank
   * host, hands each piece received to {@code arrival} instead.
   */
  private void gatherHosts(Collective c, LeaderFrame.Call f, ByteBuffer result, long bytes, LeaderFrame.Arrival arrival) {
    if (leader && f.ok()) {
      int hosts = hostRanks.length;
      ByteBuffer[] out = new ByteBuffer[hosts];
      ByteBuffer[] in = new ByteBuffer[hosts];
      for (int g = 0; g < hosts; g++) {
        if (g != myHost) {
          out[g] = f.gathered;
          in[g] = inPlace(result, g, bytes);
          if (in[g] == null) {
            in[g] = scratch.get(Slot.IN, g, hostRanks[g].length * bytes);
          }
        }
      }
      f.verdict = frame.round(c, UcxLeaders.KIND_DATA1, f.header, out, in, arrival);
      if (f.verdict == null && arrival == null) {
        in[myHost] = f.gathered;
        for (int g = 0; g < hosts; g++) {
          if (inPlace(result, g, bytes) == null) {
            for (int i = 0; i < hostRanks[g].length; i++) {
              LeaderFrame.copyBytes(in[g], i * bytes, result, hostRanks[g][i] * bytes, bytes);
            }
          }
        }
      }
    }
    frame.close(f, result, size * bytes);
  }

  /**
   * A leader's first round after {@link #open}: this host's gathered frame data ({@code bytes} per
   * rank) to every other leader; returns theirs by host (null at this host) and sets the verdict.
   */
  private ByteBuffer[] exchangeGathered(Collective c, LeaderFrame.Call f, long bytes) {
    ByteBuffer[] out = new ByteBuffer[hostRanks.length];
    ByteBuffer[] in = new ByteBuffer[hostRanks.length];
    for (int g = 0; g < hostRanks.length; g++) {
      if (g != myHost) {
        out[g] = f.gathered;
        in[g] = scratch.get(Slot.IN, g, hostRanks[g].length * bytes);
      }
    }
    f.verdict = frame.round(c, UcxLeaders.KIND_DATA1, f.header, out, in);
    return in;
  }

  @Override
  Algorithm runReduceScatter(Signature sig, String problem, Buffer send, Buffer recv, int count, DataType type,
      ReduceOp op) {
    Collective c = Collective.REDUCE_SCATTER;
    int es = problem == null ? type.byteSize() : 0;
    long block = (long) count * es;
    int mine = hostRanks[myHost].length;
    LeaderFrame.Call f = frame.open(c, sig, problem, size * block, send, type);
    ByteBuffer result = scratch.get(Slot.RESULT, mine * block);
    if (leader && f.ok()) {
      ByteBuffer[][] io = blockRound(c, f, block);
      if (f.verdict == null) {
        Buffer[] srcs = new Buffer[size];
        int[] idx = new int[size];
        for (int l = 0; l < mine; l++) {
          int dest = hostRanks[myHost][l];
          for (int r = 0; r < size; r++) {
            int g = hostOf[r];
            int i = indexOf(hostRanks[g], r);
            if (g == myHost) {
              srcs[r] = HostBuffers.typedView(f.gathered, type);
              idx[r] = (i * size + dest) * count;
            } else {
              srcs[r] = HostBuffers.typedView(io[1][g], type);
              idx[r] = (i * mine + l) * count;
            }
          }
          reducer.reduce(type, op, size, srcs, idx, size, HostBuffers.typedView(result, type), l * count, count);
        }
      }
    }
    frame.close(f, result, mine * block);
    if (f.ok()) {
      HostBuffers.copy(recv, 0, HostBuffers.typedView(result, type), localRank * count, count);
    }
    return route.movement(0);
  }

  @Override
  Algorithm runAllToAll(Signature sig, String problem, Buffer send, Buffer recv, int count, DataType type) {
    Collective c = Collective.ALL_TO_ALL;
    int es = problem == null ? type.byteSize() : 0;
    long block = (long) count * es;
    int mine = hostRanks[myHost].length;
    if (mine == 1) {
      return allToAllAlone(sig, problem, send, recv, count, type, block);
    }
    LeaderFrame.Call f = frame.open(c, sig, problem, size * block, send, type);
    ByteBuffer result = scratch.get(Slot.RESULT, mine * size * block);
    if (leader && f.ok()) {
      ByteBuffer[][] io = blockRound(c, f, block);
      if (f.verdict == null) {
        for (int l = 0; l < mine; l++) {
          int dest = hostRanks[myHost][l];
          for (int r = 0; r < size; r++) {
            int g = hostOf[r];
            int i = indexOf(hostRanks[g], r);
            long at = (l * size + r) * block;
            if (g == myHost) {
              LeaderFrame.copyBytes(f.gathered, (i * size + dest) * block, result, at, block);
            } else {
              LeaderFrame.copyBytes(io[1][g], (i * mine + l) * block, result, at, block);
            }
          }
        }
      }
    }
    frame.close(f, result, mine * size * block);
    if (f.ok()) {
      HostBuffers.copy(recv, 0, HostBuffers.typedView(result, type), localRank * size * count, size * count);
    }
    return route.movement(0);
  }

  /**
   * allToAll on the only rank of its host, with a third of the general recipe's copies at 2 hosts:
   * only the blocks for other hosts are staged (one buffer per host), this rank's block for itself
   * goes from its input to its output directly, and the other hosts' blocks go to the output from
   * where they were received; large ones chunk by chunk as they arrive, while later chunks are in
   * flight.
   */
  private Algorithm allToAllAlone(Signature sig, String problem, Buffer send, Buffer recv, int count, DataType type,
      long block) {
    Collective c = Collective.ALL_TO_ALL;
    int hosts = hostRanks.length;
    LeaderFrame.Call f = frame.open(c, sig, problem, size * block, null, type);
    ByteBuffer[] in = new ByteBuffer[hosts];
    if (f.ok()) {
      ByteBuffer[] out = new ByteBuffer[hosts];
      for (int g = 0; g < hosts; g++) {
        if (g == myHost) {
          continue;
        }
        int[] ranks = hostRanks[g];
        out[g] = scratch.get(Slot.OUT, g, ranks.length * block);
        for (int j = 0; j < ranks.length; j++) {
          HostBuffers.copy(HostBuffers.typedView(out[g], type), j * count, send, ranks[j] * count, count);
        }
        in[g] = scratch.get(Slot.IN, g, ranks.length * block);
      }
      // Each piece goes to the output as soon as it has arrived (the verdict has passed by then).
      f.verdict = frame.round(c, UcxLeaders.KIND_DATA1, f.header, out, in,
          (g, from, off, len) -> toOutput(recv, type, from, g, block, off, len));
    }
    frame.close(f, null, 0);
    HostBuffers.copy(recv, rank * count, send, rank * count, count);
    return route.movement(0);
  }

  /**
   * The leaders' exchange of fixed blocks (reduceScatter, allToAll): to leader g go, for each rank
   * of this host, its blocks for g's ranks; from g come, for each of g's ranks, its blocks for this
   * host's ranks. Returns {out, in} by host.
   */
  private ByteBuffer[][] blockRound(Collective c, LeaderFrame.Call f, long block) {
    int hosts = hostRanks.length;
    int mine = hostRanks[myHost].length;
    ByteBuffer[] out = new ByteBuffer[hosts];
    ByteBuffer[] in = new ByteBuffer[hosts];
    for (int g = 0; g < hosts; g++) {
      if (g == myHost) {
        continue;
      }
      int ng = hostRanks[g].length;
      // A one-rank host's blocks for a host of consecutive ranks lie together in its input.
      ByteBuffer o = mine == 1 ? inPlace(f.gathered, g, block) : null;
      if (o == null) {
        o = scratch.get(Slot.OUT, g, mine * ng * block);
        for (int l = 0; l < mine; l++) {
          for (int j = 0; j < ng; j++) {
            LeaderFrame.copyBytes(f.gathered, (l * size + hostRanks[g][j]) * block, o, (l * ng + j) * block, block);
          }
        }
      }
      out[g] = o;
      in[g] = scratch.get(Slot.IN, g, ng * mine * block);
    }
    f.verdict = frame.round(c, UcxLeaders.KIND_DATA1, f.header, out, in);
    return new ByteBuffer[][] {out, in};
  }

  @Override
  Algorithm runAllToAllv(Signature sig, String problem, Buffer send, int[] sendCounts, int[] sendDispls,
      Buffer recv, int[] recvCounts, int[] recvDispls, DataType type) {
    Collective c = Collective.ALL_TO_ALLV;
    int es = problem == null ? type.byteSize() : 0;
    int mine = hostRanks[myHost].length;
    // The frame's data are this rank's counts; the packed sends follow in a second local gather.
    ByteBuffer counts = scratch.get(Slot.COUNTS, 16 * size);
    if (problem == null) {
      LongBuffer lc = counts.asLongBuffer();
      for (int q = 0; q < size; q++) {
        lc.put(q, sendCounts[q]);
        lc.put(size + q, recvCounts[q]);
      }
    }
    LeaderFrame.Call f = frame.open(c, sig, problem, 16 * size, problem == null ? counts.asLongBuffer() : null, DataType.INT64);
    long[][] sc = new long[size][];
    long[][] rc = new long[size][];
    long[] localSend = new long[mine];
    long[] localRecv = new long[mine];
    ByteBuffer packed = null;
    if (f.ok()) {
      for (int l = 0; l < mine; l++) {
        int r = hostRanks[myHost][l];
        readCounts(f.gathered.asLongBuffer(), l, r, sc, rc);
        localSend[l] = Arrays.stream(sc[r]).sum();
        localRecv[l] = Arrays.stream(rc[r]).sum();
      }
      long maxSend = Arrays.stream(localSend).max().orElse(0);
      // The packed send of this rank: its blocks in destination order, padded to the host's longest.
      ByteBuffer mineP = scratch.get(Slot.PACKED, (int) (maxSend * es));
      long at = 0;
      for (int q = 0; q < size; q++) {
        HostBuffers.copy(HostBuffers.typedView(mineP, type), (int) at, send, sendDispls[q], sendCounts[q]);
        at += sendCounts[q];
      }
      packed = frame.localGather(c, mineP, maxSend * es, Slot.GATHERED_V);
    }
    long resultBytes = Arrays.stream(localRecv).sum() * es;
    ByteBuffer result = scratch.get(Slot.RESULT, resultBytes);
    if (leader && f.ok()) {
      int hosts = hostRanks.length;
      // Round 1 carried the counts: every leader now holds the whole matrix and checks it alike.
      ByteBuffer[] in = exchangeGathered(c, f, 16 * size);
      if (f.verdict == null) {
        for (int g = 0; g < hosts; g++) {
          if (g != myHost) {
            for (int i = 0; i < hostRanks[g].length; i++) {
              readCounts(in[g].asLongBuffer(), i, hostRanks[g][i], sc, rc);
            }
          }
        }
        f.verdict = countsMismatch(sc, rc);
      }
      if (f.verdict == null) {
        long maxSend = Arrays.stream(localSend).max().orElse(0);
        ByteBuffer[] out2 = new ByteBuffer[hosts];
        ByteBuffer[] in2 = new ByteBuffer[hosts];
        for (int g = 0; g < hosts; g++) {
          if (g == myHost) {
            continue;
          }
          long total = 0;
          for (int l = 0; l < mine; l++) {
            for (int d : hostRanks[g]) {
              total += sc[hostRanks[myHost][l]][d];
            }
          }
          ByteBuffer o = scratch.get(Slot.OUT, g, (int) (total * es));
          long put = 0;
          for (int l = 0; l < mine; l++) {
            int src = hostRanks[myHost][l];
            for (int d : hostRanks[g]) {
              long off = offsetOf(sc[src], d);
              LeaderFrame.copyBytes(packed, (int) ((l * maxSend + off) * es), o, (int) (put * es), (int) (sc[src][d] * es));
              put += sc[src][d];
            }
          }
          out2[g] = o;
          long expect = 0;
          for (int s : hostRanks[g]) {
            for (int d : hostRanks[myHost]) {
              expect += sc[s][d];
            }
          }
          in2[g] = scratch.get(Slot.IN2, g, (int) (expect * es));
        }
        frame.round(c, UcxLeaders.KIND_DATA2, null, out2, in2);
        // Each local destination's packed receive: its blocks in source-rank order.
        long put = 0;
        for (int l = 0; l < mine; l++) {
          int d = hostRanks[myHost][l];
          for (int r = 0; r < size; r++) {
            int g = hostOf[r];
            long n = sc[r][d];
            if (g == myHost) {
              int i = indexOf(hostRanks[g], r);
              LeaderFrame.copyBytes(packed, (int) ((i * maxSend + offsetOf(sc[r], d)) * es), result, (int) (put * es), (int) (n * es));
            } else {
              // in2[g] holds, for each source of g in order, its blocks for this host's ranks in order.
              LeaderFrame.copyBytes(in2[g], (int) (blockAt(sc, hostRanks[g], hostRanks[myHost], r, d) * es), result,
                  (int) (put * es), (int) (n * es));
            }
            put += n;
          }
        }
      }
    }
    frame.close(f, result, resultBytes);
    if (f.ok()) {
      long from = 0;
      for (int l = 0; l < localRank; l++) {
        from += localRecv[l];
      }
      for (int r = 0; r < size; r++) {
        HostBuffers.copy(recv, recvDispls[r], HostBuffers.typedView(result, type), (int) from, recvCounts[r]);
        from += recvCounts[r];
      }
    }
    return route.movement(0);
  }

  /** Element offset of destination d's block in a rank's packed send. */
  private static long offsetOf(long[] sendCounts, int d) {
    long off = 0;
    for (int q = 0; q < d; q++) {
      off += sendCounts[q];
    }
    return off;
  }

  /** Element offset of the block src -> dest in a message holding, per source, its blocks per destination. */
  private static long blockAt(long[][] sc, int[] sources, int[] dests, int src, int dest) {
    long off = 0;
    for (int s : sources) {
      for (int d : dests) {
        if (s == src && d == dest) {
          return off;
        }
        off += sc[s][d];
      }
    }
    throw new IllegalStateException("no block " + src + " -> " + dest);
  }

  /** Rank {@code r}'s send and receive counts, entry {@code i} of a gathered count block (send counts, then receive counts). */
  private void readCounts(LongBuffer lc, int i, int r, long[][] sc, long[][] rc) {
    sc[r] = new long[size];
    rc[r] = new long[size];
    for (int q = 0; q < size; q++) {
      sc[r][q] = lc.get(i * 2 * size + q);
      rc[r][q] = lc.get(i * 2 * size + size + q);
    }
  }

  private static String countsMismatch(long[][] sc, long[][] rc) {
    for (int p = 0; p < sc.length; p++) {
      for (int q = 0; q < sc.length; q++) {
        if (sc[p][q] != rc[q][p]) {
          return "M" + "rank " + p + " sends " + sc[p][q] + " elements to rank " + q + " but rank " + q
              + " expects " + rc[q][p] + " from rank " + p;
        }
      }
    }
    return null;
  }

  @Override
  Algorithm runBroadcast(Signature sig, String problem, Buffer send, Buffer recv, int count, DataType type,
      int root) {
    Collective c = Collective.BROADCAST;
    int es = problem == null ? type.byteSize() : 0;
    long bytes = (long) count * es;
    LeaderFrame.Call f = frame.open(c, sig, problem, 0, null, type);
    ByteBuffer result = scratch.get(Slot.RESULT, bytes);
    int rootHost = f.ok() ? hostOf[root] : -1;
    if (f.ok() && myHost == rootHost) {
      if (rank == root) {
        HostBuffers.copy(HostBuffers.typedView(result, type), 0, send, 0, count);
      }
      if (hostRanks[myHost].length > 1 && bytes > 0) {
        frame.localCall(c, () -> local.broadcast(CommBuffer.of(result.duplicate()), CommBuffer.of(result.duplicate()), bytes,
            DataType.INT8, indexOf(hostRanks[myHost], root)));
      }
    }
    if (leader && f.ok()) {
      ByteBuffer[] out = new ByteBuffer[hostRanks.length];
      ByteBuffer[] in = new ByteBuffer[hostRanks.length];
      for (int g = 0; g < hostRanks.length; g++) {
        if (g != myHost && myHost == rootHost) {
          out[g] = result;
        } else if (g != myHost && g == rootHost) {
          in[g] = result;
        }
      }
      f.verdict = frame.round(c, UcxLeaders.KIND_DATA1, f.header, out, in);
    }
    frame.close(f, myHost == rootHost ? null : result, bytes);
    if (f.ok()) {
      HostBuffers.copy(recv, 0, HostBuffers.typedView(result, type), 0, count);
    }
    return route.movement(0);
  }

  @Override
  Algorithm runBarrier(Signature sig) {
    LeaderFrame.Call f = frame.open(Collective.BARRIER, sig, null, 0, null, DataType.INT8);
    if (leader && f.ok()) {
      f.verdict = frame.round(Collective.BARRIER, UcxLeaders.KIND_DATA1, f.header, new ByteBuffer[hostRanks.length],
          new ByteBuffer[hostRanks.length]);
    }
    frame.close(f, null, 0);
    return route.barrier();
  }

  @Override
  Communicator splitGroup(int color, int key) {
    List<byte[]> colorKeys = gatherBytes(SplitOrder.payload(color, key), 8);
    int[] members = SplitOrder.members(colorKeys, color);
    Communicator localChild;
    try {
      localChild = local.split(color, key);
    } catch (CollectiveException e) {
      throw leaders.fail(null, new CollectiveException(rank, null, "split inside host " + host + " failed: "
          + e.getMessage(), e));
    }
    boolean member = members.length > 0;
    boolean oneHost = member && Arrays.stream(members).map(m -> hostOf[m]).distinct().count() == 1;
    PeerTransport child = null;
    String problem = null;
    if (member && !oneHost) {
      try {
        child = transports.apply(members.length);
      } catch (RuntimeException | LinkageError e) {
        problem = "cannot open a UCX worker: " + e;
      }
    }
    try {
      byte[] mine = child != null ? join("OK ", child.address())
          : (problem != null ? ("ERR " + problem).getBytes(StandardCharsets.UTF_8) : new byte[0]);
      List<byte[]> lengths = gatherBytes(ByteBuffer.allocate(4).putInt(mine.length).array(), 4);
      int max = lengths.stream().mapToInt(b -> ByteBuffer.wrap(b).getInt()).max().orElse(0);
      List<byte[]> all = gatherBytes(Arrays.copyOf(mine, max), max);
      if (!member) {
        return null;
      }
      if (oneHost) {
        return localChild;
      }
      List<String> failures = new ArrayList<>();
      byte[][] childAddresses = new byte[members.length][];
      String[] childHosts = new String[members.length];
      for (int i = 0; i < members.length; i++) {
        int m = members[i];
        int len = ByteBuffer.wrap(lengths.get(m)).getInt();
        byte[] a = Arrays.copyOf(all.get(m), len);
        childHosts[i] = hostNames[hostOf[m]];
        if (len >= 3 && a[0] == 'O' && a[1] == 'K') {
          childAddresses[i] = Arrays.copyOfRange(a, 3, len);
        } else {
          failures.add("rank " + m + ": " + new String(a, StandardCharsets.UTF_8));
        }
      }
      if (!failures.isEmpty()) {
        if (localChild != null) {
          localChild.close();
        }
        throw new CollectiveException(rank, null, "split: UCX failed on " + String.join("; ", failures));
      }
      HostUcxCommunicator out = new HostUcxCommunicator(indexOf(members, rank), groupId + "/split(" + color + ")",
          host, rendezvousKind, conf, childHosts, (HostShmCommunicator) localChild, child, childAddresses, transports);
      child = null;
      return out;
    } finally {
      if (child != null) {
        child.close();
      }
    }
  }

  /** Every rank's {@code bytes}-long payload through the group (split's rounds), by rank. */
  private List<byte[]> gatherBytes(byte[] mine, int bytes) {
    ByteBuffer m = scratch.get(Slot.SPLIT, bytes);
    m.put(0, mine, 0, bytes);
    Signature sig = Signature.setup(bytes);
    ByteBuffer result = scratch.get(Slot.RESULT, size * bytes);
    LeaderFrame.Call f = frame.open(null, sig, null, bytes, m, DataType.INT8, inPlace(result, myHost, bytes));
    gatherHosts(null, f, result, bytes, null);
    List<byte[]> out = new ArrayList<>();
    for (int r = 0; r < size; r++) {
      byte[] b = new byte[bytes];
      result.get(r * bytes, b);
      out.add(b);
    }
    return out;
  }

  @Override
  void closeTransport() {
    try {
      local.close();
    } finally {
      leaders.close();
    }
  }

  /** An unexpected error on this rank: the other hosts' leaders and this host's ranks fail too. */
  @Override
  void abandonGroup(String reason) {
    leaders.fail(null, new CollectiveException(rank, null, reason));
  }

  /** This rank's transport address (tests find a rank's transport by it). */
  byte[] transportAddress() {
    return transport.address();
  }

  // ---- data helpers ----

  /**
   * Reduces elements [0, count) from every rank's input in rank order into dst: this host's from
   * {@code gathered}, the others' from {@code in[host]}.
   */
  private void reduceRanks(DataType type, ReduceOp op, ByteBuffer gathered, ByteBuffer[] in, long bytes, int from,
      int count, ByteBuffer dst, int dstIdx) {
    Buffer[] srcs = new Buffer[size];
    int[] idx = new int[size];
    int es = type.byteSize();
    for (int r = 0; r < size; r++) {
      int g = hostOf[r];
      int i = indexOf(hostRanks[g], r);
      srcs[r] = HostBuffers.typedView(g == myHost ? gathered : in[g], type);
      idx[r] = (int) ((i * bytes) / es + from);
    }
    reducer.reduce(type, op, size, srcs, idx, size, HostBuffers.typedView(dst, type), dstIdx, count);
  }

  /** Two-shot: reduces this host's slice (elements [lo, lo+len)) into dst at lo. */
  private void reduceSlice(DataType type, ReduceOp op, ByteBuffer gathered, long bytes, long loBytes, ByteBuffer[] in,
      int len, ByteBuffer dst, int lo) {
    Buffer[] srcs = new Buffer[size];
    int[] idx = new int[size];
    int es = type.byteSize();
    for (int r = 0; r < size; r++) {
      int g = hostOf[r];
      int i = indexOf(hostRanks[g], r);
      if (g == myHost) {
        srcs[r] = HostBuffers.typedView(gathered, type);
        idx[r] = (int) ((i * bytes + loBytes) / es);
      } else {
        srcs[r] = HostBuffers.typedView(in[g], type);
        idx[r] = i * len;
      }
    }
    reducer.reduce(type, op, size, srcs, idx, size, HostBuffers.typedView(dst, type), lo, len);
  }

  /** Bytes [off, off+len) of each of {@code n} records of {@code stride} bytes, packed (no copy when n is 1). */
  private ByteBuffer pack(ByteBuffer src, int host, int n, long stride, long off, long len) {
    if (n == 1) {
      return LeaderFrame.range(src, off, len);
    }
    ByteBuffer out = scratch.get(Slot.OUT, host, (long) n * len);
    for (int i = 0; i < n; i++) {
      LeaderFrame.copyBytes(src, i * stride + off, out, i * len, len);
    }
    return out;
  }

  private static int slice(int count, int h, int hosts) {
    return (int) ((long) count * h / hosts);
  }





  private static int indexOf(int[] a, int v) {
    for (int i = 0; i < a.length; i++) {
      if (a[i] == v) {
        return i;
      }
    }
    throw new IllegalArgumentException(v + " not in " + Arrays.toString(a));
  }

  private static byte[] join(String head, byte[] tail) {
    byte[] h = head.getBytes(StandardCharsets.UTF_8);
    byte[] out = Arrays.copyOf(h, h.length + tail.length);
    System.arraycopy(tail, 0, out, h.length, tail.length);
    return out;
  }
}
