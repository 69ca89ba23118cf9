package dev.gpucoll.examples.gpu;

import dev.gpucoll.api.DataType;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.core.host.HalfFloats;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.SplittableRandom;

/**
 * Inputs every rank can regenerate for every peer (seeded by case and rank), and the checks of
 * one output element: data movement bit-exact, integer reductions and MIN/MAX exact, float
 * sums, averages and products within a rounding bound of the float64 reference.
 */
final class Reference {
  private Reference() {}

  /** The input of {@code rank} in case {@code caseSeed}: {@code count} elements suited to {@code op}. */
  static ByteBuffer input(long caseSeed, int rank, DataType t, ReduceOp op, long count) {
    ByteBuffer b = ByteBuffer.allocate(Math.toIntExact(count * t.byteSize())).order(ByteOrder.nativeOrder());
    SplittableRandom rnd = new SplittableRandom(caseSeed * 1_000_003L + rank);
    if (op == null) {
      // Data movement: any bit pattern (NaN payloads included) must arrive unchanged.
      for (int i = 0; i + 8 <= b.capacity(); i += 8) {
        b.putLong(i, rnd.nextLong());
      }
      for (int i = b.capacity() & ~7; i < b.capacity(); i++) {
        b.put(i, (byte) rnd.nextInt());
      }
      return b;
    }
    for (long i = 0; i < count; i++) {
      put(b, t, i, t.isFloatingPoint() ? fromDouble(t, floatTerm(op, rnd)) : intTerm(t, op, rnd));
    }
    return b;
  }

  private static double floatTerm(ReduceOp op, SplittableRandom rnd) {
    double d = switch (op) {
      case SUM, AVG -> rnd.nextDouble(-1, 1);
      case PROD -> rnd.nextDouble(0.5, 1.5); // products of 16 ranks stay in range
      case MIN, MAX -> rnd.nextDouble(-1000, 1000);
    };
    return d == 0 ? 0.25 : d;
  }

  /**
   * Integers whose sums over 16 ranks do not overflow, so the exact result is known (products
   * stay in range for the 8-bit types up to 7 ranks); UINT8 non-negative.
   */
  private static long intTerm(DataType t, ReduceOp op, SplittableRandom rnd) {
    long v = switch (op) {
      case SUM, AVG -> t.byteSize() >= 8 ? rnd.nextLong(-(1L << 40), 1L << 40)
          : t.byteSize() == 4 ? rnd.nextInt(-(1 << 20), 1 << 20)
          : t == DataType.UINT8 ? rnd.nextInt(0, 16) : rnd.nextInt(-7, 8);
      case PROD -> t == DataType.UINT8 ? 1 + rnd.nextInt(2) : new long[] {-2, -1, 1, 2}[rnd.nextInt(4)];
      case MIN, MAX -> t.byteSize() >= 8 ? rnd.nextLong() : rnd.nextInt();
    };
    return v == 0 ? 3 : v;
  }

  static long get(ByteBuffer b, DataType t, long i) {
    int at = Math.toIntExact(i * t.byteSize());
    return switch (t.byteSize()) {
      case 1 -> b.get(at);
      case 2 -> b.getShort(at) & 0xFFFFL;
      case 4 -> t == DataType.INT32 ? b.getInt(at) : b.getInt(at) & 0xFFFFFFFFL;
      default -> b.getLong(at);
    };
  }

  static void put(ByteBuffer b, DataType t, long i, long bits) {
    int at = Math.toIntExact(i * t.byteSize());
    switch (t.byteSize()) {
      case 1 -> b.put(at, (byte) bits);
      case 2 -> b.putShort(at, (short) bits);
      case 4 -> b.putInt(at, (int) bits);
      default -> b.putLong(at, bits);
    }
  }

  static double value(DataType t, long bits) {
    return switch (t) {
      case FLOAT32 -> Float.intBitsToFloat((int) bits);
      case FLOAT64 -> Double.longBitsToDouble(bits);
      case FLOAT16 -> HalfFloats.fp16ToFloat((short) bits);
      case BFLOAT16 -> HalfFloats.bf16ToFloat((short) bits);
      case UINT8 -> bits & 0xFF;
      default -> bits; // signed integers arrive sign-extended from get()
    };
  }

  static long fromDouble(DataType t, double v) {
    return switch (t) {
      case FLOAT32 -> Float.floatToRawIntBits((float) v) & 0xFFFFFFFFL;
      case FLOAT64 -> Double.doubleToRawLongBits(v);
      case FLOAT16 -> HalfFloats.floatToFp16((float) v) & 0xFFFFL;
      case BFLOAT16 -> HalfFloats.floatToBf16((float) v) & 0xFFFFL;
      default -> (long) v;
    };
  }

  /**
   * Checks one reduced element, {@code terms[r]} being rank r's input bits.
   *
   * @return null when right, else what was expected and what came
   */
  static String checkReduced(DataType t, ReduceOp op, long[] terms, long outBits) {
    int n = terms.length;
    if (!t.isFloatingPoint()) {
      long mask = t == DataType.UINT8 ? 0xFF : -1L; // get() reads bytes signed; UINT8 compares unsigned
      long acc = terms[0] & mask;
      for (int r = 1; r < n; r++) {
        long x = terms[r] & mask;
        acc = switch (op) {
          case SUM, AVG -> acc + x;
          case PROD -> acc * x;
          case MIN -> Math.min(acc, x);
          case MAX -> Math.max(acc, x);
        };
      }
      if (op == ReduceOp.AVG) {
        acc = acc / n; // truncates toward zero, as ncclAvg on integers
      }
      long got = outBits & mask; // get() sign-extends the signed integer types
      return got == acc ? null : "expected " + acc + ", got " + got;
    }
    double ref = op == ReduceOp.PROD ? 1 : op == ReduceOp.MIN || op == ReduceOp.MAX ? value(t, terms[0]) : 0;
    double magnitude = 0;
    for (long bits : terms) {
      double x = value(t, bits);
      switch (op) {
        case SUM, AVG -> {
          ref += x;
          magnitude += Math.abs(x);
        }
        case PROD -> ref *= x;
        case MIN -> ref = Math.min(ref, x);
        case MAX -> ref = Math.max(ref, x);
      }
    }
    if (op == ReduceOp.AVG) {
      ref /= n;
      magnitude /= n;
    }
    if (op == ReduceOp.PROD) {
      magnitude = Math.abs(ref);
    }
    double out = value(t, outBits);
    if (op == ReduceOp.MIN || op == ReduceOp.MAX) {
      return out == ref ? null : "expected " + ref + ", got " + out;
    }
    // n - 1 additions or multiplications, each rounded at worst in the element type (NCCL may
    // accumulate 16-bit floats in 16 bits), one final rounding, and the smallest subnormal step.
    double u = switch (t) {
      case FLOAT64 -> 0x1p-53;
      case FLOAT32 -> 0x1p-24;
      case FLOAT16 -> 0x1p-11;
      default -> 0x1p-8;
    };
    double tiny = t == DataType.FLOAT16 ? 0x1p-24 : Double.MIN_NORMAL;
    double bound = (n + 1) * u * magnitude * 1.0001 + tiny;
    double err = Math.abs(out - ref);
    return err <= bound ? null : "expected " + ref + ", got " + out + " (|err| " + err + " > " + bound + ")";
  }
}
