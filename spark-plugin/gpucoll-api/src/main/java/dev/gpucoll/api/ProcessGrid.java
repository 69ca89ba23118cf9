package dev.gpucoll.api;

import java.util.function.BiFunction;

/**
 * A P × Q process grid over a communicator, as ScaLAPACK's BLACS grid and cuSOLVERMp's device grid:
 * rank r sits at row {@code r / cols}, column {@code r % cols} (row-major; cuSOLVERMp's
 * {@code CUSOLVERMP_GRID_MAPPING_ROW_MAJOR}). Each rank gets the communicator of its grid row (its
 * rank there is its column) and of its grid column (its rank there is its row), for panel
 * broadcasts and pivot searches of its own.
 *
 * <p>A library that builds its own grid (cuSOLVERMp's {@code cusolverMpCreateDeviceGrid},
 * cuBLASMp) takes the whole group's communicator instead: {@link GpuCommunicator#ncclComm()} of
 * {@link #all()}, {@link #rows()}, {@link #cols()} and the row-major mapping, and the stream
 * {@link GpuCommunicator#stream()}. The row and column communicators of a GPU group are
 * {@link GpuCommunicator}s too, each with its own {@code ncclComm_t}.
 *
 * <p>Forming a grid is collective: every rank calls {@link #of} with the same shape, in the same
 * order relative to its other calls. A shape that differs between ranks, or that does not multiply
 * to the group size, fails on every rank with an {@link IllegalArgumentException} before any
 * communicator is made. {@link #close()} closes the row and column communicators (not the parent).
 *
 * @param <C> the parent's kind: {@link Communicator}, or {@link GpuCommunicator} for GPU groups
 */
public final class ProcessGrid<C extends Communicator> implements AutoCloseable {
  private final C all;
  private final int rows;
  private final int cols;
  private final C row;
  private final C column;

  private ProcessGrid(C all, int rows, int cols, C row, C column) {
    this.all = all;
    this.rows = rows;
    this.cols = cols;
    this.row = row;
    this.column = column;
  }

  /** A {@code rows} × {@code cols} grid over {@code comm}. */
  public static ProcessGrid<Communicator> of(Communicator comm, int rows, int cols) {
    return form(comm, rows, cols, comm::split);
  }

  /** A {@code rows} × {@code cols} grid over a GPU group: its row and column communicators are GPU ones. */
  public static ProcessGrid<GpuCommunicator> of(GpuCommunicator comm, int rows, int cols) {
    return form(comm, rows, cols, comm::split);
  }

  private static <C extends Communicator> ProcessGrid<C> form(C comm, int rows, int cols,
      BiFunction<Integer, Integer, C> split) {
    // Agree on the shape first (max of each value and of its negation: equal on every rank iff
    // every rank passed the same), so that a mismatch fails every rank alike instead of splitting.
    long[] shape = {rows, cols, -(long) rows, -(long) cols};
    comm.allReduce(shape, ReduceOp.MAX);
    if (shape[0] != -shape[2] || shape[1] != -shape[3]) {
      throw new IllegalArgumentException("rank " + comm.rank() + ": the ranks asked for different grid shapes"
          + " (this rank " + rows + " x " + cols + "; rows range over " + -shape[2] + ".." + shape[0]
          + ", columns over " + -shape[3] + ".." + shape[1] + ")");
    }
    if (rows <= 0 || cols <= 0 || (long) rows * cols != comm.size()) {
      throw new IllegalArgumentException("a " + rows + " x " + cols + " grid does not fit a group of "
          + comm.size() + " ranks: rows and columns must be positive and multiply to the group size");
    }
    int r = comm.rank() / cols;
    int c = comm.rank() % cols;
    C row = split.apply(r, c);
    C column;
    try {
      column = split.apply(c, r);
    } catch (RuntimeException e) {
      row.close();
      throw e;
    }
    return new ProcessGrid<>(comm, rows, cols, row, column);
  }

  /** The communicator the grid was formed over (all {@code rows × cols} ranks). */
  public C all() {
    return all;
  }

  public int rows() {
    return rows;
  }

  public int cols() {
    return cols;
  }

  /** This rank's grid row, in [0, rows). */
  public int myRow() {
    return all.rank() / cols;
  }

  /** This rank's grid column, in [0, cols). */
  public int myCol() {
    return all.rank() % cols;
  }

  /** The rank of the parent communicator at grid position (gridRow, gridCol). */
  public int rankAt(int gridRow, int gridCol) {
    if (gridRow < 0 || gridRow >= rows || gridCol < 0 || gridCol >= cols) {
      throw new IllegalArgumentException("(" + gridRow + ", " + gridCol + ") is outside the " + rows + " x "
          + cols + " grid");
    }
    return gridRow * cols + gridCol;
  }

  /** The ranks of this rank's grid row ({@code cols} of them), ranked by grid column. */
  public C row() {
    return row;
  }

  /** The ranks of this rank's grid column ({@code rows} of them), ranked by grid row. */
  public C column() {
    return column;
  }

  /** Closes the row and column communicators; the parent stays open. */
  @Override
  public void close() {
    try {
      row.close();
    } finally {
      column.close();
    }
  }
}
