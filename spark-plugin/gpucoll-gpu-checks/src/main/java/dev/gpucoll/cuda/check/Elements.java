package dev.gpucoll.cuda.check;

import dev.gpucoll.api.DataType;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.core.host.HalfFloats;
import java.nio.ByteBuffer;
import java.util.SplittableRandom;

/**
 * Typed element access on native-order byte buffers, random inputs that never are all zeros, the
 * exact fold in the kernels' order (rank 0..n-1, 16-bit floats accumulated in fp32), and the
 * float64 reference with its error bound.
 */
final class Elements {
  private Elements() {}

  static long bits(ByteBuffer b, DataType t, long i) {
    int at = Math.toIntExact(i * t.byteSize());
    return switch (t.byteSize()) {
      case 1 -> b.get(at) & 0xFFL;
      case 2 -> b.getShort(at) & 0xFFFFL;
      case 4 -> b.getInt(at) & 0xFFFFFFFFL;
      default -> b.getLong(at);
    };
  }

  static void putBits(ByteBuffer b, DataType t, long i, long v) {
    int at = Math.toIntExact(i * t.byteSize());
    switch (t.byteSize()) {
      case 1 -> b.put(at, (byte) v);
      case 2 -> b.putShort(at, (short) v);
      case 4 -> b.putInt(at, (int) v);
      default -> b.putLong(at, v);
    }
  }

  /** The element's value as a double (exact for every type but very large int64). */
  static double value(DataType t, long bits) {
    return switch (t) {
      case FLOAT32 -> Float.intBitsToFloat((int) bits);
      case FLOAT64 -> Double.longBitsToDouble(bits);
      case FLOAT16 -> HalfFloats.fp16ToFloat((short) bits);
      case BFLOAT16 -> HalfFloats.bf16ToFloat((short) bits);
      case INT32 -> (int) bits;
      case INT64 -> bits;
      case INT8 -> (byte) bits;
      case UINT8 -> bits & 0xFF;
    };
  }

  /** Bits of {@code v} rounded to the type (round to nearest even for floats). */
  static long fromDouble(DataType t, double v) {
    return switch (t) {
      case FLOAT32 -> Float.floatToRawIntBits((float) v) & 0xFFFFFFFFL;
      case FLOAT64 -> Double.doubleToRawLongBits(v);
      case FLOAT16 -> HalfFloats.floatToFp16((float) v) & 0xFFFFL;
      case BFLOAT16 -> HalfFloats.floatToBf16((float) v) & 0xFFFFL;
      case INT32 -> ((int) v) & 0xFFFFFFFFL;
      case INT64 -> (long) v;
      case INT8, UINT8 -> ((long) v) & 0xFF;
    };
  }

  /**
   * Fills {@code count} elements with random values suited to the op: sums of values in [-1, 1),
   * products near 1 (no overflow for 16 ranks), min/max over a wide range; integers chosen so
   * sums and products stay exact or wrap the same way on both sides. Never zero.
   */
  static void fillForReduction(ByteBuffer b, DataType t, ReduceOp op, long count, SplittableRandom rnd) {
    for (long i = 0; i < count; i++) {
      long v;
      if (t.isFloatingPoint()) {
        double d = switch (op) {
          case SUM, AVG -> rnd.nextDouble(-1, 1);
          case PROD -> rnd.nextDouble(0.5, 1.5);
          case MIN, MAX -> rnd.nextDouble(-1000, 1000);
        };
        if (d == 0) {
          d = 0.25;
        }
        v = fromDouble(t, d);
      } else if (t == DataType.INT32) {
        int x = switch (op) {
          case SUM -> rnd.nextInt(-(1 << 24), 1 << 24);
          case AVG -> rnd.nextInt(-(1 << 20), 1 << 20);
          case PROD -> new int[] {-3, -2, -1, 1, 2, 3}[rnd.nextInt(6)];
          case MIN, MAX -> rnd.nextInt();
        };
        v = (x == 0 ? 7 : x) & 0xFFFFFFFFL;
      } else {
        long x = switch (op) {
          case SUM, MIN, MAX -> rnd.nextLong();
          case AVG -> rnd.nextLong(-(1L << 40), 1L << 40);
          case PROD -> new long[] {-3, -2, -1, 1, 2, 3}[rnd.nextInt(6)];
        };
        v = x == 0 ? 7 : x;
      }
      putBits(b, t, i, v);
    }
  }

  /** Random bytes for data movement (any bit pattern, NaNs included: movement must be bit-exact). */
  static void fillRandomBytes(ByteBuffer b, long bytes, SplittableRandom rnd) {
    long i = 0;
    for (; i + 8 <= bytes; i += 8) {
      b.putLong((int) i, rnd.nextLong());
    }
    for (; i < bytes; i++) {
      b.put((int) i, (byte) rnd.nextInt());
    }
  }

  /** The kernels' exact result: fold over ranks in order 0..n-1 in the accumulation type. */
  static long fold(DataType t, ReduceOp op, long[] terms) {
    int n = terms.length;
    switch (t) {
      case FLOAT32, FLOAT16, BFLOAT16 -> {
        float acc = (float) value(t, terms[0]);
        for (int r = 1; r < n; r++) {
          float x = (float) value(t, terms[r]);
          acc = switch (op) {
            case SUM, AVG -> acc + x;
            case PROD -> acc * x;
            case MIN -> x < acc ? x : acc;
            case MAX -> acc < x ? x : acc;
          };
        }
        if (op == ReduceOp.AVG) {
          acc = acc / n;
        }
        return fromDouble(t, acc);
      }
      case FLOAT64 -> {
        double acc = value(t, terms[0]);
        for (int r = 1; r < n; r++) {
          double x = value(t, terms[r]);
          acc = switch (op) {
            case SUM, AVG -> acc + x;
            case PROD -> acc * x;
            case MIN -> x < acc ? x : acc;
            case MAX -> acc < x ? x : acc;
          };
        }
        if (op == ReduceOp.AVG) {
          acc = acc / n;
        }
        return Double.doubleToRawLongBits(acc);
      }
      case INT32 -> {
        int acc = (int) terms[0];
        for (int r = 1; r < n; r++) {
          int x = (int) terms[r];
          acc = switch (op) {
            case SUM, AVG -> acc + x;
            case PROD -> acc * x;
            case MIN -> Math.min(acc, x);
            case MAX -> Math.max(acc, x);
          };
        }
        if (op == ReduceOp.AVG) {
          acc = acc / n;
        }
        return acc & 0xFFFFFFFFL;
      }
      case INT64 -> {
        long acc = terms[0];
        for (int r = 1; r < n; r++) {
          long x = terms[r];
          acc = switch (op) {
            case SUM, AVG -> acc + x;
            case PROD -> acc * x;
            case MIN -> Math.min(acc, x);
            case MAX -> Math.max(acc, x);
          };
        }
        if (op == ReduceOp.AVG) {
          acc = acc / n;
        }
        return acc;
      }
      default -> throw new IllegalArgumentException("no reduction for " + t);
    }
  }

  /** Unit roundoff of a float type's storage. */
  static double unitRoundoff(DataType t) {
    return switch (t) {
      case FLOAT32 -> 0x1p-24;
      case FLOAT64 -> 0x1p-53;
      case FLOAT16 -> 0x1p-11;
      case BFLOAT16 -> 0x1p-8;
      default -> 0;
    };
  }

  /**
   * Checks one reduced element against the float64 reference. Integers and MIN/MAX must be exact
   * (integers against the exact wrapped fold); float sums and products within the rounding bound
   * of n accumulations in the accumulation type plus one rounding to the output type.
   *
   * @return null when within bounds, else a description
   */
  static String checkReduced(DataType t, ReduceOp op, long[] terms, long outBits) {
    if (!t.isFloatingPoint()) {
      long expect = fold(t, op, terms);
      return expect == outBits ? null : "expected " + value(t, expect) + ", got " + value(t, outBits);
    }
    int n = terms.length;
    double ref;
    double magnitude = 0;
    switch (op) {
      case SUM, AVG -> {
        ref = 0;
        for (long b : terms) {
          double x = value(t, b);
          ref += x;
          magnitude += Math.abs(x);
        }
        if (op == ReduceOp.AVG) {
          ref /= n;
          magnitude /= n;
        }
      }
      case PROD -> {
        ref = 1;
        for (long b : terms) {
          ref *= value(t, b);
        }
        magnitude = Math.abs(ref);
      }
      case MIN, MAX -> {
        ref = value(t, terms[0]);
        for (long b : terms) {
          double x = value(t, b);
          ref = op == ReduceOp.MIN ? Math.min(ref, x) : Math.max(ref, x);
        }
      }
      default -> throw new IllegalStateException();
    }
    double out = value(t, outBits);
    if (Double.isNaN(out)) {
      return "NaN (reference " + ref + ")";
    }
    if (op == ReduceOp.MIN || op == ReduceOp.MAX) {
      return out == ref ? null : "expected " + ref + ", got " + out;
    }
    double accU = t == DataType.FLOAT64 ? 0x1p-53 : 0x1p-24;
    // The last term: one rounding in the output type's subnormal range (fp16 below 2^-14).
    double subnormalUlp = t == DataType.FLOAT16 ? 0x1p-24 : t == DataType.BFLOAT16 ? 0x1p-133 : Double.MIN_NORMAL;
    double bound = 2 * n * accU * magnitude + unitRoundoff(t) * Math.abs(ref) * 1.0001 + subnormalUlp;
    double err = Math.abs(out - ref);
    return err <= bound ? null : "expected " + ref + ", got " + out + " (|err| " + err + " > bound " + bound + ")";
  }
}
