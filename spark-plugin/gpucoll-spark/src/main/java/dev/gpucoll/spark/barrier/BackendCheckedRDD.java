package dev.gpucoll.spark.barrier;

import dev.gpucoll.spark.rpc.GroupCredential;
import org.apache.spark.Partition;
import org.apache.spark.TaskContext;
import org.apache.spark.rdd.RDD;
import scala.reflect.ClassTag;

/**
 * The parent of the barrier stages our API creates: passes its parent's rows through unchanged,
 * and when Spark asks for its partitions, on the driver at the job's submission (before any stage
 * is scheduled), refuses the job if its spark.gpucoll local properties do not parse or the
 * required backend cannot run on some executor ({@link BackendGate#checkJob}), or the plugin
 * is not enabled and the settings do not ask for the path without it ({@link MissingPlugin}). Spark asks
 * once per RDD (it keeps the partitions), so a later job on the same RDD is not checked again.
 *
 * <p>On the executors it records which tasks compute through it: those take its job's {@link
 * GroupCredential} ({@link #credentialOf}).
 *
 * <p>Internal: public for the other packages of gpucoll-spark, not for users.
 */
public final class BackendCheckedRDD<T> extends RDD<T> {
  private static final long serialVersionUID = 1L;
  private final ClassTag<T> tag;

  public BackendCheckedRDD(RDD<T> parent, ClassTag<T> tag) {
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

  /**
   * The credential of {@code task}: its job's own ({@link GroupCredential#JOB_PROPERTY}) where the
   * task computes its partition through the job's RDD of this class, else the application's
   * ({@link GroupCredential#PROPERTY}); null when it carries none.
   */
  public static GroupCredential credentialOf(TaskContext task) {
    String job = task.getLocalProperty(GroupCredential.JOB_PROPERTY);
    int slash = job == null ? -1 : job.indexOf('/');
    if (slash > 0 && job.substring(0, slash).equals(COMPUTING.get(task.taskAttemptId()))) {
      return GroupCredential.parse(job.substring(slash + 1));
    }
    return GroupCredential.parse(task.getLocalProperty(GroupCredential.PROPERTY));
  }

  @Override
  public Partition[] getPartitions() {
    BackendGate gate = BackendGate.active();
    if (gate != null) {
      gate.checkJob(context(), id());
    } else {
      MissingPlugin.checkJob(context());
    }
    return firstParent(tag).partitions();
  }
}
