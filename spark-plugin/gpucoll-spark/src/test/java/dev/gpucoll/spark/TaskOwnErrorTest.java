package dev.gpucoll.spark;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.ReduceOp;
import java.util.List;
import org.apache.spark.SparkException;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.Test;

/**
 * A task whose own body throws while its peers wait in a collective: the job fails with that
 * exception, not with a peer's error about the failed rank's communicator.
 */
class TaskOwnErrorTest {
  static final String OWN_ERROR = "the task's own error on rank 2";

  @Test
  void theTasksOwnExceptionIsTheJobsErrorNotAPeersCollectiveError() {
    JavaSparkContext sc = new JavaSparkContext(LocalSpark.withPlugin("gpucoll-own-error", "local[3]")
        .set("spark.gpucoll.timeout", "60s"));
    try {
      for (int attempt = 0; attempt < 3; attempt++) { // the order it guards is a race: try it more than once
        SparkException e = assertThrows(SparkException.class, () -> GpuCollectives.barrierMapPartitions(
            sc.parallelize(List.of(0, 1, 2), 3), (comm, rows) -> {
              if (comm.rank() == 2) {
                throw new IllegalStateException(OWN_ERROR);
              }
              float[] v = {1f};
              comm.allReduce(v, ReduceOp.SUM); // waits for rank 2, which never comes
              return List.of(v[0]).iterator();
            }).collect());
        String why = e.getMessage();
        assertTrue(why.contains("IllegalStateException: " + OWN_ERROR), why);
        assertFalse(why.contains("closed its communicator") || why.contains("CollectiveException"), why);
      }
    } finally {
      sc.stop();
    }
  }
}
