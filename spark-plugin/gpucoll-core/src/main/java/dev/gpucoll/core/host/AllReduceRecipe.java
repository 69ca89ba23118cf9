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
    long bytes = (long) count * es;
    boolean twoShot = route.twoShot(bytes);
    int per = twoShot ? Math.max(n, steps.maxPayload() / es) : Math.max(1, steps.maxPayload() / es);
    int off = 0;
    do {
      int len = Math.min(per, count - off);
      if (twoShot) {
        twoShot(sig, send, recv, off, len, type, op);
      } else {
        HostBuffers.copy(steps.open(len * es).of(type), steps.base / es, send, off, len);
        steps.exchange(C, sig);
        for (int p = 0; p < n; p++) {
          srcs[p] = steps.peer(C, p, 0, len * es).of(type);
          srcIdx[p] = steps.base / es;
        }
        reducer.reduce(type, op, n, srcs, srcIdx, n, recv, off, len);
      }
      off += len;
    } while (off < count);
    return route.allReduce(bytes);
  }

  private void twoShot(Signature sig, Buffer send, Buffer recv, int off, int len, DataType type, ReduceOp op) {
    int n = steps.ranks;
    int me = steps.rank;
    int es = type.byteSize();
    int lo = slice(len, me);
    int hi = slice(len, me + 1);
    // Step 1: everyone publishes the chunk but its own slice (no peer reads that); each rank
    // reduces its own slice, taking its own contribution straight from the send buffer.
    Buffer out = steps.open(len * es).of(type);
    int at = steps.base / es;
    HostBuffers.copy(out, at, send, off, lo);
    HostBuffers.copy(out, at + hi, send, off + hi, len - hi);
    steps.exchange(C, sig);
    for (int p = 0; p < n; p++) {
      if (p == me) {
        srcs[p] = send;
        srcIdx[p] = off + lo;
      } else {
        srcs[p] = steps.peer(C, p, lo * es, (hi - lo) * es).of(type);
        srcIdx[p] = steps.base / es + lo;
      }
    }
    reducer.reduce(type, op, n, srcs, srcIdx, n, recv, off + lo, hi - lo);
    // Step 2: everyone publishes its reduced slice; each rank gathers the others'.
    HostBuffers.copy(steps.open((hi - lo) * es).of(type), steps.base / es, recv, off + lo, hi - lo);
    steps.exchange(C, sig);
    for (int p = 0; p < n; p++) {
      if (p != me) {
        int plo = slice(len, p);
        int phi = slice(len, p + 1);
        Buffer in = steps.peer(C, p, 0, (phi - plo) * es).of(type);
        HostBuffers.copy(recv, off + plo, in, steps.base / es, phi - plo);
      }
    }
  }

  private int slice(int len, int r) {
    return (int) ((long) len * r / steps.ranks);
  }
}
