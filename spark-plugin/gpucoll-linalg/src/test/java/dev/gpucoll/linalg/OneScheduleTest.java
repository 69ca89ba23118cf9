package dev.gpucoll.linalg;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.PathChoice;
import dev.gpucoll.api.ProcessGrid;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * What holds because the host and the device run one schedule ({@link GridSolver}): the host's
 * factors are the same bits on every grid, ties go to the lowest row on both, an overflow in
 * Cholesky is named alike on both; and the device's rules for ranks sharing a GPU: no spinning
 * collective beside a library call, every wait bounded and named.
 */
class OneScheduleTest {
  private static final int[][] GRIDS = {{1, 1}, {2, 2}, {2, 3}, {3, 1}, {1, 3}};

  /** Every rank's host factor of {@code a} (N × N, blocks of 4 from process (1 % P, 0)) on a P × Q grid, put together. */
  private static double[] hostFactor(double[] a, int n, int[] g, boolean lu, List<int[]> pivots) {
    Descriptor d = Descriptor.of(n, n, 4, 4, 1 % g[0], 0, g[0], g[1]);
    List<LocalMatrix> parts = new ArrayList<>();
    for (GridRanks.Outcome<LocalMatrix> o : GridRanks.run(g[0], g[1], grid -> {
      LocalMatrix mine = LocalMatrix.scatter(a, n, d, grid.myRow(), grid.myCol());
      if (lu) {
        int[] p = Lu.getrf(grid, mine);
        synchronized (pivots) {
          pivots.add(p);
        }
      } else {
        Cholesky.potrf(grid, mine);
      }
      return mine;
    })) {
      parts.add(o.get());
    }
    return Matrices.gather(parts);
  }

  @Test
  void hostFactorsAreTheSameBitsOnEveryGridAndKeepNegativeZero() {
    int n = 22;
    double[] general = Matrices.general(n, n, 31);
    double[] spd = Matrices.spd(n, 32);
    for (int j = 0; j < n; j += 5) {
      general[(j + 7) % n + j * n] = -0.0; // below or above the diagonal: zeros with a sign
      spd[n - 1 + j * n] = -0.0;
      spd[j + (n - 1) * n] = -0.0;
    }
    double[] lu1 = hostFactor(general, n, GRIDS[0], true, new ArrayList<>());
    double[] l1 = hostFactor(spd, n, GRIDS[0], false, new ArrayList<>());
    for (int[] g : GRIDS) {
      List<int[]> pivots = new ArrayList<>();
      double[] lu = hostFactor(general, n, g, true, pivots);
      double[] l = hostFactor(spd, n, g, false, new ArrayList<>());
      for (int i = 0; i < n * n; i++) {
        assertEquals(Double.doubleToRawLongBits(lu1[i]), Double.doubleToRawLongBits(lu[i]), "LU element " + i
            + " on " + g[0] + " x " + g[1]);
        assertEquals(Double.doubleToRawLongBits(l1[i]), Double.doubleToRawLongBits(l[i]), "Cholesky element " + i
            + " on " + g[0] + " x " + g[1]);
      }
      for (int[] p : pivots) {
        assertEquals(java.util.Arrays.toString(Lapack.getrf(general.clone(), n, n)), java.util.Arrays.toString(p));
      }
    }
  }

  @Test
  void pivotTiesGoToTheLowestRowOnEveryGridAndKernelSet() {
    // Entries of ±1 and 0 only: every pivot search meets exact ties across process rows.
    int n = 19;
    double[] a = new double[n * n];
    java.util.Random r = new java.util.Random(5);
    for (int i = 0; i < a.length; i++) {
      a[i] = r.nextInt(3) - 1;
    }
    for (int i = 0; i < n; i++) {
      a[i + i * n] += 3 * (i % 2) - 1; // keep it regular
    }
    int[] lapack = Lapack.getrf(a.clone(), n, n);
    for (int[] g : GRIDS) {
      List<int[]> pivots = new ArrayList<>();
      hostFactor(a, n, g, true, pivots);
      Descriptor d = Descriptor.of(n, n, 4, 4, 1 % g[0], 0, g[0], g[1]);
      for (int[] p : pivots) {
        assertEquals(java.util.Arrays.toString(lapack), java.util.Arrays.toString(p), "host on " + g[0] + " x " + g[1]);
      }
      for (GridRanks.Outcome<int[]> o : GridRanks.run(g[0], g[1], grid -> {
        try (DeviceSolver solver = new DeviceSolver(grid, new EmulatedDevice(), Duration.ofMinutes(1))) {
          return solver.getrf(solver.upload(LocalMatrix.scatter(a, n, d, grid.myRow(), grid.myCol())));
        }
      })) {
        assertEquals(java.util.Arrays.toString(lapack), java.util.Arrays.toString(o.get()),
            "device on " + g[0] + " x " + g[1]);
      }
    }
  }

  @Test
  void aCholeskyOverflowIsNamedAlikeOnHostAndDevice() {
    // Finite input whose trailing update makes the pivot of column 5 −Inf: L(5, 0) = 1e200.
    int n = 13;
    double[] a = Matrices.spd(n, 3);
    a[5] = 1e200;
    a[5 * n] = 1e200;
    String expected = "potrf: the elimination overflowed: the pivot of column 5 (0-based) is -Infinity although the"
        + " input is finite; scale the matrix";
    for (int[] g : GRIDS) {
      Descriptor d = Descriptor.of(n, n, 4, 4, 0, 0, g[0], g[1]);
      for (GridRanks.Outcome<Object> o : GridRanks.run(g[0], g[1], grid -> {
        Cholesky.potrf(grid, LocalMatrix.scatter(a, n, d, grid.myRow(), grid.myCol()));
        return null;
      })) {
        FactorizationException e = assertInstanceOf(FactorizationException.class, o.error());
        assertEquals(FactorizationException.Reason.OVERFLOW, e.reason());
        assertEquals(expected, e.getMessage(), "host on " + g[0] + " x " + g[1]);
      }
      for (GridRanks.Outcome<Object> o : GridRanks.run(g[0], g[1], grid -> {
        try (DeviceSolver solver = new DeviceSolver(grid, new EmulatedDevice(), Duration.ofMinutes(1))) {
          solver.potrf(solver.upload(LocalMatrix.scatter(a, n, d, grid.myRow(), grid.myCol())));
        }
        return null;
      })) {
        FactorizationException e = assertInstanceOf(FactorizationException.class, o.error());
        assertEquals(expected, e.getMessage(), "device on " + g[0] + " x " + g[1]);
      }
    }
  }

  /** {@code c} (and the communicators split from it) claiming that its collectives take a spinning kernel. */
  private static Communicator spinning(Communicator c) {
    return (Communicator) Proxy.newProxyInstance(OneScheduleTest.class.getClassLoader(),
        new Class<?>[] {Communicator.class}, (proxy, m, args) -> {
          if (m.getName().equals("explain")) {
            return new PathChoice((Collective) args[0], (Long) args[1], "gpu-ll-oneshot", List.of("a test"));
          }
          Object r;
          try {
            r = m.invoke(c, args);
          } catch (InvocationTargetException e) {
            throw e.getCause();
          }
          return m.getName().equals("split") && r instanceof Communicator s ? spinning(s) : r;
        });
  }

  @Test
  void ranksSharingAGpuAreRefusedWhereTheirCollectivesWouldSpin() {
    // 2 x 2; global ranks 0 and 2 (grid column 0) share GPU "A", ranks 1 and 3 have GPUs of their own.
    List<GridRanks.Outcome<Object>> outcomes = GridRanks.run(2, 2, grid -> {
      int r = grid.all().rank();
      try (ProcessGrid<Communicator> spins = ProcessGrid.of(spinning(grid.all()), 2, 2);
          DeviceSolver solver = new DeviceSolver(spins, new EmulatedDevice(r % 2 == 0 ? "h/A" : "h/" + r),
              Duration.ofMinutes(1))) {
        return null;
      }
    });
    for (int r = 0; r < 4; r++) {
      IllegalArgumentException e = assertInstanceOf(IllegalArgumentException.class, outcomes.get(r).error());
      if (r % 2 == 0) {
        assertTrue(e.getMessage().startsWith("DeviceSolver: global rank " + r + " at grid position (" + r / 2
            + ", 0): grid column 0's communicator joins global ranks [0, 2], which share a GPU, and its broadcast"
            + " takes gpu-ll-oneshot, whose kernels spin while they wait; the whole grid's communicator joins"
            + " global ranks [0, 2]"), e.getMessage());
      } else { // in no shared row or column, but in the whole grid's communicator
        assertTrue(e.getMessage().startsWith("DeviceSolver: global rank " + r + " at grid position (" + r / 2
            + ", 1): the whole grid's communicator joins global ranks [0, 2]"), e.getMessage());
      }
    }
    // The same GPUs on the host backend's (non-spinning) collectives: the solver opens and factors.
    int n = 9;
    double[] a = Matrices.spd(n, 2);
    Descriptor d = Descriptor.of(n, n, 2, 2, 2, 2);
    for (GridRanks.Outcome<Object> o : GridRanks.run(2, 2, grid -> {
      int r = grid.all().rank();
      try (DeviceSolver solver = new DeviceSolver(grid, new EmulatedDevice(r % 2 == 0 ? "h/A" : "h/" + r),
          Duration.ofMinutes(1))) {
        solver.potrf(solver.upload(LocalMatrix.scatter(a, n, d, grid.myRow(), grid.myCol())));
      }
      return null;
    })) {
      assertNull(o.error());
    }
  }

  @Test
  void aStreamThatNeverFinishesIsNamedNotWaitedForForever() {
    int n = 8;
    double[] a = Matrices.general(n, n, 1);
    Descriptor d = Descriptor.of(n, n, 2, 2, 1, 2);
    List<GridRanks.Outcome<Object>> outcomes = GridRanks.run(1, 2, grid -> {
      EmulatedDevice stopped = new EmulatedDevice() {
        @Override
        public boolean syncWithin(long nanos) {
          return false;
        }
      };
      DeviceSolver solver = new DeviceSolver(grid, stopped, Duration.ofMillis(50));
      solver.getrf(solver.upload(LocalMatrix.scatter(a, n, d, grid.myRow(), grid.myCol())));
      return null;
    });
    for (int r = 0; r < 2; r++) {
      IllegalStateException e = assertInstanceOf(IllegalStateException.class, outcomes.get(r).error());
      assertTrue(e.getMessage().startsWith("getrf at grid position (0, " + r + "), global rank " + r + " of the 1 x 2"
          + " grid: this rank's stream did not finish within 50 ms waiting for the scan of the input for NaN and"
          + " Inf"), e.getMessage());
    }
  }
}
