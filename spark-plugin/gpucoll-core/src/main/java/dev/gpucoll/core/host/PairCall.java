package dev.gpucoll.core.host;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.CollectiveMismatchException;
import dev.gpucoll.api.InvalidArgumentException;
import dev.gpucoll.api.CollectiveTimeoutException;
import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.LocOp;
import dev.gpucoll.api.PairType;
import dev.gpucoll.core.buffers.HostBuffers;
import dev.gpucoll.core.pairs.PairFold;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * One MAXLOC / MINLOC call on the host backend: its arguments checked (a problem travels with the
 * gather, so every rank fails alike), the gather's buffers, and the fold of what came back.
 */
final class PairCall {
  final String problem;
  final ByteBuffer send;
  final ByteBuffer gathered;
  private final ByteBuffer recv;
  private final int ranks;
  private final int count;
  private final PairType type;
  private final LocOp op;

  PairCall(CommBuffer send, CommBuffer recv, long count, PairType type, LocOp op, int ranks) {
    String why = type == null ? "pair type is null"
        : op == null ? "MAXLOC/MINLOC op is null"
        : count < 0 ? "count is negative: " + count
        : count > Integer.MAX_VALUE / ranks / type.byteSize() ? "count " + count + " is too large for host buffers"
            + " (at most " + Integer.MAX_VALUE / ranks / type.byteSize() + " pairs per rank)"
        : null;
    long bytes = why == null ? count * type.byteSize() : 0;
    ByteBuffer s = null;
    ByteBuffer r = null;
    if (why == null) {
      Object v = bytesOf(send, "send", bytes);
      if (v instanceof String w) {
        why = w;
      } else {
        s = (ByteBuffer) v;
        v = bytesOf(recv, "recv", bytes);
        if (v instanceof String w) {
          why = w;
        } else {
          r = (ByteBuffer) v;
        }
      }
    }
    this.problem = why;
    this.send = s;
    this.recv = r;
    this.ranks = ranks;
    this.count = why == null ? (int) count : 0;
    this.type = type;
    this.op = op;
    this.gathered = ByteBuffer.allocate(why == null ? (int) bytes * ranks : 0).order(ByteOrder.nativeOrder());
  }

  private static Object bytesOf(CommBuffer b, String role, long bytes) {
    String notBytes = PairFold.hostBufferProblem(b, role);
    if (notBytes != null) {
      return notBytes;
    }
    Object v = HostBuffers.view(b, dev.gpucoll.api.DataType.UINT8, role);
    if (v instanceof ByteBuffer view && view.limit() < bytes) {
      return role + " buffer holds " + view.limit() + " bytes, the call needs " + bytes;
    }
    return v;
  }

  /**
   * The gather's error as the user's call sees it: the same kind and text, named allReduce (the
   * transports name the step they ran, an allGather).
   */
  static CollectiveException asAllReduce(CollectiveException e) {
    if (e.collective() != Collective.ALL_GATHER) {
      return e;
    }
    String prefix = "rank " + e.rank() + ", " + Collective.ALL_GATHER.apiName() + ": ";
    String msg = e.getMessage();
    String problem = msg != null && msg.startsWith(prefix) ? msg.substring(prefix.length()) : msg;
    CollectiveException out;
    if (e instanceof CollectiveTimeoutException t) {
      out = new CollectiveTimeoutException(e.rank(), Collective.ALL_REDUCE, t.missingRanks(), problem);
    } else if (e instanceof CollectiveMismatchException) {
      out = new CollectiveMismatchException(e.rank(), Collective.ALL_REDUCE, problem);
    } else if (e instanceof InvalidArgumentException) {
      out = new InvalidArgumentException(e.rank(), Collective.ALL_REDUCE, problem);
    } else {
      out = new CollectiveException(e.rank(), Collective.ALL_REDUCE, problem, e.getCause());
    }
    out.setStackTrace(e.getStackTrace());
    return out;
  }

  /** Bytes the gather moves per rank. */
  int gatherBytes() {
    return problem == null ? count * type.byteSize() : 0;
  }

  /** The NaN problem of the gathered pairs (the same on every rank), or null after writing recv. */
  String fold() {
    String nan = PairFold.nanProblem(gathered, ranks, count, type, op);
    if (nan == null) {
      PairFold.fold(gathered, ranks, count, type, op, recv);
    }
    return nan;
  }
}
