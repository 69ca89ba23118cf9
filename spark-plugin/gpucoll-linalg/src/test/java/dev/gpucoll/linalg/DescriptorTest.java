package dev.gpucoll.linalg;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static dev.gpucoll.linalg.Dealt.same;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.ProcessGrid;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The descriptor's index maps against blocks dealt by hand ({@link Dealt}) for every shape small
 * enough to enumerate, its refusals, and its rank mapping against {@link ProcessGrid}'s.
 */
class DescriptorTest {
  static final int MAX_SIZE = 13;
  static final int MAX_BLOCK = 5;
  static final int MAX_PROCS = 3;

  @Test
  void theToolsMatchDealingTheBlocksByHandForEveryShape() {
    int checked = 0;
    for (int size = 0; size <= MAX_SIZE; size++) {
      for (int block = 1; block <= MAX_BLOCK; block++) {
        for (int procs = 1; procs <= MAX_PROCS; procs++) {
          for (int src = 0; src < procs; src++) {
            Dealt ref = Dealt.of(size, block, procs, src);
            String at = "size " + size + ", block " + block + ", " + procs + " procs from " + src;
            for (int p = 0; p < procs; p++) {
              same(ref.count[p], Descriptor.numroc(size, block, p, src, procs), at, ": numroc of ", p);
              for (int i = 0; i <= size; i++) {
                same(ref.before(i, p), Descriptor.numroc(i, block, p, src, procs), at, ": numroc(", i, ") of ", p);
              }
              for (int l = 0; l < ref.count[p]; l++) {
                same(ref.global[p][l], Descriptor.indxl2g(l, block, p, src, procs), at, ": indxl2g ", l, " of ", p);
              }
            }
            for (int g = 0; g < size; g++) {
              same(ref.owner[g], Descriptor.indxg2p(g, block, src, procs), at, ": indxg2p ", g);
              same(ref.local[g], Descriptor.indxg2l(g, block, procs), at, ": indxg2l ", g);
              checked++;
            }
          }
        }
      }
    }
    assertEquals(14 * 13 / 2 * 5 * 6, checked, "every index of sizes 0..13, 5 block sizes, 6 (procs, src) pairs");
  }

  /** Every M, N, MB, NB, P, Q, RSRC, CSRC: rows follow (M, MB, P, RSRC), columns (N, NB, Q, CSRC), never the other's. */
  @Test
  void rowsAndColumnsOfEveryDescriptorMatchTheirOwnDealing() {
    int descriptors = 0;
    for (Descriptor d : everyDescriptor()) {
      Dealt rows = Dealt.of(d.m(), d.mb(), d.gridRows(), d.rsrc());
      Dealt cols = Dealt.of(d.n(), d.nb(), d.gridCols(), d.csrc());
      for (int p = 0; p < d.gridRows(); p++) {
        same(rows.count[p], d.numrocRows(p), d, ": rows of ", p);
        same(rows.before(d.m() / 2, p), d.localRowsBefore(d.m() / 2, p), d, ": rows of ", p, " before M/2");
        for (int l = 0; l < rows.count[p]; l++) {
          same(rows.global[p][l], d.indxl2gRow(l, p), d, ": row ", l, " of ", p);
        }
      }
      for (int q = 0; q < d.gridCols(); q++) {
        same(cols.count[q], d.numrocCols(q), d, ": columns of ", q);
        same(cols.before(d.n() / 2, q), d.localColsBefore(d.n() / 2, q), d, ": columns of ", q, " before N/2");
        for (int l = 0; l < cols.count[q]; l++) {
          same(cols.global[q][l], d.indxl2gCol(l, q), d, ": column ", l, " of ", q);
        }
      }
      for (int i = 0; i < d.m(); i++) {
        same(rows.owner[i], d.indxg2pRow(i), d, ": owner of row ", i);
        same(rows.local[i], d.indxg2lRow(i), d, ": local row of ", i);
      }
      for (int j = 0; j < d.n(); j++) {
        same(cols.owner[j], d.indxg2pCol(j), d, ": owner of column ", j);
        same(cols.local[j], d.indxg2lCol(j), d, ": local column of ", j);
      }
      descriptors++;
    }
    assertEquals(MAX_SIZE * MAX_SIZE * MAX_BLOCK * MAX_BLOCK * 36, descriptors);
  }

  /** M, N in 1..13, MB, NB in 1..5, P, Q in 1..3, every RSRC and CSRC; the smallest LLD. */
  static List<Descriptor> everyDescriptor() {
    List<Descriptor> out = new ArrayList<>();
    for (int m = 1; m <= MAX_SIZE; m++) {
      for (int n = 1; n <= MAX_SIZE; n++) {
        for (int mb = 1; mb <= MAX_BLOCK; mb++) {
          for (int nb = 1; nb <= MAX_BLOCK; nb++) {
            addGrids(out, m, n, mb, nb);
          }
        }
      }
    }
    return out;
  }

  static void addGrids(List<Descriptor> out, int m, int n, int mb, int nb) {
    for (int p = 1; p <= MAX_PROCS; p++) {
      for (int q = 1; q <= MAX_PROCS; q++) {
        for (int rsrc = 0; rsrc < p; rsrc++) {
          for (int csrc = 0; csrc < q; csrc++) {
            out.add(Descriptor.of(m, n, mb, nb, rsrc, csrc, p, q));
          }
        }
      }
    }
  }

  @Test
  void theSmallestLldIsTheMostRowsAnyProcessRowHolds() {
    // 10 rows in blocks of 3 over 2 process rows from row 1: row 1 holds blocks 0 and 2 (6 rows), row 0 blocks 1 and 3 (4).
    Descriptor d = Descriptor.of(10, 7, 3, 2, 1, 0, 2, 3);
    assertEquals(6, d.lld());
    assertEquals(6, d.numrocRows(1));
    assertEquals(4, d.numrocRows(0));
    assertEquals(6, d.withLld(6).lld());
    assertEquals(9, d.withLld(9).lld());
    assertEquals(1, Descriptor.of(0, 0, 4, 4, 2, 2).lld(), "an empty matrix still has LLD >= 1");
  }

  @Test
  void theMostSquareGridHasTheLargestRowCountAtMostTheRootThatDividesTheRanks() {
    int[][] shapes = {{1, 1, 1}, {2, 1, 2}, {3, 1, 3}, {4, 2, 2}, {6, 2, 3}, {7, 1, 7}, {8, 2, 4}, {9, 3, 3},
        {12, 3, 4}, {16, 4, 4}, {18, 3, 6}};
    for (int[] s : shapes) {
      Descriptor d = Descriptor.onMostSquareGrid(10, 7, 3, 2, s[0]);
      assertEquals(s[1] + " x " + s[2], d.gridRows() + " x " + d.gridCols(), s[0] + " ranks");
      assertEquals(Descriptor.of(10, 7, 3, 2, s[1], s[2]), d);
    }
    refused("processes (P x Q) = 0 must be at least 1", () -> Descriptor.onMostSquareGrid(4, 4, 2, 2, 0));
  }

  @Test
  void eachBadFieldIsRefusedByName() {
    refused("m (M_, global rows) = -1 must be at least 0", () -> new Descriptor(-1, 4, 2, 2, 0, 0, 1, 1, 1));
    refused("n (N_, global columns) = -2 must be at least 0", () -> new Descriptor(4, -2, 2, 2, 0, 0, 1, 1, 4));
    refused("mb (MB_, rows per block) = 0 must be at least 1", () -> Descriptor.of(4, 4, 0, 2, 1, 1));
    refused("nb (NB_, columns per block) = 0 must be at least 1", () -> Descriptor.of(4, 4, 2, 0, 1, 1));
    refused("gridRows (P, process rows) = 0 must be at least 1", () -> Descriptor.of(4, 4, 2, 2, 0, 1));
    refused("gridCols (Q, process columns) = -1 must be at least 1", () -> Descriptor.of(4, 4, 2, 2, 1, -1));
    refused("rsrc (RSRC_, the process row of the first block row) = 2 is outside [0, 2)",
        () -> Descriptor.of(4, 4, 2, 2, 2, 0, 2, 2));
    refused("rsrc (RSRC_, the process row of the first block row) = -1 is outside [0, 2)",
        () -> Descriptor.of(4, 4, 2, 2, -1, 0, 2, 2));
    refused("csrc (CSRC_, the process column of the first block column) = 3 is outside [0, 3)",
        () -> Descriptor.of(4, 4, 2, 2, 0, 3, 2, 3));
    refused("lld (LLD_, the local leading dimension) = 5 is below 6", () -> Descriptor.of(10, 7, 3, 2, 1, 0, 2, 3).withLld(5));
    refused("lld (LLD_, the local leading dimension) = 0 is below 1", () -> Descriptor.of(0, 3, 2, 2, 1, 1).withLld(0));
  }

  private static void refused(String want, Runnable make) {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, make::run);
    assertTrue(e.getMessage().contains(want), e.getMessage());
  }

  @Test
  void indicesOutsideTheMatrixOrTheGridAreNamed() {
    Descriptor d = Descriptor.of(10, 7, 3, 2, 2, 3);
    assertThrows(IndexOutOfBoundsException.class, () -> d.indxg2pRow(10));
    assertThrows(IndexOutOfBoundsException.class, () -> d.indxg2lCol(-1));
    assertThrows(IndexOutOfBoundsException.class, () -> d.numrocRows(2));
    assertThrows(IndexOutOfBoundsException.class, () -> d.localColsBefore(8, 0));
    assertEquals(d.numrocCols(1), d.localColsBefore(7, 1), "j = N counts every local column");
    IndexOutOfBoundsException e = assertThrows(IndexOutOfBoundsException.class, () -> d.indxl2gRow(6, 0));
    assertEquals("process row 0's local row 6 is outside [0, 6)", e.getMessage());
    assertThrows(IndexOutOfBoundsException.class, () -> d.rank(0, 3));
    assertThrows(IndexOutOfBoundsException.class, () -> d.prow(6));
  }

  @Test
  void scalapacksDescIsTheSameNumbers() {
    Descriptor d = Descriptor.of(10, 7, 3, 2, 1, 2, 2, 3);
    assertArrayEquals(new int[] {1, 42, 10, 7, 3, 2, 1, 2, 6}, d.toScalapack(42));
  }

  /**
   * The descriptor's ranks are ProcessGrid's: for every rank of every grid up to 4 × 4, its process
   * row and column, and the splits that make its row communicator (ranked by process column) and its
   * column communicator (ranked by process row).
   */
  @Test
  void ranksMapToProcessesAsProcessGridMapsThem() {
    for (int p = 1; p <= 4; p++) {
      for (int q = 1; q <= 4; q++) {
        Descriptor d = Descriptor.of(9, 9, 2, 2, p, q);
        for (int r = 0; r < p * q; r++) {
          List<int[]> splits = new ArrayList<>();
          try (ProcessGrid<Communicator> grid = ProcessGrid.of(fake(r, p * q, splits), p, q)) {
            String at = p + " x " + q + ", rank " + r;
            same(grid.myRow(), d.prow(r), at);
            same(grid.myCol(), d.pcol(r), at);
            same(r, d.rank(d.prow(r), d.pcol(r)), at);
            for (int i = 0; i < p; i++) {
              for (int j = 0; j < q; j++) {
                same(grid.rankAt(i, j), d.rank(i, j), at, ": (", i, ", ", j, ")");
              }
            }
            // split(color, key) ranks by key: the row communicator by process column, the column one by process row.
            assertArrayEquals(new int[] {d.prow(r), d.pcol(r)}, splits.get(0), at + ": the row split");
            assertArrayEquals(new int[] {d.pcol(r), d.prow(r)}, splits.get(1), at + ": the column split");
            assertEquals(d, d.requireGrid(grid));
            if (p != q) {
              Descriptor transposed = Descriptor.of(9, 9, 2, 2, q, p);
              IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> transposed.requireGrid(grid));
              assertEquals("the descriptor is for a " + q + " x " + p + " process grid, the grid is " + p + " x " + q,
                  e.getMessage());
            }
          }
        }
      }
    }
  }

  /** A communicator of one rank's view, enough for ProcessGrid.of: rank, size, the shape allReduce (each rank agrees with itself) and split. */
  private static Communicator fake(int rank, int size, List<int[]> splits) {
    return (Communicator) Proxy.newProxyInstance(Communicator.class.getClassLoader(), new Class<?>[] {Communicator.class},
        (proxy, method, args) -> switch (method.getName()) {
          case "rank" -> rank;
          case "size" -> size;
          case "allReduce" -> null;
          case "split" -> {
            splits.add(new int[] {(Integer) args[0], (Integer) args[1]});
            yield fake(0, 1, new ArrayList<>());
          }
          case "close" -> null;
          case "hashCode" -> System.identityHashCode(proxy);
          case "equals" -> proxy == args[0];
          case "toString" -> "fake rank " + rank + " of " + size;
          default -> throw new UnsupportedOperationException(method.getName());
        });
  }
}
