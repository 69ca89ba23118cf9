package dev.gpucoll.core.host;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.DataType;
import dev.gpucoll.core.buffers.HostBuffers;
import dev.gpucoll.core.host.UcxScratch.Slot;
import java.nio.Buffer;
import java.nio.ByteBuffer;

/**
 * broadcast across hosts over the {@link LeaderFrame}: the root's host spreads the data inside
 * itself, its leader sends it to every other leader, and each spreads it to its ranks.
 */
final class LeaderBroadcast extends LeaderRecipe {
  LeaderBroadcast(LeaderFrame frame, Reducer reducer) {
    super(frame, reducer);
  }

  void run(Signature sig, String problem, Buffer send, Buffer recv, int count, DataType type, int root) {
    Collective c = Collective.BROADCAST;
    int es = problem == null ? type.byteSize() : 0;
    long bytes = (long) count * es;
    LeaderFrame.Call f = frame.open(c, sig, problem, 0, null, type);
    ByteBuffer result = scratch.get(Slot.RESULT, bytes);
    int rootHost = f.ok() ? hostOf[root] : -1;
    if (f.ok() && myHost == rootHost) {
      if (rank == root) {
        HostBuffers.copy(HostBuffers.typedView(result, type), 0, send, 0, count);
      }
      if (hostRanks[myHost].length > 1 && bytes > 0) {
        frame.localCall(c, () -> local.broadcast(CommBuffer.of(result.duplicate()), CommBuffer.of(result.duplicate()), bytes,
            DataType.INT8, indexOf(hostRanks[myHost], root)));
      }
    }
    if (leader && f.ok()) {
      ByteBuffer[] out = new ByteBuffer[hostRanks.length];
      ByteBuffer[] in = new ByteBuffer[hostRanks.length];
      for (int g = 0; g < hostRanks.length; g++) {
        if (g != myHost && myHost == rootHost) {
          out[g] = result;
        } else if (g != myHost && g == rootHost) {
          in[g] = result;
        }
      }
      f.verdict = frame.round(c, UcxLeaders.KIND_DATA1, f.header, out, in);
    }
    frame.close(f, myHost == rootHost ? null : result, bytes);
    if (f.ok()) {
      HostBuffers.copy(recv, 0, HostBuffers.typedView(result, type), 0, count);
    }
  }
}
