package dev.gpucoll.spark

import dev.gpucoll.api.Communicator
import dev.gpucoll.spark.barrier.{BackendCheckedRDD, UserCallSite}
import org.apache.spark.rdd.RDD

import scala.reflect.ClassTag

/**
 * Scala syntax for barrier stages with a communicator:
 * {{{
 * import dev.gpucoll.spark.syntax._
 * rdd.mapPartitionsWithCommunicator { (comm, rows) => ... }
 * }}}
 */
object syntax {
  implicit class CommunicatorRDDOps[T](private val rdd: RDD[T]) extends AnyVal {

    /**
     * Runs `body` as a barrier stage; each task gets its communicator (rank = partition id). The
     * Spark UI names the stage after the caller's line (`mapPartitionsWithCommunicator at Train.scala:42`).
     */
    def mapPartitionsWithCommunicator[R: ClassTag](
        body: (Communicator, Iterator[T]) => Iterator[R]): RDD[R] = {
      // The checked RDD only passes rows through (it makes no arrays), so any tag serves.
      val tag = ClassTag.AnyRef.asInstanceOf[ClassTag[T]]
      UserCallSite.around(rdd.sparkContext, "mapPartitionsWithCommunicator",
        () => new BackendCheckedRDD(rdd, tag).barrier()
          .mapPartitions(rows => body(GpuCollectives.communicator(), rows)))
    }
  }
}
