package dev.gpucoll.linalg;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * LAPACK's row interchanges (dlaswp) on a block-cyclic matrix: for k in [from, to), global row k
 * changes places with global row {@code pivots[k]}, in order. The net permutation is worked out on
 * every rank (each knows the pivots), then every row that ends elsewhere is moved once, in one
 * all-to-all down the grid column when rows cross process rows: the elements travel as they are
 * (a swap moves bits: −0.0 stays −0.0, nothing is added).
 */
final class RowInterchanges {
  private RowInterchanges() {}

  /** One row's move: global row {@code to} receives what global row {@code from} held. */
  private record Move(int to, int from) {}

  /**
   * What one rank of a grid column does for the interchanges of rows [from, to): the local rows it
   * packs, row after row, {@code width} elements each (in the order of {@link #sendCounts}' process
   * rows), and the local rows it unpacks from what it receives (in the order of the process rows it
   * receives from). Worked out alike on every rank of the column from the pivots, for both kernel
   * sets ({@link GridSolver#interchange}: two row kernels around one allToAllv).
   *
   * @param crosses whether any row crosses process rows (else nothing is exchanged: what a rank
   *     packs is what it unpacks)
   */
  record Plan(int[] sendRows, int[] recvRows, long[] sendCounts, long[] sendDispls, long[] recvCounts,
      long[] recvDispls, boolean crosses) {
    /** Nothing moves (the same on every rank of the column: no call is skipped by one alone). */
    boolean empty() {
      return sendRows.length == 0 && recvRows.length == 0 && !crosses;
    }
  }

  static Plan plan(Descriptor d, int me, int[] pivots, int from, int to, int width) {
    List<Move> moves = width == 0 ? List.of() : net(pivots, from, to);
    int procs = d.gridRows();
    boolean crosses = false;
    long[] sendCounts = new long[procs];
    long[] recvCounts = new long[procs];
    for (Move m : moves) {
      int src = d.indxg2pRow(m.from);
      int dst = d.indxg2pRow(m.to);
      crosses |= src != dst;
      if (src == me) {
        sendCounts[dst] += width;
      }
      if (dst == me) {
        recvCounts[src] += width;
      }
    }
    int[] sendRows = new int[(int) (total(sendCounts) / Math.max(1, width))];
    int[] recvRows = new int[(int) (total(recvCounts) / Math.max(1, width))];
    long[] sendDispls = displacements(sendCounts);
    long[] recvDispls = displacements(recvCounts);
    long[] sendAt = sendDispls.clone();
    long[] recvAt = recvDispls.clone();
    for (Move m : moves) {
      int src = d.indxg2pRow(m.from);
      int dst = d.indxg2pRow(m.to);
      if (src == me) {
        sendRows[(int) (sendAt[dst] / width)] = d.indxg2lRow(m.from);
        sendAt[dst] += width;
      }
      if (dst == me) {
        recvRows[(int) (recvAt[src] / width)] = d.indxg2lRow(m.to);
        recvAt[src] += width;
      }
    }
    return new Plan(sendRows, recvRows, sendCounts, sendDispls, recvCounts, recvDispls, crosses);
  }

  private static List<Move> net(int[] pivots, int from, int to) {
    Map<Integer, Integer> slot = new HashMap<>();
    List<Integer> rows = new ArrayList<>(); // the rows touched
    List<Integer> holds = new ArrayList<>(); // what each now holds (the global row it came from)
    for (int k = from; k < to; k++) {
      int x = slotOf(slot, rows, holds, k);
      int y = slotOf(slot, rows, holds, pivots[k]);
      Integer t = holds.get(x);
      holds.set(x, holds.get(y));
      holds.set(y, t);
    }
    List<Move> moves = new ArrayList<>();
    for (int i = 0; i < rows.size(); i++) {
      if (!rows.get(i).equals(holds.get(i))) {
        moves.add(new Move(rows.get(i), holds.get(i)));
      }
    }
    return moves;
  }

  private static int slotOf(Map<Integer, Integer> slot, List<Integer> rows, List<Integer> holds, int row) {
    return slot.computeIfAbsent(row, r -> {
      rows.add(r);
      holds.add(r);
      return rows.size() - 1;
    });
  }

  private static long[] displacements(long[] counts) {
    long[] d = new long[counts.length];
    for (int i = 1; i < counts.length; i++) {
      d[i] = d[i - 1] + counts[i - 1];
    }
    return d;
  }

  private static long total(long[] counts) {
    long s = 0;
    for (long c : counts) {
      s += c;
    }
    return s;
  }
}
