package dev.gpucoll.core.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.ProcessGrid;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.api.Communicator;
import java.util.List;
import org.junit.jupiter.api.Test;

/** ProcessGrid on the host backend: positions, row and column communicators, shapes refused on every rank. */
class ProcessGridTest {
  @Test
  void aTwoByThreeGridHasRowMajorPositionsAndWorkingRowAndColumnCommunicators() {
    List<int[]> got = Ranks.values(Ranks.run(6, Ranks.conf(), comm -> {
      try (ProcessGrid<Communicator> g = ProcessGrid.of(comm, 2, 3)) {
        long[] rowSum = {comm.rank()};
        g.row().allReduce(rowSum, ReduceOp.SUM);
        long[] colSum = {comm.rank()};
        g.column().allReduce(colSum, ReduceOp.SUM);
        return new int[] {g.myRow(), g.myCol(), g.row().size(), g.row().rank(), g.column().size(),
            g.column().rank(), (int) rowSum[0], (int) colSum[0], g.rankAt(g.myRow(), g.myCol()), g.rows(), g.cols()};
      }
    }));
    for (int r = 0; r < 6; r++) {
      int row = r / 3;
      int col = r % 3;
      int rowSum = 3 * row * 3 + 0 + 1 + 2; // ranks 3row, 3row+1, 3row+2
      int colSum = col + (3 + col);
      assertEquals(List.of(row, col, 3, col, 2, row, rowSum, colSum, r, 2, 3),
          java.util.Arrays.stream(got.get(r)).boxed().toList(), "rank " + r);
    }
  }

  @Test
  void aShapeThatDoesNotFitTheGroupFailsOnEveryRank() {
    for (Ranks.Outcome<Object> o : Ranks.<Object>run(4, Ranks.conf(), comm -> ProcessGrid.of(comm, 3, 2))) {
      assertTrue(o.error() instanceof IllegalArgumentException, String.valueOf(o.error()));
      assertEquals("a 3 x 2 grid does not fit a group of 4 ranks: rows and columns must be positive and multiply"
          + " to the group size", o.error().getMessage());
    }
  }

  @Test
  void ranksAskingForDifferentShapesFailAlikeBeforeAnySplit() {
    List<Ranks.Outcome<Object>> out = Ranks.run(4, Ranks.conf(), comm -> {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> ProcessGrid.of(comm, comm.rank() == 3 ? 1 : 2, comm.rank() == 3 ? 4 : 2));
      // the group is still in step: a collective after the refusal works
      int[] one = {1};
      comm.allReduce(one, ReduceOp.SUM);
      assertEquals(4, one[0]);
      return e.getMessage();
    });
    for (int r = 0; r < 4; r++) {
      String m = (String) out.get(r).get();
      assertTrue(m.startsWith("rank " + r + ": the ranks asked for different grid shapes"), m);
      assertTrue(m.contains("rows range over 1..2, columns over 2..4"), m);
    }
  }
}
