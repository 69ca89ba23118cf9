package dev.gpucoll.core.host;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.DataType;
import dev.gpucoll.core.Algorithm;
import dev.gpucoll.core.buffers.HostBuffers;
import java.nio.Buffer;

/** allGather over flat steps: each step every rank publishes a chunk of its input and copies every rank's. */
final class AllGatherRecipe {
  private static final Collective C = Collective.ALL_GATHER;
  private final Steps steps;
  private final HostRoute route;

  AllGatherRecipe(Steps steps, HostRoute route) {
    this.steps = steps;
    this.route = route;
  }

  Algorithm run(Signature sig, Buffer send, Buffer recv, int count, DataType type) {
    int es = type.byteSize();
    int per = Math.max(1, steps.maxPayload() / es);
    int off = 0;
    do {
      int len = Math.min(per, count - off);
      HostBuffers.copy(steps.open(len * es).of(type), steps.base / es, send, off, len);
      steps.exchange(C, sig);
      for (int p = 0; p < steps.ranks; p++) {
        Buffer in = steps.peer(C, p, 0, len * es).of(type);
        HostBuffers.copy(recv, p * count + off, in, steps.base / es, len);
      }
      off += len;
    } while (off < count);
    return route.movement((long) count * es);
  }
}
