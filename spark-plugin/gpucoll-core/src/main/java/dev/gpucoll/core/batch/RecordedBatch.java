package dev.gpucoll.core.batch;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CollectiveBatch;
import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.InvalidArgumentException;
import dev.gpucoll.api.ReduceOp;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * The calls one {@code group()} body recorded, in order, and the batch's signature that every rank
 * compares before any of them runs. Both backends record through this class, so a batch means the
 * same on each.
 */
public final class RecordedBatch implements CollectiveBatch {
  /** One recorded call; {@code op} is SUM and {@code root} 0 where the collective has none. */
  public record Call(Collective collective, CommBuffer send, CommBuffer recv, long count, DataType type,
      ReduceOp op, int root) {
    /** Elements this call reads from send in a group of {@code size}. */
    public long sendCount(int size) {
      return sendCount(collective, count, size);
    }

    /** Elements this call writes to recv in a group of {@code size}. */
    public long recvCount(int size) {
      return recvCount(collective, count, size);
    }

    /** Elements a recordable collective of per-rank {@code count} reads from send in a group of {@code size}. */
    public static long sendCount(Collective c, long count, int size) {
      return switch (c) {
        case REDUCE_SCATTER, ALL_TO_ALL -> count * size;
        default -> count;
      };
    }

    /** Elements a recordable collective of per-rank {@code count} writes to recv in a group of {@code size}. */
    public static long recvCount(Collective c, long count, int size) {
      return switch (c) {
        case ALL_GATHER, ALL_TO_ALL -> count * size;
        default -> count;
      };
    }
  }

  private final List<Call> calls = new ArrayList<>();
  private boolean sealed;

  private RecordedBatch() {}

  /** Runs {@code body} on a fresh batch and seals it: a call recorded later (a leaked batch) fails. */
  public static RecordedBatch record(Consumer<CollectiveBatch> body) {
    if (body == null) {
      throw new IllegalArgumentException("group body is null");
    }
    RecordedBatch b = new RecordedBatch();
    try {
      body.accept(b);
    } finally {
      b.sealed = true;
    }
    return b;
  }

  public List<Call> calls() {
    return calls;
  }

  /** Runs every recorded call on {@code comm}, in order, through its ordinary methods. */
  public void runEach(Communicator comm) {
    for (Call c : calls) {
      runOne(comm, c);
    }
  }

  /** Runs one recorded call on {@code comm} through its ordinary method. */
  public static void runOne(Communicator comm, Call c) {
    switch (c.collective()) {
      case ALL_REDUCE -> comm.allReduce(c.send(), c.recv(), c.count(), c.type(), c.op());
      case ALL_GATHER -> comm.allGather(c.send(), c.recv(), c.count(), c.type());
      case REDUCE_SCATTER -> comm.reduceScatter(c.send(), c.recv(), c.count(), c.type(), c.op());
      case ALL_TO_ALL -> comm.allToAll(c.send(), c.recv(), c.count(), c.type());
      case BROADCAST -> comm.broadcast(c.send(), c.recv(), c.count(), c.type(), c.root());
      default -> throw new IllegalStateException("not recordable: " + c.collective());
    }
  }

  @Override
  public void allReduce(CommBuffer send, CommBuffer recv, long count, DataType type, ReduceOp op) {
    add(new Call(Collective.ALL_REDUCE, send, recv, count, type, op, 0));
  }

  @Override
  public void allGather(CommBuffer send, CommBuffer recv, long count, DataType type) {
    add(new Call(Collective.ALL_GATHER, send, recv, count, type, ReduceOp.SUM, 0));
  }

  @Override
  public void reduceScatter(CommBuffer send, CommBuffer recv, long count, DataType type, ReduceOp op) {
    add(new Call(Collective.REDUCE_SCATTER, send, recv, count, type, op, 0));
  }

  @Override
  public void allToAll(CommBuffer send, CommBuffer recv, long count, DataType type) {
    add(new Call(Collective.ALL_TO_ALL, send, recv, count, type, ReduceOp.SUM, 0));
  }

  @Override
  public void broadcast(CommBuffer send, CommBuffer recv, long count, DataType type, int root) {
    add(new Call(Collective.BROADCAST, send, recv, count, type, ReduceOp.SUM, root));
  }

  private void add(Call c) {
    if (sealed) {
      throw new IllegalStateException("this batch belongs to a group() call that has returned; record calls"
          + " inside the group's body");
    }
    if (c.type() == null || c.op() == null) {
      throw new IllegalArgumentException(c.collective().apiName() + " in a group: type and op must not be null");
    }
    calls.add(c);
  }

  /**
   * The error of a batch whose call {@code index} (from 0) this rank refused before any call ran:
   * it names the call by its place in the batch, as the caller recorded it, and says that nothing ran.
   */
  public CollectiveException refused(int rank, int index, CollectiveException why) {
    String m = why.getMessage();
    String prefix = "rank " + why.rank() + ", " + (why.collective() == null ? "communicator setup"
        : why.collective().apiName()) + ": ";
    String problem = m != null && m.startsWith(prefix) ? m.substring(prefix.length()) : m;
    String message = "call " + (index + 1) + " of the " + calls.size() + " in this group() was refused, so none of"
        + " them ran: " + problem;
    Collective c = calls.get(index).collective();
    if (why instanceof InvalidArgumentException) { // this rank's own arguments
      return new InvalidArgumentException(rank, c, message, why);
    }
    return new CollectiveException(rank, c, message, why);
  }

  /**
   * What every rank must agree on: the number of calls and a hash of each call's collective, count,
   * type, op and root, in order (buffers are each rank's own and take no part).
   */
  public long[] signature() {
    long h = 0xcbf29ce484222325L;
    for (Call c : calls) {
      for (long v : new long[] {c.collective().ordinal(), c.count(), c.type().ordinal(), c.op().ordinal(), c.root()}) {
        h = (h ^ v) * 0x100000001b3L;
        h ^= h >>> 31;
      }
    }
    return new long[] {calls.size(), h};
  }

  /**
   * The mismatch among every rank's {@link #signature} ({@code gathered} holds rank r's pair at
   * 2r, 2r+1), or null when all agree. Every rank computes the same text from the same data.
   */
  public static String mismatch(long[] gathered) {
    int size = gathered.length / 2;
    boolean same = true;
    for (int r = 1; r < size; r++) {
      same &= gathered[2 * r] == gathered[0] && gathered[2 * r + 1] == gathered[1];
    }
    if (same) {
      return null;
    }
    StringBuilder sb = new StringBuilder("ranks recorded different batches in group(): ");
    for (int r = 0; r < size; r++) {
      sb.append(r == 0 ? "" : ", ").append("rank ").append(r).append(": ").append(gathered[2 * r])
          .append(gathered[2 * r] == 1 ? " call" : " calls");
      if (r > 0 && gathered[2 * r] == gathered[0] && gathered[2 * r + 1] != gathered[1]) {
        sb.append(" (differing from rank 0 in a collective, count, type, op or root)");
      }
    }
    return sb.toString();
  }
}
