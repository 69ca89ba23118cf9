package dev.gpucoll.linalg;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@link DeviceSolver}'s steps (the device path: panels gathered and factored whole, interchanges
 * by row lists around one allToAllv, per-block-column updates) on an {@link EmulatedDevice} per
 * rank, over grids of host-backend ranks: every shape {@link LuTest} and {@link CholeskyTest} take,
 * against reference LAPACK, with the same errors as the host routines.
 */
class DeviceSolverTest {
  /** Runs {@code body} on every rank with this rank's solver over an emulated device and its part of {@code a}. */
  private interface Body<T> {
    T run(DeviceSolver solver, DeviceMatrix mine, EmulatedDevice device, ProcessGridView grid) throws Exception;
  }

  private record ProcessGridView(int prow, int pcol) {}

  private static <T> List<GridRanks.Outcome<T>> onDevices(Descriptor d, double[] a, Body<T> body) {
    return GridRanks.run(d.gridRows(), d.gridCols(), grid -> {
      EmulatedDevice device = new EmulatedDevice();
      try (DeviceSolver solver = new DeviceSolver(grid, device, java.time.Duration.ofMinutes(1))) {
        LocalMatrix part = LocalMatrix.scatter(a, Math.max(1, d.m()), d, grid.myRow(), grid.myCol());
        DeviceMatrix mine = solver.upload(part);
        return body.run(solver, mine, device, new ProcessGridView(grid.myRow(), grid.myCol()));
      }
    });
  }

  record Factored(LocalMatrix part, int[] pivots) {}

  @Test
  void getrfFactorsEveryShapeAsLapackDoes() {
    long seed = 11;
    for (int[] s : LuTest.SHAPES) {
      int m = s[0];
      int n = s[1];
      Descriptor d = Descriptor.of(m, n, s[2], s[2], s[5], s[6], s[3], s[4]);
      double[] a = Matrices.general(m, n, seed++);
      List<Factored> ranks = GridRanks.values(onDevices(d, a, (solver, mine, dev, g) -> {
        int[] pivots = solver.getrf(mine);
        return new Factored(solver.download(mine), pivots);
      }));
      for (Factored f : ranks) {
        assertArrayEquals(ranks.get(0).pivots(), f.pivots(), "every rank has the same pivots: " + d);
      }
      double[] ref = a.clone();
      int[] refPivots = Lapack.getrf(ref, m, n);
      assertArrayEquals(refPivots, ranks.get(0).pivots(), "LAPACK's pivots: " + d);
      double[] lu = Matrices.gather(ranks.stream().map(Factored::part).toList());
      double ours = BackwardError.lu(a, lu, ranks.get(0).pivots(), m, n);
      double lapack = BackwardError.lu(a, ref, refPivots, m, n);
      assertTrue(ours < 10 && ours <= 3 * lapack + 0.5, "backward error " + ours + " (LAPACK's " + lapack + "): " + d);
    }
  }

  @Test
  void getrsSolvesWithItsOwnColumnBlocksForB() {
    for (int[] g : new int[][] {{1, 1}, {1, 3}, {2, 1}, {2, 3}}) {
      int n = 29;
      int nrhs = 5;
      Descriptor d = Descriptor.of(n, n, 4, 4, 1 % g[0], 0, g[0], g[1]);
      Descriptor db = Descriptor.of(n, nrhs, 4, 2, 1 % g[0], g[1] - 1, g[0], g[1]);
      double[] a = Matrices.general(n, n, 5);
      double[] b = Matrices.general(n, nrhs, 6);
      List<LocalMatrix> xs = GridRanks.values(onDevices(d, a, (solver, mine, dev, grid) -> {
        DeviceMatrix rhs = solver.upload(LocalMatrix.scatter(b, n, db, grid.prow(), grid.pcol()));
        int[] pivots = solver.getrf(mine);
        solver.getrs(mine, pivots, rhs);
        return solver.download(rhs);
      }));
      double err = BackwardError.solve(a, false, Matrices.gather(xs), b, n, nrhs);
      assertTrue(err < 10, "getrs's backward error " + err + " on " + g[0] + " x " + g[1]);
    }
  }

  @Test
  void potrfFactorsEveryShapeAsLapackDoesAndLeavesTheUpperTriangle() {
    long seed = 21;
    for (int[] s : CholeskyTest.SHAPES) {
      int n = s[0];
      Descriptor d = Descriptor.of(n, n, s[1], s[1], s[4], s[5], s[2], s[3]);
      double[] a = Matrices.spd(n, seed++);
      List<LocalMatrix> parts = GridRanks.values(onDevices(d, a, (solver, mine, dev, g) -> {
        solver.potrf(mine);
        return solver.download(mine);
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
  void potrfScansTheLowerTriangleAloneOnEveryGrid() {
    int n = 26; // blocks of 4, the last one ragged (rows and columns 24, 25)
    for (int[] g : new int[][] {{1, 1}, {2, 3}, {3, 2}, {1, 4}}) {
      Descriptor d = Descriptor.of(n, n, 4, 4, 1 % g[0], g[1] - 1, g[0], g[1]);
      double[] a = Matrices.spd(n, 12);
      double[] ref = a.clone();
      Lapack.potrf(ref, n);
      a[3 + 17 * n] = Double.NaN; // above the diagonal: never read, as LAPACK
      a[24 + 25 * n] = Double.POSITIVE_INFINITY; // above the diagonal of the ragged last block
      double[] l = Matrices.gather(GridRanks.values(onDevices(d, a, (solver, mine, dev, grid) -> {
        solver.potrf(mine);
        return solver.download(mine);
      })));
      for (int j = 0; j < n; j++) {
        for (int i = j; i < n; i++) {
          assertEquals(ref[i + j * n], l[i + j * n], 1e-12 * n, "L(" + i + ", " + j + ") on " + d);
        }
      }
      assertTrue(Double.isNaN(l[3 + 17 * n]) && l[24 + 25 * n] == Double.POSITIVE_INFINITY, "the upper triangle kept");
      // On the diagonal, and just below it in the ragged last block: refused by place.
      for (int[] bad : new int[][] {{17, 17, 1}, {25, 24, 0}, {24, 24, 0}}) {
        double[] b = a.clone();
        b[bad[0] + bad[1] * n] = bad[2] == 1 ? Double.POSITIVE_INFINITY : Double.NaN;
        for (GridRanks.Outcome<Object> o : onDevices(d, b, (solver, mine, dev, grid) -> {
          solver.potrf(mine);
          return null;
        })) {
          FactorizationException e = assertInstanceOf(FactorizationException.class, o.error(), d.toString());
          assertEquals("potrf: the input's lower triangle is not finite: " + (bad[2] == 1 ? "Inf" : "NaN") + " at row "
              + bad[0] + ", column " + bad[1] + " (0-based); potrf refuses NaN and Inf", e.getMessage());
        }
      }
    }
  }

  @Test
  void potrsSolves() {
    for (int[] g : new int[][] {{1, 1}, {3, 1}, {1, 2}, {3, 2}}) {
      int n = 27;
      int nrhs = 4;
      Descriptor d = Descriptor.of(n, n, 4, 4, 1 % g[0], 0, g[0], g[1]);
      Descriptor db = Descriptor.of(n, nrhs, 4, 3, 1 % g[0], 1 % g[1], g[0], g[1]);
      double[] a = Matrices.spd(n, 8);
      double[] b = Matrices.general(n, nrhs, 9);
      List<LocalMatrix> xs = GridRanks.values(onDevices(d, a, (solver, mine, dev, grid) -> {
        DeviceMatrix rhs = solver.upload(LocalMatrix.scatter(b, n, db, grid.prow(), grid.pcol()));
        solver.potrf(mine);
        solver.potrs(mine, rhs);
        return solver.download(rhs);
      }));
      double err = BackwardError.solve(a, true, Matrices.gather(xs), b, n, nrhs);
      assertTrue(err < 10, "potrs's backward error " + err + " on " + g[0] + " x " + g[1]);
    }
  }

  @Test
  void everyRankStopsAtTheSameColumnWithTheHostRoutinesWords() {
    int n = 24;
    for (int[] g : new int[][] {{1, 1}, {2, 3}}) {
      Descriptor d = Descriptor.of(n, n, 4, 4, g[0], g[1]);
      double[] singular = Matrices.general(n, n, 3);
      for (int i = 0; i < n; i++) {
        singular[i + 13 * n] = 0; // column 13 zero: no nonzero pivot there
      }
      for (GridRanks.Outcome<int[]> o : onDevices(d, singular, (solver, mine, dev, grid) -> solver.getrf(mine))) {
        FactorizationException e = assertInstanceOf(FactorizationException.class, o.error());
        assertEquals(FactorizationException.Reason.SINGULAR, e.reason());
        assertEquals(13, e.column(), e.getMessage());
        assertTrue(e.getMessage().startsWith("getrf: the matrix is singular: column 13"), e.getMessage());
      }
      double[] indefinite = Matrices.spd(n, 4);
      indefinite[9 + 9 * n] = -5;
      for (GridRanks.Outcome<Object> o : onDevices(d, indefinite, (solver, mine, dev, grid) -> {
        solver.potrf(mine);
        return null;
      })) {
        FactorizationException e = assertInstanceOf(FactorizationException.class, o.error());
        assertEquals(FactorizationException.Reason.NOT_POSITIVE_DEFINITE, e.reason());
        assertEquals(9, e.column(), e.getMessage());
      }
      double[] nan = Matrices.general(n, n, 5);
      nan[17 + 6 * n] = Double.NaN;
      nan[2 + 20 * n] = Double.POSITIVE_INFINITY;
      for (GridRanks.Outcome<int[]> o : onDevices(d, nan, (solver, mine, dev, grid) -> solver.getrf(mine))) {
        FactorizationException e = assertInstanceOf(FactorizationException.class, o.error());
        assertEquals("getrf: the input is not finite: NaN at row 17, column 6 (0-based); it holds Inf too; getrf"
            + " refuses NaN and Inf", e.getMessage());
      }
    }
  }
}
