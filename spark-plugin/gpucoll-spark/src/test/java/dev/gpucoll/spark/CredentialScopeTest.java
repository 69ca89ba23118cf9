package dev.gpucoll.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.spark.barrier.BackendCheckedRDD;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.Test;
import scala.reflect.ClassTag$;

/**
 * A job of our API runs under a credential of its own; a plain {@code rdd.barrier()} job from the
 * same thread afterwards runs under the application's, as before that job.
 */
class CredentialScopeTest {
  @Test
  void aJobsCredentialStaysWithThatJob() {
    JavaSparkContext sc = new JavaSparkContext(LocalSpark.withPlugin("credential-scope", "local[2]"));
    try {
      JavaRDD<Integer> rows = sc.parallelize(List.of(1, 2, 3, 4), 2);
      assertEquals(List.of("app", "app"), direct(rows), "before any job of our API");
      List<String> first = GpuCollectives.barrierMapPartitions(rows, CredentialScopeTest::credentialId).collect();
      assertEquals(2, first.size());
      assertTrue(first.get(0).startsWith("job") && first.get(0).equals(first.get(1)), String.valueOf(first));
      assertEquals(List.of("app", "app"), direct(rows), "a plain job after a job of our API");
      List<String> second = GpuCollectives.barrierMapPartitions(rows, CredentialScopeTest::credentialId).collect();
      assertTrue(second.get(0).startsWith("job") && !second.get(0).equals(first.get(0)), first + " then " + second);
      assertEquals(List.of("app", "app"), direct(rows), "a plain job after two jobs of our API");
    } finally {
      sc.stop();
    }
  }

  /** The id of the credential the task's rendezvous and reports are sealed with. */
  private static Iterator<String> credentialId(dev.gpucoll.api.Communicator comm, Iterator<Integer> rows) {
    comm.barrier();
    List<String> out = new ArrayList<>();
    out.add(BackendCheckedRDD.credentialOf(TaskContext.get()).id());
    return out.iterator();
  }

  /** The same as a stage on rdd.barrier() directly, as a user without our API writes it. */
  private static List<String> direct(JavaRDD<Integer> rows) {
    scala.reflect.ClassTag<String> tag = ClassTag$.MODULE$.apply(String.class);
    return new JavaRDD<>(rows.rdd().barrier().mapPartitions(new DirectCredential(), false, tag), tag).collect();
  }

  private static final class DirectCredential
      extends scala.runtime.AbstractFunction1<scala.collection.Iterator<Integer>, scala.collection.Iterator<String>>
      implements java.io.Serializable {
    private static final long serialVersionUID = 1L;

    @Override
    public scala.collection.Iterator<String> apply(scala.collection.Iterator<Integer> rows) {
      return scala.collection.JavaConverters.asScalaIterator(
          credentialId(GpuCollectives.communicator(), scala.collection.JavaConverters.asJavaIterator(rows)));
    }
  }
}
