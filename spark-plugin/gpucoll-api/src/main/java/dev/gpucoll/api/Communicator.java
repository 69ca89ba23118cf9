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
   * types, ops and roots, in the same order. Before any data moves every rank exchanges what it
   * recorded, the first call whose arguments it refuses, or that its {@code calls} threw (one small
   * exchange over the host, on every backend and path): when the batches differ every rank fails
   * with a {@link CollectiveMismatchException}; when one rank refuses a call, or its {@code calls}
   * threw, every rank fails at once naming it, without waiting for a timeout. Nothing has run then,
   * and the communicator stays usable on every rank. Inside {@code calls} the communicator's own
   * methods fail; an exception thrown by {@code calls} reaches this rank's caller as it is. A rank
   * that makes another call instead of group() is not part of that exchange: the ranks wait for it
   * as for any call it does not make.
   * An empty group runs nothing (every rank still takes part in the exchange).
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

  // Plain-array forms (Java and Scala's Array[Float] etc.): the same call as the CommBuffer form
  // on the wrapped arrays, so the same results bit for bit. Counts are the arrays' lengths; the
  // forms that return an array allocate it. short[] carries FLOAT16 or BFLOAT16 bits, byte[] INT8
  // or UINT8 (the type argument says which); another type fails with IllegalArgumentException.

  /** In place: inOut[i] = op over ranks of inOut[i]. */
  default void allReduce(float[] inOut, ReduceOp op) {
    ArrayForms.allReduce(this, inOut, DataType.FLOAT32, op);
  }

  /** Every rank's send, in rank order: size() * send.length elements. */
  default float[] allGather(float[] send) {
    return ArrayForms.allGather(this, send, DataType.FLOAT32);
  }

  /** Block {@code rank()} of the reduction over ranks of send (send.length a multiple of size()). */
  default float[] reduceScatter(float[] send, ReduceOp op) {
    return ArrayForms.reduceScatter(this, send, DataType.FLOAT32, op);
  }

  /** Block r of the result = block {@code rank()} of rank r's send (send.length a multiple of size()). */
  default float[] allToAll(float[] send) {
    return ArrayForms.allToAll(this, send, DataType.FLOAT32);
  }

  /**
   * sendCounts[r] elements to rank r, packed in rank order in send; the result holds recvCounts[r]
   * elements from each rank r, packed in rank order.
   */
  default float[] allToAllv(float[] send, long[] sendCounts, long[] recvCounts) {
    return ArrayForms.allToAllv(this, send, sendCounts, recvCounts, DataType.FLOAT32);
  }

  /** In place: inOut = root's inOut on every rank. */
  default void broadcast(float[] inOut, int root) {
    ArrayForms.broadcast(this, inOut, DataType.FLOAT32, root);
  }

  /** In place: inOut[i] = op over ranks of inOut[i]. */
  default void allReduce(double[] inOut, ReduceOp op) {
    ArrayForms.allReduce(this, inOut, DataType.FLOAT64, op);
  }

  /** Every rank's send, in rank order: size() * send.length elements. */
  default double[] allGather(double[] send) {
    return ArrayForms.allGather(this, send, DataType.FLOAT64);
  }

  /** Block {@code rank()} of the reduction over ranks of send (send.length a multiple of size()). */
  default double[] reduceScatter(double[] send, ReduceOp op) {
    return ArrayForms.reduceScatter(this, send, DataType.FLOAT64, op);
  }

  /** Block r of the result = block {@code rank()} of rank r's send (send.length a multiple of size()). */
  default double[] allToAll(double[] send) {
    return ArrayForms.allToAll(this, send, DataType.FLOAT64);
  }

  /**
   * sendCounts[r] elements to rank r, packed in rank order in send; the result holds recvCounts[r]
   * elements from each rank r, packed in rank order.
   */
  default double[] allToAllv(double[] send, long[] sendCounts, long[] recvCounts) {
    return ArrayForms.allToAllv(this, send, sendCounts, recvCounts, DataType.FLOAT64);
  }

  /** In place: inOut = root's inOut on every rank. */
  default void broadcast(double[] inOut, int root) {
    ArrayForms.broadcast(this, inOut, DataType.FLOAT64, root);
  }

  /** In place: inOut[i] = op over ranks of inOut[i]. */
  default void allReduce(int[] inOut, ReduceOp op) {
    ArrayForms.allReduce(this, inOut, DataType.INT32, op);
  }

  /** Every rank's send, in rank order: size() * send.length elements. */
  default int[] allGather(int[] send) {
    return ArrayForms.allGather(this, send, DataType.INT32);
  }

  /** Block {@code rank()} of the reduction over ranks of send (send.length a multiple of size()). */
  default int[] reduceScatter(int[] send, ReduceOp op) {
    return ArrayForms.reduceScatter(this, send, DataType.INT32, op);
  }

  /** Block r of the result = block {@code rank()} of rank r's send (send.length a multiple of size()). */
  default int[] allToAll(int[] send) {
    return ArrayForms.allToAll(this, send, DataType.INT32);
  }

  /**
   * sendCounts[r] elements to rank r, packed in rank order in send; the result holds recvCounts[r]
   * elements from each rank r, packed in rank order.
   */
  default int[] allToAllv(int[] send, long[] sendCounts, long[] recvCounts) {
    return ArrayForms.allToAllv(this, send, sendCounts, recvCounts, DataType.INT32);
  }

  /** In place: inOut = root's inOut on every rank. */
  default void broadcast(int[] inOut, int root) {
    ArrayForms.broadcast(this, inOut, DataType.INT32, root);
  }

  /** In place: inOut[i] = op over ranks of inOut[i]. */
  default void allReduce(long[] inOut, ReduceOp op) {
    ArrayForms.allReduce(this, inOut, DataType.INT64, op);
  }

  /** Every rank's send, in rank order: size() * send.length elements. */
  default long[] allGather(long[] send) {
    return ArrayForms.allGather(this, send, DataType.INT64);
  }

  /** Block {@code rank()} of the reduction over ranks of send (send.length a multiple of size()). */
  default long[] reduceScatter(long[] send, ReduceOp op) {
    return ArrayForms.reduceScatter(this, send, DataType.INT64, op);
  }

  /** Block r of the result = block {@code rank()} of rank r's send (send.length a multiple of size()). */
  default long[] allToAll(long[] send) {
    return ArrayForms.allToAll(this, send, DataType.INT64);
  }

  /**
   * sendCounts[r] elements to rank r, packed in rank order in send; the result holds recvCounts[r]
   * elements from each rank r, packed in rank order.
   */
  default long[] allToAllv(long[] send, long[] sendCounts, long[] recvCounts) {
    return ArrayForms.allToAllv(this, send, sendCounts, recvCounts, DataType.INT64);
  }

  /** In place: inOut = root's inOut on every rank. */
  default void broadcast(long[] inOut, int root) {
    ArrayForms.broadcast(this, inOut, DataType.INT64, root);
  }

  /** In place: inOut[i] = op over ranks of inOut[i]. */
  default void allReduce(short[] inOut, DataType type, ReduceOp op) {
    ArrayForms.allReduce(this, inOut, type, op);
  }

  /** Every rank's send, in rank order: size() * send.length elements. */
  default short[] allGather(short[] send, DataType type) {
    return ArrayForms.allGather(this, send, type);
  }

  /** Block {@code rank()} of the reduction over ranks of send (send.length a multiple of size()). */
  default short[] reduceScatter(short[] send, DataType type, ReduceOp op) {
    return ArrayForms.reduceScatter(this, send, type, op);
  }

  /** Block r of the result = block {@code rank()} of rank r's send (send.length a multiple of size()). */
  default short[] allToAll(short[] send, DataType type) {
    return ArrayForms.allToAll(this, send, type);
  }

  /**
   * sendCounts[r] elements to rank r, packed in rank order in send; the result holds recvCounts[r]
   * elements from each rank r, packed in rank order.
   */
  default short[] allToAllv(short[] send, long[] sendCounts, long[] recvCounts, DataType type) {
    return ArrayForms.allToAllv(this, send, sendCounts, recvCounts, type);
  }

  /** In place: inOut = root's inOut on every rank. */
  default void broadcast(short[] inOut, DataType type, int root) {
    ArrayForms.broadcast(this, inOut, type, root);
  }

  /** In place: inOut[i] = op over ranks of inOut[i]. */
  default void allReduce(byte[] inOut, DataType type, ReduceOp op) {
    ArrayForms.allReduce(this, inOut, type, op);
  }

  /** Every rank's send, in rank order: size() * send.length elements. */
  default byte[] allGather(byte[] send, DataType type) {
    return ArrayForms.allGather(this, send, type);
  }

  /** Block {@code rank()} of the reduction over ranks of send (send.length a multiple of size()). */
  default byte[] reduceScatter(byte[] send, DataType type, ReduceOp op) {
    return ArrayForms.reduceScatter(this, send, type, op);
  }

  /** Block r of the result = block {@code rank()} of rank r's send (send.length a multiple of size()). */
  default byte[] allToAll(byte[] send, DataType type) {
    return ArrayForms.allToAll(this, send, type);
  }

  /**
   * sendCounts[r] elements to rank r, packed in rank order in send; the result holds recvCounts[r]
   * elements from each rank r, packed in rank order.
   */
  default byte[] allToAllv(byte[] send, long[] sendCounts, long[] recvCounts, DataType type) {
    return ArrayForms.allToAllv(this, send, sendCounts, recvCounts, type);
  }

  /** In place: inOut = root's inOut on every rank. */
  default void broadcast(byte[] inOut, DataType type, int root) {
    ArrayForms.broadcast(this, inOut, type, root);
  }
}
