package dev.gpucoll.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.core.objects.ObjectCollectives;
import dev.gpucoll.core.objects.ObjectSerializationException;
import dev.gpucoll.examples.LocalCluster;
import dev.gpucoll.spark.GpuCollectives;
import dev.gpucoll.spark.SparkObjectCollectives;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.stream.IntStream;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Object collectives across three executor JVMs through Spark's Kryo serializer with
 * {@code spark.kryo.registrationRequired=true}: registered classes travel, an unregistered one
 * fails on every rank naming the rank and the class.
 */
class ObjectCollectivesKryoTest {
  static final int EXECUTORS = 3;
  static JavaSparkContext jsc;

  /** Registered with Kryo; sizes differ per rank. */
  public static final class Sample {
    int rank;
    String label;
    double[] values;

    public Sample() {}

    Sample(int rank) {
      this.rank = rank;
      this.label = "rank-" + rank + "-" + "k".repeat(rank * 11);
      this.values = new double[rank * 1500];
      Arrays.setAll(values, i -> rank + i / 8.0);
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof Sample s && s.rank == rank && s.label.equals(label)
          && Arrays.equals(s.values, values);
    }

    @Override
    public int hashCode() {
      return Objects.hash(rank, label);
    }
  }

  /** Not registered: Kryo with registrationRequired refuses it. */
  public static final class Unregistered {
    int id;
  }

  @BeforeAll
  static void startCluster() {
    SparkConf conf = LocalCluster.conf("gpucoll-objects-kryo", EXECUTORS)
        .set("spark.gpucoll.timeout", "30s")
        .set("spark.task.maxFailures", "1")
        .set("spark.serializer", "org.apache.spark.serializer.KryoSerializer")
        .set("spark.kryo.registrationRequired", "true")
        .set("spark.kryo.classesToRegister", Sample.class.getName());
    jsc = new JavaSparkContext(conf);
    LocalCluster.awaitExecutors(jsc.sc(), EXECUTORS, Duration.ofSeconds(120));
  }

  @AfterAll
  static void stopCluster() {
    if (jsc != null) {
      jsc.stop();
    }
  }

  @Test
  void registeredObjectsTravelAndAnUnregisteredClassFailsOnEveryRank() {
    List<String> out = GpuCollectives.barrierMapPartitions(
        jsc.parallelize(IntStream.range(0, EXECUTORS).boxed().toList(), EXECUTORS), (comm, rows) -> {
          ObjectCollectives objects = SparkObjectCollectives.forTask();
          int r = comm.rank();
          StringBuilder seen = new StringBuilder(objects.serializer().name());

          List<Sample> all = objects.allGatherObjects(new Sample(r));
          for (int i = 0; i < EXECUTORS; i++) {
            if (!all.get(i).equals(new Sample(i))) {
              throw new IllegalStateException("rank " + r + ": allGatherObjects[" + i + "] is wrong");
            }
          }
          Sample fromRoot = objects.broadcastObject(r == 1 ? new Sample(7) : null, 1);
          if (!fromRoot.equals(new Sample(7))) {
            throw new IllegalStateException("rank " + r + ": broadcastObject is wrong");
          }
          Optional<List<Sample>> gathered = objects.gatherObjects(new Sample(r), 0);
          if (gathered.isPresent() != (r == 0)
              || (r == 0 && !gathered.get().equals(List.of(new Sample(0), new Sample(1), new Sample(2))))) {
            throw new IllegalStateException("rank " + r + ": gatherObjects is wrong: " + gathered);
          }
          seen.append("|ok");

          try {
            objects.allGatherObjects(r == 1 ? new Unregistered() : new Sample(r));
            seen.append("|no error");
          } catch (ObjectSerializationException e) {
            seen.append("|").append(e.failedRanks()).append("|").append(e.getMessage());
          }
          // the group still works after the failure
          seen.append("|").append(objects.allGatherObjects(new Sample(r)).size());
          return List.of(r + "|" + seen).iterator();
        }).collect();

    assertEquals(EXECUTORS, out.size());
    for (String line : out) {
      String[] f = line.split("\\|", 6);
      int r = Integer.parseInt(f[0]);
      assertEquals("KryoSerializer", f[1], line);
      assertEquals("ok", f[2], line);
      assertEquals("[1]", f[3], line);
      String message = f[4];
      assertTrue(message.startsWith("rank " + r + ", allGather: allGatherObjects failed: rank 1 cannot"
          + " serialize its object of class " + Unregistered.class.getName() + " with KryoSerializer"),
          message);
      assertTrue(message.contains("Class is not registered"), message);
      assertEquals(String.valueOf(EXECUTORS), f[5], line);
    }
  }
}
