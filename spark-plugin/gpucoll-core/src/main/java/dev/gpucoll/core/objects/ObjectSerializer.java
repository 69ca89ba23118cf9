package dev.gpucoll.core.objects;

/**
 * Turns objects into bytes and back for {@link ObjectCollectives}. One instance serves one
 * communicator, so it need not be thread-safe. Inside Spark the serializer Spark is configured
 * with is used (Kryo when {@code spark.serializer} says so); elsewhere
 * {@link JavaObjectSerializer} by default.
 */
public interface ObjectSerializer {

  /** A short name for errors, e.g. "java" or "KryoSerializer". */
  String name();

  /**
   * The bytes of {@code value} (which may be null, if the serializer allows it).
   *
   * @throws Exception when the value cannot be serialized; the collective then fails on every rank
   */
  byte[] serialize(Object value) throws Exception;

  /** The object {@link #serialize} wrote into {@code bytes}. */
  Object deserialize(byte[] bytes) throws Exception;
}
