package dev.gpucoll.spark

import dev.gpucoll.api.Communicator
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

    /** Runs `body` as a barrier stage; each task gets its communicator (rank = partition id). */
    def mapPartitionsWithCommunicator[R: ClassTag](
        body: (Communicator, Iterator[T]) => Iterator[R]): RDD[R] =
      rdd.barrier().mapPartitions(rows => body(GpuCollectives.communicator(), rows))
  }
}
