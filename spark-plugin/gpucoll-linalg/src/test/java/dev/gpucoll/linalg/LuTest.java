package dev.gpucoll.linalg;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * getrf and getrs on grids of host-backend ranks (threads), every shape the descriptor allows:
 * square, tall and wide matrices, ragged last blocks, first blocks off process (0, 0), 1 × Q and
 * P × 1 grids. The pivots are reference LAPACK's (dgetrf on the same matrix) and the backward
 * error, measured apart from both factorizations, is of LAPACK's size.
 */
class LuTest {
  /** M, N, NB, P, Q, RSRC, CSRC. */
  static final int[][] SHAPES = {
    {1, 1, 1, 1, 1, 0, 0},
    {9, 9, 4, 1, 1, 0, 0},
    {13, 13, 4, 2, 2, 1, 0},
    {17, 11, 3, 2, 3, 1, 2},
    {10, 19, 4, 3, 2, 2, 1},
    {31, 31, 5, 3, 1, 2, 0},
    {31, 31, 5, 1, 3, 0, 2},
    {40, 40, 7, 2, 3, 1, 1},
    {64, 64, 16, 2, 2, 0, 0},
    {50, 50, 1, 2, 2, 1, 1},
  };

  @Test
  void factorsEveryShapeAsLapackDoes() {
    long seed = 11;
    for (int[] s : SHAPES) {
      int m = s[0];
      int n = s[1];
      Descriptor d = Descriptor.of(m, n, s[2], s[2], s[5], s[6], s[3], s[4]);
      double[] a = Matrices.general(m, n, seed++);
      List<Factored> ranks = GridRanks.values(GridRanks.run(d.gridRows(), d.gridCols(), grid -> {
        LocalMatrix mine = LocalMatrix.scatter(a, m, d, grid.myRow(), grid.myCol());
        int[] pivots = Lu.getrf(grid, mine);
        return new Factored(mine, pivots);
      }));
      String shape = d.toString();
      int[] pivots = ranks.get(0).pivots();
      for (Factored f : ranks) {
        assertArrayEquals(pivots, f.pivots(), "every rank has the same pivots: " + shape);
      }
      double[] ref = a.clone();
      int[] refPivots = Lapack.getrf(ref, m, n);
      assertArrayEquals(refPivots, pivots, "LAPACK's pivots: " + shape);
      double[] lu = Matrices.gather(ranks.stream().map(Factored::part).toList());
      double ours = BackwardError.lu(a, lu, pivots, m, n);
      double lapack = BackwardError.lu(a, ref, refPivots, m, n);
      assertTrue(ours < 10 && ours <= 3 * lapack + 0.5, "backward error " + ours + " (LAPACK's " + lapack + "): "
          + shape);
    }
  }

  record Factored(LocalMatrix part, int[] pivots) {}

  @Test
  void solvesWithItsOwnColumnBlocksForB() {
    int n = 29;
    int nrhs = 5;
    Descriptor d = Descriptor.of(n, n, 4, 4, 1, 1, 2, 3);
    Descriptor db = Descriptor.of(n, nrhs, 4, 2, 1, 2, 2, 3); // B: A's rows, its own NB and CSRC
    double[] a = Matrices.general(n, n, 5);
    double[] b = Matrices.general(n, nrhs, 6);
    List<LocalMatrix> xs = GridRanks.values(GridRanks.run(2, 3, grid -> {
      LocalMatrix mine = LocalMatrix.scatter(a, n, d, grid.myRow(), grid.myCol());
      LocalMatrix rhs = LocalMatrix.scatter(b, n, db, grid.myRow(), grid.myCol());
      int[] pivots = Lu.getrf(grid, mine);
      Lu.getrs(grid, mine, pivots, rhs);
      return rhs;
    }));
    double[] x = Matrices.gather(xs);
    double err = BackwardError.solve(a, false, x, b, n, nrhs);
    assertTrue(err < 10, "solve's backward error " + err);
  }

  @Test
  void rowInterchangesMoveBitsAndNothingElse() {
    // -0.0, NaN payloads and denormals come through a swap as they were (adding zeros would not).
    int m = 23;
    int n = 7;
    Descriptor d = Descriptor.of(m, n, 3, 2, 2, 1, 3, 2);
    double[] a = Matrices.general(m, n, 3);
    a[4] = -0.0;
    a[m + 9] = Double.longBitsToDouble(0x7ff8_0000_0000_1234L);
    a[2 * m + 17] = Double.MIN_VALUE;
    int[] pivots = new int[m];
    java.util.Random r = new java.util.Random(9);
    for (int k = 0; k < m; k++) {
      pivots[k] = k + r.nextInt(m - k);
    }
    double[] expected = a.clone();
    for (int k = 0; k < m; k++) {
      for (int j = 0; j < n; j++) {
        double t = expected[k + j * m];
        expected[k + j * m] = expected[pivots[k] + j * m];
        expected[pivots[k] + j * m] = t;
      }
    }
    List<LocalMatrix> parts = GridRanks.values(GridRanks.run(3, 2, grid -> {
      LocalMatrix mine = LocalMatrix.scatter(a, m, d, grid.myRow(), grid.myCol());
      GridCalls calls = GridCalls.open(grid, "test", List.of(d), () -> {}, List.of());
      try (HostParts host = new HostParts(grid)) {
        Part p = host.in(mine);
        host.solver().interchange(calls, p, pivots, 0, m, List.of(new IndexRange(0, mine.cols())));
        host.out(p, mine);
      }
      return mine;
    }));
    double[] got = Matrices.gather(parts);
    for (int i = 0; i < got.length; i++) {
      assertEquals(Double.doubleToRawLongBits(expected[i]), Double.doubleToRawLongBits(got[i]), "element " + i);
    }
  }
}
