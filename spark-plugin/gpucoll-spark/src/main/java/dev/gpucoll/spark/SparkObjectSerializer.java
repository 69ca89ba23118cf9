package dev.gpucoll.spark;

import dev.gpucoll.core.objects.ObjectSerializer;
import java.nio.ByteBuffer;
import org.apache.spark.SparkEnv;
import org.apache.spark.serializer.Serializer;
import org.apache.spark.serializer.SerializerInstance;
import scala.reflect.ClassTag;
import scala.reflect.ClassTag$;

/**
 * The serializer Spark is configured with ({@code spark.serializer}): Kryo with the job's
 * registrations and {@code spark.kryo.registrationRequired} when the job asks for Kryo, Java
 * serialization otherwise. On executors it resolves the job's classes through Spark's class loader.
 */
public final class SparkObjectSerializer implements ObjectSerializer {
  private static final ClassTag<Object> ANY = ClassTag$.MODULE$.AnyRef();
  private final String name;
  private final SerializerInstance instance;

  public SparkObjectSerializer(Serializer serializer) {
    if (serializer == null) {
      throw new IllegalArgumentException("Spark serializer is null");
    }
    this.name = serializer.getClass().getSimpleName();
    this.instance = serializer.newInstance();
  }

  /** The serializer of this JVM's SparkEnv (driver or executor). */
  public static SparkObjectSerializer fromSparkEnv() {
    SparkEnv env = SparkEnv.get();
    if (env == null) {
      throw new IllegalStateException("no SparkEnv in this JVM: Spark's serializer exists only in a"
          + " running Spark driver or executor; outside Spark use new ObjectCollectives(comm) (Java"
          + " serialization) or pass an ObjectSerializer");
    }
    return new SparkObjectSerializer(env.serializer());
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public byte[] serialize(Object value) {
    ByteBuffer b = instance.serialize(value, ANY);
    byte[] out = new byte[b.remaining()];
    b.get(out);
    return out;
  }

  @Override
  public Object deserialize(byte[] bytes) {
    return instance.deserialize(ByteBuffer.wrap(bytes), ANY);
  }
}
