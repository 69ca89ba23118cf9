package dev.gpucoll.linalg;

import dev.gpucoll.api.ProcessGrid;
import java.io.Serializable;

/**
 * How an M × N matrix is dealt over a P × Q process grid: ScaLAPACK's array descriptor (DESC, of
 * type 1: dense, block-cyclic), the one type every routine of this module takes.
 *
 * <p>The matrix is cut into MB × NB blocks from its first element (the last block row and column
 * may be ragged); block (I, J) lives on process row (RSRC + I) mod P and process column
 * (CSRC + J) mod Q. Each process keeps its blocks, in order, as one column-major local array of
 * leading dimension LLD.
 *
 * <p><b>Indices are 0-based</b>: global rows and columns, local rows and columns, and process rows
 * and columns (ScaLAPACK's process coordinates are 0-based too; its matrix indices are 1-based).
 * {@link #numroc}, {@link #indxg2p}, {@link #indxg2l} and {@link #indxl2g} are ScaLAPACK's TOOLS
 * routines of those names with every index shifted by one; the instance methods apply them to
 * rows (MB, RSRC, P) or columns (NB, CSRC, Q). The static ones take block sizes and process
 * counts of at least 1 and check nothing; the instance ones throw
 * {@link IndexOutOfBoundsException} naming an index outside the matrix or the grid.
 *
 * <p><b>Ranks</b>: the grid is row-major, as {@link ProcessGrid}: rank r is process
 * ({@code r / Q}, {@code r % Q}); in a grid's row communicator a rank's rank is its process column,
 * in its column communicator its process row.
 *
 * <p><b>LLD</b> is one value for every process, at least {@code max(1, the most local rows any
 * process row holds)}, so one descriptor serves every rank. (ScaLAPACK checks each process's LLD
 * against its own local rows only; a descriptor whose LLD suits a smaller process row alone is
 * refused here.)
 *
 * @param m global rows (M_), ≥ 0
 * @param n global columns (N_), ≥ 0
 * @param mb rows per block (MB_), ≥ 1
 * @param nb columns per block (NB_), ≥ 1
 * @param rsrc the process row holding the first block row (RSRC_), in [0, P)
 * @param csrc the process column holding the first block column (CSRC_), in [0, Q)
 * @param gridRows P, the grid's process rows, ≥ 1 (ScaLAPACK's context holds it)
 * @param gridCols Q, the grid's process columns, ≥ 1
 * @param lld the local arrays' leading dimension (LLD_)
 */
public record Descriptor(int m, int n, int mb, int nb, int rsrc, int csrc, int gridRows, int gridCols, int lld)
    implements Serializable {

  public Descriptor {
    atLeast("m (M_, global rows)", m, 0);
    atLeast("n (N_, global columns)", n, 0);
    atLeast("mb (MB_, rows per block)", mb, 1);
    atLeast("nb (NB_, columns per block)", nb, 1);
    atLeast("gridRows (P, process rows)", gridRows, 1);
    atLeast("gridCols (Q, process columns)", gridCols, 1);
    if (rsrc < 0 || rsrc >= gridRows) {
      throw new IllegalArgumentException("descriptor: rsrc (RSRC_, the process row of the first block row) = "
          + rsrc + " is outside [0, " + gridRows + ")");
    }
    if (csrc < 0 || csrc >= gridCols) {
      throw new IllegalArgumentException("descriptor: csrc (CSRC_, the process column of the first block column) = "
          + csrc + " is outside [0, " + gridCols + ")");
    }
    // The process row at distance 0 from RSRC holds the most rows.
    int most = Math.max(1, numroc(m, mb, rsrc, rsrc, gridRows));
    if (lld < most) {
      throw new IllegalArgumentException("descriptor: lld (LLD_, the local leading dimension) = " + lld
          + " is below " + most + ", max(1, the most local rows a process row holds: " + m + " rows in blocks of "
          + mb + " over " + gridRows + " process rows)");
    }
  }

  /** M × N in MB × NB blocks over a P × Q grid, the first block on process (0, 0), the smallest LLD. */
  public static Descriptor of(int m, int n, int mb, int nb, int gridRows, int gridCols) {
    return of(m, n, mb, nb, 0, 0, gridRows, gridCols);
  }

  /**
   * M × N in MB × NB blocks over the most square grid of {@code processes} ranks: P × Q = processes
   * with P ≤ Q, P the largest divisor of processes at most √processes (4 ranks: 2 × 2, 6: 2 × 3,
   * 7: 1 × 7); the first block on process (0, 0), the smallest LLD.
   */
  public static Descriptor onMostSquareGrid(int m, int n, int mb, int nb, int processes) {
    atLeast("processes (P x Q)", processes, 1);
    int p = (int) Math.sqrt(processes);
    while (processes % p != 0) {
      p--;
    }
    return of(m, n, mb, nb, p, processes / p);
  }

  /** As {@link #of(int, int, int, int, int, int)} with the first block on process (rsrc, csrc). */
  public static Descriptor of(int m, int n, int mb, int nb, int rsrc, int csrc, int gridRows, int gridCols) {
    // Checked here too, so that a bad value is named before the LLD is computed from it.
    Descriptor probe = new Descriptor(m, n, mb, nb, rsrc, csrc, gridRows, gridCols, Integer.MAX_VALUE);
    return probe.withLld(Math.max(1, numroc(m, mb, rsrc, rsrc, gridRows)));
  }

  /** This descriptor with another local leading dimension. */
  public Descriptor withLld(int newLld) {
    return new Descriptor(m, n, mb, nb, rsrc, csrc, gridRows, gridCols, newLld);
  }

  private static void atLeast(String field, int value, int min) {
    if (value < min) {
      throw new IllegalArgumentException("descriptor: " + field + " = " + value + " must be at least " + min);
    }
  }

  // ---- ScaLAPACK's TOOLS, 0-based ----

  /**
   * NUMROC: how many of the indices [0, count) a process holds, blocks of {@code nb} dealt
   * cyclically over {@code nprocs} processes from {@code isrcproc}. With count a global size: the
   * process's local size; with count a global index g: how many of its local indices lie before g,
   * which is the local index where its part of [g, size) starts.
   */
  public static int numroc(int count, int nb, int iproc, int isrcproc, int nprocs) {
    int mydist = Math.floorMod(iproc - isrcproc, nprocs);
    int blocks = count / nb;
    int local = blocks / nprocs * nb;
    int extra = blocks % nprocs;
    if (mydist < extra) {
      local += nb;
    } else if (mydist == extra) {
      local += count % nb;
    }
    return local;
  }

  /** INDXG2P: the process holding global index {@code g}. */
  public static int indxg2p(int g, int nb, int isrcproc, int nprocs) {
    return (isrcproc + g / nb) % nprocs;
  }

  /** INDXG2L: global index {@code g}'s local index on the process holding it. */
  public static int indxg2l(int g, int nb, int nprocs) {
    return g / nb / nprocs * nb + g % nb; // not g / (nb * nprocs): that product may overflow
  }

  /** INDXL2G: the global index of local index {@code l} of process {@code iproc}. */
  public static int indxl2g(int l, int nb, int iproc, int isrcproc, int nprocs) {
    return (l / nb * nprocs + Math.floorMod(iproc - isrcproc, nprocs)) * nb + l % nb;
  }

  // ---- rows (MB, RSRC, P) ----

  /** Local rows of process row {@code prow}: NUMROC(M, MB, prow, RSRC, P). */
  public int numrocRows(int prow) {
    return numroc(m, mb, checkProw(prow), rsrc, gridRows);
  }

  /** How many of process row {@code prow}'s local rows hold global rows before row {@code i}, i in [0, M]. */
  public int localRowsBefore(int i, int prow) {
    checkIndex("global row", i, m + 1);
    return numroc(i, mb, checkProw(prow), rsrc, gridRows);
  }

  /** The process row holding global row {@code i}. */
  public int indxg2pRow(int i) {
    return indxg2p(checkIndex("global row", i, m), mb, rsrc, gridRows);
  }

  /** Global row {@code i}'s local row on the process row holding it. */
  public int indxg2lRow(int i) {
    return indxg2l(checkIndex("global row", i, m), mb, gridRows);
  }

  /** The global row of process row {@code prow}'s local row {@code li}. */
  public int indxl2gRow(int li, int prow) {
    checkIndex("process row " + prow + "'s local row", li, numrocRows(prow));
    return indxl2g(li, mb, prow, rsrc, gridRows);
  }

  // ---- columns (NB, CSRC, Q) ----

  /** Local columns of process column {@code pcol}: NUMROC(N, NB, pcol, CSRC, Q). */
  public int numrocCols(int pcol) {
    return numroc(n, nb, checkPcol(pcol), csrc, gridCols);
  }

  /** How many of process column {@code pcol}'s local columns hold global columns before column {@code j}, j in [0, N]. */
  public int localColsBefore(int j, int pcol) {
    checkIndex("global column", j, n + 1);
    return numroc(j, nb, checkPcol(pcol), csrc, gridCols);
  }

  /** The process column holding global column {@code j}. */
  public int indxg2pCol(int j) {
    return indxg2p(checkIndex("global column", j, n), nb, csrc, gridCols);
  }

  /** Global column {@code j}'s local column on the process column holding it. */
  public int indxg2lCol(int j) {
    return indxg2l(checkIndex("global column", j, n), nb, gridCols);
  }

  /** The global column of process column {@code pcol}'s local column {@code lj}. */
  public int indxl2gCol(int lj, int pcol) {
    checkIndex("process column " + pcol + "'s local column", lj, numrocCols(pcol));
    return indxl2g(lj, nb, pcol, csrc, gridCols);
  }

  // ---- blocks ----

  /** How many block rows: ⌈M / MB⌉. */
  public int blockRows() {
    return (m + mb - 1) / mb;
  }

  /** How many block columns: ⌈N / NB⌉. */
  public int blockCols() {
    return (n + nb - 1) / nb;
  }

  /**
   * The rank holding block (I, J): process ((RSRC + I) mod P, (CSRC + J) mod Q). With an RDD of
   * blocks keyed by it and a {@code HashPartitioner} of P × Q partitions, partition r (the barrier
   * task of rank r) holds exactly rank r's blocks.
   */
  public int rankOfBlock(int blockRow, int blockCol) {
    checkIndex("block row", blockRow, blockRows());
    checkIndex("block column", blockCol, blockCols());
    return rank(indxg2p(blockRow * mb, mb, rsrc, gridRows), indxg2p(blockCol * nb, nb, csrc, gridCols));
  }

  // ---- ranks: row-major, as ProcessGrid ----

  /** The rank of process (prow, pcol): {@code prow * Q + pcol}, as {@link ProcessGrid#rankAt}. */
  public int rank(int prow, int pcol) {
    return checkProw(prow) * gridCols + checkPcol(pcol);
  }

  /** The process row of {@code rank}, as {@link ProcessGrid#myRow()} on that rank. */
  public int prow(int rank) {
    return checkRank(rank) / gridCols;
  }

  /** The process column of {@code rank}, as {@link ProcessGrid#myCol()} on that rank. */
  public int pcol(int rank) {
    return checkRank(rank) % gridCols;
  }

  /** The process count, P × Q. */
  public int processes() {
    return gridRows * gridCols;
  }

  /** Fails unless {@code grid} is P × Q: a routine checks the grid it is handed against the descriptor. */
  public Descriptor requireGrid(ProcessGrid<?> grid) {
    if (grid.rows() != gridRows || grid.cols() != gridCols) {
      throw new IllegalArgumentException("the descriptor is for a " + gridRows + " x " + gridCols
          + " process grid, the grid is " + grid.rows() + " x " + grid.cols());
    }
    return this;
  }

  /**
   * ScaLAPACK's 9-integer DESC for the context {@code ctxt}: DTYPE_ = 1, CTXT_, M_, N_, MB_, NB_,
   * RSRC_, CSRC_, LLD_ (the process coordinates are 0-based there too, so nothing is shifted).
   */
  public int[] toScalapack(int ctxt) {
    return new int[] {1, ctxt, m, n, mb, nb, rsrc, csrc, lld};
  }

  private int checkProw(int prow) {
    return checkIndex("process row", prow, gridRows);
  }

  private int checkPcol(int pcol) {
    return checkIndex("process column", pcol, gridCols);
  }

  private int checkRank(int rank) {
    return checkIndex("rank", rank, processes());
  }

  private static int checkIndex(String what, int value, int bound) {
    if (value < 0 || value >= bound) {
      throw new IndexOutOfBoundsException(what + " " + value + " is outside [0, " + bound + ")");
    }
    return value;
  }
}
