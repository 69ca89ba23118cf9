package dev.gpucoll.core.pairs;

import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.LocOp;
import dev.gpucoll.api.PairType;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The one fold of MAXLOC / MINLOC (see {@link LocOp}): every backend gathers each rank's pairs and
 * folds them here, in rank order, so every rank computes the same bits. Among equal values the
 * lowest index wins, so the result does not depend on the order either; NaN values are refused.
 */
public final class PairFold {
  private PairFold() {}

  /** Why {@code b} cannot carry pairs on the host (pairs travel in a ByteBuffer), or null. */
  public static String hostBufferProblem(CommBuffer b, String role) {
    if (b instanceof CommBuffer.Host h && !(h.nio() instanceof ByteBuffer)) {
      return role + " buffer is a " + h.nio().getClass().getSimpleName() + "; MAXLOC/MINLOC pairs travel in a"
          + " ByteBuffer (layout: PairType)";
    }
    return null;
  }

  /**
   * Why {@code gathered} cannot be folded (the first NaN value in rank, then pair order), or null.
   * The text is the same on every rank that holds the same gathered bytes.
   */
  public static String nanProblem(ByteBuffer gathered, int ranks, int count, PairType type, LocOp op) {
    if (!type.value().isFloatingPoint()) {
      return null;
    }
    ByteBuffer g = gathered.duplicate().order(ByteOrder.nativeOrder());
    int pb = type.byteSize();
    for (int r = 0; r < ranks; r++) {
      for (int i = 0; i < count; i++) {
        int at = (r * count + i) * pb;
        if (Double.isNaN(floatValue(g, at, type))) {
          return nanMessage(op, type, r, i, index(g, at, type));
        }
      }
    }
    return null;
  }

  /** The refusal of a NaN value, in the same words on every backend and path (the GPU's pair kernel too). */
  public static String nanMessage(LocOp op, PairType type, int rank, long pair, long index) {
    return op + " over " + type + ": rank " + rank + "'s pair " + pair + " has a NaN value (index " + index + "); " + op
        + " refuses NaN values";
  }

  /**
   * out pair i = the winner among gathered pairs {@code r * count + i}, r in [0, ranks): the largest
   * (MAXLOC) or smallest (MINLOC) value, the lowest index among equal values. The winner's bytes are
   * copied whole. Buffers are read and written from index 0 in native byte order; {@code gathered}
   * holds no NaN ({@link #nanProblem}).
   */
  public static void fold(ByteBuffer gathered, int ranks, int count, PairType type, LocOp op, ByteBuffer out) {
    ByteBuffer g = gathered.duplicate().order(ByteOrder.nativeOrder());
    ByteBuffer o = out.duplicate().order(ByteOrder.nativeOrder());
    int pb = type.byteSize();
    boolean floating = type.value().isFloatingPoint();
    boolean max = op == LocOp.MAXLOC;
    for (int i = 0; i < count; i++) {
      int best = i * pb;
      for (int r = 1; r < ranks; r++) {
        int at = (r * count + i) * pb;
        int cmp = floating ? Double.compare(floatValue(g, at, type) + 0.0, floatValue(g, best, type) + 0.0)
            : Long.compare(intValue(g, at, type), intValue(g, best, type));
        if ((max ? cmp > 0 : cmp < 0) || (cmp == 0 && index(g, at, type) < index(g, best, type))) {
          best = at;
        }
      }
      for (int b = 0; b < pb; b++) {
        o.put(i * pb + b, g.get(best + b));
      }
    }
  }

  // Adding 0.0 above makes -0.0 equal +0.0 for Double.compare (which orders -0.0 first); floats
  // widen to double exactly, so their order is kept.
  private static double floatValue(ByteBuffer b, int at, PairType t) {
    return t.value() == DataType.FLOAT32 ? b.getFloat(at) : b.getDouble(at);
  }

  private static long intValue(ByteBuffer b, int at, PairType t) {
    return t.value() == DataType.INT32 ? b.getInt(at) : b.getLong(at);
  }

  /** The index of the pair at byte {@code at}. */
  public static long index(ByteBuffer b, int at, PairType t) {
    int off = at + t.indexOffset();
    return t.index() == DataType.INT32 ? b.getInt(off) : b.getLong(off);
  }
}
