package dev.gpucoll.spark;

import dev.gpucoll.api.Communicator;
import dev.gpucoll.core.objects.ObjectCollectives;

/**
 * Object collectives inside a barrier stage, through the serializer Spark is configured with:
 * <pre>{@code
 * ObjectCollectives objects = SparkObjectCollectives.forTask();
 * List<Stats> all = objects.allGatherObjects(localStats);
 * }</pre>
 * With {@code spark.serializer=org.apache.spark.serializer.KryoSerializer} the objects travel as
 * Kryo bytes and the job's registrations apply; with {@code spark.kryo.registrationRequired=true}
 * an unregistered class fails the call on every rank, naming the rank and the class.
 */
public final class SparkObjectCollectives {
  private SparkObjectCollectives() {}

  /** Object collectives over the current barrier task's communicator. */
  public static ObjectCollectives forTask() {
    return of(GpuCollectives.communicator());
  }

  /** Object collectives over {@code comm} (a split of the task's communicator, say). */
  public static ObjectCollectives of(Communicator comm) {
    return new ObjectCollectives(comm, SparkObjectSerializer.fromSparkEnv());
  }
}
