package dev.gpucoll.cuda;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CollectiveException;

/** Argument checks and sizes for allToAllv, which the GPU backend runs as a padded allToAll. */
final class AllToAllvPlan {
  private AllToAllvPlan() {}

  static void check(int rank, int size, long[] sendCounts, long[] sendDispls, long[] recvCounts, long[] recvDispls) {
    String[] names = {"sendCounts", "sendDispls", "recvCounts", "recvDispls"};
    long[][] arrays = {sendCounts, sendDispls, recvCounts, recvDispls};
    for (int i = 0; i < 4; i++) {
      if (arrays[i] == null || arrays[i].length != size) {
        throw new CollectiveException(rank, Collective.ALL_TO_ALLV, names[i] + " must have one entry per rank ("
            + size + "), has " + (arrays[i] == null ? "null" : arrays[i].length));
      }
      for (int r = 0; r < size; r++) {
        if (arrays[i][r] < 0) {
          throw new CollectiveException(rank, Collective.ALL_TO_ALLV, names[i] + "[" + r + "] is negative: "
              + arrays[i][r]);
        }
      }
    }
  }

  /** The largest block this rank sends or receives. */
  static long maxBlock(long[] sendCounts, long[] recvCounts) {
    long m = 0;
    for (int r = 0; r < sendCounts.length; r++) {
      m = Math.max(m, Math.max(sendCounts[r], recvCounts[r]));
    }
    return m;
  }
}
