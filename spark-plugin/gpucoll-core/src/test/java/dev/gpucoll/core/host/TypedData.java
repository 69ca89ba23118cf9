package dev.gpucoll.core.host;

import static org.junit.jupiter.api.Assertions.fail;

import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.ReduceOp;

/**
 * Deterministic test data per (type, op, rank, index) and an independent reference: float64 for
 * the float types (then checked within the type's rounding), exact long arithmetic wrapped to the
 * type's width for the integers.
 */
final class TypedData {
  private TypedData() {}

  /**
   * In-place allReduce of every type at 1, 997 and 70,000 elements, the op cycling with the seed (5 up),
   * each result checked against the rank-order reference and added to {@code out}.
   */
  static void allReduceEveryType(dev.gpucoll.api.Communicator comm, int n, String what, java.util.List<Object> out) {
    int seed = 5;
    for (DataType t : DataType.values()) {
      for (int count : new int[] {1, 997, 70_000}) {
        seed++;
        ReduceOp op = ReduceOp.values()[seed % ReduceOp.values().length];
        Object a = alloc(t, count);
        fill(t, op, seed, comm.rank(), a, 0, count);
        comm.allReduce(buf(a), buf(a), count, t, op);
        checkReduced(t, op, seed, n, a, 0, 0, count, what + " " + t + " " + op);
        out.add(a);
      }
    }
  }

  static Object alloc(DataType t, int n) {
    return switch (t) {
      case FLOAT32 -> new float[n];
      case FLOAT64 -> new double[n];
      case FLOAT16, BFLOAT16 -> new short[n];
      case INT32 -> new int[n];
      case INT64 -> new long[n];
      case INT8, UINT8 -> new byte[n];
    };
  }

  static CommBuffer buf(Object a) {
    if (a instanceof float[] f) {
      return CommBuffer.of(f);
    } else if (a instanceof double[] d) {
      return CommBuffer.of(d);
    } else if (a instanceof short[] s) {
      return CommBuffer.of(s);
    } else if (a instanceof int[] i) {
      return CommBuffer.of(i);
    } else if (a instanceof long[] l) {
      return CommBuffer.of(l);
    }
    return CommBuffer.of((byte[]) a);
  }

  private static long mix(long x) {
    x ^= x >>> 33;
    x *= 0xff51afd7ed558ccdL;
    x ^= x >>> 33;
    x *= 0xc4ceb9fe1a85ec53L;
    x ^= x >>> 33;
    return x;
  }

  private static long h(int seed, int rank, long i) {
    return mix(seed * 0x9E3779B97F4A7C15L + rank * 0x632BE59BD9B4E019L + i);
  }

  /** Float element value, exactly representable in t. PROD gets values near 1 so products stay finite. */
  static double floatValue(DataType t, ReduceOp op, int seed, int rank, long i) {
    long x = h(seed, rank, i);
    double v = op == ReduceOp.PROD ? 0.5 + (x & 0xFFFF) / 65536.0 * 1.5
        : ((x & 0xFFFFF) - 0x80000) / 4096.0;
    return switch (t) {
      case FLOAT32 -> (float) v;
      case FLOAT64 -> v + ((x >>> 40) & 0xFF) * 1e-9;
      case FLOAT16 -> HalfFloats.fp16ToFloat(HalfFloats.floatToFp16((float) v));
      case BFLOAT16 -> HalfFloats.bf16ToFloat(HalfFloats.floatToBf16((float) v));
      default -> throw new IllegalArgumentException();
    };
  }

  static long intValue(DataType t, int seed, int rank, long i) {
    long x = h(seed, rank, i);
    return switch (t) {
      case INT32 -> (int) x;
      case INT64 -> x;
      case INT8 -> (byte) x;
      case UINT8 -> x & 0xFF;
      default -> throw new IllegalArgumentException();
    };
  }

  static void fill(DataType t, ReduceOp op, int seed, int rank, Object a, int off, int n) {
    for (int i = 0; i < n; i++) {
      set(t, a, off + i, op, seed, rank, i);
    }
  }

  private static void set(DataType t, Object a, int at, ReduceOp op, int seed, int rank, long i) {
    switch (t) {
      case FLOAT32 -> ((float[]) a)[at] = (float) floatValue(t, op, seed, rank, i);
      case FLOAT64 -> ((double[]) a)[at] = floatValue(t, op, seed, rank, i);
      case FLOAT16 -> ((short[]) a)[at] = HalfFloats.floatToFp16((float) floatValue(t, op, seed, rank, i));
      case BFLOAT16 -> ((short[]) a)[at] = HalfFloats.floatToBf16((float) floatValue(t, op, seed, rank, i));
      case INT32 -> ((int[]) a)[at] = (int) intValue(t, seed, rank, i);
      case INT64 -> ((long[]) a)[at] = intValue(t, seed, rank, i);
      case INT8, UINT8 -> ((byte[]) a)[at] = (byte) intValue(t, seed, rank, i);
    }
  }

  static double getFloat(DataType t, Object a, int at) {
    return switch (t) {
      case FLOAT32 -> ((float[]) a)[at];
      case FLOAT64 -> ((double[]) a)[at];
      case FLOAT16 -> HalfFloats.fp16ToFloat(((short[]) a)[at]);
      case BFLOAT16 -> HalfFloats.bf16ToFloat(((short[]) a)[at]);
      default -> throw new IllegalArgumentException();
    };
  }

  static long getInt(DataType t, Object a, int at) {
    return switch (t) {
      case INT32 -> ((int[]) a)[at];
      case INT64 -> ((long[]) a)[at];
      case INT8 -> ((byte[]) a)[at];
      case UINT8 -> ((byte[]) a)[at] & 0xFF;
      default -> throw new IllegalArgumentException();
    };
  }

  static long wrap(DataType t, long v) {
    return switch (t) {
      case INT32 -> (int) v;
      case INT64 -> v;
      case INT8 -> (byte) v;
      case UINT8 -> v & 0xFF;
      default -> throw new IllegalArgumentException();
    };
  }

  /**
   * Checks a[off + i] == op over ranks of element (srcIndex0 + i), i in [0, n). Floats: within the
   * type's rounding of the exact float64 result; integers: exact.
   */
  static void checkReduced(DataType t, ReduceOp op, int seed, int ranks, Object a, int off, long srcIndex0,
      int n, String ctx) {
    for (int k = 0; k < n; k++) {
      long i = srcIndex0 + k;
      if (t.isFloatingPoint()) {
        double exact = 0;
        double mag = 0;
        for (int r = 0; r < ranks; r++) {
          double v = floatValue(t, op, seed, r, i);
          mag += Math.abs(v);
          if (r == 0) {
            exact = v;
          } else {
            exact = switch (op) {
              case SUM, AVG -> exact + v;
              case PROD -> exact * v;
              case MIN -> Math.min(exact, v);
              case MAX -> Math.max(exact, v);
            };
          }
        }
        if (op == ReduceOp.AVG) {
          exact /= ranks;
          mag /= ranks;
        }
        if (op == ReduceOp.PROD) {
          mag = Math.abs(exact);
        }
        double rel = switch (t) {
          case FLOAT32 -> 1e-6;
          case FLOAT64 -> 1e-14;
          case FLOAT16 -> 1.0 / 1024;
          default -> 1.0 / 128;
        };
        double got = getFloat(t, a, off + k);
        double tol = (op == ReduceOp.MIN || op == ReduceOp.MAX) ? 0 : rel * mag + 1e-30;
        if (t == DataType.FLOAT16 && op != ReduceOp.MIN && op != ReduceOp.MAX) {
          tol += 0x1p-24; // fp16 subnormal spacing
        }
        if (!(Math.abs(got - exact) <= tol)) {
          fail(ctx + ": element " + (off + k) + " is " + got + ", expected " + exact + " (tolerance " + tol + ")");
        }
      } else {
        long acc = 0;
        for (int r = 0; r < ranks; r++) {
          long v = intValue(t, seed, r, i);
          if (r == 0) {
            acc = v;
          } else {
            acc = switch (op) {
              case SUM, AVG -> acc + v;
              case PROD -> acc * v;
              case MIN -> Math.min(acc, v);
              case MAX -> Math.max(acc, v);
            };
          }
        }
        long want = wrap(t, acc);
        if (op == ReduceOp.AVG) {
          want = want / ranks;
        }
        long got = getInt(t, a, off + k);
        if (got != want) {
          fail(ctx + ": element " + (off + k) + " is " + got + ", expected " + want);
        }
      }
    }
  }

  /** Checks a[off + i] equals element (srcIndex0 + i) of {@code rank}'s data, i in [0, n). */
  static void checkCopied(DataType t, int seed, int rank, Object a, int off, long srcIndex0, int n, String ctx) {
    Object want = alloc(t, 1);
    for (int k = 0; k < n; k++) {
      set(t, want, 0, ReduceOp.SUM, seed, rank, srcIndex0 + k);
      boolean same = switch (t) {
        case FLOAT32 -> Float.floatToRawIntBits(((float[]) a)[off + k]) == Float.floatToRawIntBits(((float[]) want)[0]);
        case FLOAT64 -> Double.doubleToRawLongBits(((double[]) a)[off + k])
            == Double.doubleToRawLongBits(((double[]) want)[0]);
        case FLOAT16, BFLOAT16 -> ((short[]) a)[off + k] == ((short[]) want)[0];
        case INT32 -> ((int[]) a)[off + k] == ((int[]) want)[0];
        case INT64 -> ((long[]) a)[off + k] == ((long[]) want)[0];
        case INT8, UINT8 -> ((byte[]) a)[off + k] == ((byte[]) want)[0];
      };
      if (!same) {
        fail(ctx + ": element " + (off + k) + " is not rank " + rank + "'s element " + (srcIndex0 + k));
      }
    }
  }
}
