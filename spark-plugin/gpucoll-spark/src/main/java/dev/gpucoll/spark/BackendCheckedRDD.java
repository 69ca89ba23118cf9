package dev.gpucoll.spark;

import org.apache.spark.Partition;
import org.apache.spark.TaskContext;
import org.apache.spark.rdd.RDD;
import scala.reflect.ClassTag;

/**
 * The parent of the barrier stages our API creates: passes its parent's rows through unchanged,
 * and when Spark asks for its partitions, on the driver at the job's submission (before any stage
 * is scheduled), refuses the job if its spark.gpucoll local properties do not parse or the
 * required backend cannot run on some executor ({@link GpuCollDriverPlugin#checkJob}), or the plugin
 * is not enabled and the settings do not ask for the path without it ({@link MissingPlugin}). Spark asks
 * once per RDD (it keeps the partitions), so a later job on the same RDD is not checked again.
 *
 * <p>On the executors it records which tasks compute through it: those take its job's {@link
 * GroupCredential} ({@link GroupCredential#of}).
 */
final class BackendCheckedRDD<T> extends RDD<T> {
  private static final long serialVersionUID = 1L;
  private final ClassTag<T> tag;

  BackendCheckedRDD(RDD<T> parent, ClassTag<T> tag) {
    super(parent, tag);
    this.tag = tag;
  }

  /** The id of this RDD by the attempt id of each running task that computes through it. */
  private static final java.util.Map<Long, String> COMPUTING = new java.util.concurrent.ConcurrentHashMap<>();

  @Override
  public scala.collection.Iterator<T> compute(Partition split, TaskContext context) {
    long task = context.taskAttemptId();
    if (COMPUTING.put(task, Integer.toString(id())) == null) {
      context.addTaskCompletionListener((org.apache.spark.util.TaskCompletionListener) ctx -> COMPUTING.remove(task));
    }
    return firstParent(tag).iterator(split, context);
  }

  /** The id of the RDD of this class that task {@code taskAttemptId} computes through, or null. */
  static String computedThrough(long taskAttemptId) {
    return COMPUTING.get(taskAttemptId);
  }

  @Override
  public Partition[] getPartitions() {
    GpuCollDriverPlugin driver = GpuCollDriverPlugin.active;
    if (driver != null) {
      driver.checkJob(context(), id());
    } else {
      MissingPlugin.checkJob(context());
    }
    return firstParent(tag).partitions();
  }
}
