package dev.gpucoll.core.host;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.DataType;
import java.nio.ByteBuffer;

/** barrier across hosts over the {@link LeaderFrame}: the frame's headers alone, no data. */
final class LeaderBarrier extends LeaderRecipe {
  LeaderBarrier(LeaderFrame frame, Reducer reducer) {
    super(frame, reducer);
  }

  void run(Signature sig) {
    LeaderFrame.Call f = frame.open(Collective.BARRIER, sig, null, 0, null, DataType.INT8);
    if (leader && f.ok()) {
      f.verdict = frame.round(Collective.BARRIER, UcxLeaders.KIND_DATA1, f.header, new ByteBuffer[hostRanks.length],
          new ByteBuffer[hostRanks.length]);
    }
    frame.close(f, null, 0);
  }
}
