package dev.gpucoll.api;

import java.lang.reflect.Array;
import java.nio.ByteBuffer;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.LongBuffer;
import java.nio.ShortBuffer;

/**
 * The plain-array forms of {@link Communicator}'s collectives, written once for every primitive
 * array type: each wraps the arrays as {@link CommBuffer}s and makes the one {@code CommBuffer}
 * call, so its results are those of that call, bit for bit. Lengths that cannot make a call
 * (not a multiple of the group size, counts that do not fit the array) fail here, naming both.
 */
final class ArrayForms {
  private ArrayForms() {}

  static void allReduce(Communicator c, Object inOut, DataType type, ReduceOp op) {
    CommBuffer b = wrap(inOut, type);
    c.allReduce(b, b, Array.getLength(inOut), type, op);
  }

  static <A> A allGather(Communicator c, A send, DataType type) {
    int n = Array.getLength(send);
    A recv = newLike(send, "allGather", (long) n * c.size());
    c.allGather(wrap(send, type), wrap(recv, type), n, type);
    return recv;
  }

  static <A> A reduceScatter(Communicator c, A send, DataType type, ReduceOp op) {
    int block = block("reduceScatter", c, Array.getLength(send));
    A recv = newLike(send, "reduceScatter", block);
    c.reduceScatter(wrap(send, type), wrap(recv, type), block, type, op);
    return recv;
  }

  static <A> A allToAll(Communicator c, A send, DataType type) {
    int n = Array.getLength(send);
    int block = block("allToAll", c, n);
    A recv = newLike(send, "allToAll", n);
    c.allToAll(wrap(send, type), wrap(recv, type), block, type);
    return recv;
  }

  static <A> A allToAllv(Communicator c, A send, long[] sendCounts, long[] recvCounts, DataType type) {
    long[] sendDispls = displacements("sendCounts", c, sendCounts);
    long[] recvDispls = displacements("recvCounts", c, recvCounts);
    long sent = total(sendCounts, sendDispls);
    if (sent > Array.getLength(send)) {
      throw new IllegalArgumentException("allToAllv: sendCounts add up to " + sent + " elements but send holds "
          + Array.getLength(send));
    }
    A recv = newLike(send, "allToAllv", total(recvCounts, recvDispls));
    c.allToAllv(wrap(send, type), sendCounts, sendDispls, wrap(recv, type), recvCounts, recvDispls, type);
    return recv;
  }

  static void broadcast(Communicator c, Object inOut, DataType type, int root) {
    CommBuffer b = wrap(inOut, type);
    c.broadcast(b, b, Array.getLength(inOut), type, root);
  }

  /** The elements each rank gets of {@code length}: it must be a multiple of the group size. */
  private static int block(String collective, Communicator c, int length) {
    if (length % c.size() != 0) {
      throw new IllegalArgumentException(collective + ": send holds " + length
          + " elements, not a multiple of the group size " + c.size() + " (each rank gets an equal block)");
    }
    return length / c.size();
  }

  /** One count per rank, none negative; the displacements that pack them one after another. */
  private static long[] displacements(String what, Communicator c, long[] counts) {
    if (counts == null || counts.length != c.size()) {
      throw new IllegalArgumentException("allToAllv: " + what + " must hold one count per rank ("
          + c.size() + "), got " + (counts == null ? "null" : counts.length));
    }
    long[] displs = new long[counts.length];
    long at = 0;
    for (int r = 0; r < counts.length; r++) {
      if (counts[r] < 0) {
        throw new IllegalArgumentException("allToAllv: " + what + "[" + r + "] is negative: " + counts[r]);
      }
      displs[r] = at;
      at += counts[r];
    }
    return displs;
  }

  private static long total(long[] counts, long[] displs) {
    return counts.length == 0 ? 0 : displs[counts.length - 1] + counts[counts.length - 1];
  }

  @SuppressWarnings("unchecked")
  private static <A> A newLike(A array, String collective, long length) {
    if (length > Integer.MAX_VALUE - 8) {
      throw new IllegalArgumentException(collective + ": the result would hold " + length
          + " elements, more than a Java array can; use the CommBuffer form with an NIO or device buffer");
    }
    return (A) Array.newInstance(array.getClass().getComponentType(), (int) length);
  }

  /** The array as host memory, refusing a type whose elements are not the array's width. */
  private static CommBuffer wrap(Object array, DataType type) {
    java.nio.Buffer nio;
    if (array instanceof float[] a) {
      nio = FloatBuffer.wrap(a);
    } else if (array instanceof double[] a) {
      nio = DoubleBuffer.wrap(a);
    } else if (array instanceof int[] a) {
      nio = IntBuffer.wrap(a);
    } else if (array instanceof long[] a) {
      nio = LongBuffer.wrap(a);
    } else if (array instanceof short[] a) {
      nio = ShortBuffer.wrap(a);
    } else if (array instanceof byte[] a) {
      nio = ByteBuffer.wrap(a);
    } else {
      throw new IllegalArgumentException("not a primitive array of a collective's types: "
          + (array == null ? "null" : array.getClass().getName()));
    }
    int width = nio instanceof ByteBuffer ? 1 : nio instanceof ShortBuffer ? 2
        : nio instanceof FloatBuffer || nio instanceof IntBuffer ? 4 : 8;
    if (type.byteSize() != width) {
      throw new IllegalArgumentException("a " + array.getClass().getComponentType() + "[] holds "
          + width + "-byte elements, " + type + " has " + type.byteSize() + "-byte ones");
    }
    return new CommBuffer.Host(nio);
  }
}
