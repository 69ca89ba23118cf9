package dev.gpucoll.linalg;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.CollectiveTimeoutException;
import dev.gpucoll.linalg.FactorizationException.Reason;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * What a factorization does with input it cannot factor or arguments it cannot take: every rank
 * of the grid fails at once with the same error naming the place (no rank waits for a timeout),
 * and an error of a row or column communicator names global ranks.
 */
class BadInputTest {
  private static final Descriptor D = Descriptor.of(23, 23, 4, 4, 1, 2, 2, 3);

  /** Every rank's error from getrf of {@code a} on D's grid, and how long the slowest took. */
  private static List<Throwable> getrfErrors(double[] a) {
    return errors(GridRanks.run(2, 3, grid -> Lu.getrf(grid, LocalMatrix.scatter(a, 23, D, grid.myRow(),
        grid.myCol()))));
  }

  private static List<Throwable> potrfErrors(double[] a) {
    return errors(GridRanks.run(2, 3, grid -> {
      Cholesky.potrf(grid, LocalMatrix.scatter(a, 23, D, grid.myRow(), grid.myCol()));
      return null;
    }));
  }

  private static <T> List<Throwable> errors(List<GridRanks.Outcome<T>> outcomes) {
    return outcomes.stream().map(GridRanks.Outcome::error).toList();
  }

  /** Every rank threw a FactorizationException with one message; that exception. */
  private static FactorizationException same(List<Throwable> errors) {
    FactorizationException first = assertInstanceOf(FactorizationException.class, errors.get(0));
    for (Throwable t : errors) {
      assertInstanceOf(FactorizationException.class, t, String.valueOf(t));
      assertEquals(first.getMessage(), t.getMessage());
    }
    return first;
  }

  @Test
  void aSingularMatrixStopsEveryRankAtItsColumn() {
    for (int column : new int[] {0, 9, 22}) {
      double[] a = Matrices.general(23, 23, column);
      for (int i = 0; i < 23; i++) {
        a[i + column * 23] = 0;
      }
      FactorizationException e = same(getrfErrors(a));
      assertEquals(Reason.SINGULAR, e.reason());
      assertEquals(column, e.column());
      assertEquals("getrf: the matrix is singular: column " + column + " has no nonzero pivot (U(" + column + ","
          + column + ") = 0; 0-based)", e.getMessage());
    }
  }

  @Test
  void nanAndInfInTheInputAreRefusedByPlace() {
    double[] a = Matrices.general(23, 23, 1);
    a[5 + 7 * 23] = Double.POSITIVE_INFINITY;
    FactorizationException e = same(getrfErrors(a));
    assertEquals(Reason.NOT_FINITE_INPUT, e.reason());
    assertEquals("getrf: the input is not finite: Inf at row 5, column 7 (0-based); getrf refuses NaN and Inf",
        e.getMessage());
    a[20 + 3 * 23] = Double.NaN;
    e = same(getrfErrors(a));
    assertEquals("getrf: the input is not finite: NaN at row 20, column 3 (0-based); it holds Inf too; getrf"
        + " refuses NaN and Inf", e.getMessage());
    assertEquals(20, e.row());
    assertEquals(3, e.column());
  }

  @Test
  void anOverflowDuringTheEliminationIsNamed() {
    // Finite input whose first elimination step makes -Inf at (1, 1): 1e308 - 1 * (-1e308).
    double[] a = new double[23 * 23];
    for (int i = 0; i < 23; i++) {
      a[i + i * 23] = 1;
    }
    a[1] = 1;
    a[23] = -1e308;
    a[1 + 23] = 1e308;
    FactorizationException e = same(getrfErrors(a));
    assertEquals(Reason.OVERFLOW, e.reason());
    assertEquals(1, e.column());
    assertTrue(e.getMessage().startsWith("getrf: the elimination overflowed: column 1 holds a non-finite value at"
        + " row 1"), e.getMessage());
  }

  @Test
  void choleskyStopsAtTheFirstPivotThatIsNotPositive() {
    for (int column : new int[] {0, 13, 22}) {
      double[] a = Matrices.spd(23, column);
      a[column + column * 23] = -1;
      FactorizationException e = same(potrfErrors(a));
      assertEquals(Reason.NOT_POSITIVE_DEFINITE, e.reason());
      assertEquals(column, e.column());
      assertTrue(e.getMessage().startsWith("potrf: the matrix is not positive definite: the pivot of column " + column
          + " (0-based) is "), e.getMessage());
    }
  }

  @Test
  void choleskyReadsTheLowerTriangleOnly() {
    double[] a = Matrices.spd(23, 4);
    a[2 + 9 * 23] = Double.NaN; // above the diagonal: never read, as LAPACK
    assertEquals(java.util.Collections.nCopies(6, null), potrfErrors(a));
    a[9 + 2 * 23] = Double.NEGATIVE_INFINITY;
    FactorizationException e = same(potrfErrors(a));
    assertEquals("potrf: the input's lower triangle is not finite: Inf at row 9, column 2 (0-based); potrf refuses"
        + " NaN and Inf", e.getMessage());
  }

  @Test
  void argumentsOneRankAloneGetsWrongFailEveryRankAtOnce() {
    double[] a = Matrices.general(23, 23, 2);
    long t0 = System.nanoTime();
    // Global rank 4 passes another process's part.
    List<Throwable> errors = errors(GridRanks.run(2, 3, "60s", grid -> {
      int pcol = grid.all().rank() == 4 ? 0 : grid.myCol();
      return Lu.getrf(grid, LocalMatrix.scatter(a, 23, D, grid.myRow(), pcol));
    }));
    for (int r = 0; r < 6; r++) {
      IllegalArgumentException e = assertInstanceOf(IllegalArgumentException.class, errors.get(r));
      assertEquals(r == 4
          ? "getrf: A is process (1, 0)'s part, and this is global rank 4 at grid position (1, 1)"
          : "getrf: global rank 4 refused its arguments (its own error says why), so no rank goes on", e.getMessage());
    }
    // Global rank 2 passes another block size.
    errors = errors(GridRanks.run(2, 3, "60s", grid -> {
      Descriptor mine = grid.all().rank() == 2 ? Descriptor.of(23, 23, 5, 5, 1, 2, 2, 3) : D;
      return Lu.getrf(grid, LocalMatrix.scatter(a, 23, mine, grid.myRow(), grid.myCol()));
    }));
    for (Throwable t : errors) {
      assertEquals("getrf: the ranks passed different descriptors: MB_ ranges over 4..5",
          assertInstanceOf(IllegalArgumentException.class, t).getMessage());
    }
    assertTrue(System.nanoTime() - t0 < 30_000_000_000L, "refused long before the 60 s timeout");
  }

  @Test
  void aSubCommunicatorsErrorNamesGlobalRanksAndTheGridPosition() {
    // Grid row 1 (global ranks 3, 4, 5): global rank 5 never joins the broadcast.
    List<Throwable> errors = errors(GridRanks.run(2, 3, "2s", grid -> {
      GridCalls calls = GridCalls.open(grid, "test", List.of(D), () -> {}, List.of());
      if (grid.all().rank() == 5) {
        Thread.sleep(3000); // past the others' timeout, still open
      } else if (grid.myRow() == 1) {
        calls.rowBroadcast(dev.gpucoll.api.CommBuffer.of(new double[4]), 4, 0);
      }
      return null;
    }));
    CollectiveTimeoutException e = assertInstanceOf(CollectiveTimeoutException.class, errors.get(3));
    assertEquals(3, e.rank());
    assertEquals(List.of(5), e.missingRanks());
    assertTrue(e.getMessage().startsWith("rank 3, broadcast: test at grid position (1, 0) of the 2 x 3 grid, in grid"
        + " row 1's communicator, whose ranks are process columns (0 = global 3, 1 = global 4, 2 = global 5): "),
        e.getMessage());
    assertTrue(e.getMessage().endsWith("; missing global ranks [5]"), e.getMessage());
  }
}
