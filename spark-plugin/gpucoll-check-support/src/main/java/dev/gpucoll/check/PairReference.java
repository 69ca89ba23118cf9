package dev.gpucoll.check;

import dev.gpucoll.api.DataType;
import dev.gpucoll.api.LocOp;
import dev.gpucoll.api.PairType;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.SplittableRandom;

/**
 * The GPU checks' reference for MAXLOC / MINLOC ({@link LocOp}): inputs per seed and rank whose
 * values come from a small set (so ties across ranks are common, -0.0 and +0.0 among the floats,
 * the extremes of INT64 among the integers) with indices that are not in rank order, and the
 * expected winner of each pair, written apart from the backends' fold.
 */
public final class PairReference {
  private static final double[] FLOATS = {-2, -1, -0.0, 0.0, 1, 2};

  private PairReference() {}

  /** Rank {@code rank}'s {@code count} pairs for case {@code seed}, in {@link PairType}'s layout. */
  public static ByteBuffer input(long seed, int rank, PairType t, long count) {
    SplittableRandom rnd = new SplittableRandom(seed * 1_000_003L + rank);
    ByteBuffer b = ByteBuffer.allocate(Math.toIntExact(count * t.byteSize())).order(ByteOrder.nativeOrder());
    for (int i = 0; i < count; i++) {
      int at = i * t.byteSize();
      int pick = rnd.nextInt(FLOATS.length);
      switch (t.value()) {
        case FLOAT32 -> b.putFloat(at, (float) FLOATS[pick]);
        case FLOAT64 -> b.putDouble(at, FLOATS[pick]);
        case INT32 -> b.putInt(at, pick == 5 ? Integer.MIN_VALUE : pick - 2);
        default -> b.putLong(at, pick == 5 ? Long.MAX_VALUE : pick == 4 ? Long.MAX_VALUE - 1 : pick - 2);
      }
      long index = rnd.nextInt(-5, 50) + (t.index() == DataType.INT64 && rnd.nextBoolean() ? 1L << 40 : 0);
      if (t.index() == DataType.INT32) {
        b.putInt(at + t.indexOffset(), (int) index);
      } else {
        b.putLong(at + t.indexOffset(), index);
      }
    }
    return b;
  }

  /**
   * The first pair of {@code got} that is not the expected winner over {@code n} ranks' inputs
   * (value compared as a number, index exactly), described; null when all are right.
   */
  public static String firstWrong(long seed, int n, PairType t, LocOp op, long count, ByteBuffer got) {
    ByteBuffer[] in = new ByteBuffer[n];
    for (int r = 0; r < n; r++) {
      in[r] = input(seed, r, t, count);
    }
    ByteBuffer g = got.duplicate().order(ByteOrder.nativeOrder());
    for (int i = 0; i < count; i++) {
      int at = i * t.byteSize();
      int best = 0;
      for (int r = 1; r < n; r++) {
        int cmp = compare(t, in[r], in[best], at);
        if ((op == LocOp.MAXLOC ? cmp > 0 : cmp < 0) || (cmp == 0 && index(t, in[r], at) < index(t, in[best], at))) {
          best = r;
        }
      }
      if (compare(t, g, in[best], at) != 0 || index(t, g, at) != index(t, in[best], at)) {
        return "pair " + i + ": expected (" + text(t, in[best], at) + ", " + index(t, in[best], at) + ") from rank "
            + best + ", got (" + text(t, g, at) + ", " + index(t, g, at) + ")";
      }
    }
    return null;
  }

  private static int compare(PairType t, ByteBuffer x, ByteBuffer y, int at) {
    return switch (t.value()) {
      case FLOAT32 -> x.getFloat(at) == y.getFloat(at) ? 0 : x.getFloat(at) < y.getFloat(at) ? -1 : 1;
      case FLOAT64 -> x.getDouble(at) == y.getDouble(at) ? 0 : x.getDouble(at) < y.getDouble(at) ? -1 : 1;
      case INT32 -> Integer.compare(x.getInt(at), y.getInt(at));
      default -> Long.compare(x.getLong(at), y.getLong(at));
    };
  }

  private static long index(PairType t, ByteBuffer b, int at) {
    return t.index() == DataType.INT32 ? b.getInt(at + t.indexOffset()) : b.getLong(at + t.indexOffset());
  }

  private static String text(PairType t, ByteBuffer b, int at) {
    return switch (t.value()) {
      case FLOAT32 -> Float.toString(b.getFloat(at));
      case FLOAT64 -> Double.toString(b.getDouble(at));
      case INT32 -> Integer.toString(b.getInt(at));
      default -> Long.toString(b.getLong(at));
    };
  }
}
