package dev.gpucoll.linalg;

import java.io.Serializable;

/**
 * One MB × NB block of a distributed matrix, as it travels in Spark data (an RDD of blocks):
 * block row {@code blockRow} and block column {@code blockCol} (0-based), its elements
 * column-major with leading dimension {@code rows} (the last block row and column may be ragged).
 * {@link Descriptor#rankOfBlock} says which rank holds it; {@link LocalMatrix#fromBlocks} and
 * {@link LocalMatrix#toBlocks} go between a rank's blocks and its local matrix.
 */
public record Block(int blockRow, int blockCol, int rows, int cols, double[] data) implements Serializable {
  public Block {
    if (blockRow < 0 || blockCol < 0 || rows < 1 || cols < 1) {
      throw new IllegalArgumentException("block (" + blockRow + ", " + blockCol + ") of " + rows + " x " + cols
          + ": block indices must be at least 0 and sizes at least 1");
    }
    if (data == null || data.length != rows * cols) {
      throw new IllegalArgumentException("block (" + blockRow + ", " + blockCol + ") of " + rows + " x " + cols
          + " needs " + rows * cols + " elements, has " + (data == null ? "none" : data.length));
    }
  }

  /** Element (i, j) of the block. */
  public double get(int i, int j) {
    return data[i + j * rows];
  }
}
