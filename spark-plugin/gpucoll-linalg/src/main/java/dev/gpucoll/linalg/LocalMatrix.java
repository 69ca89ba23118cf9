package dev.gpucoll.linalg;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * One process's part of a distributed matrix on the host: its {@link Descriptor#numrocRows} ×
 * {@link Descriptor#numrocCols} local elements, column-major with the descriptor's LLD, local
 * element (li, lj) at {@code data[li + lj * lld]} (as ScaLAPACK's local arrays). Rows LLD − local
 * rows of each column are padding, never read or written here.
 *
 * <p>{@link #scatter} cuts a process's part out of a whole matrix and {@link #gather} puts it back,
 * for tests and for programs that start from, or end with, the whole matrix in one place.
 */
public final class LocalMatrix {
  private final Descriptor desc;
  private final int prow;
  private final int pcol;
  private final int rows;
  private final int cols;
  private final double[] data;

  private LocalMatrix(Descriptor desc, int prow, int pcol, double[] data) {
    this.desc = desc;
    this.prow = prow;
    this.pcol = pcol;
    this.rows = desc.numrocRows(prow);
    this.cols = desc.numrocCols(pcol);
    long need = (long) desc.lld() * cols;
    if (need > Integer.MAX_VALUE - 8) {
      throw new IllegalArgumentException("process (" + prow + ", " + pcol + ")'s local array of " + desc.lld()
          + " x " + cols + " (LLD x local columns) does not fit one Java array");
    }
    if (data == null) {
      data = new double[(int) need];
    } else if (data.length < need) {
      throw new IllegalArgumentException("process (" + prow + ", " + pcol + ")'s local array has " + data.length
          + " elements; LLD " + desc.lld() + " x " + cols + " local columns needs " + need);
    }
    this.data = data;
  }

  /** Process (prow, pcol)'s part, zero. */
  public static LocalMatrix allocate(Descriptor desc, int prow, int pcol) {
    return new LocalMatrix(desc, prow, pcol, null);
  }

  /** Process (prow, pcol)'s part over {@code data} (not copied), at least LLD × local columns long. */
  public static LocalMatrix wrap(Descriptor desc, int prow, int pcol, double[] data) {
    if (data == null) {
      throw new IllegalArgumentException("data is null");
    }
    return new LocalMatrix(desc, prow, pcol, data);
  }

  /** The matrix as a function of its global indices. */
  @FunctionalInterface
  public interface Elements {
    /** Element (i, j): global row i, global column j. */
    double at(int i, int j);
  }

  /**
   * Process (prow, pcol)'s part of the M × N matrix whose element (i, j) is {@code f.at(i, j)}: each
   * process builds its own part, nothing whole is made anywhere.
   */
  public static LocalMatrix generate(Descriptor desc, int prow, int pcol, Elements f) {
    if (f == null) {
      throw new IllegalArgumentException("the elements' function is null");
    }
    LocalMatrix local = allocate(desc, prow, pcol);
    for (int lj = 0; lj < local.cols; lj++) {
      int j = desc.indxl2gCol(lj, pcol);
      for (int li = 0; li < local.rows; li++) {
        local.data[li + lj * desc.lld()] = f.at(desc.indxl2gRow(li, prow), j);
      }
    }
    return local;
  }

  /**
   * Process (prow, pcol)'s part of the M × N matrix {@code global}, column-major with leading
   * dimension {@code ldGlobal}: element (i, j) at {@code global[i + j * ldGlobal]}.
   */
  public static LocalMatrix scatter(double[] global, int ldGlobal, Descriptor desc, int prow, int pcol) {
    LocalMatrix local = allocate(desc, prow, pcol);
    local.copy(global, ldGlobal, true);
    return local;
  }

  /**
   * Writes this part into its place in the M × N matrix {@code global} (column-major, leading
   * dimension {@code ldGlobal}); elements other processes hold are left as they are, so the
   * gathers of every process's part make the whole matrix.
   */
  public void gather(double[] global, int ldGlobal) {
    copy(global, ldGlobal, false);
  }

  // Runs of up to MB local rows are contiguous global rows (one block each): one arraycopy per run.
  private void copy(double[] global, int ldGlobal, boolean in) {
    int m = desc.m();
    int n = desc.n();
    if (ldGlobal < Math.max(1, m)) {
      throw new IllegalArgumentException("ldGlobal = " + ldGlobal + " is below max(1, M = " + m + ")");
    }
    long need = n == 0 ? 0 : (long) ldGlobal * (n - 1) + m;
    if (global.length < need) {
      throw new IllegalArgumentException("the global array has " + global.length + " elements; " + m + " x " + n
          + " with leading dimension " + ldGlobal + " needs " + need);
    }
    int lld = desc.lld();
    int mb = desc.mb();
    for (int lj = 0; lj < cols; lj++) {
      int g = desc.indxl2gCol(lj, pcol) * ldGlobal;
      int l = lj * lld;
      for (int li = 0; li < rows; li += mb) {
        int run = Math.min(mb, rows - li);
        int gi = g + Descriptor.indxl2g(li, mb, prow, desc.rsrc(), desc.gridRows());
        if (in) {
          System.arraycopy(global, gi, data, l + li, run);
        } else {
          System.arraycopy(data, l + li, global, gi, run);
        }
      }
    }
  }

  /**
   * Process (prow, pcol)'s part from its blocks (each block of the matrix this process holds,
   * once, in any order): a block that belongs elsewhere, has the wrong size, comes twice or is
   * missing fails naming it.
   */
  public static LocalMatrix fromBlocks(Descriptor desc, int prow, int pcol, Iterable<Block> blocks) {
    LocalMatrix local = allocate(desc, prow, pcol);
    int mine = 0;
    Set<Long> seen = new HashSet<>();
    for (Block b : blocks) {
      int owner = desc.rankOfBlock(b.blockRow(), b.blockCol());
      if (owner != desc.rank(prow, pcol)) {
        throw new IllegalArgumentException("block (" + b.blockRow() + ", " + b.blockCol() + ") belongs to process ("
            + desc.prow(owner) + ", " + desc.pcol(owner) + "), not (" + prow + ", " + pcol + ")");
      }
      int i0 = b.blockRow() * desc.mb();
      int j0 = b.blockCol() * desc.nb();
      int rows = Math.min(desc.mb(), desc.m() - i0);
      int cols = Math.min(desc.nb(), desc.n() - j0);
      if (b.rows() != rows || b.cols() != cols) {
        throw new IllegalArgumentException("block (" + b.blockRow() + ", " + b.blockCol() + ") is " + b.rows() + " x "
            + b.cols() + "; the descriptor makes it " + rows + " x " + cols);
      }
      if (!seen.add(((long) b.blockRow() << 32) | b.blockCol())) {
        throw new IllegalArgumentException("block (" + b.blockRow() + ", " + b.blockCol() + ") comes twice");
      }
      int li0 = desc.indxg2lRow(i0);
      int lj0 = desc.indxg2lCol(j0);
      for (int j = 0; j < cols; j++) {
        System.arraycopy(b.data(), j * rows, local.data, li0 + (lj0 + j) * desc.lld(), rows);
      }
      mine++;
    }
    int expected = local.blockCount();
    if (mine != expected) {
      throw new IllegalArgumentException("process (" + prow + ", " + pcol + ") holds " + expected + " blocks of the "
          + desc.m() + " x " + desc.n() + " matrix; " + (expected - mine) + " of them are missing");
    }
    return local;
  }

  /** This part as its blocks (each block this process holds, in block-column then block-row order). */
  public List<Block> toBlocks() {
    List<Block> out = new ArrayList<>();
    int mb = desc.mb();
    int nb = desc.nb();
    for (int lj0 = 0; lj0 < cols; lj0 += nb) {
      int j0 = desc.indxl2gCol(lj0, pcol);
      int bc = Math.min(nb, cols - lj0);
      for (int li0 = 0; li0 < rows; li0 += mb) {
        int i0 = desc.indxl2gRow(li0, prow);
        int br = Math.min(mb, rows - li0);
        double[] d = new double[br * bc];
        for (int j = 0; j < bc; j++) {
          System.arraycopy(data, li0 + (lj0 + j) * desc.lld(), d, j * br, br);
        }
        out.add(new Block(i0 / mb, j0 / nb, br, bc, d));
      }
    }
    return out;
  }

  private int blockCount() {
    return ((rows + desc.mb() - 1) / desc.mb()) * ((cols + desc.nb() - 1) / desc.nb());
  }

  public Descriptor descriptor() {
    return desc;
  }

  public int prow() {
    return prow;
  }

  public int pcol() {
    return pcol;
  }

  /** Local rows, {@code descriptor().numrocRows(prow())}. */
  public int rows() {
    return rows;
  }

  /** Local columns, {@code descriptor().numrocCols(pcol())}. */
  public int cols() {
    return cols;
  }

  /** The local array itself (column-major, leading dimension {@code descriptor().lld()}), not a copy. */
  public double[] data() {
    return data;
  }

  /** Local element (li, lj). */
  public double get(int li, int lj) {
    return data[at(li, lj)];
  }

  public void set(int li, int lj, double value) {
    data[at(li, lj)] = value;
  }

  private int at(int li, int lj) {
    if (li < 0 || li >= rows || lj < 0 || lj >= cols) {
      throw new IndexOutOfBoundsException("local (" + li + ", " + lj + ") is outside process (" + prow + ", "
          + pcol + ")'s " + rows + " x " + cols);
    }
    return li + lj * desc.lld();
  }
}
