package dev.gpucoll.cuda;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.core.Algorithm;

/**
 * The non-spinning path for ranks that share a GPU: device -> pinned host -> the host backend's
 * collective -> device, all before the call returns. No kernel of ours runs, so nothing spins on
 * the GPU and a device-wide synchronisation by user code cannot deadlock a peer. Its host
 * communicator is the group's {@link HostGroup}'s, which the communicator closes.
 */
final class StagedCalls {
  private final int rank;
  private final DeviceStage stage;
  private final Communicator host;

  StagedCalls(int rank, DeviceStage stage, Communicator host) {
    this.rank = rank;
    this.stage = stage;
    this.host = host;
  }

  void run(GpuCall k) {
    Collective c = k.collective();
    if (c == Collective.BARRIER) {
      host.barrier();
      return;
    }
    DeviceStage.HostStage s = stage.toHost(c, k.send(), k.sendBytes(), k.recv(), k.recvBytes());
    CommBuffer in = CommBuffer.of(s.in());
    CommBuffer out = CommBuffer.of(s.out());
    switch (c) {
      case ALL_REDUCE -> host.allReduce(in, out, k.count(), k.type(), k.op());
      case ALL_GATHER -> host.allGather(in, out, k.count(), k.type());
      case REDUCE_SCATTER -> host.reduceScatter(in, out, k.count(), k.type(), k.op());
      case ALL_TO_ALL -> host.allToAll(in, out, k.count(), k.type());
      case ALL_TO_ALLV -> host.allToAllv(in, k.sendCounts(), k.sendDispls(), out, k.recvCounts(), k.recvDispls(),
          k.type());
      case BROADCAST -> host.broadcast(in, out, k.count(), k.type(), k.root());
      default -> throw new CollectiveException(rank, c, "not supported on " + Algorithm.GPU_STAGED_HOST);
    }
    stage.fromHost(c, s, k.recv(), k.recvBytes());
  }
}
