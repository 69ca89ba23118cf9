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
   * The raw ncclComm_t address for libraries that take one (cuSOLVERMp, cuFFTMp), or 0 when the
   * group has no NCCL communicator. Owned by this communicator: do not destroy it.
   */
  long ncclComm();

  @Override
  GpuCommunicator split(int color, int key);
}
