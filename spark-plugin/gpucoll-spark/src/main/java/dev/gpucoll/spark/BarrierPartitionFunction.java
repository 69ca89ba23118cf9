package dev.gpucoll.spark;

import dev.gpucoll.api.Communicator;
import java.io.Serializable;
import java.util.Iterator;

/**
 * The body of a barrier stage for Java callers of
 * {@link GpuCollectives#barrierMapPartitions}: gets the task's communicator and its partition.
 */
@FunctionalInterface
public interface BarrierPartitionFunction<T, R> extends Serializable {
  Iterator<R> call(Communicator communicator, Iterator<T> partition) throws Exception;
}
