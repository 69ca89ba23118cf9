package dev.gpucoll.core.host;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Which ranks share a host: hosts numbered in the order of their lowest rank, each host's ranks
 * ascending (the first is the host's leader).
 *
 * @param hostNames each host's name, by host index
 * @param hostRanks each host's ranks, ascending
 * @param hostOf each rank's host index
 */
record HostTopology(String[] hostNames, int[][] hostRanks, int[] hostOf) {
  HostTopology(String[] hostByRank) {
    this(names(hostByRank), ranks(hostByRank), new int[hostByRank.length]);
    for (int h = 0; h < hostRanks.length; h++) {
      for (int r : hostRanks[h]) {
        hostOf[r] = h;
      }
    }
  }

  private static Map<String, List<Integer>> byHost(String[] hostByRank) {
    Map<String, List<Integer>> byHost = new LinkedHashMap<>();
    for (int r = 0; r < hostByRank.length; r++) {
      byHost.computeIfAbsent(hostByRank[r], k -> new ArrayList<>()).add(r);
    }
    return byHost;
  }

  private static String[] names(String[] hostByRank) {
    return byHost(hostByRank).keySet().toArray(String[]::new);
  }

  private static int[][] ranks(String[] hostByRank) {
    return byHost(hostByRank).values().stream().map(l -> l.stream().mapToInt(Integer::intValue).toArray())
        .toArray(int[][]::new);
  }

  int hosts() {
    return hostRanks.length;
  }

  /** Position of rank {@code r} among its host's ranks. */
  int localIndex(int r) {
    return indexOf(hostRanks[hostOf[r]], r);
  }

  static int indexOf(int[] a, int v) {
    for (int i = 0; i < a.length; i++) {
      if (a[i] == v) {
        return i;
      }
    }
    throw new IllegalArgumentException(v + " not in " + Arrays.toString(a));
  }
}
