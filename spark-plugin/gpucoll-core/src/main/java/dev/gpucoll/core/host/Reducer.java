package dev.gpucoll.core.host;

import dev.gpucoll.core.buffers.HostBuffers;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.ReduceOp;
import java.nio.Buffer;
import java.nio.ByteBuffer;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.LongBuffer;
import java.nio.ShortBuffer;

/**
 * Element-wise reductions over typed NIO buffers in a fixed source order (source 0 first), so
 * every rank that reduces the same inputs gets the same bits. 16-bit floats accumulate in fp32
 * and round once; integers wrap in their own width; AVG is SUM then one division by the group
 * size (integers truncate toward zero, as NCCL's ncclAvg). Holds scratch arrays: one per
 * communicator, not thread-safe.
 */
final class Reducer {
  private static final int BLOCK = 4096;

  private final float[] accF = new float[BLOCK];
  private final float[] tmpF = new float[BLOCK];
  private final double[] accD = new double[BLOCK];
  private final double[] tmpD = new double[BLOCK];
  private final int[] accI = new int[BLOCK];
  private final int[] tmpI = new int[BLOCK];
  private final long[] accL = new long[BLOCK];
  private final long[] tmpL = new long[BLOCK];
  private final short[] tmpS = new short[BLOCK];
  private final byte[] tmpB = new byte[BLOCK];

  /**
   * dst[dstIdx + i] = op over s in [0, nsrc) of srcs[s][srcIdx[s] + i], for i in [0, count).
   * Buffers are the type's view class ({@link HostBuffers#viewClass}); indices are in elements.
   *
   * @param groupSize divisor for AVG
   */
  void reduce(DataType type, ReduceOp op, int groupSize, Buffer[] srcs, int[] srcIdx, int nsrc,
      Buffer dst, int dstIdx, int count) {
    for (int done = 0; done < count; done += BLOCK) {
      int len = Math.min(BLOCK, count - done);
      switch (type) {
        case FLOAT32 -> f32(op, groupSize, srcs, srcIdx, nsrc, (FloatBuffer) dst, dstIdx, done, len);
        case FLOAT64 -> f64(op, groupSize, srcs, srcIdx, nsrc, (DoubleBuffer) dst, dstIdx, done, len);
        case FLOAT16, BFLOAT16 -> f16(type == DataType.BFLOAT16, op, groupSize, srcs, srcIdx, nsrc,
            (ShortBuffer) dst, dstIdx, done, len);
        case INT32 -> i32(op, groupSize, srcs, srcIdx, nsrc, (IntBuffer) dst, dstIdx, done, len);
        case INT64 -> i64(op, groupSize, srcs, srcIdx, nsrc, (LongBuffer) dst, dstIdx, done, len);
        case INT8, UINT8 -> i8(type == DataType.UINT8, op, groupSize, srcs, srcIdx, nsrc,
            (ByteBuffer) dst, dstIdx, done, len);
        default -> throw new IllegalArgumentException("no reduction for " + type);
      }
    }
  }

  private void f32(ReduceOp op, int n, Buffer[] srcs, int[] idx, int nsrc, FloatBuffer dst, int dstIdx,
      int done, int len) {
    float[] acc = accF;
    float[] x = tmpF;
    ((FloatBuffer) srcs[0]).get(idx[0] + done, acc, 0, len);
    for (int s = 1; s < nsrc; s++) {
      ((FloatBuffer) srcs[s]).get(idx[s] + done, x, 0, len);
      combineF(op, acc, x, len);
    }
    if (op == ReduceOp.AVG) {
      float div = n;
      for (int i = 0; i < len; i++) {
        acc[i] = acc[i] / div;
      }
    }
    dst.put(dstIdx + done, acc, 0, len);
  }

  private void f16(boolean bf16, ReduceOp op, int n, Buffer[] srcs, int[] idx, int nsrc, ShortBuffer dst,
      int dstIdx, int done, int len) {
    float[] acc = accF;
    float[] x = tmpF;
    short[] raw = tmpS;
    ((ShortBuffer) srcs[0]).get(idx[0] + done, raw, 0, len);
    widen(bf16, raw, acc, len);
    for (int s = 1; s < nsrc; s++) {
      ((ShortBuffer) srcs[s]).get(idx[s] + done, raw, 0, len);
      widen(bf16, raw, x, len);
      combineF(op, acc, x, len);
    }
    if (op == ReduceOp.AVG) {
      float div = n;
      for (int i = 0; i < len; i++) {
        acc[i] = acc[i] / div;
      }
    }
    for (int i = 0; i < len; i++) {
      raw[i] = bf16 ? HalfFloats.floatToBf16(acc[i]) : HalfFloats.floatToFp16(acc[i]);
    }
    dst.put(dstIdx + done, raw, 0, len);
  }

  private static void widen(boolean bf16, short[] raw, float[] out, int len) {
    if (bf16) {
      for (int i = 0; i < len; i++) {
        out[i] = HalfFloats.bf16ToFloat(raw[i]);
      }
    } else {
      for (int i = 0; i < len; i++) {
        out[i] = HalfFloats.fp16ToFloat(raw[i]);
      }
    }
  }

  private static void combineF(ReduceOp op, float[] acc, float[] x, int len) {
    switch (op) {
      case SUM, AVG -> {
        for (int i = 0; i < len; i++) {
          acc[i] += x[i];
        }
      }
      case PROD -> {
        for (int i = 0; i < len; i++) {
          acc[i] *= x[i];
        }
      }
      case MIN -> {
        for (int i = 0; i < len; i++) {
          acc[i] = Math.min(acc[i], x[i]);
        }
      }
      case MAX -> {
        for (int i = 0; i < len; i++) {
          acc[i] = Math.max(acc[i], x[i]);
        }
      }
      default -> throw new IllegalArgumentException(op.name());
    }
  }

  private void f64(ReduceOp op, int n, Buffer[] srcs, int[] idx, int nsrc, DoubleBuffer dst, int dstIdx,
      int done, int len) {
    double[] acc = accD;
    double[] x = tmpD;
    ((DoubleBuffer) srcs[0]).get(idx[0] + done, acc, 0, len);
    for (int s = 1; s < nsrc; s++) {
      ((DoubleBuffer) srcs[s]).get(idx[s] + done, x, 0, len);
      combineD(op, acc, x, len);
    }
    if (op == ReduceOp.AVG) {
      double div = n;
      for (int i = 0; i < len; i++) {
        acc[i] = acc[i] / div;
      }
    }
    dst.put(dstIdx + done, acc, 0, len);
  }

  private static void combineD(ReduceOp op, double[] acc, double[] x, int len) {
    switch (op) {
      case SUM, AVG -> {
        for (int i = 0; i < len; i++) {
          acc[i] += x[i];
        }
      }
      case PROD -> {
        for (int i = 0; i < len; i++) {
          acc[i] *= x[i];
        }
      }
      case MIN -> {
        for (int i = 0; i < len; i++) {
          acc[i] = Math.min(acc[i], x[i]);
        }
      }
      case MAX -> {
        for (int i = 0; i < len; i++) {
          acc[i] = Math.max(acc[i], x[i]);
        }
      }
      default -> throw new IllegalArgumentException(op.name());
    }
  }

  private void i32(ReduceOp op, int n, Buffer[] srcs, int[] idx, int nsrc, IntBuffer dst, int dstIdx,
      int done, int len) {
    int[] acc = accI;
    int[] x = tmpI;
    ((IntBuffer) srcs[0]).get(idx[0] + done, acc, 0, len);
    for (int s = 1; s < nsrc; s++) {
      ((IntBuffer) srcs[s]).get(idx[s] + done, x, 0, len);
      combineI(op, acc, x, len);
    }
    if (op == ReduceOp.AVG) {
      for (int i = 0; i < len; i++) {
        acc[i] = acc[i] / n;
      }
    }
    dst.put(dstIdx + done, acc, 0, len);
  }

  private static void combineI(ReduceOp op, int[] acc, int[] x, int len) {
    switch (op) {
      case SUM, AVG -> {
        for (int i = 0; i < len; i++) {
          acc[i] += x[i];
        }
      }
      case PROD -> {
        for (int i = 0; i < len; i++) {
          acc[i] *= x[i];
        }
      }
      case MIN -> {
        for (int i = 0; i < len; i++) {
          acc[i] = Math.min(acc[i], x[i]);
        }
      }
      case MAX -> {
        for (int i = 0; i < len; i++) {
          acc[i] = Math.max(acc[i], x[i]);
        }
      }
      default -> throw new IllegalArgumentException(op.name());
    }
  }

  private void i64(ReduceOp op, int n, Buffer[] srcs, int[] idx, int nsrc, LongBuffer dst, int dstIdx,
      int done, int len) {
    long[] acc = accL;
    long[] x = tmpL;
    ((LongBuffer) srcs[0]).get(idx[0] + done, acc, 0, len);
    for (int s = 1; s < nsrc; s++) {
      ((LongBuffer) srcs[s]).get(idx[s] + done, x, 0, len);
      combineL(op, acc, x, len);
    }
    if (op == ReduceOp.AVG) {
      for (int i = 0; i < len; i++) {
        acc[i] = acc[i] / n;
      }
    }
    dst.put(dstIdx + done, acc, 0, len);
  }

  private static void combineL(ReduceOp op, long[] acc, long[] x, int len) {
    switch (op) {
      case SUM, AVG -> {
        for (int i = 0; i < len; i++) {
          acc[i] += x[i];
        }
      }
      case PROD -> {
        for (int i = 0; i < len; i++) {
          acc[i] *= x[i];
        }
      }
      case MIN -> {
        for (int i = 0; i < len; i++) {
          acc[i] = Math.min(acc[i], x[i]);
        }
      }
      case MAX -> {
        for (int i = 0; i < len; i++) {
          acc[i] = Math.max(acc[i], x[i]);
        }
      }
      default -> throw new IllegalArgumentException(op.name());
    }
  }

  /** 8-bit integers accumulate in int: wrapping to 8 bits at the end equals wrapping each step. */
  private void i8(boolean unsigned, ReduceOp op, int n, Buffer[] srcs, int[] idx, int nsrc, ByteBuffer dst,
      int dstIdx, int done, int len) {
    int[] acc = accI;
    int[] x = tmpI;
    byte[] raw = tmpB;
    ((ByteBuffer) srcs[0]).get(idx[0] + done, raw, 0, len);
    widen8(unsigned, raw, acc, len);
    for (int s = 1; s < nsrc; s++) {
      ((ByteBuffer) srcs[s]).get(idx[s] + done, raw, 0, len);
      widen8(unsigned, raw, x, len);
      combineI(op, acc, x, len);
    }
    if (op == ReduceOp.AVG) {
      for (int i = 0; i < len; i++) {
        int wrapped = unsigned ? acc[i] & 0xFF : (byte) acc[i];
        acc[i] = wrapped / n;
      }
    }
    for (int i = 0; i < len; i++) {
      raw[i] = (byte) acc[i];
    }
    dst.put(dstIdx + done, raw, 0, len);
  }

  private static void widen8(boolean unsigned, byte[] raw, int[] out, int len) {
    if (unsigned) {
      for (int i = 0; i < len; i++) {
        out[i] = raw[i] & 0xFF;
      }
    } else {
      for (int i = 0; i < len; i++) {
        out[i] = raw[i];
      }
    }
  }
}
