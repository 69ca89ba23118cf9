package dev.gpucoll.core.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.core.objects.ObjectCollectives;
import dev.gpucoll.core.objects.ObjectSerializationException;
import dev.gpucoll.core.objects.ObjectSerializer;
import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.IntFunction;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Object collectives over the host backend (shared memory, and UCX or the relay for ranks on
 * different hosts): objects of different sizes per rank, each root, and an unserializable object
 * failing on every rank, after which the group still works.
 */
class ObjectCollectivesHostTest {
  static final int N = 3;

  static Stream<Arguments> backends() {
    IntFunction<String> oneHost = r -> "localhost";
    IntFunction<String> manyHosts = r -> "host" + r;
    return Stream.of(Arguments.of("host-shm", oneHost), Arguments.of("host-ucx", manyHosts),
        Arguments.of("host-relay", manyHosts));
  }

  record Point(int rank, String label, double[] values) implements Serializable {}

  /** Not Serializable: Java serialization refuses it. */
  static final class Handle {
    final int id;

    Handle(int id) {
      this.id = id;
    }
  }

  /** Rank r's object: sizes from a few bytes to 100 KB, different on every rank. */
  static Point pointOf(int r) {
    double[] v = new double[r * 6000];
    for (int i = 0; i < v.length; i++) {
      v[i] = r + i * 0.25;
    }
    return new Point(r, "rank-" + r + "-" + "x".repeat(r * 37), v);
  }

  static void assertPoint(int r, Point p) {
    Point want = pointOf(r);
    assertEquals(want.rank(), p.rank());
    assertEquals(want.label(), p.label());
    assertTrue(java.util.Arrays.equals(want.values(), p.values()), "values of rank " + r);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("backends")
  void allGatherBroadcastGatherWithSizesDifferentPerRank(String backend, IntFunction<String> hosts) {
    List<Ranks.Outcome<Boolean>> out = Ranks.run(N, Ranks.confFor(backend), hosts, comm -> {
      assertEquals(backend, comm.backend());
      ObjectCollectives objects = new ObjectCollectives(comm);
      int r = comm.rank();

      List<Point> all = objects.allGatherObjects(pointOf(r));
      assertEquals(N, all.size());
      for (int i = 0; i < N; i++) {
        assertPoint(i, all.get(i));
      }

      for (int root = 0; root < N; root++) {
        Map<String, Integer> mine = r == root ? Map.of("root", root, "size", N) : null;
        Map<String, Integer> got = objects.broadcastObject(mine, root);
        assertEquals(Map.of("root", root, "size", N), got);
        if (r == root) {
          assertSame(mine, got, "root gets its own object back");
        }
      }

      Optional<List<Point>> gathered = objects.gatherObjects(pointOf(r), 2);
      if (r == 2) {
        assertEquals(N, gathered.orElseThrow().size());
        for (int i = 0; i < N; i++) {
          assertPoint(i, gathered.get().get(i));
        }
      } else {
        assertTrue(gathered.isEmpty(), "only the root receives");
      }

      // null and an empty payload from a serializer are objects too
      List<String> withNull = objects.allGatherObjects(r == 1 ? null : "s" + r);
      assertNull(withNull.get(1));
      assertEquals("s2", withNull.get(2));
      return true;
    });
    Ranks.values(out);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("backends")
  void unserializableObjectFailsOnEveryRankNamingRankAndClass(String backend, IntFunction<String> hosts) {
    List<Ranks.Outcome<List<String>>> out = Ranks.run(N, Ranks.confFor(backend), hosts, comm -> {
      ObjectCollectives objects = new ObjectCollectives(comm);
      int r = comm.rank();
      List<String> messages = new ArrayList<>();
      // rank 1 brings an object Java serialization refuses
      messages.add(expectFailure(() -> objects.allGatherObjects(r == 1 ? new Handle(r) : "ok"), r, List.of(1)));
      // ranks 0 and 2 fail in one gather: both are named everywhere
      messages.add(expectFailure(() -> objects.gatherObjects(r != 1 ? List.of(new Handle(r)) : "ok", 1), r,
          List.of(0, 2)));
      // an unserializable root fails the broadcast on every rank
      messages.add(expectFailure(() -> objects.broadcastObject(r == 2 ? new Handle(r) : null, 2), r, List.of(2)));
      // the group still works afterwards
      assertEquals(List.of(0, 1, 2), objects.allGatherObjects(r));
      return messages;
    });
    for (List<String> messages : Ranks.values(out)) {
      String handle = Handle.class.getName();
      assertTrue(messages.get(0).contains("rank 1 cannot serialize its object of class " + handle
          + " with java: java.io.NotSerializableException"), messages.get(0));
      assertTrue(messages.get(1).contains("rank 0 cannot serialize its object of class "
          + List.of(new Handle(0)).getClass().getName()), messages.get(1));
      assertTrue(messages.get(1).contains("rank 2 cannot serialize"), messages.get(1));
      assertTrue(messages.get(2).contains("rank 2 cannot serialize its object of class " + handle),
          messages.get(2));
    }
  }

  private static String expectFailure(Runnable call, int rank, List<Integer> failedRanks) {
    try {
      call.run();
    } catch (ObjectSerializationException e) {
      assertEquals(rank, e.rank());
      assertEquals(failedRanks, e.failedRanks());
      assertTrue(e.getMessage().startsWith("rank " + rank + ", "), e.getMessage());
      return e.getMessage();
    }
    return fail("rank " + rank + " did not fail");
  }

  @Test
  void badRootFailsOnEveryRankWithoutWaiting() {
    List<Ranks.Outcome<String>> out = Ranks.run(N, Ranks.conf(), comm -> {
      ObjectCollectives objects = new ObjectCollectives(comm);
      try {
        objects.broadcastObject("x", N);
        return "no error";
      } catch (CollectiveException e) {
        return e.getMessage();
      }
    });
    for (int r = 0; r < N; r++) {
      String m = out.get(r).get();
      assertTrue(m.startsWith("rank " + r + ", broadcast: broadcastObject: root 3 is not a rank of"
          + " this group of 3"), m);
    }
  }

  @Test
  void anObjectThatCannotBeReadBackNamesTheRankItCameFrom() {
    List<Ranks.Outcome<String>> out = Ranks.run(N, Ranks.conf(), comm -> {
      ObjectCollectives objects = new ObjectCollectives(comm, new Utf8Serializer() {
        @Override
        public Object deserialize(byte[] bytes) {
          String s = new String(bytes, StandardCharsets.UTF_8);
          if (s.equals("bad")) {
            throw new IllegalStateException("corrupt");
          }
          return s;
        }
      });
      try {
        objects.allGatherObjects(comm.rank() == 2 ? "bad" : "good");
        return "no error";
      } catch (CollectiveException e) {
        return e.getMessage();
      }
    });
    for (int r = 0; r < N; r++) {
      String m = out.get(r).get();
      assertTrue(m.startsWith("rank " + r + ", allGather: allGatherObjects: cannot deserialize the"
          + " object of rank 2 (3 bytes) with utf8: java.lang.IllegalStateException: corrupt"), m);
    }
  }

  /** A pluggable serializer: UTF-8 strings, refusing anything else. */
  static class Utf8Serializer implements ObjectSerializer {
    @Override
    public String name() {
      return "utf8";
    }

    @Override
    public byte[] serialize(Object value) {
      if (!(value instanceof String s)) {
        throw new IllegalArgumentException("only strings");
      }
      return s.getBytes(StandardCharsets.UTF_8);
    }

    @Override
    public Object deserialize(byte[] bytes) {
      return new String(bytes, StandardCharsets.UTF_8);
    }
  }

  @Test
  void pluggableSerializerIncludingEmptyPayloads() {
    List<Ranks.Outcome<Boolean>> out = Ranks.run(N, Ranks.conf(), comm -> {
      ObjectCollectives objects = new ObjectCollectives(comm, new Utf8Serializer());
      int r = comm.rank();
      assertEquals(List.of("", "é", "éé"), objects.allGatherObjects("é".repeat(r)));
      try {
        objects.allGatherObjects(r == 0 ? (Object) 42 : "fine");
        fail("no error");
      } catch (ObjectSerializationException e) {
        assertTrue(e.getMessage().contains("rank 0 cannot serialize its object of class"
            + " java.lang.Integer with utf8: java.lang.IllegalArgumentException: only strings"), e.getMessage());
      }
      assertInstanceOf(String.class, objects.broadcastObject(r == 0 ? "" : null, 0));
      return true;
    });
    Ranks.values(out);
  }
}
