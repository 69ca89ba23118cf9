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
 */
final class BackendCheckedRDD<T> extends RDD<T> {
  private static final long serialVersionUID = 1L;
  private final ClassTag<T> tag;

  BackendCheckedRDD(RDD<T> parent, ClassTag<T> tag) {
    super(parent, tag);
    this.tag = tag;
  }

  @Override
  public scala.collection.Iterator<T> compute(Partition split, TaskContext context) {
    return firstParent(tag).iterator(split, context);
  }

  @Override
  public Partition[] getPartitions() {
    GpuCollDriverPlugin driver = GpuCollDriverPlugin.active;
    if (driver != null) {
      driver.checkJob(context());
    } else {
      MissingPlugin.checkJob(context());
    }
    return firstParent(tag).partitions();
  }
}
