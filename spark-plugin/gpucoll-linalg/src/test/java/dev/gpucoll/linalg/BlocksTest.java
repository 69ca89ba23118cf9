package dev.gpucoll.linalg;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Blocks as Spark data: each process's blocks make its local matrix and come back out of it. */
class BlocksTest {
  @Test
  void everyBlockBelongsToOneRankAndRoundTrips() {
    for (int m = 1; m <= 11; m += 2) {
      for (int n = 1; n <= 10; n += 3) {
        for (int mb = 1; mb <= 4; mb++) {
          for (int p = 1; p <= 3; p++) {
            for (int q = 1; q <= 2; q++) {
              int nb = 5 - mb;
              Descriptor d = Descriptor.of(m, n, mb, nb, p - 1, q - 1, p, q);
              double[] whole = Matrices.general(m, n, m * 100 + n);
              Dealt rows = new Dealt(m, mb, p, p - 1);
              Dealt cols = new Dealt(n, nb, q, q - 1);
              Set<String> seen = new HashSet<>();
              for (int pr = 0; pr < p; pr++) {
                for (int pc = 0; pc < q; pc++) {
                  LocalMatrix part = LocalMatrix.scatter(whole, m, d, pr, pc);
                  List<Block> blocks = part.toBlocks();
                  for (Block b : blocks) {
                    assertTrue(seen.add(b.blockRow() + "," + b.blockCol()), "block twice: " + d);
                    assertEquals(d.rank(pr, pc), d.rankOfBlock(b.blockRow(), b.blockCol()));
                    assertEquals(rows.owner[b.blockRow() * mb] * q + cols.owner[b.blockCol() * nb],
                        d.rankOfBlock(b.blockRow(), b.blockCol()), "against blocks dealt by hand: " + d);
                    for (int j = 0; j < b.cols(); j++) {
                      for (int i = 0; i < b.rows(); i++) {
                        assertEquals(whole[b.blockRow() * mb + i + (b.blockCol() * nb + j) * m], b.get(i, j));
                      }
                    }
                  }
                  List<Block> shuffled = new ArrayList<>(blocks);
                  java.util.Collections.reverse(shuffled);
                  assertArrayEquals(part.data(), LocalMatrix.fromBlocks(d, pr, pc, shuffled).data(), d.toString());
                }
              }
              assertEquals(d.blockRows() * d.blockCols(), seen.size(), d.toString());
            }
          }
        }
      }
    }
  }

  @Test
  void aBlockInTheWrongPlaceOrMissingIsNamed() {
    Descriptor d = Descriptor.of(7, 7, 3, 3, 0, 1, 2, 2);
    LocalMatrix part = LocalMatrix.scatter(Matrices.general(7, 7, 1), 7, d, 1, 0);
    List<Block> blocks = new ArrayList<>(part.toBlocks());
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> LocalMatrix.fromBlocks(d, 0, 0, blocks));
    assertTrue(e.getMessage().startsWith("block (1, ") && e.getMessage().endsWith("belongs to process (1, 0), not (0, 0)"),
        e.getMessage());
    List<Block> twice = new ArrayList<>(blocks);
    twice.add(blocks.get(0));
    assertTrue(assertThrows(IllegalArgumentException.class, () -> LocalMatrix.fromBlocks(d, 1, 0, twice))
        .getMessage().endsWith("comes twice"));
    assertEquals("process (1, 0) holds " + blocks.size() + " blocks of the 7 x 7 matrix; 1 of them are missing",
        assertThrows(IllegalArgumentException.class, () -> LocalMatrix.fromBlocks(d, 1, 0, blocks.subList(1,
            blocks.size()))).getMessage());
    // Block (2, 2) is the ragged corner, 1 x 1, on process (0, 1).
    assertEquals("block (2, 2) is 3 x 3; the descriptor makes it 1 x 1", assertThrows(IllegalArgumentException.class,
        () -> LocalMatrix.fromBlocks(d, 0, 1, List.of(new Block(2, 2, 3, 3, new double[9])))).getMessage());
    assertThrows(IllegalArgumentException.class, () -> new Block(0, 0, 2, 2, new double[3]));
  }
}
