package dev.gpucoll.core.host;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.core.batch.RecordedBatch;
import dev.gpucoll.core.buffers.HostBuffers;
import dev.gpucoll.core.spi.AllToAllvLayout;
import java.nio.Buffer;

/** Collects the first problem with this rank's own arguments; the call still goes out with it. */
final class CallArgs {
  private final int rank;
  private final int size;
  final DataType type;
  final long count;
  String problem;
  /** Elements the call reports to the listeners (their bytes: {@link #bytes}). */
  long reported;
  /** The checked views of a recordable call's buffers ({@link #recordable}); null after a problem. */
  Buffer send;
  Buffer recv;

  /**
   * @param maxCallBytes most bytes one call may gather in one buffer (count x ranks x element size)
   * @param backend the backend's name, for the error past {@code maxCallBytes}
   */
  CallArgs(int rank, int size, long maxCallBytes, String backend, DataType type, long count) {
    this.rank = rank;
    this.size = size;
    this.type = type;
    this.count = count;
    if (type == null) {
      fail("data type is null");
    }
    if (count < 0) {
      fail("count is negative: " + count);
    } else if (count > Integer.MAX_VALUE / Math.max(1, size)) {
      fail("count " + count + " is too large for host buffers (at most "
          + Integer.MAX_VALUE / Math.max(1, size) + " elements per rank)");
    } else if (type != null && count * size * type.byteSize() > maxCallBytes) {
      fail("count " + count + " of " + type + " is too large for " + backend + ": count x ranks x element size"
          + " must be at most " + maxCallBytes + " bytes per call; split it into smaller calls");
    }
  }

  void fail(String why) {
    if (problem == null) {
      problem = why;
    }
  }

  void op(ReduceOp op) {
    if (op == null) {
      fail("reduction op is null");
    }
  }

  /**
   * The checks of a call that group() can record, in one place for its own method and for a
   * batch's check: the op of a reduction, the root of a broadcast, then each buffer against the
   * elements the collective reads and writes here ({@link RecordedBatch.Call#sendCount}); sets
   * {@link #send}, {@link #recv} and what the call reports.
   */
  void recordable(Collective c, CommBuffer sendBuffer, CommBuffer recvBuffer, ReduceOp op, int root) {
    if (c == Collective.ALL_REDUCE || c == Collective.REDUCE_SCATTER) {
      op(op);
    }
    if (c == Collective.BROADCAST && (root < 0 || root >= size)) {
      fail("root " + root + " is not a rank of this group of " + size);
    }
    long sendElems = RecordedBatch.Call.sendCount(c, count, size);
    long recvElems = RecordedBatch.Call.recvCount(c, count, size);
    send = c != Collective.BROADCAST || rank == root ? buffer(sendBuffer, "send", sendElems) : null;
    recv = buffer(recvBuffer, "recv", recvElems);
    reported = Math.max(sendElems, recvElems);
  }

  int count() {
    return problem == null ? (int) count : 0;
  }

  long bytes(long elements) {
    return type == null || elements < 0 ? 0 : elements * type.byteSize();
  }

  /** The typed view of {@code b}, checked to hold {@code needed} elements; null after a problem. */
  Buffer buffer(CommBuffer b, String role, long needed) {
    if (problem != null) {
      return null;
    }
    Object v = HostBuffers.view(b, type, role);
    if (v instanceof String why) {
      fail(why);
      return null;
    }
    Buffer view = (Buffer) v;
    if (view.limit() < needed) {
      fail(role + " buffer holds " + view.limit() + " " + type + " elements, the call needs "
          + needed);
      return null;
    }
    return view;
  }

  int[] counts(long[] values, String name) {
    if (problem != null) {
      return null;
    }
    if (values == null || values.length != size) {
      fail(name + " must have one entry per rank (" + size + "), got "
          + (values == null ? "null" : values.length));
      return null;
    }
    int[] out = new int[size];
    for (int i = 0; i < size; i++) {
      if (values[i] < 0 || values[i] > Integer.MAX_VALUE) {
        fail(name + "[" + i + "] = " + values[i] + " is out of range");
        return null;
      }
      out[i] = (int) values[i];
    }
    return out;
  }

  /**
   * Receive ranges must not overlap: two peers writing the same elements would leave whichever
   * landed last (overlapping send ranges are fine, they are only read).
   */
  void disjoint(int[] counts, int[] displs) {
    if (problem != null) {
      return;
    }
    Integer[] order = new Integer[size];
    java.util.Arrays.setAll(order, i -> i);
    java.util.Arrays.sort(order, (x, y) -> Integer.compare(displs[x], displs[y]));
    int prev = -1;
    for (int i : order) {
      if (counts[i] == 0) {
        continue;
      }
      if (prev >= 0 && (long) displs[prev] + counts[prev] > displs[i]) {
        fail("recvDispls/recvCounts overlap: the range from rank " + prev + " [" + displs[prev] + ", "
            + ((long) displs[prev] + counts[prev]) + ") and the range from rank " + i + " [" + displs[i] + ", "
            + ((long) displs[i] + counts[i]) + ") share elements");
        return;
      }
      prev = i;
    }
  }

  /**
   * Displacements for {@code counts} (checked already): a block of zero elements moves nothing,
   * so its displacement may be anything but negative (and is taken as 0).
   */
  int[] displs(long[] values, int[] counts, String name) {
    if (problem != null) {
      return null;
    }
    if (values == null || values.length != size) {
      return counts(values, name);
    }
    long[] used = values.clone();
    for (int i = 0; i < size; i++) {
      if (counts[i] == 0 && used[i] >= 0) {
        used[i] = 0;
      }
    }
    return counts(used, name);
  }

  /** Elements a buffer must hold for these (checked) counts and displacements. */
  long extent(long[] counts, long[] displs) {
    return problem != null ? 0 : AllToAllvLayout.extent(counts, displs);
  }
}
