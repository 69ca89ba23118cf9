package dev.gpucoll.core.host;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.DataType;
import dev.gpucoll.core.buffers.HostBuffers;
import dev.gpucoll.core.host.UcxScratch.Slot;
import java.nio.Buffer;
import java.nio.ByteBuffer;
import java.nio.LongBuffer;
import java.util.Arrays;

/**
 * allToAllv across hosts over the {@link LeaderFrame}: the frame's data are each rank's send and
 * receive counts, so every leader holds the whole count matrix after the first round and checks it
 * alike; the packed sends follow in a second local gather and a second round.
 */
final class LeaderAllToAllv extends LeaderRecipe {
  LeaderAllToAllv(LeaderFrame frame, Reducer reducer) {
    super(frame, reducer);
  }

  void run(Signature sig, String problem, Buffer send, int[] sendCounts, int[] sendDispls, Buffer recv,
      int[] recvCounts, int[] recvDispls, DataType type) {
    Collective c = Collective.ALL_TO_ALLV;
    int es = problem == null ? type.byteSize() : 0;
    int mine = hostRanks[myHost].length;
    // The frame's data are this rank's counts; the packed sends follow in a second local gather.
    ByteBuffer counts = scratch.get(Slot.COUNTS, 16 * size);
    if (problem == null) {
      LongBuffer lc = counts.asLongBuffer();
      for (int q = 0; q < size; q++) {
        lc.put(q, sendCounts[q]);
        lc.put(size + q, recvCounts[q]);
      }
    }
    LeaderFrame.Call f = frame.open(c, sig, problem, 16 * size, problem == null ? counts.asLongBuffer() : null, DataType.INT64);
    long[][] sc = new long[size][];
    long[][] rc = new long[size][];
    long[] localSend = new long[mine];
    long[] localRecv = new long[mine];
    ByteBuffer packed = null;
    if (f.ok()) {
      for (int l = 0; l < mine; l++) {
        int r = hostRanks[myHost][l];
        readCounts(f.gathered.asLongBuffer(), l, r, sc, rc);
        localSend[l] = Arrays.stream(sc[r]).sum();
        localRecv[l] = Arrays.stream(rc[r]).sum();
      }
      long maxSend = Arrays.stream(localSend).max().orElse(0);
      // The packed send of this rank: its blocks in destination order, padded to the host's longest.
      ByteBuffer mineP = scratch.get(Slot.PACKED, (int) (maxSend * es));
      long at = 0;
      for (int q = 0; q < size; q++) {
        HostBuffers.copy(HostBuffers.typedView(mineP, type), (int) at, send, sendDispls[q], sendCounts[q]);
        at += sendCounts[q];
      }
      packed = frame.localGather(c, mineP, maxSend * es, Slot.GATHERED_V);
    }
    long resultBytes = Arrays.stream(localRecv).sum() * es;
    ByteBuffer result = scratch.get(Slot.RESULT, resultBytes);
    if (leader && f.ok()) {
      int hosts = hostRanks.length;
      // Round 1 carried the counts: every leader now holds the whole matrix and checks it alike.
      ByteBuffer[] in = exchangeGathered(c, f, 16 * size);
      if (f.verdict == null) {
        for (int g = 0; g < hosts; g++) {
          if (g != myHost) {
            for (int i = 0; i < hostRanks[g].length; i++) {
              readCounts(in[g].asLongBuffer(), i, hostRanks[g][i], sc, rc);
            }
          }
        }
        f.verdict = countsMismatch(sc, rc);
      }
      if (f.verdict == null) {
        long maxSend = Arrays.stream(localSend).max().orElse(0);
        ByteBuffer[] out2 = new ByteBuffer[hosts];
        ByteBuffer[] in2 = new ByteBuffer[hosts];
        for (int g = 0; g < hosts; g++) {
          if (g == myHost) {
            continue;
          }
          long total = 0;
          for (int l = 0; l < mine; l++) {
            for (int d : hostRanks[g]) {
              total += sc[hostRanks[myHost][l]][d];
            }
          }
          ByteBuffer o = scratch.get(Slot.OUT, g, (int) (total * es));
          long put = 0;
          for (int l = 0; l < mine; l++) {
            int src = hostRanks[myHost][l];
            for (int d : hostRanks[g]) {
              long off = offsetOf(sc[src], d);
              LeaderFrame.copyBytes(packed, (int) ((l * maxSend + off) * es), o, (int) (put * es), (int) (sc[src][d] * es));
              put += sc[src][d];
            }
          }
          out2[g] = o;
          long expect = 0;
          for (int s : hostRanks[g]) {
            for (int d : hostRanks[myHost]) {
              expect += sc[s][d];
            }
          }
          in2[g] = scratch.get(Slot.IN2, g, (int) (expect * es));
        }
        frame.round(c, UcxLeaders.KIND_DATA2, null, out2, in2);
        // Each local destination's packed receive: its blocks in source-rank order.
        long put = 0;
        for (int l = 0; l < mine; l++) {
          int d = hostRanks[myHost][l];
          for (int r = 0; r < size; r++) {
            int g = hostOf[r];
            long n = sc[r][d];
            if (g == myHost) {
              int i = indexOf(hostRanks[g], r);
              LeaderFrame.copyBytes(packed, (int) ((i * maxSend + offsetOf(sc[r], d)) * es), result, (int) (put * es), (int) (n * es));
            } else {
              // in2[g] holds, for each source of g in order, its blocks for this host's ranks in order.
              LeaderFrame.copyBytes(in2[g], (int) (blockAt(sc, hostRanks[g], hostRanks[myHost], r, d) * es), result,
                  (int) (put * es), (int) (n * es));
            }
            put += n;
          }
        }
      }
    }
    frame.close(f, result, resultBytes);
    if (f.ok()) {
      long from = 0;
      for (int l = 0; l < localRank; l++) {
        from += localRecv[l];
      }
      for (int r = 0; r < size; r++) {
        HostBuffers.copy(recv, recvDispls[r], HostBuffers.typedView(result, type), (int) from, recvCounts[r]);
        from += recvCounts[r];
      }
    }
  }

  /** Element offset of destination d's block in a rank's packed send. */
  private static long offsetOf(long[] sendCounts, int d) {
    long off = 0;
    for (int q = 0; q < d; q++) {
      off += sendCounts[q];
    }
    return off;
  }

  /** Element offset of the block src -> dest in a message holding, per source, its blocks per destination. */
  private static long blockAt(long[][] sc, int[] sources, int[] dests, int src, int dest) {
    long off = 0;
    for (int s : sources) {
      for (int d : dests) {
        if (s == src && d == dest) {
          return off;
        }
        off += sc[s][d];
      }
    }
    throw new IllegalStateException("no block " + src + " -> " + dest);
  }

  /** Rank {@code r}'s send and receive counts, entry {@code i} of a gathered count block (send counts, then receive counts). */
  private void readCounts(LongBuffer lc, int i, int r, long[][] sc, long[][] rc) {
    sc[r] = new long[size];
    rc[r] = new long[size];
    for (int q = 0; q < size; q++) {
      sc[r][q] = lc.get(i * 2 * size + q);
      rc[r][q] = lc.get(i * 2 * size + size + q);
    }
  }

  private static String countsMismatch(long[][] sc, long[][] rc) {
    for (int p = 0; p < sc.length; p++) {
      for (int q = 0; q < sc.length; q++) {
        if (sc[p][q] != rc[q][p]) {
          return "M" + "rank " + p + " sends " + sc[p][q] + " elements to rank " + q + " but rank " + q
              + " expects " + rc[q][p] + " from rank " + p;
        }
      }
    }
    return null;
  }
}
