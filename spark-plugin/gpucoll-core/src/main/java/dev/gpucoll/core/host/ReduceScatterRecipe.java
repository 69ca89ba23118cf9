package dev.gpucoll.core.host;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.core.Algorithm;
import java.nio.Buffer;

/**
 * reduceScatter over flat steps: each step every rank publishes a chunk of every peer's block;
 * each rank folds its own block from every rank in rank order (its own part from its send buffer).
 */
final class ReduceScatterRecipe {
  private static final Collective C = Collective.REDUCE_SCATTER;
  private final Steps steps;
  private final HostRoute route;
  private final Reducer reducer;
  private final Buffer[] srcs;
  private final int[] srcIdx;

  ReduceScatterRecipe(Steps steps, HostRoute route, Reducer reducer) {
    this.steps = steps;
    this.route = route;
    this.reducer = reducer;
    this.srcs = new Buffer[steps.ranks];
    this.srcIdx = new int[steps.ranks];
  }

  Algorithm run(Signature sig, Buffer send, Buffer recv, int count, DataType type, ReduceOp op) {
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
          srcs[p] = send;
          srcIdx[p] = me * count + off;
        } else {
          srcs[p] = steps.peer(C, p, me * len * es, len * es).of(type);
          srcIdx[p] = steps.base / es + me * len;
        }
      }
      reducer.reduce(type, op, n, srcs, srcIdx, n, recv, off, len);
      off += len;
    } while (off < count);
    return route.movement((long) count * es * n);
  }
}
