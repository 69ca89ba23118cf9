package dev.gpucoll.cuda;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.core.Algorithm;
import dev.gpucoll.core.CommunicatorFactory;
import dev.gpucoll.core.spi.CommunicatorBackend;
import dev.gpucoll.core.spi.GroupContext;

/**
 * The non-spinning path for ranks that share a GPU: device -> pinned host -> the host backend's
 * collective -> device, all before the call returns. No kernel of ours runs, so nothing spins on
 * the GPU and a device-wide synchronisation by user code cannot deadlock a peer.
 */
final class StagedCalls {
  private final int rank;
  private final DeviceStage stage;
  private final Communicator host;

  StagedCalls(GroupContext group, DeviceStage stage) {
    this.rank = group.rank();
    this.stage = stage;
    CommunicatorBackend backend = CommunicatorFactory.backends().get("host");
    if (backend == null || backend.unavailableReason().isPresent()) {
      throw new CollectiveException(rank, null, "ranks share a GPU, so the group needs the non-spinning staged"
          + " path, but the host backend is not usable: "
          + (backend == null ? "not on the class path" : backend.unavailableReason().get()));
    }
    this.host = backend.create(group);
  }

  void run(Collective c, CommBuffer send, long sendBytes, CommBuffer recv, long recvBytes, long count,
      DataType type, ReduceOp op, int root) {
    if (c == Collective.BARRIER) {
      host.barrier();
      return;
    }
    DeviceStage.HostStage s = stage.toHost(c, send, sendBytes, recvBytes);
    CommBuffer in = CommBuffer.of(s.in());
    CommBuffer out = CommBuffer.of(s.out());
    switch (c) {
      case ALL_REDUCE -> host.allReduce(in, out, count, type, op);
      case ALL_GATHER -> host.allGather(in, out, count, type);
      case REDUCE_SCATTER -> host.reduceScatter(in, out, count, type, op);
      case ALL_TO_ALL -> host.allToAll(in, out, count, type);
      case BROADCAST -> host.broadcast(in, out, count, type, root);
      default -> throw new CollectiveException(rank, c, "not supported on " + Algorithm.GPU_STAGED_HOST);
    }
    stage.fromHost(c, s, recv, recvBytes);
  }

  void allToAllv(CommBuffer send, long sendBytes, long[] sendCounts, long[] sendDispls, CommBuffer recv,
      long recvBytes, long[] recvCounts, long[] recvDispls, DataType type) {
    DeviceStage.HostStage s = stage.toHost(Collective.ALL_TO_ALLV, send, sendBytes, recvBytes);
    host.allToAllv(CommBuffer.of(s.in()), sendCounts, sendDispls, CommBuffer.of(s.out()), recvCounts, recvDispls,
        type);
    stage.fromHost(Collective.ALL_TO_ALLV, s, recv, recvBytes);
  }

  /** Every rank's {@code mine} (as long on every rank), in rank order: one allGather of the host backend. */
  long[] allGather(long[] mine) {
    java.nio.ByteBuffer in = java.nio.ByteBuffer.allocate(8 * mine.length).order(java.nio.ByteOrder.nativeOrder());
    in.asLongBuffer().put(mine);
    java.nio.ByteBuffer out = java.nio.ByteBuffer.allocate(8 * mine.length * host.size())
        .order(java.nio.ByteOrder.nativeOrder());
    host.allGather(CommBuffer.of(in), CommBuffer.of(out), mine.length, DataType.INT64);
    long[] all = new long[mine.length * host.size()];
    out.asLongBuffer().get(all);
    return all;
  }

  void close() {
    host.close();
  }
}
