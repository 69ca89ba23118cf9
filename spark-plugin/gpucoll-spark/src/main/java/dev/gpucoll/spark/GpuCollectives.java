package dev.gpucoll.spark;

import dev.gpucoll.api.Communicator;
import dev.gpucoll.spark.barrier.BackendCheckedRDD;
import dev.gpucoll.spark.barrier.TaskCommunicators;
import dev.gpucoll.spark.barrier.UserCallSite;
import java.io.Serializable;
import java.util.Map;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.rdd.RDD;
// scala.collection.JavaConverters, not scala.jdk.javaapi (Scala 2.13 only): one source for both Scala binaries.
import scala.collection.JavaConverters;
import scala.reflect.ClassTag;
import scala.reflect.ClassTag$;
import scala.runtime.AbstractFunction1;

/**
 * The barrier-stage API. Inside {@code rdd.barrier().mapPartitions(...)},
 * {@link #communicator()} returns the task's communicator: rank = partition id, size = number of
 * tasks in the stage, hosts from {@code BarrierTaskContext.getTaskInfos()}.
 *
 * <p>With {@link GpuCollectivesPlugin} enabled, the ranks meet through the plugin's RPC
 * (milliseconds) and communicators are cached per executor: when the same group (same ranks on
 * the same executors) meets again in a later stage, one rendezvous round confirms that every rank
 * still holds the same communicator and it is reused. Without the plugin a barrier job is refused
 * (naming {@code spark.plugins}) unless {@code spark.gpucoll.rendezvous=allgather} asks for the
 * path without it: the ranks then meet in one {@code BarrierTaskContext.allGather} round (about one
 * second) and the communicator lives for the task only.
 *
 * <p>The returned communicator belongs to the plugin: do not close it unless it failed (a closed
 * communicator is rebuilt at the next stage). Settings come from {@code spark.gpucoll.*}; a job
 * may override them with {@code sc.setLocalProperty("spark.gpucoll.timeout", "10s")}.
 */
public final class GpuCollectives {
  private GpuCollectives() {}

  /**
   * The communicator of the current barrier task; the first call in a task forms it (or
   * confirms the cached one) with the other ranks, later calls in the same task return it.
   *
   * @throws IllegalStateException outside a barrier stage task
   * @throws dev.gpucoll.api.CollectiveTimeoutException when ranks do not arrive in time
   */
  public static Communicator communicator() {
    return TaskCommunicators.of(TaskContext.get(), Map.of());
  }

  /**
   * Java entry point: runs {@code body} as a barrier stage over {@code rdd}, giving each task its
   * communicator. ({@code JavaRDD} has no {@code barrier()}, and the Scala form needs a ClassTag
   * and a {@code scala.Function1}.) The Spark UI names the stage after the caller's line
   * ({@code barrierMapPartitions at Train.java:42}).
   */
  public static <T, R> JavaRDD<R> barrierMapPartitions(JavaRDD<T> rdd,
      BarrierPartitionFunction<T, R> body) {
    @SuppressWarnings("unchecked")
    ClassTag<R> tag = (ClassTag<R>) ClassTag$.MODULE$.AnyRef();
    // Behind a check, made at the job's submission, that the backend the settings require can run
    // on the executors: a job that cannot run fails there, naming each executor's reason, instead
    // of inside its barrier tasks.
    RDD<R> out = UserCallSite.around(rdd.context(), "barrierMapPartitions",
        () -> new BackendCheckedRDD<>(rdd.rdd(), rdd.classTag()).barrier()
            .mapPartitions(new ScalaBody<>(body), false, tag));
    return new JavaRDD<>(out, tag);
  }

  /** Adapts the Java body to the scala.Function1 over Scala iterators that RDDBarrier wants. */
  private static final class ScalaBody<T, R>
      extends AbstractFunction1<scala.collection.Iterator<T>, scala.collection.Iterator<R>>
      implements Serializable {
    private static final long serialVersionUID = 1L;
    private final BarrierPartitionFunction<T, R> body;

    ScalaBody(BarrierPartitionFunction<T, R> body) {
      this.body = body;
    }

    @Override
    @SuppressWarnings("deprecation") // JavaConverters, deprecated in Scala 2.13 only: one source for both Scala binaries
    public scala.collection.Iterator<R> apply(scala.collection.Iterator<T> rows) {
      try {
        return JavaConverters.asScalaIterator(body.call(communicator(), JavaConverters.asJavaIterator(rows)));
      } catch (RuntimeException e) {
        throw e;
      } catch (Exception e) {
        throw new RuntimeException(e);
      }
    }
  }
}
