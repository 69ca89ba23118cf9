package dev.gpucoll.api;

import java.util.List;
import java.util.function.Consumer;

/**
 * A group of ranks that run collectives together. Every rank of the group must call the same
 * collectives in the same order with matching arguments; a mismatch is reported on every rank as a
 * {@link CollectiveMismatchException}, a rank that does not arrive as a
 * {@link CollectiveTimeoutException}. Results are bit-identical on every rank.
 *
 * <p>Host buffers complete before the call returns. Device buffers are enqueued on the
 * communicator's stream (see {@link GpuCommunicator}) and complete in stream order, as in NCCL.
 *
 * <p>Counts are in elements. A communicator is not thread-safe: one thread drives it at a time.
 */
public interface Communicator extends AutoCloseable {

  int rank();

  int size();

  /** Name of the backend serving this group, e.g. "host-shm", "gpu", "host-relay". */
  String backend();

  /** recv[i] = op over ranks of send[i], for i in [0, count). send and recv may be the same. */
  void allReduce(CommBuffer send, CommBuffer recv, long count, DataType type, ReduceOp op);

  /**
   * MAXLOC / MINLOC over value-index pairs (MPI_MAXLOC, MPI_MINLOC): pair i of recv = the pair
   * with the largest (smallest) value among every rank's pair i of send, the lowest index among
   * equal values; NaN values fail the call on every rank ({@link LocOp}). {@code count} is in
   * pairs; the layout of a pair is {@link PairType}'s. Every rank gets the same bits.
   *
   * <p>It runs as an allGather of the pairs followed by the same fold on every rank, so its cost
   * grows with the group size times {@code count}: it is made for pivot searches (a few pairs), not
   * for long vectors. On the GPU backend it waits for the stream and folds on the host (not
   * capturable in a CUDA graph). Not available inside {@link #group}.
   */
  void allReduce(CommBuffer send, CommBuffer recv, long count, PairType type, LocOp op);

  /** recv[r * count + i] = send of rank r [i]. */
  void allGather(CommBuffer send, CommBuffer recv, long count, DataType type);

  /** recv[i] = op over ranks of send[rank * count + i]; send holds size * count elements. */
  void reduceScatter(CommBuffer send, CommBuffer recv, long count, DataType type, ReduceOp op);

  /** recv[r * count + i] = send of rank r [rank * count + i]. */
  void allToAll(CommBuffer send, CommBuffer recv, long count, DataType type);

  /**
   * All-to-all with per-peer counts and displacements (in elements), as MPI_Alltoallv. The counts
   * this rank sends to r must equal the counts r expects from this rank.
   */
  void allToAllv(
      CommBuffer send,
      long[] sendCounts,
      long[] sendDispls,
      CommBuffer recv,
      long[] recvCounts,
      long[] recvDispls,
      DataType type);

  /** recv = send of {@code root}; on root send and recv may be the same. */
  void broadcast(CommBuffer send, CommBuffer recv, long count, DataType type, int root);

  /**
   * Runs several collectives as one group, as the calls between {@code ncclGroupStart} and
   * {@code ncclGroupEnd}: {@code calls} records them on the batch it is given, and they run, in the
   * order recorded, when it returns. Results are the same, bit for bit, as the same calls made one by
   * one. The calls of one group must not depend on each other (one call's output another's input),
   * as in NCCL. Every rank must record the same batch: the same collectives with the same counts,
   * types, ops and roots, in the same order; the host backend checks that before any data moves and
   * fails on every rank with a {@link CollectiveMismatchException} when they differ. The GPU backend
   * checks it in the kernels where it fuses calls (see {@link GpuCommunicator#group}). Inside
   * {@code calls} the communicator's own methods fail; an exception thrown by {@code calls} runs
   * nothing. An empty group does nothing.
   */
  void group(Consumer<CollectiveBatch> calls);

  /** Returns once every rank has entered the barrier. */
  void barrier();

  /**
   * Splits the group like MPI_Comm_split / ncclCommSplit: ranks with the same color form a new
   * communicator, ordered by key then by rank. A negative color returns null for that rank.
   */
  Communicator split(int color, int key);

  /** The algorithm a collective of {@code bytes} would take here, and why. */
  PathChoice explain(Collective collective, long bytes);

  /** Algorithms this communicator has actually run, with call counts; for reports. */
  List<String> observedPaths();

  void addListener(CollectiveListener listener);

  boolean isClosed();

  /** Releases shared memory and device resources. Idempotent; later calls fail. */
  @Override
  void close();

  // Java-friendly in-place forms for the common ML case (gradient allreduce on the host).

  default void allReduce(float[] inOut, ReduceOp op) {
    CommBuffer b = CommBuffer.of(inOut);
    allReduce(b, b, inOut.length, DataType.FLOAT32, op);
  }

  default void allReduce(double[] inOut, ReduceOp op) {
    CommBuffer b = CommBuffer.of(inOut);
    allReduce(b, b, inOut.length, DataType.FLOAT64, op);
  }

  default void allReduce(int[] inOut, ReduceOp op) {
    CommBuffer b = CommBuffer.of(inOut);
    allReduce(b, b, inOut.length, DataType.INT32, op);
  }

  default void allReduce(long[] inOut, ReduceOp op) {
    CommBuffer b = CommBuffer.of(inOut);
    allReduce(b, b, inOut.length, DataType.INT64, op);
  }
}
