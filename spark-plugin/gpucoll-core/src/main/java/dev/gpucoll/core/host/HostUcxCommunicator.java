package dev.gpucoll.core.host;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.CollectiveMismatchException;
import dev.gpucoll.api.CollectiveTimeoutException;
import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.PathChoice;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.core.Algorithm;
import dev.gpucoll.core.config.Durations;
import dev.gpucoll.core.config.GpuCollConf;
import dev.gpucoll.core.spi.GroupContext;
import dev.gpucoll.core.spi.MemberInfo;
import dev.gpucoll.core.spi.SplitOrder;
import java.nio.Buffer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.LongBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.locks.LockSupport;
import java.util.function.IntFunction;

/**
 * Ranks on several hosts: inside each host the shared-memory communicator
 * ({@link HostShmCommunicator}), between hosts one leader per host (its lowest rank) over a
 * {@link PeerTransport} (UCX).
 *
 * <p>Every call has the same frame, so every rank fails alike on bad input or mismatched calls:
 * (1) the ranks of a host gather their 32-byte headers (signature, status; the problem texts in a
 * second round only when a rank has one) and their inputs into the leader through shared memory;
 * (2) each leader sends its host's header block, then its data, to the other leaders, and reads
 * every leader's headers before it uses any data, so all leaders reach the same verdict from the
 * same headers in rank order; (3) each leader broadcasts the verdict and the host's result to its
 * ranks through shared memory.
 *
 * <p>Reductions combine the raw inputs of ranks 0..n-1 in rank order with the same
 * {@link Reducer} as the shared-memory path, so the results are bit-identical to a one-host group
 * and equal on every rank (leaders move raw inputs, never partial sums of their host: those would
 * change the order of floating-point additions). One-shot (small): every leader gets every host's
 * inputs and reduces the whole vector. Two-shot (larger): leader h reduces slice h of the vector
 * from every host's inputs, then the leaders exchange the reduced slices (pairwise, so each link
 * carries each byte once per phase, as a ring would, with one round trip per phase).
 *
 * <p>Waits are bounded by the call's timeout since the last progress, its cancellation, and the
 * peers' state: UCX reports a broken connection to a peer; a leader that gives up sends the other
 * leaders an abort message and marks its host's segment failed, so every rank of the group stops
 * waiting.
 */
final class HostUcxCommunicator extends AbstractHostCommunicator {
  static final String BACKEND = "host-ucx";
  private static final int HEADER_BYTES = 32;
  private static final int TEXT_BYTES = 1000;
  private static final int HOST_HEADER_MAX = 64 * 1024;
  private static final int KIND_HEADER = 1;
  private static final int KIND_DATA1 = 2;
  private static final int KIND_DATA2 = 3;
  private static final int KIND_ABORT = 15;
  /** An abort message: text length, count of missing ranks, the call it gave up on; then those ranks, the text. */
  private static final int ABORT_HEAD = 16;
  private static final long SEQ_MASK = (1L << 40) - 1;
  private static final int MAX_RANKS = 1 << 20;
  /**
   * How long a waiting rank spins on UCX progress before it yields, then parks. Long for small
   * calls, as MPI's busy polling: a message from another host takes tens of microseconds, and a
   * rank that yields on a busy machine loses its core for a scheduler time slice (measured: 8 B
   * allReduce 25 us spinning, 140-170 us with a 50 us budget at load 28 on 2 cores). Short for
   * calls moving more than {@link #LARGE_CALL_BYTES}: their waits are long anyway, and a spinning
   * rank takes the CPU that the kernel's TCP stack and the peer's reduction need (measured: 1 MB
   * allReduce 5 ms with a 50 us budget, 16-84 ms with 2 ms).
   */
  private static final long SMALL_CALL_SPIN_NANOS = 2_000_000;
  private static final long LARGE_CALL_SPIN_NANOS = 50_000;
  private static final long LARGE_CALL_BYTES = 64 << 10;
  private static final long YIELD_NANOS = 20_000_000;
  /** The spin budget of the call in progress (set by {@link #open}). */
  private long spinNanos = SMALL_CALL_SPIN_NANOS;

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
  private long seq;
  private final List<PeerTransport.Request> inFlight = new ArrayList<>();
  private final PeerTransport.Request[] abortRecv;
  private final ByteBuffer[] abortBuf;
  private final Map<String, ByteBuffer> scratch = new LinkedHashMap<>();

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
    int bytes = count * es;
    Algorithm algo = route.allReduce(bytes);
    boolean two = algo == Algorithm.HOST_UCX_TWOSHOT;
    Frame f = open(c, sig, problem, bytes, send, type);
    ByteBuffer result = scratch("result", bytes);
    if (leader && f.ok()) {
      int hosts = hostRanks.length;
      if (!two) {
        ByteBuffer[] in = exchangeGathered(c, f, bytes);
        if (f.verdict == null) {
          reduceRanks(type, op, f.gathered, in, bytes, 0, count, result, 0);
        }
      } else {
        ByteBuffer[] out = new ByteBuffer[hosts];
        ByteBuffer[] in = new ByteBuffer[hosts];
        int mine = hostRanks[myHost].length;
        int myLen = slice(count, myHost + 1, hosts) - slice(count, myHost, hosts);
        for (int g = 0; g < hosts; g++) {
          if (g != myHost) {
            int lo = slice(count, g, hosts);
            int len = slice(count, g + 1, hosts) - lo;
            out[g] = pack(f.gathered, "out" + g, mine, bytes, lo * es, len * es);
            in[g] = scratch("in" + g, hostRanks[g].length * myLen * es);
          }
        }
        f.verdict = leaderRound(c, KIND_DATA1, f.header, out, in);
        if (f.verdict == null) {
          int lo = slice(count, myHost, hosts);
          int len = slice(count, myHost + 1, hosts) - lo;
          reduceSlice(type, op, f.gathered, bytes, lo * es, in, len, result, lo);
          ByteBuffer[] out2 = new ByteBuffer[hosts];
          ByteBuffer[] in2 = new ByteBuffer[hosts];
          for (int g = 0; g < hosts; g++) {
            if (g != myHost) {
              out2[g] = range(result, lo * es, len * es);
              int glo = slice(count, g, hosts);
              in2[g] = range(result, glo * es, (slice(count, g + 1, hosts) - glo) * es);
            }
          }
          leaderRound(c, KIND_DATA2, null, out2, in2);
        }
      }
    }
    close(f, result, bytes);
    if (f.ok()) {
      HostBuffers.copy(recv, 0, HostBuffers.typedView(result, type), 0, count);
    }
    return algo;
  }

  @Override
  Algorithm runAllGather(Signature sig, String problem, Buffer send, Buffer recv, int count, DataType type) {
    Collective c = Collective.ALL_GATHER;
    int es = problem == null ? type.byteSize() : 0;
    int bytes = count * es;
    Frame f = open(c, sig, problem, bytes, send, type);
    ByteBuffer result = gatherHosts(c, f, bytes);
    if (f.ok()) {
      HostBuffers.copy(recv, 0, HostBuffers.typedView(result, type), 0, size * count);
    }
    return route.movement(0);
  }

  /**
   * The all-gather after {@link #open}: every leader sends its host's inputs to every other and
   * assembles them in rank order; returns every rank's {@code bytes}, by rank, on every rank.
   */
  private ByteBuffer gatherHosts(Collective c, Frame f, int bytes) {
    ByteBuffer result = scratch("result", size * bytes);
    if (leader && f.ok()) {
      ByteBuffer[] in = exchangeGathered(c, f, bytes);
      if (f.verdict == null) {
        for (int g = 0; g < hostRanks.length; g++) {
          ByteBuffer from = g == myHost ? f.gathered : in[g];
          for (int i = 0; i < hostRanks[g].length; i++) {
            copyBytes(from, i * bytes, result, hostRanks[g][i] * bytes, bytes);
          }
        }
      }
    }
    close(f, result, size * bytes);
    return result;
  }

  /**
   * A leader's first round after {@link #open}: this host's gathered frame data ({@code bytes} per
   * rank) to every other leader; returns theirs by host (null at this host) and sets the verdict.
   */
  private ByteBuffer[] exchangeGathered(Collective c, Frame f, int bytes) {
    ByteBuffer[] out = new ByteBuffer[hostRanks.length];
    ByteBuffer[] in = new ByteBuffer[hostRanks.length];
    for (int g = 0; g < hostRanks.length; g++) {
      if (g != myHost) {
        out[g] = f.gathered;
        in[g] = scratch("in" + g, hostRanks[g].length * bytes);
      }
    }
    f.verdict = leaderRound(c, KIND_DATA1, f.header, out, in);
    return in;
  }

  @Override
  Algorithm runReduceScatter(Signature sig, String problem, Buffer send, Buffer recv, int count, DataType type,
      ReduceOp op) {
    Collective c = Collective.REDUCE_SCATTER;
    int es = problem == null ? type.byteSize() : 0;
    int block = count * es;
    int mine = hostRanks[myHost].length;
    Frame f = open(c, sig, problem, size * block, send, type);
    ByteBuffer result = scratch("result", mine * block);
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
    close(f, result, mine * block);
    if (f.ok()) {
      HostBuffers.copy(recv, 0, HostBuffers.typedView(result, type), localRank * count, count);
    }
    return route.movement(0);
  }

  @Override
  Algorithm runAllToAll(Signature sig, String problem, Buffer send, Buffer recv, int count, DataType type) {
    Collective c = Collective.ALL_TO_ALL;
    int es = problem == null ? type.byteSize() : 0;
    int block = count * es;
    int mine = hostRanks[myHost].length;
    Frame f = open(c, sig, problem, size * block, send, type);
    ByteBuffer result = scratch("result", mine * size * block);
    if (leader && f.ok()) {
      ByteBuffer[][] io = blockRound(c, f, block);
      if (f.verdict == null) {
        for (int l = 0; l < mine; l++) {
          int dest = hostRanks[myHost][l];
          for (int r = 0; r < size; r++) {
            int g = hostOf[r];
            int i = indexOf(hostRanks[g], r);
            int at = (l * size + r) * block;
            if (g == myHost) {
              copyBytes(f.gathered, (i * size + dest) * block, result, at, block);
            } else {
              copyBytes(io[1][g], (i * mine + l) * block, result, at, block);
            }
          }
        }
      }
    }
    close(f, result, mine * size * block);
    if (f.ok()) {
      HostBuffers.copy(recv, 0, HostBuffers.typedView(result, type), localRank * size * count, size * count);
    }
    return route.movement(0);
  }

  /**
   * The leaders' exchange of fixed blocks (reduceScatter, allToAll): to leader g go, for each rank
   * of this host, its blocks for g's ranks; from g come, for each of g's ranks, its blocks for this
   * host's ranks. Returns {out, in} by host.
   */
  private ByteBuffer[][] blockRound(Collective c, Frame f, int block) {
    int hosts = hostRanks.length;
    int mine = hostRanks[myHost].length;
    ByteBuffer[] out = new ByteBuffer[hosts];
    ByteBuffer[] in = new ByteBuffer[hosts];
    for (int g = 0; g < hosts; g++) {
      if (g == myHost) {
        continue;
      }
      int ng = hostRanks[g].length;
      ByteBuffer o = scratch("out" + g, mine * ng * block);
      for (int l = 0; l < mine; l++) {
        for (int j = 0; j < ng; j++) {
          copyBytes(f.gathered, (l * size + hostRanks[g][j]) * block, o, (l * ng + j) * block, block);
        }
      }
      out[g] = o;
      in[g] = scratch("in" + g, ng * mine * block);
    }
    f.verdict = leaderRound(c, KIND_DATA1, f.header, out, in);
    return new ByteBuffer[][] {out, in};
  }

  @Override
  Algorithm runAllToAllv(Signature sig, String problem, Buffer send, int[] sendCounts, int[] sendDispls,
      Buffer recv, int[] recvCounts, int[] recvDispls, DataType type) {
    Collective c = Collective.ALL_TO_ALLV;
    int es = problem == null ? type.byteSize() : 0;
    int mine = hostRanks[myHost].length;
    // The frame's data are this rank's counts; the packed sends follow in a second local gather.
    ByteBuffer counts = scratch("counts", 16 * size);
    if (problem == null) {
      LongBuffer lc = counts.asLongBuffer();
      for (int q = 0; q < size; q++) {
        lc.put(q, sendCounts[q]);
        lc.put(size + q, recvCounts[q]);
      }
    }
    Frame f = open(c, sig, problem, 16 * size, problem == null ? counts.asLongBuffer() : null, DataType.INT64);
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
      ByteBuffer mineP = scratch("packed", (int) (maxSend * es));
      long at = 0;
      for (int q = 0; q < size; q++) {
        HostBuffers.copy(HostBuffers.typedView(mineP, type), (int) at, send, sendDispls[q], sendCounts[q]);
        at += sendCounts[q];
      }
      packed = localGather(c, mineP, (int) (maxSend * es), "gatheredv");
    }
    int resultBytes = (int) (Arrays.stream(localRecv).sum() * es);
    ByteBuffer result = scratch("result", resultBytes);
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
          ByteBuffer o = scratch("out" + g, (int) (total * es));
          long put = 0;
          for (int l = 0; l < mine; l++) {
            int src = hostRanks[myHost][l];
            for (int d : hostRanks[g]) {
              long off = offsetOf(sc[src], d);
              copyBytes(packed, (int) ((l * maxSend + off) * es), o, (int) (put * es), (int) (sc[src][d] * es));
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
          in2[g] = scratch("in2" + g, (int) (expect * es));
        }
        leaderRound(c, KIND_DATA2, null, out2, in2);
        // Each local destination's packed receive: its blocks in source-rank order.
        long put = 0;
        for (int l = 0; l < mine; l++) {
          int d = hostRanks[myHost][l];
          for (int r = 0; r < size; r++) {
            int g = hostOf[r];
            long n = sc[r][d];
            if (g == myHost) {
              int i = indexOf(hostRanks[g], r);
              copyBytes(packed, (int) ((i * maxSend + offsetOf(sc[r], d)) * es), result, (int) (put * es), (int) (n * es));
            } else {
              // in2[g] holds, for each source of g in order, its blocks for this host's ranks in order.
              copyBytes(in2[g], (int) (blockAt(sc, hostRanks[g], hostRanks[myHost], r, d) * es), result,
                  (int) (put * es), (int) (n * es));
            }
            put += n;
          }
        }
      }
    }
    close(f, result, resultBytes);
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
    int bytes = count * es;
    Frame f = open(c, sig, problem, 0, null, type);
    ByteBuffer result = scratch("result", bytes);
    int rootHost = f.ok() ? hostOf[root] : -1;
    if (f.ok() && myHost == rootHost) {
      if (rank == root) {
        HostBuffers.copy(HostBuffers.typedView(result, type), 0, send, 0, count);
      }
      if (hostRanks[myHost].length > 1 && bytes > 0) {
        localCall(c, () -> local.broadcast(CommBuffer.of(result.duplicate()), CommBuffer.of(result.duplicate()), bytes,
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
      f.verdict = leaderRound(c, KIND_DATA1, f.header, out, in);
    }
    close(f, myHost == rootHost ? null : result, bytes);
    if (f.ok()) {
      HostBuffers.copy(recv, 0, HostBuffers.typedView(result, type), 0, count);
    }
    return route.movement(0);
  }

  @Override
  Algorithm runBarrier(Signature sig) {
    Frame f = open(Collective.BARRIER, sig, null, 0, null, DataType.INT8);
    if (leader && f.ok()) {
      f.verdict = leaderRound(Collective.BARRIER, KIND_DATA1, f.header, new ByteBuffer[hostRanks.length],
          new ByteBuffer[hostRanks.length]);
    }
    close(f, null, 0);
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
      throw fail(null, new CollectiveException(rank, null, "split inside host " + host + " failed: "
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
    ByteBuffer m = scratch("split", bytes);
    m.put(0, mine, 0, bytes);
    Signature sig = Signature.setup(bytes);
    Frame f = open(null, sig, null, bytes, m, DataType.INT8);
    ByteBuffer result = gatherHosts(null, f, bytes);
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
      for (PeerTransport.Request r : abortRecv) {
        if (r != null && !r.done()) {
          transport.cancel(r);
        }
      }
      transport.close();
    }
  }

  /** This rank's transport address (tests find a rank's transport by it). */
  byte[] transportAddress() {
    return transport.address();
  }

  // ---- the frame of a call ----

  /** One call in progress on this rank. */
  private final class Frame {
    final Collective collective;
    final String problem;
    /** Leader: the host's header block (each rank's header, then the problem texts). */
    ByteBuffer header;
    /** Leader: the inputs of the host's ranks, in local-rank order (this rank's alone on a one-rank host). */
    ByteBuffer gathered;
    /** Why the call fails on every rank ("M" + text: a mismatch), or null. */
    String verdict;
    boolean localTrouble;

    Frame(Collective c, String problem) {
      this.collective = c;
      this.problem = problem;
    }

    boolean ok() {
      return !localTrouble && verdict == null;
    }
  }

  /**
   * Steps (1) of every call: the host's headers and problem texts, then (when the host has no
   * trouble) its inputs, gathered through shared memory.
   */
  private Frame open(Collective c, Signature sig, String problem, int inputBytes, Buffer input, DataType type) {
    seq++;
    spinNanos = inputBytes > LARGE_CALL_BYTES ? LARGE_CALL_SPIN_NANOS : SMALL_CALL_SPIN_NANOS;
    Frame f = new Frame(c, problem);
    int mine = hostRanks[myHost].length;
    ByteBuffer h = scratch("hdr", HEADER_BYTES);
    h.putLong(0, sig.packed()).putLong(8, sig.count()).putInt(16, problem == null ? 0 : 1).putInt(20, 0);
    ByteBuffer headers = mine == 1 ? h : localGather(c, h, HEADER_BYTES, "hdrs");
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
      ByteBuffer t = scratch("text", TEXT_BYTES + 4);
      byte[] text = problem == null ? new byte[0] : ShmSegment.truncate(problem, TEXT_BYTES);
      t.putInt(0, text.length).put(4, text);
      texts = mine == 1 ? t : localGather(c, t, TEXT_BYTES + 4, "texts");
    }
    f.localTrouble = trouble;
    if (leader) {
      // The block starts with its length: a receiver cannot rely on UCX reporting the received size
      // (JUCX leaves it 0 when a receive completes at once).
      ByteBuffer block = scratch("hostHdr", HOST_HEADER_MAX);
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
      f.verdict = leaderRound(c, KIND_DATA1, f.header, new ByteBuffer[hostRanks.length],
          new ByteBuffer[hostRanks.length]);
    }
    if (!trouble && inputBytes > 0) {
      ByteBuffer in = scratch("input", inputBytes);
      HostBuffers.copy(HostBuffers.typedView(in, type), 0, input, 0, inputBytes / type.byteSize());
      f.gathered = mine == 1 ? in : localGather(c, in, inputBytes, "gathered");
    } else {
      f.gathered = scratch("gathered", 0);
    }
    return f;
  }

  /**
   * Step (3): the leader's verdict and then the host's result ({@code resultBytes} of
   * {@code result}; null: the ranks hold it already) reach every rank of the host; a failed call
   * throws here on every rank alike.
   */
  private void close(Frame f, ByteBuffer result, int resultBytes) {
    int mine = hostRanks[myHost].length;
    String verdict = f.verdict;
    if (f.localTrouble && leader && verdict == null) {
      verdict = "Einternal: the host's trouble reached no verdict";
    }
    if (mine > 1) {
      ByteBuffer v = scratch("verdict", 16);
      byte[] text = verdict == null ? new byte[0] : ShmSegment.truncate(verdict, 60_000);
      v.putInt(0, verdict == null ? 0 : 1).putInt(4, text.length);
      localCall(f.collective, () -> local.broadcast(CommBuffer.of(v.duplicate()), CommBuffer.of(v.duplicate()), 16,
          DataType.INT8, 0));
      int status = v.getInt(0);
      int len = v.getInt(4);
      if (status != 0) {
        ByteBuffer t = scratch("verdictText", len);
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
        throw new CollectiveException(rank, f.collective, f.problem);
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
  private String leaderRound(Collective c, int kind, ByteBuffer header, ByteBuffer[] out, ByteBuffer[] in) {
    int hosts = hostRanks.length;
    PeerTransport.Request[] hdrIn = new PeerTransport.Request[hosts];
    ByteBuffer[] hdrBufs = new ByteBuffer[hosts];
    PeerTransport.Request[] dataIn = new PeerTransport.Request[hosts];
    List<PeerTransport.Request> sends = new ArrayList<>();
    for (int g = 0; g < hosts; g++) {
      if (g == myHost) {
        continue;
      }
      int peer = hostRanks[g][0];
      if (header != null) {
        hdrBufs[g] = scratch("peerHdr" + g, HOST_HEADER_MAX);
        hdrIn[g] = track(transport.recv(peer, tag(KIND_HEADER, peer, seq), hdrBufs[g]));
      }
      if (in[g] != null && in[g].remaining() > 0) {
        dataIn[g] = track(transport.recv(peer, tag(kind, peer, seq), in[g].duplicate()));
      }
    }
    for (int g = 0; g < hosts; g++) {
      if (g == myHost) {
        continue;
      }
      int peer = hostRanks[g][0];
      if (header != null) {
        sends.add(track(transport.send(peer, tag(KIND_HEADER, rank, seq), header.duplicate())));
      }
    }
    for (int g = 0; g < hosts; g++) {
      if (g != myHost && out[g] != null && out[g].remaining() > 0) {
        sends.add(track(transport.send(hostRanks[g][0], tag(kind, rank, seq), out[g].duplicate())));
      }
    }
    String verdict = null;
    if (header != null) {
      ByteBuffer[] all = new ByteBuffer[hosts];
      all[myHost] = header;
      for (int g = 0; g < hosts; g++) {
        if (g != myHost) {
          await(c, hdrIn[g], hostRanks[g][0], "header");
          int len = hdrBufs[g].getInt(0);
          if (len < 4 + hostRanks[g].length * HEADER_BYTES || len > HOST_HEADER_MAX) {
            throw fail(c, new CollectiveException(rank, c, "rank " + hostRanks[g][0] + " sent a header block of "
                + len + " bytes for " + hostRanks[g].length + " ranks: a different gpucoll build?"));
          }
          all[g] = range(hdrBufs[g], 0, len);
        }
      }
      verdict = verdictOf(c, all);
    }
    if (verdict != null) {
      drain();
      return verdict;
    }
    for (int g = 0; g < hosts; g++) {
      if (dataIn[g] != null) {
        // The verdict says every rank made this call, so the sizes agree (a longer message fails as truncated).
        await(c, dataIn[g], hostRanks[g][0], "data");
      }
    }
    for (PeerTransport.Request s : sends) {
      await(c, s, -1, "send");
    }
    inFlight.clear();
    // A leader that gave up on this call (a timeout while this rank was late) sent its abort after
    // its header and data, so everything this rank needed can be here while that leader failed: this
    // rank must not complete the call either (an abort of a later call, which that leader can reach
    // only after this one completed there, waits for that call). What UCX delivered is looked at once.
    for (int i = 0; i < 16 && transport.progress(); i++) {
      // deliver what is already here
    }
    String aborted = abortReason();
    if (aborted != null && abortedCall() <= seq) {
      List<Integer> missing = abortedForMissing();
      String text = aborted + " before rank " + rank + " completed call " + seq;
      throw fail(c, missing.isEmpty() ? new CollectiveException(rank, c, text)
          : new CollectiveTimeoutException(rank, c, missing, text));
    }
    return null;
  }

  private PeerTransport.Request track(PeerTransport.Request r) {
    inFlight.add(r);
    return r;
  }

  /** Cancels what is still in flight and waits (at most a second) until UCX let go of the buffers. */
  private void drain() {
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
      markBroken("UCX requests did not finish after cancellation");
      scratch.clear();
    }
    inFlight.clear();
  }

  /**
   * Waits for {@code r}, bounded by the timeout since the last progress, the call's cancellation,
   * a close, the peer's connection and the other leaders' abort messages.
   */
  private void await(Collective c, PeerTransport.Request r, int peer, String what) {
    long start = System.nanoTime();
    long lastProgress = start;
    int spins = 0;
    while (!r.done()) {
      if (transport.progress()) {
        lastProgress = System.nanoTime();
        continue;
      }
      if ((++spins & 127) != 0) {
        Thread.onSpinWait();
        continue;
      }
      long now = System.nanoTime();
      String why = slowCheck(peer);
      if (why != null && (transport.progress() || r.done())) {
        continue; // what the peer sent before it went is still delivered
      }
      if (why != null) {
        String text = why + " while rank " + rank + " waited for the " + what + (peer >= 0 ? " of rank " + peer : "")
            + " (call " + seq + ")";
        List<Integer> missing = abortedForMissing();
        throw fail(c, missing.isEmpty() ? new CollectiveException(rank, c, text)
            : new CollectiveTimeoutException(rank, c, missing, text));
      }
      if (now - lastProgress > bounds.timeoutNanos()) {
        throw fail(c, new CollectiveTimeoutException(rank, c, peer >= 0 ? List.of(peer) : List.of(),
            (peer >= 0 ? "rank " + peer : "a peer") + " did not arrive within " + bounds.timeout() + " (waited for its "
                + what + " over UCX, call " + seq + ")"));
      }
      long idle = now - lastProgress;
      if (idle > YIELD_NANOS) {
        LockSupport.parkNanos(20_000);
      } else if (idle > spinNanos) {
        Thread.yield();
      }
    }
    if (r.error() != null) {
      String gone = peer >= 0 ? transport.peerFailure(peer) : null;
      throw fail(c, new CollectiveException(rank, c, "the " + what + (peer >= 0 ? " of rank " + peer : "")
          + " failed over UCX: " + (gone != null ? gone : r.error())));
    }
  }

  private String slowCheck(int peer) {
    if (isClosed()) {
      return "the communicator was closed";
    }
    String cancelled = bounds.cancellation();
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
    return abortRecv[g].error() == null ? abortBuf[g].getLong(8) : seq;
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
   * the segment marked failed, the call throws.
   */
  /** An unexpected error on this rank: the other hosts' leaders and this host's ranks fail too. */
  @Override
  void abandonGroup(String reason) {
    fail(null, new CollectiveException(rank, null, reason));
  }

  private CollectiveException fail(Collective c, CollectiveException e) {
    markBroken(e.getMessage());
    try {
      if (leader) {
        byte[] text = ShmSegment.truncate(e.getMessage(), TEXT_BYTES);
        List<PeerTransport.Request> aborts = new ArrayList<>();
        for (int g = 0; g < hostRanks.length; g++) {
          if (g != myHost && transport.peerFailure(hostRanks[g][0]) == null) {
            List<Integer> missing = e instanceof CollectiveTimeoutException t ? t.missingRanks() : List.of();
            int n = Math.min(64, missing.size());
            ByteBuffer b = ByteBuffer.allocateDirect(ABORT_HEAD + 4 * n + text.length).putInt(text.length).putInt(n)
                .putLong(seq);
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

  /** Runs a call on the host's shared-memory group; its failure fails this group. */
  private void localCall(Collective c, Runnable call) {
    try {
      call.run();
    } catch (CollectiveException e) {
      String text = "inside host " + host + " (ranks " + Arrays.toString(hostRanks[myHost]) + "): " + e.getMessage();
      if (e instanceof CollectiveTimeoutException t) {
        // The host group's ranks, named as this group's.
        List<Integer> missing = t.missingRanks().stream().map(l -> hostRanks[myHost][l]).toList();
        throw fail(c, new CollectiveTimeoutException(rank, c, missing, text));
      }
      throw fail(c, new CollectiveException(rank, c, text, e));
    }
  }

  /** The host's ranks' {@code bytes} each, in local-rank order, on every rank of the host. */
  private ByteBuffer localGather(Collective c, ByteBuffer mine, int bytes, String slot) {
    int n = hostRanks[myHost].length;
    ByteBuffer all = scratch(slot, n * bytes);
    if (n == 1) {
      copyBytes(mine, 0, all, 0, bytes);
      return all;
    }
    if (bytes > 0) {
      localCall(c, () -> local.allGather(CommBuffer.of(range(mine, 0, bytes)), CommBuffer.of(all.duplicate()), bytes,
          DataType.INT8));
    }
    return all;
  }

  // ---- data helpers ----

  /**
   * Reduces elements [0, count) from every rank's input in rank order into dst: this host's from
   * {@code gathered}, the others' from {@code in[host]}.
   */
  private void reduceRanks(DataType type, ReduceOp op, ByteBuffer gathered, ByteBuffer[] in, int bytes, int from,
      int count, ByteBuffer dst, int dstIdx) {
    Buffer[] srcs = new Buffer[size];
    int[] idx = new int[size];
    int es = type.byteSize();
    for (int r = 0; r < size; r++) {
      int g = hostOf[r];
      int i = indexOf(hostRanks[g], r);
      srcs[r] = HostBuffers.typedView(g == myHost ? gathered : in[g], type);
      idx[r] = (i * bytes) / es + from;
    }
    reducer.reduce(type, op, size, srcs, idx, size, HostBuffers.typedView(dst, type), dstIdx, count);
  }

  /** Two-shot: reduces this host's slice (elements [lo, lo+len)) into dst at lo. */
  private void reduceSlice(DataType type, ReduceOp op, ByteBuffer gathered, int bytes, int loBytes, ByteBuffer[] in,
      int len, ByteBuffer dst, int lo) {
    Buffer[] srcs = new Buffer[size];
    int[] idx = new int[size];
    int es = type.byteSize();
    for (int r = 0; r < size; r++) {
      int g = hostOf[r];
      int i = indexOf(hostRanks[g], r);
      if (g == myHost) {
        srcs[r] = HostBuffers.typedView(gathered, type);
        idx[r] = (i * bytes + loBytes) / es;
      } else {
        srcs[r] = HostBuffers.typedView(in[g], type);
        idx[r] = i * len;
      }
    }
    reducer.reduce(type, op, size, srcs, idx, size, HostBuffers.typedView(dst, type), lo, len);
  }

  /** Bytes [off, off+len) of each of {@code n} records of {@code stride} bytes, packed (no copy when n is 1). */
  private ByteBuffer pack(ByteBuffer src, String slot, int n, int stride, int off, int len) {
    if (n == 1) {
      return range(src, off, len);
    }
    ByteBuffer out = scratch(slot, n * len);
    for (int i = 0; i < n; i++) {
      copyBytes(src, i * stride + off, out, i * len, len);
    }
    return out;
  }

  private static int slice(int count, int h, int hosts) {
    return (int) ((long) count * h / hosts);
  }

  /** A reusable direct buffer of {@code bytes} (position 0, limit bytes), growing as needed. */
  private ByteBuffer scratch(String slot, int bytes) {
    ByteBuffer b = scratch.get(slot);
    if (b == null || b.capacity() < bytes) {
      b = ByteBuffer.allocateDirect(Math.max(bytes, 64)).order(ByteOrder.nativeOrder());
      scratch.put(slot, b);
    }
    b.clear().limit(bytes);
    return b;
  }

  private static ByteBuffer range(ByteBuffer b, int off, int len) {
    ByteBuffer d = b.duplicate().order(ByteOrder.nativeOrder());
    d.limit(off + len).position(off);
    return d.slice().order(ByteOrder.nativeOrder());
  }

  private static void copyBytes(ByteBuffer src, int srcOff, ByteBuffer dst, int dstOff, int len) {
    if (len > 0) {
      dst.put(dstOff, src, srcOff, len);
    }
  }

  private static long tag(int kind, int src, long seq) {
    return ((long) kind << 60) | ((long) src << 40) | (seq & SEQ_MASK);
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
