package dev.gpucoll.core.spi;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * The membership rule of {@code split(color, key)} for every backend (MPI_Comm_split): one
 * rendezvous round gathers each rank's (color, key); ranks of one color form a group ordered by key,
 * then by parent rank; a negative color joins none.
 */
public final class SplitOrder {
  private SplitOrder() {}

  /** This rank's (color, key), the payload of the split round. */
  public static byte[] payload(int color, int key) {
    return ByteBuffer.allocate(8).putInt(color).putInt(key).array();
  }

  /** The parent ranks of the group of {@code color}, in new-rank order; empty for a negative color. */
  public static int[] members(List<byte[]> payloads, int color) {
    List<int[]> group = new ArrayList<>(); // {key, parent rank}
    for (int p = 0; p < payloads.size(); p++) {
      ByteBuffer b = ByteBuffer.wrap(payloads.get(p));
      int pc = b.getInt();
      int pk = b.getInt();
      if (color >= 0 && pc == color) {
        group.add(new int[] {pk, p});
      }
    }
    group.sort((a, b) -> a[0] != b[0] ? Integer.compare(a[0], b[0]) : Integer.compare(a[1], b[1]));
    return group.stream().mapToInt(m -> m[1]).toArray();
  }
}
