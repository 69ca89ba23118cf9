package dev.gpucoll.examples.linalg;

import java.io.Serializable;

/**
 * An n × n matrix in nb × nb blocks dealt block-cyclically over a P × Q process grid (as
 * ScaLAPACK and cuSOLVERMp lay matrices out): block (I, J) lives on process (I mod P, J mod Q).
 * Every process holds n/P rows and n/Q columns.
 */
record BlockCyclicLayout(int n, int nb, int gridRows, int gridCols) implements Serializable {
  BlockCyclicLayout {
    if (n <= 0 || nb <= 0 || gridRows <= 0 || gridCols <= 0) {
      throw new IllegalArgumentException("sizes must be positive: n " + n + ", block " + nb
          + ", grid " + gridRows + " x " + gridCols);
    }
    if (n % (nb * gridRows) != 0 || n % (nb * gridCols) != 0) {
      throw new IllegalArgumentException("n = " + n + " must be a multiple of block size " + nb
          + " times the grid's rows (" + gridRows + ") and columns (" + gridCols + ")");
    }
  }

  /** Power iteration's reduceScatter splits each process's rows over the grid columns. */
  BlockCyclicLayout requireRowsSplitOverColumns() {
    if ((n / gridRows) % gridCols != 0) {
      throw new IllegalArgumentException("each process's " + (n / gridRows) + " rows must split"
          + " evenly over the " + gridCols + " grid columns (for reduceScatter)");
    }
    return this;
  }

  /** The most square grid for {@code ranks}: P ≤ Q, P the largest divisor ≤ √ranks. */
  static int[] grid(int ranks) {
    int p = (int) Math.floor(Math.sqrt(ranks));
    while (ranks % p != 0) {
      p--;
    }
    return new int[] {p, ranks / p};
  }

  int localRows() {
    return n / gridRows;
  }

  int localCols() {
    return n / gridCols;
  }

  int blocks() {
    return n / nb;
  }

  int globalRow(int p, int localRow) {
    return ((localRow / nb) * gridRows + p) * nb + localRow % nb;
  }

  int globalCol(int q, int localCol) {
    return ((localCol / nb) * gridCols + q) * nb + localCol % nb;
  }

  /** The grid row holding global row {@code g}. */
  int rowOwner(int g) {
    return (g / nb) % gridRows;
  }

  /** The grid column holding global column {@code g}. */
  int colOwner(int g) {
    return (g / nb) % gridCols;
  }

  /** Global row {@code g}'s index among its owner's local rows. */
  int localRow(int g) {
    return (g / nb / gridRows) * nb + g % nb;
  }

  /** Global column {@code g}'s index among its owner's local columns. */
  int localCol(int g) {
    return (g / nb / gridCols) * nb + g % nb;
  }

  /** How many of grid row p's local rows lie above global row g: its first local row at or below g. */
  int localRowsBefore(int p, int g) {
    return before(p, g, gridRows);
  }

  /** How many of grid column q's local columns lie left of global column g. */
  int localColsBefore(int q, int g) {
    return before(q, g, gridCols);
  }

  private int before(int owner, int g, int procs) {
    int full = g / nb;
    int blocks = full / procs + (full % procs > owner ? 1 : 0);
    return blocks * nb + (full % procs == owner ? g % nb : 0);
  }

  /** Process (p, q)'s part of the matrix whose element (i, j) is {@code f(i, j)}. */
  double[] local(int p, int q, Element f) {
    double[] out = new double[localRows() * localCols()];
    for (int li = 0; li < localRows(); li++) {
      for (int lj = 0; lj < localCols(); lj++) {
        out[li * localCols() + lj] = f.at(globalRow(p, li), globalCol(q, lj));
      }
    }
    return out;
  }

  interface Element extends Serializable {
    double at(int i, int j);
  }
}
