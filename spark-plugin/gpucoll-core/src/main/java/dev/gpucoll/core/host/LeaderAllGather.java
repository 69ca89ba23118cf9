package dev.gpucoll.core.host;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.DataType;
import dev.gpucoll.core.buffers.HostBuffers;
import dev.gpucoll.core.host.UcxScratch.Slot;
import java.nio.Buffer;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * allGather across hosts over the {@link LeaderFrame}: every leader sends its host's inputs to every
 * other; a host of consecutive ranks is gathered and received in place in the result.
 */
final class LeaderAllGather extends LeaderRecipe {
  LeaderAllGather(LeaderFrame frame, Reducer reducer) {
    super(frame, reducer);
  }

  void run(Signature sig, String problem, Buffer send, Buffer recv, int count, DataType type) {
    Collective c = Collective.ALL_GATHER;
    int es = problem == null ? type.byteSize() : 0;
    long bytes = (long) count * es;
    ByteBuffer result = scratch.get(Slot.RESULT, size * bytes);
    LeaderFrame.Call f = frame.open(c, sig, problem, bytes, send, type, inPlace(result, myHost, bytes));
    gatherHosts(c, f, result, bytes);
    if (f.ok()) {
      HostBuffers.copy(recv, 0, HostBuffers.typedView(result, type), 0, size * count);
    }
  }

  /**
   * The all-gather after {@link LeaderFrame#open} (with {@link #inPlace} of this host): every
   * leader sends its host's inputs to every other, receiving each host's in place where it can;
   * leaves every rank's {@code bytes}, by rank, in {@code result} on every rank.
   */
  private void gatherHosts(Collective c, LeaderFrame.Call f, ByteBuffer result, long bytes) {
    if (leader && f.ok()) {
      int hosts = hostRanks.length;
      ByteBuffer[] out = new ByteBuffer[hosts];
      ByteBuffer[] in = new ByteBuffer[hosts];
      for (int g = 0; g < hosts; g++) {
        if (g != myHost) {
          out[g] = f.gathered;
          in[g] = inPlace(result, g, bytes);
          if (in[g] == null) {
            in[g] = scratch.get(Slot.IN, g, hostRanks[g].length * bytes);
          }
        }
      }
      f.verdict = frame.round(c, UcxLeaders.KIND_DATA1, f.header, out, in);
      if (f.verdict == null) {
        in[myHost] = f.gathered;
        for (int g = 0; g < hosts; g++) {
          if (!consecutive(g)) {
            for (int i = 0; i < hostRanks[g].length; i++) {
              LeaderFrame.copyBytes(in[g], i * bytes, result, hostRanks[g][i] * bytes, bytes);
            }
          }
        }
      }
    }
    frame.close(f, result, size * bytes);
  }

  /** Every rank's {@code bytes}-long payload through the group (split's rounds), by rank. */
  List<byte[]> gatherBytes(byte[] mine, int bytes) {
    ByteBuffer m = scratch.get(Slot.SPLIT, bytes);
    m.put(0, mine, 0, bytes);
    Signature sig = Signature.setup(bytes);
    ByteBuffer result = scratch.get(Slot.RESULT, size * bytes);
    LeaderFrame.Call f = frame.open(null, sig, null, bytes, m, DataType.INT8, inPlace(result, myHost, bytes));
    gatherHosts(null, f, result, bytes);
    List<byte[]> out = new ArrayList<>();
    for (int r = 0; r < size; r++) {
      byte[] b = new byte[bytes];
      result.get(r * bytes, b);
      out.add(b);
    }
    return out;
  }
}
