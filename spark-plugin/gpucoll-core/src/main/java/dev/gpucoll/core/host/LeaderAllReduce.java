package dev.gpucoll.core.host;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.core.Algorithm;
import dev.gpucoll.core.buffers.HostBuffers;
import dev.gpucoll.core.host.UcxScratch.Slot;
import java.nio.Buffer;
import java.nio.ByteBuffer;

/**
 * allReduce across hosts over the {@link LeaderFrame}. Reductions combine the raw inputs of ranks
 * 0..n-1 in rank order with the same {@link Reducer} as the shared-memory path, so the results are
 * bit-identical to a one-host group and equal on every rank (leaders move raw inputs, never partial
 * sums of their host: those would change the order of floating-point additions). One-shot (small):
 * every leader gets every host's inputs and reduces the whole vector. Two-shot (larger): leader h
 * reduces slice h of the vector from every host's inputs, then the leaders exchange the reduced
 * slices (pairwise, so each link carries each byte once per phase, as a ring would, with one round
 * trip per phase).
 */
final class LeaderAllReduce extends LeaderRecipe {
  LeaderAllReduce(LeaderFrame frame, Reducer reducer) {
    super(frame, reducer);
  }

  /** allReduce by {@code algo}, as {@link HostRoute} chose: one-shot, pipelined two-shot or halving. */
  void run(Signature sig, String problem, Buffer send, Buffer recv, int count, DataType type, ReduceOp op,
      Algorithm algo) {
    Collective c = Collective.ALL_REDUCE;
    int es = problem == null ? type.byteSize() : 0;
    long bytes = (long) count * es;
    LeaderFrame.Call f = frame.open(c, sig, problem, bytes, send, type);
    ByteBuffer result = scratch.get(Slot.RESULT, bytes);
    if (leader && f.ok()) {
      if (algo == Algorithm.HOST_UCX_ONESHOT) {
        ByteBuffer[] in = exchangeGathered(c, f, bytes);
        if (f.verdict == null) {
          reduceRanks(type, op, f.gathered, in, bytes, 0, count, result, 0);
        }
      } else {
        // Halving: the two-shot's data in one message per slice and phase, a leader's rendezvous
        // once per phase instead of once per chunk; the reduction then no longer overlaps the transfer.
        int chunk = algo == Algorithm.HOST_UCX_HALVING ? Math.max(1, count) : Math.max(1, LeaderFrame.CHUNK_BYTES / es);
        twoShot(c, f, type, op, count, chunk, result);
      }
    }
    frame.close(f, result, bytes);
    if (f.ok()) {
      HostBuffers.copy(recv, 0, HostBuffers.typedView(result, type), 0, count);
    }
  }

  /**
   * Two-shot allReduce on a leader, pipelined: leader h reduces slice h of the vector, in chunks of
   * {@code chunk} elements; every chunk of every host's inputs is in flight at once, and
   * each reduced chunk goes to the other leaders as soon as it is reduced, while later chunks still
   * arrive (one pass over each link per phase, as a ring would, with the reduction overlapped).
   */
  private void twoShot(Collective c, LeaderFrame.Call f, DataType type, ReduceOp op, int count, int chunk,
      ByteBuffer result) {
    int hosts = hostRanks.length;
    int mine = hostRanks[myHost].length;
    int es = type.byteSize();
    long bytes = (long) count * es;
    int lo = slice(count, myHost, hosts);
    int len = slice(count, myHost + 1, hosts) - lo;
    int myChunks = (len + chunk - 1) / chunk;
    ByteBuffer[][] out1 = new ByteBuffer[hosts][];
    ByteBuffer[][] in1 = new ByteBuffer[hosts][];
    ByteBuffer[][] in2 = new ByteBuffer[hosts][];
    for (int g = 0; g < hosts; g++) {
      if (g == myHost) {
        continue;
      }
      int ng = hostRanks[g].length;
      int glo = slice(count, g, hosts);
      int glen = slice(count, g + 1, hosts) - glo;
      int gChunks = (glen + chunk - 1) / chunk;
      // To g: chunk j of slice g from each of this host's ranks, chunk after chunk (rank-major within
      // one); a host of one rank sends straight from its input.
      ByteBuffer packed = mine == 1 ? f.gathered : scratch.get(Slot.OUT, g, (long) mine * glen * es);
      out1[g] = new ByteBuffer[gChunks];
      in2[g] = new ByteBuffer[gChunks];
      long at = mine == 1 ? (long) glo * es : 0;
      for (int j = 0; j < gChunks; j++) {
        int jlen = Math.min(chunk, glen - j * chunk);
        for (int i = 0; i < mine && mine > 1; i++) {
          LeaderFrame.copyBytes(f.gathered, i * bytes + (long) (glo + j * chunk) * es, packed, at + (long) i * jlen * es,
              (long) jlen * es);
        }
        out1[g][j] = LeaderFrame.range(packed, at, (long) mine * jlen * es);
        at += (long) mine * jlen * es;
        in2[g][j] = LeaderFrame.range(result, (long) (glo + j * chunk) * es, (long) jlen * es);
      }
      // From g: chunk j of this host's slice from each of g's ranks.
      ByteBuffer from = scratch.get(Slot.IN, g, (long) ng * len * es);
      in1[g] = new ByteBuffer[myChunks];
      at = 0;
      for (int j = 0; j < myChunks; j++) {
        int jlen = Math.min(chunk, len - j * chunk);
        in1[g][j] = LeaderFrame.range(from, at, (long) ng * jlen * es);
        at += (long) ng * jlen * es;
      }
    }
    ByteBuffer[] chunkIn = new ByteBuffer[hosts];
    f.verdict = frame.pipelinedRound(c, f.header, out1, in1, in2, myChunks, j -> {
      int jlo = lo + j * chunk;
      int jlen = Math.min(chunk, len - j * chunk);
      for (int g = 0; g < hosts; g++) {
        chunkIn[g] = g == myHost ? null : in1[g][j];
      }
      reduceSlice(type, op, f.gathered, bytes, (long) jlo * es, chunkIn, jlen, result, jlo);
      return LeaderFrame.range(result, (long) jlo * es, (long) jlen * es);
    });
  }

  /**
   * Reduces elements [0, count) from every rank's input in rank order into dst: this host's from
   * {@code gathered}, the others' from {@code in[host]}.
   */
  private void reduceRanks(DataType type, ReduceOp op, ByteBuffer gathered, ByteBuffer[] in, long bytes, int from,
      int count, ByteBuffer dst, int dstIdx) {
    Buffer[] srcs = new Buffer[size];
    int[] idx = new int[size];
    int es = type.byteSize();
    for (int r = 0; r < size; r++) {
      int g = hostOf[r];
      int i = indexOf(hostRanks[g], r);
      srcs[r] = HostBuffers.typedView(g == myHost ? gathered : in[g], type);
      idx[r] = (int) ((i * bytes) / es + from);
    }
    reducer.reduce(type, op, size, srcs, idx, size, HostBuffers.typedView(dst, type), dstIdx, count);
  }

  /** Two-shot: reduces this host's slice (elements [lo, lo+len)) into dst at lo. */
  private void reduceSlice(DataType type, ReduceOp op, ByteBuffer gathered, long bytes, long loBytes, ByteBuffer[] in,
      int len, ByteBuffer dst, int lo) {
    Buffer[] srcs = new Buffer[size];
    int[] idx = new int[size];
    int es = type.byteSize();
    for (int r = 0; r < size; r++) {
      int g = hostOf[r];
      int i = indexOf(hostRanks[g], r);
      if (g == myHost) {
        srcs[r] = HostBuffers.typedView(gathered, type);
        idx[r] = (int) ((i * bytes + loBytes) / es);
      } else {
        srcs[r] = HostBuffers.typedView(in[g], type);
        idx[r] = i * len;
      }
    }
    reducer.reduce(type, op, size, srcs, idx, size, HostBuffers.typedView(dst, type), lo, len);
  }

  private static int slice(int count, int h, int hosts) {
    return (int) ((long) count * h / hosts);
  }
}
