package dev.gpucoll.linalg;

import static dev.gpucoll.linalg.Dealt.same;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/**
 * LU and Cholesky plans for every square-block descriptor small enough to enumerate, against the
 * hand-dealt blocks: the steps cover the columns in order, the named owners hold the panel and
 * the diagonal block, and the local ranges of all processes together cover the panel, the
 * diagonal block and the trailing matrix (its lower triangle for Cholesky) exactly once per step.
 */
class FactorPlanTest {
  @Test
  void everyLuPlanCoversEachStepsPartsExactlyOnce() {
    int plans = 0;
    for (Descriptor d : squareBlocks(false)) {
      check(FactorPlan.getrf(d));
      plans++;
    }
    assertEquals(13 * 13 * 5 * 36, plans);
  }

  @Test
  void everyCholeskyPlanCoversEachStepsPartsExactlyOnce() {
    int plans = 0;
    for (Descriptor d : squareBlocks(true)) {
      check(FactorPlan.potrf(d));
      plans++;
    }
    assertEquals(13 * 5 * 36, plans);
  }

  private static List<Descriptor> squareBlocks(boolean squareMatrix) {
    List<Descriptor> out = new ArrayList<>();
    for (int m = 1; m <= DescriptorTest.MAX_SIZE; m++) {
      for (int n = squareMatrix ? m : 1; n <= (squareMatrix ? m : DescriptorTest.MAX_SIZE); n++) {
        for (int nb = 1; nb <= DescriptorTest.MAX_BLOCK; nb++) {
          DescriptorTest.addGrids(out, m, n, nb, nb);
        }
      }
    }
    return out;
  }

  private static void check(FactorPlan plan) {
    Descriptor d = plan.descriptor();
    int m = d.m();
    int n = d.n();
    Dealt rows = Dealt.of(m, d.mb(), d.gridRows(), d.rsrc());
    Dealt cols = Dealt.of(n, d.nb(), d.gridCols(), d.csrc());
    int next = 0;
    for (FactorPlan.Step s : plan.steps()) {
      Supplier<String> at = () -> plan.kind() + " " + d + " step " + s.index();
      same(next, s.first(), at, ": steps follow each other");
      same(next / d.nb(), s.index(), at);
      same(1, s.width() >= 1 && s.width() <= d.nb() ? 1 : 0, at, ": width ", s.width());
      for (int g = s.first(); g < s.end(); g++) {
        same(cols.owner[g], s.panelCol(), at, ": the owner of panel column ", g);
        same(rows.owner[g], s.diagRow(), at, ": the owner of diagonal row ", g);
      }
      int[][] panel = new int[m][n];
      int[][] diag = new int[m][n];
      int[][] trailing = new int[m][n];
      for (int p = 0; p < d.gridRows(); p++) {
        count(panel, rows, cols, p, s.panelCol(), s.panelLocalRows(p), s.panelLocalCols(), false);
        for (int q = 0; q < d.gridCols(); q++) {
          count(trailing, rows, cols, p, q, s.trailingLocalRows(p), s.trailingLocalCols(q), plan.lowerOnly());
        }
      }
      count(diag, rows, cols, s.diagRow(), s.panelCol(), s.diagLocalRows(), s.panelLocalCols(), false);
      for (int i = 0; i < m; i++) {
        for (int j = 0; j < n; j++) {
          boolean inPanel = i >= s.first() && j >= s.first() && j < s.end();
          same(inPanel ? 1 : 0, panel[i][j], at, ": panel element (", i, ", ", j, ")");
          same(inPanel && i < s.end() ? 1 : 0, diag[i][j], at, ": diagonal element (", i, ", ", j, ")");
          boolean inTrailing = i >= s.end() && j >= s.end() && (!plan.lowerOnly() || i >= j);
          same(inTrailing ? 1 : 0, trailing[i][j], at, ": trailing element (", i, ", ", j, ")");
        }
      }
      next = s.end();
    }
    assertEquals(Math.min(m, n), next, plan.kind() + " " + d + ": the steps end at min(M, N)");
  }

  /** Adds one to each global element process (p, q) names by its local ranges. */
  private static void count(int[][] hits, Dealt rows, Dealt cols, int p, int q, IndexRange li, IndexRange lj,
      boolean lowerOnly) {
    for (int c = lj.from(); c < lj.to(); c++) {
      for (int r = li.from(); r < li.to(); r++) {
        int i = rows.global[p][r];
        int j = cols.global[q][c];
        if (!lowerOnly || i >= j) {
          hits[i][j]++;
        }
      }
    }
  }

  @Test
  void aRaggedPlanOnAGridThatStartsOffTheOrigin() {
    // 10 x 10 in blocks of 3 over 2 x 2 from process (1, 0): block k's column on process column k mod 2,
    // its diagonal block on process row (1 + k) mod 2; the last panel is one column wide.
    FactorPlan plan = FactorPlan.getrf(Descriptor.of(10, 10, 3, 3, 1, 0, 2, 2));
    List<String> steps = plan.steps().stream()
        .map(s -> s.first() + "+" + s.width() + " col " + s.panelCol() + " row " + s.diagRow()).toList();
    assertEquals(List.of("0+3 col 0 row 1", "3+3 col 1 row 0", "6+3 col 0 row 1", "9+1 col 1 row 0"), steps);
    FactorPlan.Step third = plan.steps().get(2);
    assertEquals(new IndexRange(3, 6), third.panelLocalCols());
    assertEquals(new IndexRange(3, 6), third.diagLocalRows(), "process row 1 holds blocks 0 and 2: rows 0-2, 6-8");
    assertEquals(new IndexRange(3, 4), third.trailingLocalRows(0), "process row 0 holds rows 3-5 and 9");
    assertEquals(new IndexRange(6, 6), third.trailingLocalRows(1));
    assertEquals(new IndexRange(3, 4), plan.steps().get(3).panelLocalCols(), "process column 1 holds columns 3-5 and 9");
  }

  @Test
  void nonSquareBlocksAndACholeskyOfANonSquareMatrixAreRefused() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> FactorPlan.getrf(Descriptor.of(8, 8, 2, 4, 2, 2)));
    assertEquals("GETRF needs square blocks: mb (MB_) = 2, nb (NB_) = 4", e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> FactorPlan.potrf(Descriptor.of(8, 8, 4, 2, 2, 2)));
    assertEquals("POTRF needs square blocks: mb (MB_) = 4, nb (NB_) = 2", e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> FactorPlan.potrf(Descriptor.of(8, 6, 2, 2, 2, 2)));
    assertEquals("POTRF needs a square matrix: m (M_) = 8, n (N_) = 6", e.getMessage());
    assertEquals(List.of(), FactorPlan.getrf(Descriptor.of(0, 5, 2, 2, 1, 1)).steps(), "an empty matrix has no steps");
    assertEquals(3, FactorPlan.getrf(Descriptor.of(5, 13, 2, 2, 1, 1)).steps().size(), "min(M, N) columns");
  }
}
