package dev.gpucoll.check;

import dev.gpucoll.api.DataType;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.core.host.HalfFloats;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.SplittableRandom;

/**
 * The element codecs of the GPU checks: an element's raw bits in a native-order buffer (zero-extended
 * to a long), its value, rounding a value to a type, and the random inputs of a case, which every
 * rank can regenerate for every peer from the case's seed.
 */
public final class Elements {
  private Elements() {}

  /** Element {@code i}'s bits, zero-extended (an int8 of -1 is 0xFF). */
  public static long bits(ByteBuffer b, DataType t, long i) {
    int at = Math.toIntExact(i * t.byteSize());
    return switch (t.byteSize()) {
      case 1 -> b.get(at) & 0xFFL;
      case 2 -> b.getShort(at) & 0xFFFFL;
      case 4 -> b.getInt(at) & 0xFFFFFFFFL;
      default -> b.getLong(at);
    };
  }

  public static void putBits(ByteBuffer b, DataType t, long i, long bits) {
    int at = Math.toIntExact(i * t.byteSize());
    switch (t.byteSize()) {
      case 1 -> b.put(at, (byte) bits);
      case 2 -> b.putShort(at, (short) bits);
      case 4 -> b.putInt(at, (int) bits);
      default -> b.putLong(at, bits);
    }
  }

  /** The element's value (exact for every type but int64 beyond 2^53). */
  public static double value(DataType t, long bits) {
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

  /** The bits of {@code v} in type {@code t} (floats rounded to nearest even, integers truncated and wrapped). */
  public static long fromDouble(DataType t, double v) {
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

  /** The random generator of rank {@code rank}'s input in the case seeded {@code caseSeed}. */
  public static SplittableRandom random(long caseSeed, int rank) {
    return new SplittableRandom(caseSeed * 1_000_003L + rank);
  }

  /**
   * Rank {@code rank}'s input of a case: {@code count} elements suited to {@code op}, or, when
   * {@code op} is null (data movement), any bit pattern.
   */
  public static ByteBuffer input(long caseSeed, int rank, DataType t, ReduceOp op, long count) {
    ByteBuffer b = ByteBuffer.allocate(Math.toIntExact(count * t.byteSize())).order(ByteOrder.nativeOrder());
    SplittableRandom rnd = random(caseSeed, rank);
    if (op == null) {
      fillRandomBytes(b, b.capacity(), rnd);
    } else {
      fillForReduction(b, t, op, count, rnd);
    }
    return b;
  }

  /**
   * Fills {@code count} elements with values suited to the op, never zero: float sums in [-1, 1),
   * products in [0.5, 1.5) (16 ranks stay in range), MIN/MAX over a wide range; integers whose
   * sums and products either stay exact or wrap the same way in every implementation.
   */
  public static void fillForReduction(ByteBuffer b, DataType t, ReduceOp op, long count, SplittableRandom rnd) {
    for (long i = 0; i < count; i++) {
      long v;
      if (t.isFloatingPoint()) {
        double d = switch (op) {
          case SUM, AVG -> rnd.nextDouble(-1, 1);
          case PROD -> rnd.nextDouble(0.5, 1.5);
          case MIN, MAX -> rnd.nextDouble(-1000, 1000);
        };
        v = fromDouble(t, d == 0 ? 0.25 : d);
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

  /** Random bytes for data movement: any bit pattern, NaN payloads included, must arrive unchanged. */
  public static void fillRandomBytes(ByteBuffer b, long bytes, SplittableRandom rnd) {
    long i = 0;
    for (; i + 8 <= bytes; i += 8) {
      b.putLong((int) i, rnd.nextLong());
    }
    for (; i < bytes; i++) {
      b.put((int) i, (byte) rnd.nextInt());
    }
  }
}
