package dev.gpucoll.linalg;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * potrf and potrs on grids of host-backend ranks (threads): ragged last blocks, first blocks off
 * process (0, 0), 1 × Q, P × 1 and P ≠ Q grids; the backward error, measured apart, is of
 * reference LAPACK's size (dpotrf on the same matrix), and above the diagonal nothing changes.
 */
class CholeskyTest {
  /** N, NB, P, Q, RSRC, CSRC. */
  static final int[][] SHAPES = {
    {1, 1, 1, 1, 0, 0},
    {12, 5, 1, 1, 0, 0},
    {13, 4, 2, 2, 1, 0},
    {23, 3, 2, 3, 1, 2},
    {31, 5, 3, 1, 2, 0},
    {31, 5, 1, 3, 0, 2},
    {40, 7, 3, 2, 2, 1},
    {64, 16, 2, 2, 1, 1},
  };

  @Test
  void factorsEveryShapeAsLapackDoes() {
    long seed = 21;
    for (int[] s : SHAPES) {
      int n = s[0];
      Descriptor d = Descriptor.of(n, n, s[1], s[1], s[4], s[5], s[2], s[3]);
      double[] a = Matrices.spd(n, seed++);
      List<LocalMatrix> parts = GridRanks.values(GridRanks.run(d.gridRows(), d.gridCols(), grid -> {
        LocalMatrix mine = LocalMatrix.scatter(a, n, d, grid.myRow(), grid.myCol());
        Cholesky.potrf(grid, mine);
        return mine;
      }));
      double[] l = Matrices.gather(parts);
      double[] ref = a.clone();
      Lapack.potrf(ref, n);
      double ours = BackwardError.cholesky(a, l, n);
      double lapack = BackwardError.cholesky(a, ref, n);
      assertTrue(ours < 10 && ours <= 3 * lapack + 0.5, "backward error " + ours + " (LAPACK's " + lapack + "): " + d);
      for (int j = 0; j < n; j++) {
        for (int i = 0; i < j; i++) {
          assertEquals(a[i + j * n], l[i + j * n], "above the diagonal (" + i + ", " + j + ") untouched: " + d);
        }
      }
    }
  }

  @Test
  void solvesWithItsOwnColumnBlocksForB() {
    int n = 27;
    int nrhs = 4;
    Descriptor d = Descriptor.of(n, n, 4, 4, 1, 0, 3, 2);
    Descriptor db = Descriptor.of(n, nrhs, 4, 3, 1, 1, 3, 2);
    double[] a = Matrices.spd(n, 8);
    double[] b = Matrices.general(n, nrhs, 9);
    List<LocalMatrix> xs = GridRanks.values(GridRanks.run(3, 2, grid -> {
      LocalMatrix mine = LocalMatrix.scatter(a, n, d, grid.myRow(), grid.myCol());
      LocalMatrix rhs = LocalMatrix.scatter(b, n, db, grid.myRow(), grid.myCol());
      Cholesky.potrf(grid, mine);
      Cholesky.potrs(grid, mine, rhs);
      return rhs;
    }));
    double err = BackwardError.solve(a, true, Matrices.gather(xs), b, n, nrhs);
    assertTrue(err < 10, "solve's backward error " + err);
  }
}
