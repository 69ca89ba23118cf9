package dev.gpucoll.cuda;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.ReduceOp;

/**
 * One call of a GPU communicator whose checks passed, as every run path takes it
 * ({@link StagedCalls}, {@link NcclCalls}, {@link KernelCalls}).
 *
 * @param sendBytes bytes read from send
 * @param recvBytes bytes written to recv
 * @param count the per-rank count (per peer for data movement; 0 for allToAllv)
 * @param op SUM where the collective has none
 * @param root 0 where the collective has none
 * @param a2av allToAllv's {sendCounts, sendDispls, recvCounts, recvDispls}, else null
 */
record GpuCall(Collective collective, CommBuffer send, long sendBytes, CommBuffer recv, long recvBytes, long count,
    DataType type, ReduceOp op, int root, long[][] a2av) {

  /** A call of {@code collective} other than allToAllv. */
  static GpuCall of(Collective collective, CommBuffer send, long sendBytes, CommBuffer recv, long recvBytes,
      long count, DataType type, ReduceOp op, int root) {
    return new GpuCall(collective, send, sendBytes, recv, recvBytes, count, type, op, root, null);
  }

  long[] sendCounts() {
    return a2av[0];
  }

  long[] sendDispls() {
    return a2av[1];
  }

  long[] recvCounts() {
    return a2av[2];
  }

  long[] recvDispls() {
    return a2av[3];
  }
}
