package dev.gpucoll.core.host;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.DataType;
import dev.gpucoll.core.Algorithm;
import dev.gpucoll.core.buffers.HostBuffers;
import java.nio.Buffer;

/** broadcast over flat steps: each step the root publishes a chunk (the others an empty payload) and every rank copies it. */
final class BroadcastRecipe {
  private static final Collective C = Collective.BROADCAST;
  private final Steps steps;
  private final HostRoute route;

  BroadcastRecipe(Steps steps, HostRoute route) {
    this.steps = steps;
    this.route = route;
  }

  Algorithm run(Signature sig, Buffer send, Buffer recv, int count, DataType type, int root) {
    int es = type.byteSize();
    int per = Math.max(1, steps.maxPayload() / es);
    int off = 0;
    do {
      int len = Math.min(per, count - off);
      if (steps.rank == root) {
        HostBuffers.copy(steps.open(len * es).of(type), steps.base / es, send, off, len);
      } else {
        steps.open(0);
      }
      steps.exchange(C, sig);
      Buffer in = steps.peer(C, root, 0, len * es).of(type);
      HostBuffers.copy(recv, off, in, steps.base / es, len);
      off += len;
    } while (off < count);
    return route.movement((long) count * es);
  }
}
