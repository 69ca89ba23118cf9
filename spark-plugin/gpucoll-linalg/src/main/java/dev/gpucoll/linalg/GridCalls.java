package dev.gpucoll.linalg;

import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.CollectiveTimeoutException;
import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.ProcessGrid;
import dev.gpucoll.api.ReduceOp;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.IntUnaryOperator;

/**
 * The collectives a routine makes over a process grid, on its kernel set's buffers. An error
 * raised in a row or column communicator counts ranks within it; here it is raised again naming the
 * global rank, its grid position, the sub-communicator and how its ranks map to global ones (a
 * timeout's missing ranks are given as global ranks).
 */
final class GridCalls {
  private final ProcessGrid<? extends Communicator> grid;
  private final String routine;
  private final int p;
  private final int q;

  private GridCalls(ProcessGrid<? extends Communicator> grid, String routine) {
    this.grid = grid;
    this.routine = routine;
    this.p = grid.myRow();
    this.q = grid.myCol();
  }

  /**
   * A routine's opening call, collective over the grid. This rank runs {@code checks} (its own
   * arguments: what it throws is held, not thrown yet) and scans {@code inputs}; then one allReduce
   * over the grid tells every rank whether any rank's checks failed, whether the ranks' descriptors
   * differ, and where the first NaN and Inf are. Any of these fails every rank alike, before any step
   * (a refusal on one rank alone would leave the others waiting for it).
   */
  static GridCalls open(ProcessGrid<? extends Communicator> grid, String routine, List<Descriptor> descriptors,
      Runnable checks, List<FiniteInput> inputs) {
    String problem = null;
    try {
      for (Descriptor d : descriptors) {
        d.requireGrid(grid);
      }
      checks.run();
    } catch (IllegalArgumentException | IndexOutOfBoundsException e) {
      problem = e.getMessage();
    }
    int fields = 9;
    long[] v = new long[1 + 2 * inputs.size() + 2 * fields * descriptors.size()];
    v[0] = problem == null ? Long.MAX_VALUE : grid.all().rank();
    for (int i = 0; i < inputs.size(); i++) {
      long[] first = problem == null ? inputs.get(i).scan().get() : new long[] {FiniteInput.NONE, FiniteInput.NONE};
      v[1 + 2 * i] = first[0];
      v[2 + 2 * i] = first[1];
    }
    int at = 1 + 2 * inputs.size();
    for (Descriptor d : descriptors) {
      int[] f = d.toScalapack(0);
      for (int k = 0; k < fields; k++) {
        v[at + k] = k == 1 ? 0 : f[k]; // the context slot carries nothing here
        v[at + fields + k] = -v[at + k];
      }
      at += 2 * fields;
    }
    grid.all().allReduce(v, ReduceOp.MIN);
    if (problem != null) {
      throw new IllegalArgumentException(routine + ": " + problem);
    }
    if (v[0] != Long.MAX_VALUE) {
      throw new IllegalArgumentException(routine + ": global rank " + v[0] + " refused its arguments (its own error"
          + " says why), so no rank goes on");
    }
    at = 1 + 2 * inputs.size();
    String[] names = {"DTYPE_", "CTXT_", "M_", "N_", "MB_", "NB_", "RSRC_", "CSRC_", "LLD_"};
    for (int i = 0; i < descriptors.size(); i++, at += 2 * fields) {
      for (int k = 0; k < fields; k++) {
        if (v[at + k] != -v[at + fields + k]) {
          throw new IllegalArgumentException(routine + ": the ranks passed different descriptors"
              + (descriptors.size() > 1 ? " (argument " + (i + 1) + ")" : "") + ": " + names[k] + " ranges over "
              + v[at + k] + ".." + -v[at + fields + k]);
        }
      }
    }
    for (int i = 0; i < inputs.size(); i++) {
      inputs.get(i).refuse(new long[] {v[1 + 2 * i], v[2 + 2 * i]}, routine);
    }
    return new GridCalls(grid, routine);
  }

  int prow() {
    return p;
  }

  int pcol() {
    return q;
  }

  /** Fails unless {@code a} is this rank's part (for {@link #open}'s checks). */
  static void requireMine(ProcessGrid<? extends Communicator> grid, LocalMatrix a, String name) {
    requireMine(grid, a.prow(), a.pcol(), name);
  }

  static void requireMine(ProcessGrid<? extends Communicator> grid, int prow, int pcol, String name) {
    if (prow != grid.myRow() || pcol != grid.myCol()) {
      throw new IllegalArgumentException(name + " is process (" + prow + ", " + pcol + ")'s part, and"
          + " this is global rank " + grid.all().rank() + " at grid position (" + grid.myRow() + ", "
          + grid.myCol() + ")");
    }
  }

  String routine() {
    return routine;
  }

  // Each communicator enqueues device buffers on its stream; DeviceSolver puts the grid's three on
  // one. Counts are in doubles.

  void rowBroadcast(CommBuffer buf, long count, int root) {
    onRow(c -> c.broadcast(buf, buf, count, DataType.FLOAT64, root));
  }

  void columnBroadcast(CommBuffer buf, long count, int root) {
    onColumn(c -> c.broadcast(buf, buf, count, DataType.FLOAT64, root));
  }

  void columnAllGather(CommBuffer send, CommBuffer recv, long count) {
    onColumn(c -> c.allGather(send, recv, count, DataType.FLOAT64));
  }

  void columnSum(CommBuffer buf, long count) {
    onColumn(c -> c.allReduce(buf, buf, count, DataType.FLOAT64, ReduceOp.SUM));
  }

  void columnAllToAllv(CommBuffer send, long[] sendCounts, long[] sendDispls, CommBuffer recv, long[] recvCounts,
      long[] recvDispls) {
    onColumn(c -> c.allToAllv(send, sendCounts, sendDispls, recv, recvCounts, recvDispls, DataType.FLOAT64));
  }

  /** recv = the buffer of process (prow, pcol), over the whole grid. */
  void gridBroadcast(CommBuffer buf, long count, int prow, int pcol) {
    try {
      grid.all().broadcast(buf, buf, count, DataType.FLOAT64, prow * grid.cols() + pcol);
    } catch (CollectiveException e) {
      throw new CollectiveException(grid.all().rank(), e.collective(), routine + " at grid position (" + p + ", " + q
          + ") of the " + grid.rows() + " x " + grid.cols() + " grid, over the whole grid: " + e.getMessage(), e);
    }
  }

  private void onRow(Consumer<Communicator> call) {
    try {
      call.accept(grid.row());
    } catch (CollectiveException e) {
      throw named(e, "grid row " + p + "'s communicator, whose ranks are process columns", r -> p * grid.cols() + r,
          grid.cols());
    }
  }

  private void onColumn(Consumer<Communicator> call) {
    try {
      call.accept(grid.column());
    } catch (CollectiveException e) {
      throw named(e, "grid column " + q + "'s communicator, whose ranks are process rows",
          r -> r * grid.cols() + q, grid.rows());
    }
  }

  private CollectiveException named(CollectiveException e, String sub,
      IntUnaryOperator global, int size) {
    StringBuilder map = new StringBuilder();
    for (int r = 0; r < size; r++) {
      map.append(r == 0 ? "" : ", ").append(r).append(" = global ").append(global.applyAsInt(r));
    }
    String problem = routine + " at grid position (" + p + ", " + q + ") of the " + grid.rows() + " x " + grid.cols()
        + " grid, in " + sub + " (" + map + "): " + e.getMessage();
    int me = grid.all().rank();
    if (e instanceof CollectiveTimeoutException t) {
      List<Integer> missing = t.missingRanks().stream().map(global::applyAsInt).toList();
      return new CollectiveTimeoutException(me, e.collective(), missing, problem + "; missing global ranks "
          + missing);
    }
    return new CollectiveException(me, e.collective(), problem, e);
  }
}
