package dev.gpucoll.core.host;

import dev.gpucoll.api.Collective;
import dev.gpucoll.core.host.UcxScratch.Slot;
import java.nio.ByteBuffer;

/**
 * A recipe of a {@link HostUcxCommunicator} collective (one class each: {@link LeaderAllReduce},
 * {@link LeaderAllGather}, {@link LeaderReduceScatter}, {@link LeaderAllToAll},
 * {@link LeaderAllToAllv}, {@link LeaderBroadcast}, {@link LeaderBarrier}): what each leader sends,
 * receives and reduces between the {@link LeaderFrame}'s open and close. This holds the group's
 * layout, as the frame sees it, and the steps several recipes share.
 */
abstract class LeaderRecipe {
  final LeaderFrame frame;
  final Reducer reducer;
  final int rank;
  final int size;
  /** Host index of each rank; hosts are numbered in the order of their lowest rank. */
  final int[] hostOf;
  /** The ranks of each host, ascending; the first is the host's leader. */
  final int[][] hostRanks;
  final int myHost;
  final int localRank;
  final boolean leader;
  final HostShmCommunicator local;
  final UcxScratch scratch;

  LeaderRecipe(LeaderFrame frame, Reducer reducer) {
    this.frame = frame;
    this.reducer = reducer;
    HostTopology topology = frame.topology();
    this.rank = frame.rank();
    this.hostOf = topology.hostOf();
    this.size = hostOf.length;
    this.hostRanks = topology.hostRanks();
    this.myHost = hostOf[rank];
    this.localRank = topology.localIndex(rank);
    this.leader = localRank == 0;
    this.local = frame.local();
    this.scratch = frame.scratch();
  }

  /**
   * A leader's first round after {@link #open}: this host's gathered frame data ({@code bytes} per
   * rank) to every other leader; returns theirs by host (null at this host) and sets the verdict.
   */
  ByteBuffer[] exchangeGathered(Collective c, LeaderFrame.Call f, long bytes) {
    ByteBuffer[] out = new ByteBuffer[hostRanks.length];
    ByteBuffer[] in = new ByteBuffer[hostRanks.length];
    for (int g = 0; g < hostRanks.length; g++) {
      if (g != myHost) {
        out[g] = f.gathered;
        in[g] = scratch.get(Slot.IN, g, hostRanks[g].length * bytes);
      }
    }
    f.verdict = frame.round(c, UcxLeaders.KIND_DATA1, f.header, out, in);
    return in;
  }

  /**
   * The leaders' exchange of fixed blocks (reduceScatter, allToAll): to leader g go, for each rank
   * of this host, its blocks for g's ranks; from g come, for each of g's ranks, its blocks for this
   * host's ranks, in a streamed round when {@code streamed}. Returns {out, in} by host.
   */
  ByteBuffer[][] blockRound(Collective c, LeaderFrame.Call f, long block, boolean streamed) {
    int hosts = hostRanks.length;
    int mine = hostRanks[myHost].length;
    ByteBuffer[] out = new ByteBuffer[hosts];
    ByteBuffer[] in = new ByteBuffer[hosts];
    for (int g = 0; g < hosts; g++) {
      if (g == myHost) {
        continue;
      }
      int ng = hostRanks[g].length;
      // A one-rank host's blocks for a host of consecutive ranks lie together in its input.
      ByteBuffer o = mine == 1 ? inPlace(f.gathered, g, block) : null;
      if (o == null) {
        o = scratch.get(Slot.OUT, g, mine * ng * block);
        for (int l = 0; l < mine; l++) {
          for (int j = 0; j < ng; j++) {
            LeaderFrame.copyBytes(f.gathered, (l * size + hostRanks[g][j]) * block, o, (l * ng + j) * block, block);
          }
        }
      }
      out[g] = o;
      in[g] = scratch.get(Slot.IN, g, ng * mine * block);
    }
    // allToAll streams (its one-rank hosts' recipe does, and every leader must take the same round).
    f.verdict = streamed ? frame.streamedRound(c, UcxLeaders.KIND_DATA1, f.header, out, in, null)
        : frame.round(c, UcxLeaders.KIND_DATA1, f.header, out, in);
    return new ByteBuffer[][] {out, in};
  }

  /**
   * Where host g's ranks' {@code bytes} each lie in a result of every rank's, by rank: a range of
   * {@code result} when g's ranks are consecutive (then they are gathered and received there, with
   * no assembly), else null.
   */
  ByteBuffer inPlace(ByteBuffer result, int g, long bytes) {
    int[] ranks = hostRanks[g];
    return consecutive(g) ? LeaderFrame.range(result, ranks[0] * bytes, ranks.length * bytes) : null;
  }

  /** True when host g's ranks are consecutive (its part of a by-rank result is one range). */
  boolean consecutive(int g) {
    int[] ranks = hostRanks[g];
    return ranks[ranks.length - 1] - ranks[0] == ranks.length - 1;
  }

  static int indexOf(int[] a, int v) {
    return HostTopology.indexOf(a, v);
  }
}
