package dev.gpucoll.api;

/**
 * The collectives of one {@link Communicator#group} call. Each method records a call with the same
 * arguments and meaning as the communicator's method of the same name; the calls run when the
 * group's body returns. On the GPU backend consecutive allReduces that its LL one-shot kernel
 * serves run as one launch ({@link GpuCommunicator#group} says which and what is checked).
 */
public interface CollectiveBatch {

  void allReduce(CommBuffer send, CommBuffer recv, long count, DataType type, ReduceOp op);

  void allGather(CommBuffer send, CommBuffer recv, long count, DataType type);

  void reduceScatter(CommBuffer send, CommBuffer recv, long count, DataType type, ReduceOp op);

  void allToAll(CommBuffer send, CommBuffer recv, long count, DataType type);

  void broadcast(CommBuffer send, CommBuffer recv, long count, DataType type, int root);
}
