package dev.gpucoll.cuda.check.spark;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * The data of the distributed hash join in {@link CudfGpuCheck} and its one-process reference,
 * in plain Java (no cuDF): each rank's share of a build table (key, value, id) and a probe table
 * (key, value) is regenerated from a seed, so the driver can join all of it in one process and
 * compare the row multiset with what the ranks joined after their shuffle.
 */
final class JoinReference {
  private JoinReference() {}

  /** One rank's share of both tables, as cuDF columns are built from it. */
  record Share(long[] buildKey, double[] buildValue, int[] buildId, long[] probeKey, long[] probeValue) {}

  /**
   * Rank {@code rank}'s rows: keys drawn from {@code [0, keys)} (so keys repeat within and across
   * ranks and the join has many-to-many matches), values unique to the rank and row.
   */
  static Share share(long seed, int rank, int buildRows, int probeRows, long keys) {
    SplittableRandom rnd = new SplittableRandom(seed * 1_000_003L + rank);
    long[] bk = new long[buildRows];
    double[] bv = new double[buildRows];
    int[] bid = new int[buildRows];
    for (int i = 0; i < buildRows; i++) {
      bk[i] = rnd.nextLong(keys);
      bv[i] = rank + i / (double) (buildRows + 1);
      bid[i] = rank * buildRows + i;
    }
    long[] pk = new long[probeRows];
    long[] pv = new long[probeRows];
    for (int i = 0; i < probeRows; i++) {
      pk[i] = rnd.nextLong(keys);
      pv[i] = ((long) rank << 40) | i;
    }
    return new Share(bk, bv, bid, pk, pv);
  }

  /** A joined row as 4 longs: key, build value (double bits), build id, probe value. */
  static final int ROW_LONGS = 4;

  /** The inner join on key of every rank's share, in one process: rows sorted (see {@link #sortRows}). */
  static long[] join(List<Share> shares) {
    Map<Long, List<Integer>> buildByKey = new HashMap<>();
    List<long[]> build = new ArrayList<>(); // {key, value bits, id}
    for (Share s : shares) {
      for (int i = 0; i < s.buildKey().length; i++) {
        buildByKey.computeIfAbsent(s.buildKey()[i], k -> new ArrayList<>()).add(build.size());
        build.add(new long[] {s.buildKey()[i], Double.doubleToRawLongBits(s.buildValue()[i]), s.buildId()[i]});
      }
    }
    int rows = 0;
    for (Share s : shares) {
      for (long k : s.probeKey()) {
        rows += buildByKey.getOrDefault(k, List.of()).size();
      }
    }
    long[] out = new long[Math.multiplyExact(rows, ROW_LONGS)];
    int at = 0;
    for (Share s : shares) {
      for (int i = 0; i < s.probeKey().length; i++) {
        for (int b : buildByKey.getOrDefault(s.probeKey()[i], List.of())) {
          long[] br = build.get(b);
          out[at++] = br[0];
          out[at++] = br[1];
          out[at++] = br[2];
          out[at++] = s.probeValue()[i];
        }
      }
    }
    return sortRows(out);
  }

  /** Sorts rows of {@link #ROW_LONGS} longs lexicographically (a canonical form of the multiset). */
  static long[] sortRows(long[] rows) {
    int n = rows.length / ROW_LONGS;
    Integer[] order = new Integer[n];
    for (int i = 0; i < n; i++) {
      order[i] = i;
    }
    Arrays.sort(order, (a, b) -> {
      for (int c = 0; c < ROW_LONGS; c++) {
        int cmp = Long.compare(rows[a * ROW_LONGS + c], rows[b * ROW_LONGS + c]);
        if (cmp != 0) {
          return cmp;
        }
      }
      return 0;
    });
    long[] out = new long[rows.length];
    for (int i = 0; i < n; i++) {
      System.arraycopy(rows, order[i] * ROW_LONGS, out, i * ROW_LONGS, ROW_LONGS);
    }
    return out;
  }

  /** Rows as text for a report line (base64 of little-endian longs). */
  static String encode(long[] rows) {
    ByteBuffer b = ByteBuffer.allocate(rows.length * 8).order(ByteOrder.LITTLE_ENDIAN);
    b.asLongBuffer().put(rows);
    return Base64.getEncoder().encodeToString(b.array());
  }

  static long[] decode(String text) {
    ByteBuffer b = ByteBuffer.wrap(Base64.getDecoder().decode(text)).order(ByteOrder.LITTLE_ENDIAN);
    long[] out = new long[b.remaining() / 8];
    b.asLongBuffer().get(out);
    return out;
  }

  /**
   * Compares the union of the ranks' joined rows with the reference; null when the multisets are
   * equal, else the first difference.
   */
  static String compare(long[] reference, List<long[]> perRank) {
    int total = perRank.stream().mapToInt(r -> r.length).sum();
    long[] all = new long[total];
    int at = 0;
    for (long[] r : perRank) {
      System.arraycopy(r, 0, all, at, r.length);
      at += r.length;
    }
    long[] got = sortRows(all);
    if (got.length != reference.length) {
      return "the ranks joined " + got.length / ROW_LONGS + " rows, the one-process join has "
          + reference.length / ROW_LONGS;
    }
    for (int i = 0; i < got.length; i += ROW_LONGS) {
      if (!Arrays.equals(got, i, i + ROW_LONGS, reference, i, i + ROW_LONGS)) {
        return "sorted row " + i / ROW_LONGS + " differs: got " + Arrays.toString(Arrays.copyOfRange(got, i,
            i + ROW_LONGS)) + ", the one-process join has " + Arrays.toString(Arrays.copyOfRange(reference, i,
            i + ROW_LONGS));
      }
    }
    return null;
  }

  /** Keys whose joined rows appear on more than one rank (a hash shuffle sends each key to one rank). */
  static List<Long> keysOnSeveralRanks(List<long[]> perRank) {
    Map<Long, Integer> owner = new HashMap<>();
    List<Long> out = new ArrayList<>();
    for (int r = 0; r < perRank.size(); r++) {
      long[] rows = perRank.get(r);
      for (int i = 0; i < rows.length; i += ROW_LONGS) {
        Integer prev = owner.putIfAbsent(rows[i], r);
        if (prev != null && prev != r && !out.contains(rows[i])) {
          out.add(rows[i]);
        }
      }
    }
    return out;
  }
}
