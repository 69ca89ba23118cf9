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
import dev.gpucoll.core.rendezvous.Rendezvous;
import dev.gpucoll.core.spi.GroupContext;
import dev.gpucoll.core.spi.MemberInfo;
import java.io.ByteArrayOutputStream;
import java.nio.Buffer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The host backend for a group that spans hosts: every collective moves whole payloads through the
 * rendezvous channel (an all-gather of chunks) and each rank computes its result locally, in the
 * same rank order as the shared-memory path. Correct and slow; reported as "host-relay" everywhere
 * so nobody mistakes it for the fast path.
 */
final class HostRelayCommunicator extends AbstractHostCommunicator {
  static final String BACKEND = "host-relay";
  /** Payload bytes per rendezvous round; with the round header it stays under 64 KiB. */
  static final int CHUNK_BYTES = 60 << 10;
  private static final int MAGIC = 0x4743524C; // "GCRL"
  private static final int VERSION = 1;
  private static final int HEADER_BYTES = 50;

  private final Rendezvous rendezvous;
  private final List<String> hosts;
  private final HostRoute route;

  HostRelayCommunicator(GroupContext group) {
    super(group.rank(), group.size(), group.rendezvous().groupId(), group.self().host(),
        group.rendezvous().kind(), group.conf());
    HostRoute.checkForced(conf, rank, HostRoute.Between.RELAY, BACKEND, hostsOf(group));
    this.rendezvous = group.rendezvous();
    this.hosts = group.members().stream().map(MemberInfo::host).toList();
    this.route = HostRoute.relay(hosts.toArray(String[]::new), rendezvousKind, conf);
  }

  private static List<String> hostsOf(GroupContext g) {
    return g.members().stream().map(MemberInfo::host).distinct().toList();
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
    return List.of("host-relay: the host backend cannot share memory across hosts "
        + hosts.stream().distinct().toList() + "; every collective goes through the rendezvous");
  }

  // ---- collectives: gather everyone's bytes, compute locally ----

  @Override
  Algorithm runAllReduce(Signature sig, String problem, Buffer send, Buffer recv, int count, DataType type,
      ReduceOp op) {
    Collective c = Collective.ALL_REDUCE;
    List<byte[]> all = exchange(c, sig, problem, problem == null ? bytes(send, 0, count, type) : null);
    reduceFrom(all, 0, count, type, op, recv, 0);
    return route.algorithm(Collective.ALL_REDUCE, 0);
  }

  @Override
  Algorithm runAllGather(Signature sig, String problem, Buffer send, Buffer recv, int count, DataType type) {
    List<byte[]> all = exchange(Collective.ALL_GATHER, sig, problem,
        problem == null ? bytes(send, 0, count, type) : null);
    for (int p = 0; p < size; p++) {
      HostBuffers.copy(recv, p * count, view(all.get(p), type), 0, count);
    }
    return route.algorithm(Collective.ALL_GATHER, 0);
  }

  @Override
  Algorithm runReduceScatter(Signature sig, String problem, Buffer send, Buffer recv, int count,
      DataType type, ReduceOp op) {
    List<byte[]> all = exchange(Collective.REDUCE_SCATTER, sig, problem,
        problem == null ? bytes(send, 0, count * size, type) : null);
    reduceFrom(all, rank * count, count, type, op, recv, 0);
    return route.algorithm(Collective.REDUCE_SCATTER, 0);
  }

  @Override
  Algorithm runAllToAll(Signature sig, String problem, Buffer send, Buffer recv, int count, DataType type) {
    List<byte[]> all = exchange(Collective.ALL_TO_ALL, sig, problem,
        problem == null ? bytes(send, 0, count * size, type) : null);
    for (int p = 0; p < size; p++) {
      HostBuffers.copy(recv, p * count, view(all.get(p), type), rank * count, count);
    }
    return route.algorithm(Collective.ALL_TO_ALL, 0);
  }

  @Override
  Algorithm runAllToAllv(Signature sig, String problem, Buffer send, int[] sendCounts, int[] sendDispls,
      Buffer recv, int[] recvCounts, int[] recvDispls, DataType type) {
    Collective c = Collective.ALL_TO_ALLV;
    byte[] mine = null;
    if (problem == null) {
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      ByteBuffer counts = ByteBuffer.allocate(16 * size).order(ByteOrder.nativeOrder());
      for (int q = 0; q < size; q++) {
        counts.putLong(q * 8, sendCounts[q]);
        counts.putLong((size + q) * 8, recvCounts[q]);
      }
      out.writeBytes(counts.array());
      for (int q = 0; q < size; q++) {
        out.writeBytes(bytes(send, sendDispls[q], sendCounts[q], type));
      }
      mine = out.toByteArray();
    }
    List<byte[]> all = exchange(c, sig, problem, mine);
    long[][] sends = new long[size][size];
    long[][] recvs = new long[size][size];
    for (int p = 0; p < size; p++) {
      ByteBuffer b = ByteBuffer.wrap(all.get(p)).order(ByteOrder.nativeOrder());
      for (int q = 0; q < size; q++) {
        sends[p][q] = b.getLong(q * 8);
        recvs[p][q] = b.getLong((size + q) * 8);
      }
    }
    for (int p = 0; p < size; p++) {
      for (int q = 0; q < size; q++) {
        if (sends[p][q] != recvs[q][p]) {
          throw new CollectiveMismatchException(rank, c, "rank " + p + " sends " + sends[p][q]
              + " elements to rank " + q + " but rank " + q + " expects " + recvs[q][p] + " from rank " + p);
        }
      }
    }
    int es = type.byteSize();
    for (int p = 0; p < size; p++) {
      long at = 16L * size;
      for (int q = 0; q < rank; q++) {
        at += sends[p][q] * es;
      }
      Buffer v = HostBuffers.typedView(ByteBuffer.wrap(all.get(p), (int) at, recvCounts[p] * es), type);
      HostBuffers.copy(recv, recvDispls[p], v, 0, recvCounts[p]);
    }
    return route.algorithm(Collective.ALL_TO_ALLV, 0);
  }

  @Override
  Algorithm runBroadcast(Signature sig, String problem, Buffer send, Buffer recv, int count, DataType type,
      int root) {
    byte[] mine = problem == null && rank == root ? bytes(send, 0, count, type) : new byte[0];
    List<byte[]> all = exchange(Collective.BROADCAST, sig, problem, mine);
    HostBuffers.copy(recv, 0, view(all.get(root), type), 0, count);
    return route.algorithm(Collective.BROADCAST, 0);
  }

  @Override
  Algorithm runBarrier(Signature sig) {
    exchange(Collective.BARRIER, sig, null, new byte[0]);
    return route.algorithm(Collective.BARRIER, 0);
  }

  @Override
  Communicator splitGroup(int color, int key) {
    Signature sig = Signature.setup(1);
    ByteBuffer mine = ByteBuffer.allocate(8).putInt(color).putInt(key);
    List<byte[]> all = exchange(null, sig, null, mine.array());
    int[] members = splitMembers(all, color);
    // Every rank learns whether every new group fits on one host, so all fail or go on alike.
    List<String> spanning = new ArrayList<>();
    Map<Integer, Set<String>> hostsByColor = new TreeMap<>();
    for (int p = 0; p < size; p++) {
      int pc = ByteBuffer.wrap(all.get(p)).getInt();
      if (pc >= 0) {
        hostsByColor.computeIfAbsent(pc, k -> new TreeSet<>()).add(hosts.get(p));
      }
    }
    hostsByColor.forEach((col, hs) -> {
      if (hs.size() > 1) {
        spanning.add("color " + col + " spans " + hs);
      }
    });
    if (!spanning.isEmpty()) {
      throw new CollectiveException(rank, null, "split of a " + BACKEND + " group into groups that span hosts"
          + " is not supported (" + String.join("; ", spanning) + "); form such groups with a new rendezvous");
    }
    ShmSegment child = SegmentSetup.establish(p -> exchange(null, Signature.setup(2), null, p), rank,
        members, Path.of(conf.get(GpuCollConf.SHM_DIR)), HostShmCommunicator.llBytesFor(conf),
        HostShmCommunicator.BULK_BYTES);
    if (child == null) {
      return null;
    }
    int newRank = 0;
    while (members[newRank] != rank) {
      newRank++;
    }
    return new HostShmCommunicator(child, newRank, groupId + "/split(" + color + ")", host, rendezvousKind, conf);
  }

  @Override
  void abandonGroup(String reason) {
    // The rendezvous has no group-wide mark: the peers fail at their next round's timeout.
  }

  @Override
  void closeTransport() {
    // The rendezvous belongs to whoever created the group; nothing else is held.
  }

  // ---- helpers ----

  private void reduceFrom(List<byte[]> all, int elemOff, int count, DataType type, ReduceOp op, Buffer recv,
      int recvOff) {
    Buffer[] srcs = new Buffer[size];
    int[] idx = new int[size];
    for (int p = 0; p < size; p++) {
      srcs[p] = view(all.get(p), type);
      idx[p] = elemOff;
    }
    reducer.reduce(type, op, size, srcs, idx, size, recv, recvOff, count);
  }

  private static Buffer view(byte[] b, DataType type) {
    return HostBuffers.typedView(ByteBuffer.wrap(b), type);
  }

  private static byte[] bytes(Buffer src, int off, int count, DataType type) {
    byte[] out = new byte[count * type.byteSize()];
    HostBuffers.copy(HostBuffers.typedView(ByteBuffer.wrap(out), type), 0, src, off, count);
    return out;
  }

  /**
   * All-gathers every rank's bytes through the rendezvous in rounds of {@link #CHUNK_BYTES}; the
   * first round carries each rank's signature and status, so a problem or a mismatch fails every
   * rank alike before any data round.
   */
  private List<byte[]> exchange(Collective c, Signature sig, String problem, byte[] mine) {
    byte[] data = mine == null ? new byte[0] : mine;
    byte[][] whole = new byte[size][];
    int[] filled = new int[size];
    int rounds = 1;
    for (int round = 0; round < rounds; round++) {
      int from = Math.min(data.length, round * CHUNK_BYTES);
      int len = Math.min(CHUNK_BYTES, data.length - from);
      byte[] err = problem == null ? new byte[0] : ShmSegment.truncate(problem, 1000);
      ByteBuffer out = ByteBuffer.allocate(HEADER_BYTES + err.length + len);
      out.putInt(MAGIC).putShort((short) VERSION).putInt(round).putInt(sig.code()).putLong(sig.count())
          .putInt(sig.type()).putInt(sig.op()).putInt(sig.root()).putInt(problem == null ? 0 : 1)
          .putInt(data.length).putInt(err.length).put(err).putInt(len).put(data, from, len);
      List<byte[]> got = gather(c, out.array());
      List<String> errors = new ArrayList<>();
      Signature first = null;
      String mismatch = null;
      for (int p = 0; p < size; p++) {
        ByteBuffer in = ByteBuffer.wrap(got.get(p));
        if (in.remaining() < HEADER_BYTES || in.getInt() != MAGIC || in.getShort() != VERSION || in.getInt() != round) {
          throw broken(c, new CollectiveException(rank, c, "rank " + p
              + " sent a relay message this build cannot read (round " + round + ")"));
        }
        Signature s = new Signature(in.getInt(), in.getLong(), in.getInt(), in.getInt(), in.getInt());
        int status = in.getInt();
        int total = in.getInt();
        byte[] text = new byte[in.getInt()];
        in.get(text);
        int chunk = in.getInt();
        if (status != 0) {
          errors.add("rank " + p + " rejected its call: " + new String(text, StandardCharsets.UTF_8));
        }
        if (first == null) {
          first = s;
        } else if (!s.equals(first) && mismatch == null) {
          mismatch = "ranks called different collectives: rank 0 called " + first.describe() + " but rank "
              + p + " called " + s.describe();
        }
        if (round == 0) {
          whole[p] = new byte[Math.max(0, total)];
          rounds = Math.max(rounds, (total + CHUNK_BYTES - 1) / CHUNK_BYTES);
        }
        if (chunk < 0 || chunk > in.remaining() || filled[p] + chunk > whole[p].length) {
          throw broken(c, new CollectiveException(rank, c, "rank " + p + " sent a bad relay chunk"));
        }
        in.get(whole[p], filled[p], chunk);
        filled[p] += chunk;
      }
      if (round == 0) {
        if (problem != null) {
          throw new CollectiveException(rank, c, problem);
        }
        if (!errors.isEmpty()) {
          throw new CollectiveException(rank, c, String.join("; ", errors));
        }
        if (mismatch != null) {
          throw new CollectiveMismatchException(rank, c, mismatch);
        }
      }
    }
    return List.of(whole);
  }

  private List<byte[]> gather(Collective c, byte[] payload) {
    // Each round is one step of progress: the timeout bounds a round, not the whole call.
    try {
      return rendezvous.allGather(payload, bounds.timeout());
    } catch (CollectiveTimeoutException e) {
      throw broken(c, new CollectiveTimeoutException(rank, c, e.missingRanks(),
          (e.missingRanks().size() == 1 ? "rank " + e.missingRanks().get(0) : "ranks " + e.missingRanks())
              + " did not arrive within " + Durations.format(bounds.timeout())
              + " (relay through " + rendezvousKind + ")"));
    } catch (RuntimeException e) {
      throw broken(c, new CollectiveException(rank, c, "relay through " + rendezvousKind + " failed: " + e, e));
    }
  }

  private CollectiveException broken(Collective c, CollectiveException e) {
    markBroken(e.getMessage());
    return e;
  }
}
