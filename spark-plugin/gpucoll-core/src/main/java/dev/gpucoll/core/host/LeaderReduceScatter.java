package dev.gpucoll.core.host;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.core.buffers.HostBuffers;
import dev.gpucoll.core.host.UcxScratch.Slot;
import java.nio.Buffer;
import java.nio.ByteBuffer;

/**
 * reduceScatter across hosts over the {@link LeaderFrame}: the leaders exchange the blocks for each
 * other's ranks ({@link #blockRound}), and each leader reduces its ranks' blocks from every rank's
 * input in rank order (bit-identical to a one-host group).
 */
final class LeaderReduceScatter extends LeaderRecipe {
  LeaderReduceScatter(LeaderFrame frame, Reducer reducer) {
    super(frame, reducer);
  }

  void run(Signature sig, String problem, Buffer send, Buffer recv, int count, DataType type, ReduceOp op) {
    Collective c = Collective.REDUCE_SCATTER;
    int es = problem == null ? type.byteSize() : 0;
    long block = (long) count * es;
    int mine = hostRanks[myHost].length;
    LeaderFrame.Call f = frame.open(c, sig, problem, size * block, send, type);
    ByteBuffer result = scratch.get(Slot.RESULT, mine * block);
    if (leader && f.ok()) {
      ByteBuffer[][] io = blockRound(c, f, block, false);
      if (f.verdict == null) {
        Buffer[] srcs = new Buffer[size];
        int[] idx = new int[size];
        for (int l = 0; l < mine; l++) {
          int dest = hostRanks[myHost][l];
          for (int r = 0; r < size; r++) {
            int g = hostOf[r];
            int i = indexOf(hostRanks[g], r);
            if (g == myHost) {
              srcs[r] = HostBuffers.typedView(f.gathered, type);
              idx[r] = (i * size + dest) * count;
            } else {
              srcs[r] = HostBuffers.typedView(io[1][g], type);
              idx[r] = (i * mine + l) * count;
            }
          }
          reducer.reduce(type, op, size, srcs, idx, size, HostBuffers.typedView(result, type), l * count, count);
        }
      }
    }
    frame.close(f, result, mine * block);
    if (f.ok()) {
      HostBuffers.copy(recv, 0, HostBuffers.typedView(result, type), localRank * count, count);
    }
  }
}
