package dev.gpucoll.core.host;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.DataType;
import dev.gpucoll.core.Algorithm;
import dev.gpucoll.core.buffers.HostBuffers;
import java.nio.Buffer;

/** allToAll over flat steps: each step every rank publishes a chunk of every peer's block and takes its own from each. */
final class AllToAllRecipe {
  private static final Collective C = Collective.ALL_TO_ALL;
  private final Steps steps;
  private final HostRoute route;

  AllToAllRecipe(Steps steps, HostRoute route) {
    this.steps = steps;
    this.route = route;
  }

  Algorithm run(Signature sig, Buffer send, Buffer recv, int count, DataType type) {
    int n = steps.ranks;
    int me = steps.rank;
    int es = type.byteSize();
    int per = Math.max(1, steps.maxPayload() / (es * n));
    int off = 0;
    do {
      int len = Math.min(per, count - off);
      steps.openBlocks(type, send, count, off, len);
      steps.exchange(C, sig);
      for (int p = 0; p < n; p++) {
        if (p == me) {
          HostBuffers.copy(recv, p * count + off, send, me * count + off, len);
        } else {
          Buffer in = steps.peer(C, p, me * len * es, len * es).of(type);
          HostBuffers.copy(recv, p * count + off, in, steps.base / es + me * len, len);
        }
      }
      off += len;
    } while (off < count);
    return route.movement((long) count * es * n);
  }
}
