package dev.gpucoll.core;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.core.config.GpuCollConf;
import dev.gpucoll.core.rendezvous.LocalRendezvous;
import java.lang.reflect.Array;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.Buffer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.LongBuffer;
import java.nio.ShortBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The plain-array forms of every collective, for every primitive type the API carries, give the
 * same bits as the CommBuffer form of the same call (3 ranks, host backend), and refuse lengths
 * and types that cannot make a call before anything moves.
 */
class ArrayFormsTest {
  static final int RANKS = 3;
  static final int N = 2 * RANKS;

  /** An element type as a plain array: its Java array class and the DataType it carries. */
  record Kind(Class<?> array, DataType type, boolean typed) {}

  static final List<Kind> KINDS = List.of(
      new Kind(float[].class, DataType.FLOAT32, false), new Kind(double[].class, DataType.FLOAT64, false),
      new Kind(int[].class, DataType.INT32, false), new Kind(long[].class, DataType.INT64, false),
      new Kind(short[].class, DataType.FLOAT16, true), new Kind(short[].class, DataType.BFLOAT16, true),
      new Kind(byte[].class, DataType.INT8, true), new Kind(byte[].class, DataType.UINT8, true));

  @Test
  void everyCollectiveOfEveryTypeMatchesItsCommBufferFormBitForBit() throws Exception {
    runRanks("array-forms", comm -> {
      for (Kind k : KINDS) {
        for (ReduceOp op : List.of(ReduceOp.SUM, ReduceOp.MAX)) {
          Object a = input(k, comm.rank(), N);
          Object b = copy(a);
          call(comm, "allReduce", k, a, op);
          comm.allReduce(buf(b), buf(b), N, k.type(), op);
          assertSameBits(b, a, k + " allReduce " + op);

          Object send = input(k, comm.rank(), N);
          Object scattered = call(comm, "reduceScatter", k, send, op);
          Object expected = Array.newInstance(k.array().getComponentType(), N / RANKS);
          comm.reduceScatter(buf(send), buf(expected), N / RANKS, k.type(), op);
          assertSameBits(expected, scattered, k + " reduceScatter " + op);
        }
        Object send = input(k, comm.rank(), N);
        Object gathered = call(comm, "allGather", k, send);
        Object expected = Array.newInstance(k.array().getComponentType(), N * RANKS);
        comm.allGather(buf(send), buf(expected), N, k.type());
        assertSameBits(expected, gathered, k + " allGather");
        for (int r = 0; r < RANKS; r++) { // and it is every rank's input in rank order
          assertSameBits(input(k, r, N), slice(gathered, r * N, N), k + " allGather block " + r);
        }

        Object exchanged = call(comm, "allToAll", k, send);
        expected = Array.newInstance(k.array().getComponentType(), N);
        comm.allToAll(buf(send), buf(expected), N / RANKS, k.type());
        assertSameBits(expected, exchanged, k + " allToAll");

        long[] sendCounts = new long[RANKS];
        long[] recvCounts = new long[RANKS];
        for (int r = 0; r < RANKS; r++) { // uneven: rank s sends (s + r) % 3 + 1 elements to rank r
          sendCounts[r] = (comm.rank() + r) % RANKS + 1;
          recvCounts[r] = (r + comm.rank()) % RANKS + 1;
        }
        Object v = call(comm, "allToAllv", k, send, sendCounts, recvCounts);
        long total = 0;
        long[] sendDispls = new long[RANKS];
        long[] recvDispls = new long[RANKS];
        for (int r = 0, s = 0, t = 0; r < RANKS; s += (int) sendCounts[r], t += (int) recvCounts[r], r++) {
          sendDispls[r] = s;
          recvDispls[r] = t;
          total += recvCounts[r];
        }
        expected = Array.newInstance(k.array().getComponentType(), (int) total);
        comm.allToAllv(buf(send), sendCounts, sendDispls, buf(expected), recvCounts, recvDispls, k.type());
        assertSameBits(expected, v, k + " allToAllv");

        Object root = input(k, comm.rank(), N);
        call(comm, "broadcast", k, root, 1);
        assertSameBits(input(k, 1, N), root, k + " broadcast from rank 1");
      }
    });
  }

  @Test
  void lengthsAndTypesThatCannotMakeACallAreRefusedNamingBoth() throws Exception {
    runRanks("array-forms-refused", comm -> {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> comm.reduceScatter(new float[7], ReduceOp.SUM));
      assertTrue(e.getMessage().contains("7 elements, not a multiple of the group size 3"), e.getMessage());
      e = assertThrows(IllegalArgumentException.class, () -> comm.allToAll(new long[4]));
      assertTrue(e.getMessage().contains("allToAll: send holds 4 elements"), e.getMessage());
      e = assertThrows(IllegalArgumentException.class, () -> comm.allGather(new short[2], DataType.FLOAT32));
      assertTrue(e.getMessage().contains("short[] holds 2-byte elements, FLOAT32 has 4-byte ones"), e.getMessage());
      e = assertThrows(IllegalArgumentException.class,
          () -> comm.allToAllv(new int[3], new long[] {1, 1}, new long[] {1, 1, 1}));
      assertTrue(e.getMessage().contains("sendCounts must hold one count per rank (3), got 2"), e.getMessage());
      e = assertThrows(IllegalArgumentException.class,
          () -> comm.allToAllv(new int[3], new long[] {2, 1, 1}, new long[] {1, 1, 1}));
      assertTrue(e.getMessage().contains("sendCounts add up to 4 elements but send holds 3"), e.getMessage());
      // The group is still usable: nothing moved.
      int[] one = {comm.rank()};
      comm.allReduce(one, ReduceOp.SUM);
      assertArrayEquals(new int[] {3}, one);
    });
  }

  interface RankBody {
    void run(Communicator comm) throws Exception;
  }

  static void runRanks(String group, RankBody body) throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(RANKS);
    try {
      GpuCollConf conf = GpuCollConf.of(Map.of("spark.gpucoll.timeout", "30s", "spark.gpucoll.backend", "host"))
          .validate();
      List<Future<Void>> futures = new ArrayList<>();
      for (int r = 0; r < RANKS; r++) {
        int rank = r;
        futures.add(pool.submit(() -> {
          try (LocalRendezvous rv = LocalRendezvous.join(group, rank, RANKS);
              Communicator comm = CommunicatorFactory.create(rv, conf, "localhost")) {
            body.run(comm);
          }
          return null;
        }));
      }
      for (Future<Void> f : futures) {
        f.get(120, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }
  }

  /** Calls the public array form {@code name} for the kind (with its DataType where the form takes one). */
  static Object call(Communicator comm, String name, Kind k, Object... args) throws Exception {
    List<Class<?>> types = new ArrayList<>();
    List<Object> values = new ArrayList<>();
    types.add(k.array());
    values.add(args[0]);
    for (int i = 1; i < args.length; i++) {
      if (args[i] instanceof ReduceOp || args[i] instanceof Integer) {
        continue; // op and root go last, after the type
      }
      types.add(args[i].getClass());
      values.add(args[i]);
    }
    if (k.typed()) {
      types.add(DataType.class);
      values.add(k.type());
    }
    for (Object a : args) {
      if (a instanceof ReduceOp) {
        types.add(ReduceOp.class);
        values.add(a);
      } else if (a instanceof Integer) {
        types.add(int.class);
        values.add(a);
      }
    }
    Method m = Communicator.class.getMethod(name, types.toArray(Class<?>[]::new));
    try {
      return m.invoke(comm, values.toArray());
    } catch (InvocationTargetException e) {
      throw e.getCause() instanceof Exception x ? x : e;
    }
  }

  /** Rank {@code rank}'s input: finite values whose sums depend on the order they are added in. */
  static Object input(Kind k, int rank, int n) {
    Random rnd = new Random(31L * rank + k.type().ordinal());
    Object a = Array.newInstance(k.array().getComponentType(), n);
    for (int i = 0; i < n; i++) {
      switch (k.type()) {
        case FLOAT32 -> Array.setFloat(a, i, (float) (rnd.nextDouble() * 2 - 1) * 1e3f);
        case FLOAT64 -> Array.setDouble(a, i, (rnd.nextDouble() * 2 - 1) * 1e3);
        case INT32 -> Array.setInt(a, i, rnd.nextInt());
        case INT64 -> Array.setLong(a, i, rnd.nextLong());
        // fp16: sign, exponent 5..24 of 31 (finite, normal), random mantissa
        case FLOAT16 -> Array.setShort(a, i, (short) ((rnd.nextInt(2) << 15) | ((5 + rnd.nextInt(20)) << 10)
            | rnd.nextInt(1 << 10)));
        case BFLOAT16 -> Array.setShort(a, i,
            (short) (Float.floatToIntBits((float) (rnd.nextDouble() * 2 - 1) * 100f) >>> 16));
        default -> Array.setByte(a, i, (byte) rnd.nextInt());
      }
    }
    return a;
  }

  static Object copy(Object a) {
    Object c = Array.newInstance(a.getClass().getComponentType(), Array.getLength(a));
    System.arraycopy(a, 0, c, 0, Array.getLength(a));
    return c;
  }

  static Object slice(Object a, int from, int n) {
    Object c = Array.newInstance(a.getClass().getComponentType(), n);
    System.arraycopy(a, from, c, 0, n);
    return c;
  }

  static CommBuffer buf(Object a) {
    Buffer nio = a instanceof float[] f ? FloatBuffer.wrap(f)
        : a instanceof double[] d ? DoubleBuffer.wrap(d)
        : a instanceof int[] i ? IntBuffer.wrap(i)
        : a instanceof long[] l ? LongBuffer.wrap(l)
        : a instanceof short[] s ? ShortBuffer.wrap(s)
        : ByteBuffer.wrap((byte[]) a);
    return CommBuffer.of(nio);
  }

  /** The arrays' raw bits (floats too: no NaN folding) as bytes. */
  static void assertSameBits(Object expected, Object actual, String what) {
    assertEquals(expected.getClass(), actual.getClass(), what);
    assertArrayEquals(rawBytes(expected), rawBytes(actual), what);
  }

  static byte[] rawBytes(Object a) {
    int n = Array.getLength(a);
    ByteBuffer out = ByteBuffer.allocate(n * 8).order(ByteOrder.LITTLE_ENDIAN);
    for (int i = 0; i < n; i++) {
      if (a instanceof float[] f) {
        out.putInt(Float.floatToRawIntBits(f[i]));
      } else if (a instanceof double[] d) {
        out.putLong(Double.doubleToRawLongBits(d[i]));
      } else if (a instanceof int[] x) {
        out.putInt(x[i]);
      } else if (a instanceof long[] x) {
        out.putLong(x[i]);
      } else if (a instanceof short[] x) {
        out.putShort(x[i]);
      } else {
        out.put(((byte[]) a)[i]);
      }
    }
    byte[] bytes = new byte[out.position()];
    out.flip().get(bytes);
    return bytes;
  }
}
