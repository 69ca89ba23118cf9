package dev.gpucoll.core.host;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.DataType;
import dev.gpucoll.core.buffers.HostBuffers;
import dev.gpucoll.core.host.UcxScratch.Slot;
import java.nio.Buffer;
import java.nio.ByteBuffer;

/**
 * allToAll across hosts over the {@link LeaderFrame}: the leaders exchange the blocks for each
 * other's ranks ({@link #blockRound}) and place them by source rank.
 */
final class LeaderAllToAll extends LeaderRecipe {
  LeaderAllToAll(LeaderFrame frame, Reducer reducer) {
    super(frame, reducer);
  }

  void run(Signature sig, String problem, Buffer send, Buffer recv, int count, DataType type) {
    Collective c = Collective.ALL_TO_ALL;
    int es = problem == null ? type.byteSize() : 0;
    long block = (long) count * es;
    int mine = hostRanks[myHost].length;
    if (mine == 1) {
      alone(sig, problem, send, recv, count, type, block);
      return;
    }
    LeaderFrame.Call f = frame.open(c, sig, problem, size * block, send, type);
    ByteBuffer result = scratch.get(Slot.RESULT, mine * size * block);
    if (leader && f.ok()) {
      ByteBuffer[][] io = blockRound(c, f, block, true);
      if (f.verdict == null) {
        for (int l = 0; l < mine; l++) {
          int dest = hostRanks[myHost][l];
          for (int r = 0; r < size; r++) {
            int g = hostOf[r];
            int i = indexOf(hostRanks[g], r);
            long at = (l * size + r) * block;
            if (g == myHost) {
              LeaderFrame.copyBytes(f.gathered, (i * size + dest) * block, result, at, block);
            } else {
              LeaderFrame.copyBytes(io[1][g], (i * mine + l) * block, result, at, block);
            }
          }
        }
      }
    }
    frame.close(f, result, mine * size * block);
    if (f.ok()) {
      HostBuffers.copy(recv, 0, HostBuffers.typedView(result, type), localRank * size * count, size * count);
    }
  }

  /**
   * allToAll on the only rank of its host, with a third of the general recipe's copies at 2 hosts:
   * only the blocks for other hosts are staged (one buffer per host), this rank's block for itself
   * goes from its input to its output directly, and the other hosts' blocks go to the output from
   * where they were received; large ones chunk by chunk as they arrive, while later chunks are in
   * flight.
   */
  private void alone(Signature sig, String problem, Buffer send, Buffer recv, int count, DataType type, long block) {
    Collective c = Collective.ALL_TO_ALL;
    int hosts = hostRanks.length;
    LeaderFrame.Call f = frame.open(c, sig, problem, size * block, null, type);
    ByteBuffer[] in = new ByteBuffer[hosts];
    if (f.ok()) {
      ByteBuffer[] out = new ByteBuffer[hosts];
      for (int g = 0; g < hosts; g++) {
        if (g == myHost) {
          continue;
        }
        int[] ranks = hostRanks[g];
        out[g] = scratch.get(Slot.OUT, g, ranks.length * block);
        for (int j = 0; j < ranks.length; j++) {
          HostBuffers.copy(HostBuffers.typedView(out[g], type), j * count, send, ranks[j] * count, count);
        }
        in[g] = scratch.get(Slot.IN, g, ranks.length * block);
      }
      // Each piece goes to the output as soon as it has arrived (the verdict has passed by then).
      f.verdict = frame.streamedRound(c, UcxLeaders.KIND_DATA1, f.header, out, in,
          (g, from, off, len) -> toOutput(recv, type, from, g, block, off, len));
    }
    frame.close(f, null, 0);
    HostBuffers.copy(recv, rank * count, send, rank * count, count);
  }

  /**
   * Bytes [off, off+len) of what leader g sent, arrived in {@code from} (g's ranks' {@code block}
   * bytes each, in rank order from {@code from}'s position), to the output at those ranks' places.
   */
  private void toOutput(Buffer recv, DataType type, ByteBuffer from, int g, long block, long off, long len) {
    int es = type.byteSize();
    int[] ranks = hostRanks[g];
    Buffer src = HostBuffers.typedView(from, type);
    for (long at = off; at < off + len; ) {
      int i = (int) (at / block);
      long upTo = Math.min(off + len, (i + 1) * block);
      HostBuffers.copy(recv, (int) ((ranks[i] * block + at - i * block) / es), src, (int) (at / es),
          (int) ((upTo - at) / es));
      at = upTo;
    }
  }
}
