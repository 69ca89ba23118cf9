// README.md's Scala block, compiled with this module's tests (ReadmeSnippetsTest keeps the two equal).
import dev.gpucoll.api.ReduceOp
import dev.gpucoll.spark.syntax._
import org.apache.spark.rdd.RDD

object AverageGradients {
  /** One gradient per partition in, the average of all of them out (on every rank). */
  def average(gradients: RDD[Array[Float]]): RDD[Array[Float]] =
    gradients.mapPartitionsWithCommunicator { (comm, rows) =>
      val grad = rows.next()
      comm.allReduce(grad, ReduceOp.AVG) // in place, bit-identical on every rank
      Iterator(grad)
    }
}
