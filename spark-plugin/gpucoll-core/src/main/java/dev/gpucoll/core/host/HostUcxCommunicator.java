package dev.gpucoll.core.host;

import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.core.Algorithm;
import dev.gpucoll.core.config.Durations;
import dev.gpucoll.core.config.GpuCollConf;
import dev.gpucoll.core.spi.GroupContext;
import dev.gpucoll.core.spi.MemberInfo;
import dev.gpucoll.core.spi.SplitOrder;
import java.nio.Buffer;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.function.IntFunction;

/**
 * Ranks on several hosts: inside each host the shared-memory communicator
 * ({@link HostShmCommunicator}), between hosts one leader per host (its lowest rank) over a
 * {@link PeerTransport} (UCX).
 *
 * <p>Three parts, by concern: this class holds the group's formation, split, findings and close,
 * and hands each collective to its recipe (what each leader sends, receives and reduces: one class
 * each, over {@link LeaderRecipe}); {@link LeaderFrame} is the one frame every call runs in (gather
 * into the leader, the leaders' round with every host's headers read before any data, release to
 * the host's ranks), so every rank fails alike on bad input or mismatched calls; {@link UcxLeaders}
 * is the leaders' link and its liveness (tagged messages, bounded waits, abort messages).
 * {@link HostRoute} decides one-shot or two-shot.
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
  private final HostShmCommunicator local;
  private final PeerTransport transport;
  private final IntFunction<PeerTransport> transports;
  private final long oneShotMax;
  private final HostRoute route;
  /** The leaders' link: messages between hosts, waits, aborts. */
  private final UcxLeaders leaders;
  private final LeaderAllReduce allReduce;
  private final LeaderAllGather allGather;
  private final LeaderReduceScatter reduceScatter;
  private final LeaderAllToAll allToAll;
  private final LeaderAllToAllv allToAllv;
  private final LeaderBroadcast broadcast;
  private final LeaderBarrier barrier;

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
    this.local = local;
    if (local.rank() != localRank || local.size() != hostRanks[myHost].length) {
      throw new IllegalStateException("host group of rank " + rank + " is rank " + local.rank() + " of "
          + local.size() + ", expected " + localRank + " of " + hostRanks[myHost].length);
    }
    this.transport = transport;
    this.transports = transports;
    this.oneShotMax = conf.get(GpuCollConf.HOST_ONE_SHOT_MAX_BYTES);
    this.route = HostRoute.ucx(hostByRank, conf);
    UcxScratch scratch = new UcxScratch(hostRanks.length);
    this.leaders = new UcxLeaders(this, topology, transport, addresses, local, scratch);
    // The frame of every call: gather into the leader, the leaders' round, release.
    LeaderFrame frame = new LeaderFrame(rank, host, topology, local, leaders, scratch);
    this.allReduce = new LeaderAllReduce(frame, reducer);
    this.allGather = new LeaderAllGather(frame, reducer);
    this.reduceScatter = new LeaderReduceScatter(frame, reducer);
    this.allToAll = new LeaderAllToAll(frame, reducer);
    this.allToAllv = new LeaderAllToAllv(frame, reducer);
    this.broadcast = new LeaderBroadcast(frame, reducer);
    this.barrier = new LeaderBarrier(frame, reducer);
  }

  /**
   * The first round of a group across hosts: every rank opens its transport (every rank does, since
   * a split may make any rank a leader) and the addresses, or each rank's reason it has none, go
   * round. {@link HostBackend} decides from them whether the group runs on UCX.
   *
   * @param transport this rank's transport, null when it could not open one
   * @param addresses each rank's transport address, null for a rank without one
   * @param reasons   why each rank without an address has none, null for the others
   */
  record Link(PeerTransport transport, byte[][] addresses, String[] reasons) implements AutoCloseable {
    boolean everyRank() {
      return Arrays.stream(reasons).allMatch(Objects::isNull);
    }

    @Override
    public void close() {
      if (transport != null) {
        transport.close();
      }
    }
  }

  /** This rank's side of the {@link Link} round; {@code transports} opens a transport for a group of n ranks. */
  static Link link(GroupContext group, IntFunction<PeerTransport> transports) {
    int n = group.size();
    PeerTransport transport = null;
    String problem = null;
    try {
      transport = transports.apply(n);
    } catch (IllegalStateException e) { // how a factory says why it cannot serve here (UcxTransport.open)
      problem = e.getMessage();
    } catch (RuntimeException | LinkageError e) {
      problem = "cannot open a UCX worker: " + e;
    }
    try {
      byte[] mine = transport == null ? ("ERR " + problem).getBytes(StandardCharsets.UTF_8) : join("OK ", transport.address());
      List<byte[]> all = group.rendezvous().allGather(mine, group.conf().get(GpuCollConf.TIMEOUT));
      byte[][] addresses = new byte[n][];
      String[] reasons = new String[n];
      for (int r = 0; r < n; r++) {
        byte[] a = all.get(r);
        String head = new String(a, 0, Math.min(3, a.length), StandardCharsets.UTF_8);
        if (head.equals("OK ")) {
          addresses[r] = Arrays.copyOfRange(a, 3, a.length);
        } else {
          reasons[r] = new String(a, Math.min(4, a.length), Math.max(0, a.length - 4), StandardCharsets.UTF_8);
        }
      }
      Link link = new Link(transport, addresses, reasons);
      transport = null;
      return link;
    } finally {
      if (transport != null) {
        transport.close();
      }
    }
  }

  /**
   * Forms the group over a {@link Link} every rank has (its transport is the communicator's from
   * here, closed when this fails): the shared-memory segment of each host, then the leaders' link.
   */
  static HostUcxCommunicator create(GroupContext group, Link link, IntFunction<PeerTransport> transports) {
    boolean formed = false;
    try {
      GpuCollConf conf = group.conf();
      int rank = group.rank();
      int n = group.size();
      HostRoute.checkForced(conf, rank, HostRoute.Between.UCX, BACKEND, List.of());
      if (n > MAX_RANKS) {
        throw new CollectiveException(rank, null, BACKEND + " serves at most " + MAX_RANKS + " ranks, got " + n);
      }
      Duration timeout = conf.get(GpuCollConf.TIMEOUT);
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
          conf, hostByRank, local, link.transport(), link.addresses(), transports);
      formed = true;
      return comm;
    } finally {
      if (!formed) {
        link.close();
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
    out.add("allReduce one-shot up to " + oneShotMax + " bytes, two-shot above" + (hostRanks.length == 2
        ? " (halving from " + HostRoute.HALVING_MIN_BYTES + " bytes, unless an algorithm is forced)" : "")
        + "; timeout " + Durations.format(timeout) + " per wait without progress");
    return out;
  }

  // ---- collectives ----

  @Override
  Algorithm runAllReduce(Signature sig, String problem, Buffer send, Buffer recv, int count, DataType type,
      ReduceOp op) {
    Algorithm algo = route.allReduce(problem == null ? (long) count * type.byteSize() : 0);
    allReduce.run(sig, problem, send, recv, count, type, op, algo);
    return algo;
  }

  @Override
  Algorithm runAllGather(Signature sig, String problem, Buffer send, Buffer recv, int count, DataType type) {
    allGather.run(sig, problem, send, recv, count, type);
    return route.movement(0);
  }

  @Override
  Algorithm runReduceScatter(Signature sig, String problem, Buffer send, Buffer recv, int count, DataType type,
      ReduceOp op) {
    reduceScatter.run(sig, problem, send, recv, count, type, op);
    return route.movement(0);
  }

  @Override
  Algorithm runAllToAll(Signature sig, String problem, Buffer send, Buffer recv, int count, DataType type) {
    allToAll.run(sig, problem, send, recv, count, type);
    return route.movement(0);
  }

  @Override
  Algorithm runAllToAllv(Signature sig, String problem, Buffer send, int[] sendCounts, int[] sendDispls,
      Buffer recv, int[] recvCounts, int[] recvDispls, DataType type) {
    allToAllv.run(sig, problem, send, sendCounts, sendDispls, recv, recvCounts, recvDispls, type);
    return route.movement(0);
  }

  @Override
  Algorithm runBroadcast(Signature sig, String problem, Buffer send, Buffer recv, int count, DataType type,
      int root) {
    broadcast.run(sig, problem, send, recv, count, type, root);
    return route.movement(0);
  }

  @Override
  Algorithm runBarrier(Signature sig) {
    barrier.run(sig);
    return route.barrier();
  }

  @Override
  Communicator splitGroup(int color, int key) {
    List<byte[]> colorKeys = allGather.gatherBytes(SplitOrder.payload(color, key), 8);
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
      List<byte[]> lengths = allGather.gatherBytes(ByteBuffer.allocate(4).putInt(mine.length).array(), 4);
      int max = lengths.stream().mapToInt(b -> ByteBuffer.wrap(b).getInt()).max().orElse(0);
      List<byte[]> all = allGather.gatherBytes(Arrays.copyOf(mine, max), max);
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

  private static int indexOf(int[] a, int v) {
    return HostTopology.indexOf(a, v);
  }

  private static byte[] join(String head, byte[] tail) {
    byte[] h = head.getBytes(StandardCharsets.UTF_8);
    byte[] out = Arrays.copyOf(h, h.length + tail.length);
    System.arraycopy(tail, 0, out, h.length, tail.length);
    return out;
  }
}
