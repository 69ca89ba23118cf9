package dev.gpucoll.cuda;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.cuda.eligibility.BufferRegistration;
import dev.gpucoll.cuda.nccl.NcclCommunicator;

/** Runs a call on the group's NCCL communicator, on the communicator's stream (host buffers staged). */
final class NcclCalls {
  private final int rank;
  private final DeviceStage stage;
  private final NcclCommunicator nccl;

  NcclCalls(int rank, DeviceStage stage, NcclCommunicator nccl) {
    this.rank = rank;
    this.stage = stage;
    this.nccl = nccl;
  }

  NcclCommunicator communicator() {
    return nccl;
  }

  /** What the call's buffers are as far as NCCL windows go (the route's NCCL variant depends on it). */
  BufferRegistration registration(CommBuffer send, long sendBytes, CommBuffer recv, long recvBytes) {
    if (send instanceof CommBuffer.Device s && recv instanceof CommBuffer.Device r) {
      return nccl.registrationOf(s.address(), sendBytes, r.address(), recvBytes);
    }
    return BufferRegistration.NONE; // host buffers are staged through unregistered scratch
  }

  void run(Collective c, CommBuffer send, long sendBytes, CommBuffer recv, long recvBytes, long count,
      DataType type, ReduceOp op, int root) {
    DeviceStage.CallPointers p = stage.pointers(c, send, sendBytes, recv, recvBytes);
    long stream = stage.stream();
    switch (c) {
      case ALL_REDUCE -> nccl.allReduce(p.send(), p.recv(), count, type, op, stream);
      case ALL_GATHER -> nccl.allGather(p.send(), p.recv(), count, type, stream);
      case REDUCE_SCATTER -> nccl.reduceScatter(p.send(), p.recv(), count, type, op, stream);
      case ALL_TO_ALL -> nccl.allToAll(p.send(), p.recv(), count, type, stream);
      case BROADCAST -> nccl.broadcast(p.send(), p.recv(), count, type, root, stream);
      case BARRIER -> {
        long word = stage.scratch(8); // a 1-element allReduce, then wait
        nccl.allReduce(word, word, 1, DataType.INT32, ReduceOp.SUM, stream);
        stage.waitStream(c);
      }
      default -> throw new CollectiveException(rank, c, "not routed to NCCL");
    }
    stage.finish(c, p, recv, recvBytes);
  }

  void allToAllv(CommBuffer send, long[] sendCounts, long[] sendDispls, CommBuffer recv, long[] recvCounts,
      long[] recvDispls, DataType type) {
    if (!(send instanceof CommBuffer.Device sd) || !(recv instanceof CommBuffer.Device rd)) {
      throw new CollectiveException(rank, Collective.ALL_TO_ALLV, "allToAllv over NCCL takes device buffers");
    }
    nccl.allToAllv(sd.address(), sendCounts, sendDispls, rd.address(), recvCounts, recvDispls, type, stage.stream());
  }
}
