package dev.gpucoll.core.host;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.LocOp;
import dev.gpucoll.api.PairType;
import dev.gpucoll.api.ReduceOp;

/**
 * What every rank must agree on for one call: collective, count, type, op and root. Ranks publish
 * it with each step and compare all of them, so a mismatch fails on every rank alike.
 *
 * @param code a {@link Collective} ordinal, or {@link #SETUP} for split and segment setup
 */
record Signature(int code, long count, int type, int op, int root) {
  static final int SETUP = 100;
  /** The agreement on a group()'s batch: distinct from every collective, so it never matches a plain call. */
  static final int GROUP = 101;

  /** Pair types and MAXLOC/MINLOC sit above every DataType and ReduceOp, so no plain call matches them. */
  private static final int PAIR_BASE = 200;

  /** MAXLOC / MINLOC, an allReduce of {@code count} pairs. */
  static Signature loc(long count, PairType type, LocOp op) {
    return new Signature(Collective.ALL_REDUCE.ordinal(), count, type == null ? -1 : PAIR_BASE + type.ordinal(),
        op == null ? -1 : PAIR_BASE + op.ordinal(), -1);
  }

  static Signature of(Collective c, long count, DataType type, ReduceOp op, int root) {
    return new Signature(c.ordinal(), count, type == null ? -1 : type.ordinal(),
        op == null ? -1 : op.ordinal(), root);
  }

  /** The step that compares every rank's batch: its signature and the first call it refuses (three INT64 per rank). */
  static Signature group() {
    return new Signature(GROUP, 3, DataType.INT64.ordinal(), -1, -1);
  }

  static Signature setup(long what) {
    return new Signature(SETUP, what, -1, -1, -1);
  }

  /** code, type, op and root in 16 bits each, for the shared-memory header. */
  long packed() {
    return ((long) (code & 0xFFFF) << 48) | ((long) (type & 0xFFFF) << 32) | ((long) (op & 0xFFFF) << 16)
        | (root & 0xFFFF);
  }

  static Signature unpack(long word, long count) {
    return new Signature((short) (word >>> 48), count, (short) (word >>> 32), (short) (word >>> 16), (short) word);
  }

  String describe() {
    StringBuilder sb = new StringBuilder(
        code == SETUP ? "split/setup" : code == GROUP ? "group" : Collective.values()[code].apiName()).append('(');
    sb.append("count=").append(count);
    if (type >= PAIR_BASE) {
      sb.append(", ").append(PairType.values()[type - PAIR_BASE]);
    } else if (type >= 0) {
      sb.append(", ").append(DataType.values()[type]);
    }
    if (op >= PAIR_BASE) {
      sb.append(", ").append(LocOp.values()[op - PAIR_BASE]);
    } else if (op >= 0) {
      sb.append(", ").append(ReduceOp.values()[op]);
    }
    if (code == Collective.BROADCAST.ordinal()) {
      sb.append(", root=").append(root);
    }
    return sb.append(')').toString();
  }
}
