package dev.gpucoll.api;

/**
 * A communicator over GPUs. Collectives on {@link CommBuffer.Device} buffers are enqueued on
 * {@link #stream()}; HPC users can reach the underlying NCCL communicator directly.
 *
 * <p>CUDA graphs: a collective captured into a graph may be replayed any number of times. The kernels
 * take each launch's epoch from a counter in device memory that they advance themselves (the epoch in
 * the captured arguments is only a lower bound), so every replay is a new epoch on every rank. As for
 * eager calls, every rank must replay the same sequence, and one rank's collectives must stay ordered
 * on one stream.
 */
public interface GpuCommunicator extends Communicator {

  /** CUDA device ordinal this rank uses. */
  int device();

  /** The cudaStream_t collectives are enqueued on (0 = the legacy default stream). */
  long stream();

  /** Enqueue later collectives on this cudaStream_t. */
  void setStream(long cudaStream);

  /** Waits until every collective enqueued so far has completed. */
  void synchronize();

  /**
   * As {@link Communicator#group}, enqueued on {@link #stream()}. Where our kernels serve, each run
   * of consecutive allReduces that would each take the LL one-shot kernel (at most 64 KB per call),
   * with one type and op, device buffers, and no call's buffers overlapping another's output, is ONE
   * kernel launch: up to 64 calls whose payloads, each rounded up to 8 bytes, fit 64 KB (16 calls of
   * 4 KB fit); a longer run takes several launches. Results are bit-identical to the same calls one
   * by one. Every rank's batch is compared, on every path, before anything is enqueued
   * ({@link Communicator#group}); that exchange is on the host and does not wait for the stream.
   * The fused launches also compare the batch on the GPU: where one meets a peer that made a call
   * outside a group instead, the fused rank fails with a {@link CollectiveMismatchException} naming
   * that peer, and the communicator must be closed. The other calls run as alone, our kernels back
   * to back, the ones NCCL serves inside one {@code ncclGroupStart/End}. A batch with a host buffer
   * runs call by call, unfused.
   */
  @Override
  void group(java.util.function.Consumer<CollectiveBatch> calls);

  /**
   * The raw ncclComm_t address for libraries that take one (cuSOLVERMp, cuFFTMp), or 0 when the
   * group has no NCCL communicator. Owned by this communicator: do not destroy it. A P × Q grid's
   * position and its row and column communicators (each with its own ncclComm_t): {@link ProcessGrid}.
   */
  long ncclComm();

  /**
   * Device memory that NCCL can use as a symmetric window: ncclMemAlloc'ed and registered with the
   * group's NCCL communicator (NCCL_WIN_COLL_SYMMETRIC), so AllGather and AlltoAll on it can run on
   * copy engines (Zero-CTA, see docs/zero-cta.md) and allReduce on NCCL's symmetric kernels.
   * Collective: every rank calls it with the same size, in the same order, and closes it the same
   * way. Plain cudaMalloc memory cannot be registered (NCCL 2.28.3 fails every later collective).
   *
   * @throws IllegalArgumentException when {@code bytes} is not positive
   * @throws CollectiveException when the group has no NCCL communicator or NCCL refuses the window
   */
  SymmetricMemory allocSymmetric(long bytes);

  /**
   * Captures {@code step} into a CUDA graph: the collectives it calls on this communicator and any
   * kernels or copies it enqueues on {@link #stream()} (in thread-local capture mode), instantiated
   * once. {@link CapturedGraph#replay} runs the whole step again with one graph launch, with no Java
   * per collective. Every rank captures and replays the same sequence (see above). Calls that wait
   * on the host cannot be captured and fail with a {@link CollectiveException} that says why: host
   * buffers, the staged path of ranks that share a GPU, {@link #barrier()}, {@link #synchronize()},
   * stream changes, splits and symmetric allocations; the capture is then discarded.
   *
   * @throws CollectiveException when a call inside {@code step} cannot be captured or CUDA refuses the graph
   */
  CapturedGraph capture(Runnable step);

  /** A replayable CUDA graph of collectives; close() destroys it. */
  interface CapturedGraph extends AutoCloseable {
    /** Launches the graph on the communicator's current stream. */
    void replay();

    @Override
    void close();
  }

  /** Device memory in a symmetric window; close() deregisters and frees it (collective). */
  interface SymmetricMemory extends AutoCloseable {
    /** The whole allocation, usable as send and receive buffer of any collective of this group. */
    CommBuffer.Device buffer();

    @Override
    void close();
  }

  @Override
  GpuCommunicator split(int color, int key);
}
