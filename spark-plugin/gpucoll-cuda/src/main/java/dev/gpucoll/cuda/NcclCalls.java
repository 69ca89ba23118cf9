package dev.gpucoll.cuda;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.GpuCommunicator;
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

  /** A symmetric window of the group's NCCL communicator ({@link GpuCommunicator#allocSymmetric}). */
  GpuCommunicator.SymmetricMemory allocSymmetric(long bytes) {
    NcclCommunicator.SymmetricBuffer window = nccl.allocSymmetric(bytes);
    CommBuffer.Device buffer = new CommBuffer.Device(window.address(), window.bytes());
    return new GpuCommunicator.SymmetricMemory() {
      @Override
      public CommBuffer.Device buffer() {
        return buffer;
      }

      @Override
      public void close() {
        window.close();
      }
    };
  }

  /** What the call's buffers are as far as NCCL windows go (the route's NCCL variant depends on it). */
  BufferRegistration registration(CommBuffer send, long sendBytes, CommBuffer recv, long recvBytes) {
    if (send instanceof CommBuffer.Device s && recv instanceof CommBuffer.Device r) {
      return nccl.registrationOf(s.address(), sendBytes, r.address(), recvBytes);
    }
    return BufferRegistration.NONE; // host buffers are staged through unregistered scratch
  }

  void run(GpuCall k) {
    Collective c = k.collective();
    DeviceStage.CallPointers p = stage.pointers(c, k.send(), k.sendBytes(), k.recv(), k.recvBytes());
    long stream = stage.stream();
    switch (c) {
      case ALL_TO_ALLV -> nccl.allToAllv(p.send(), k.sendCounts(), k.sendDispls(), p.recv(), k.recvCounts(),
          k.recvDispls(), k.type(), stream);
      case ALL_REDUCE -> nccl.allReduce(p.send(), p.recv(), k.count(), k.type(), k.op(), stream);
      case ALL_GATHER -> nccl.allGather(p.send(), p.recv(), k.count(), k.type(), stream);
      case REDUCE_SCATTER -> nccl.reduceScatter(p.send(), p.recv(), k.count(), k.type(), k.op(), stream);
      case ALL_TO_ALL -> nccl.allToAll(p.send(), p.recv(), k.count(), k.type(), stream);
      case BROADCAST -> nccl.broadcast(p.send(), p.recv(), k.count(), k.type(), k.root(), stream);
      case BARRIER -> {
        long word = stage.scratch(8); // a 1-element allReduce, then wait
        nccl.allReduce(word, word, 1, DataType.INT32, ReduceOp.SUM, stream);
        stage.waitStream(c);
      }
      default -> throw new CollectiveException(rank, c, "not routed to NCCL");
    }
    stage.finish(c, p, k.recv(), k.recvBytes());
  }
}
