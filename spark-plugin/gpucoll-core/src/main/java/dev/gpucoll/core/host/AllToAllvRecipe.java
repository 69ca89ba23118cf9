package dev.gpucoll.core.host;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CollectiveMismatchException;
import dev.gpucoll.api.DataType;
import dev.gpucoll.core.Algorithm;
import dev.gpucoll.core.buffers.HostBuffers;
import java.nio.Buffer;
import java.nio.LongBuffer;

/**
 * allToAllv over flat steps. Step 1: every rank publishes its send and receive counts, and every
 * rank checks the whole matrix alike (a mismatch fails everywhere before data moves). Then rounds
 * of one block of up to {@code per} elements per pair: round k moves elements [k * per, +per) of
 * every pair, each block at a fixed stride so a reader finds its own without knowing the others
 * (over the relay that pads every block to the largest count: the relay is the slow fallback).
 */
final class AllToAllvRecipe {
  private static final Collective C = Collective.ALL_TO_ALLV;
  private final Steps steps;
  private final HostRoute route;

  AllToAllvRecipe(Steps steps, HostRoute route) {
    this.steps = steps;
    this.route = route;
  }

  Algorithm run(Signature sig, Buffer send, int[] sendCounts, int[] sendDispls, Buffer recv, int[] recvCounts,
      int[] recvDispls, DataType type) {
    int n = steps.ranks;
    int me = steps.rank;
    LongBuffer out = (LongBuffer) steps.open(16 * n).of(DataType.INT64);
    for (int q = 0; q < n; q++) {
      out.put(steps.base / 8 + q, sendCounts[q]);
      out.put(steps.base / 8 + n + q, recvCounts[q]);
    }
    steps.exchange(C, sig);
    long[][] sends = new long[n][n];
    long[][] recvs = new long[n][n];
    for (int p = 0; p < n; p++) {
      LongBuffer in = (LongBuffer) steps.peer(C, p, 0, 16 * n).of(DataType.INT64);
      for (int q = 0; q < n; q++) {
        sends[p][q] = in.get(steps.base / 8 + q);
        recvs[p][q] = in.get(steps.base / 8 + n + q);
      }
    }
    long maxEntry = 0;
    for (int p = 0; p < n; p++) {
      for (int q = 0; q < n; q++) {
        if (sends[p][q] != recvs[q][p]) {
          throw new CollectiveMismatchException(me, C, "rank " + p + " sends " + sends[p][q]
              + " elements to rank " + q + " but rank " + q + " expects " + recvs[q][p] + " from rank " + p);
        }
        maxEntry = Math.max(maxEntry, sends[p][q]);
      }
    }
    int es = type.byteSize();
    int per = (int) Math.min(maxEntry, Math.max(1, steps.maxPayload() / (es * n)));
    for (long start = 0; start < maxEntry; start += per) {
      Buffer o = steps.open(per * es * n).of(type);
      int at = steps.base / es;
      for (int q = 0; q < n; q++) {
        int len = (int) Math.max(0, Math.min(per, sendCounts[q] - start));
        HostBuffers.copy(o, at + q * per, send, (int) (sendDispls[q] + start), len);
      }
      steps.exchange(C, sig);
      for (int p = 0; p < n; p++) {
        int len = (int) Math.max(0, Math.min(per, recvCounts[p] - start));
        if (len > 0) {
          Buffer in = steps.peer(C, p, me * per * es, len * es).of(type);
          HostBuffers.copy(recv, (int) (recvDispls[p] + start), in, steps.base / es + me * per, len);
        }
      }
    }
    return route.movement((long) per * es * n);
  }
}
