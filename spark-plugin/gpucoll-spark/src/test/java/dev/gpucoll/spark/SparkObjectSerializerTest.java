package dev.gpucoll.spark;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.apache.spark.SparkConf;
import org.apache.spark.serializer.JavaSerializer;
import org.apache.spark.serializer.KryoSerializer;
import org.junit.jupiter.api.Test;

/** Spark's serializers behind the ObjectSerializer interface, without a running Spark. */
class SparkObjectSerializerTest {

  /** Registered below. */
  public static final class Registered {
    int[] values;

    public Registered() {}
  }

  public static final class NotRegistered {
    int id;
  }

  @Test
  void kryoWithRegistrationRequiredRoundTripsRegisteredClassesAndRefusesOthers() throws Exception {
    SparkConf conf = new SparkConf(false)
        .set("spark.kryo.registrationRequired", "true")
        .set("spark.kryo.classesToRegister", Registered.class.getName());
    SparkObjectSerializer s = new SparkObjectSerializer(new KryoSerializer(conf));
    assertEquals("KryoSerializer", s.name());
    Registered r = new Registered();
    r.values = new int[] {3, 1, 4};
    Registered back = (Registered) s.deserialize(s.serialize(r));
    assertArrayEquals(r.values, back.values);
    Exception e = assertThrows(Exception.class, () -> s.serialize(new NotRegistered()));
    assertTrue(e.getMessage().contains("Class is not registered: " + NotRegistered.class.getName()),
        e.getMessage());
  }

  @Test
  void javaSerializerRoundTrips() throws Exception {
    SparkObjectSerializer s = new SparkObjectSerializer(new JavaSerializer(new SparkConf(false)));
    assertEquals("JavaSerializer", s.name());
    assertEquals(List.of("a", "b"), s.deserialize(s.serialize(List.of("a", "b"))));
  }

  @Test
  void noSerializerIsAClearError() {
    assertThrows(IllegalArgumentException.class, () -> new SparkObjectSerializer(null));
  }
}
