package dev.gpucoll.core.host;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.core.Algorithm;
import dev.gpucoll.core.buffers.HostBuffers;
import java.nio.Buffer;

/**
 * allReduce over flat steps, in chunks of one step's payload: one-shot (every rank publishes its
 * chunk and reduces all of them) or two-shot (each rank reduces its slice of the chunk, then every
 * rank gathers the slices), as {@link HostRoute#twoShot} decides. Both fold ranks 0..n-1 in order,
 * so every rank and both algorithms give the same bits.
 */
final class AllReduceRecipe {
  private static final Collective C = Collective.ALL_REDUCE;
  private final Steps steps;
  private final HostRoute route;
  private final Reducer reducer;
  private final Buffer[] srcs;
  private final int[] srcIdx;

  AllReduceRecipe(Steps steps, HostRoute route, Reducer reducer) {
    this.steps = steps;
    this.route = route;
    this.reducer = reducer;
    this.srcs = new Buffer[steps.ranks];
    this.srcIdx = new int[steps.ranks];
  }

  Algorithm run(Signature sig, Buffer send, Buffer recv, int count, DataType type, ReduceOp op) {
    int n = steps.ranks;
    int es = type.byteSize();
    boolean twoShot = route.twoShot((long) count * es);
    int per = Math.max(twoShot ? n : 1, steps.maxPayload() / es);
    int off = 0;
    do {
      int len = Math.min(per, count - off);
      // One-shot: every rank's whole chunk, every rank reduces it. Two-shot: each rank reduces its
      // slice [lo, hi) (its own part straight from send, so it publishes all but that slice), then
      // publishes the reduced slice and gathers the others'.
      int lo = twoShot ? slice(len, steps.rank) : 0;
      int hi = twoShot ? slice(len, steps.rank + 1) : len;
      Buffer out = steps.open(len * es).of(type);
      HostBuffers.copy(out, steps.base / es, send, off, twoShot ? lo : len);
      HostBuffers.copy(out, steps.base / es + hi, send, off + hi, twoShot ? len - hi : 0);
      steps.exchange(C, sig);
      for (int p = 0; p < n; p++) {
        srcs[p] = twoShot && p == steps.rank ? send : steps.peer(C, p, lo * es, (hi - lo) * es).of(type);
        srcIdx[p] = twoShot && p == steps.rank ? off + lo : steps.base / es + lo;
      }
      reducer.reduce(type, op, n, srcs, srcIdx, n, recv, off + lo, hi - lo);
      if (twoShot) {
        HostBuffers.copy(steps.open((hi - lo) * es).of(type), steps.base / es, recv, off + lo, hi - lo);
        steps.exchange(C, sig);
        for (int p = 0; p < n; p++) {
          if (p != steps.rank) {
            int plo = slice(len, p);
            int phi = slice(len, p + 1);
            HostBuffers.copy(recv, off + plo, steps.peer(C, p, 0, (phi - plo) * es).of(type), steps.base / es,
                phi - plo);
          }
        }
      }
      off += len;
    } while (off < count);
    return route.allReduce((long) count * es);
  }

  private int slice(int len, int r) {
    return (int) ((long) len * r / steps.ranks);
  }
}
