package dev.gpucoll.spark.metrics;

import dev.gpucoll.spark.GroupReport;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Latency of one rank's calls per collective and message-size class, as counts, so the ranks'
 * histograms add up exactly on the driver and quantiles come from the merged counts.
 *
 * <p>Size classes are powers of two: class {@code b} holds {@code 2^(b-1) < bytes <= 2^b} (class 0
 * holds 0 and 1 byte). Latency buckets are log-linear: below 16 ns one bucket per nanosecond, above
 * eight per power of two, so a bucket is at most 1/8 of its lower edge wide and a quantile read
 * from its middle is within 6.25% of the exact one. The bucket layout is fixed, which bounds what a
 * rank reports: at most {@link #SIZE_CLASSES} cells per collective and {@link #LATENCY_BUCKETS}
 * counts per cell.
 *
 * <p>Internal: public for the other packages of gpucoll-spark, not for users.
 */
public final class LatencyHistogram {
  public static final int SIZE_CLASSES = 64;
  private static final int EXACT = 16;
  private static final int PER_OCTAVE = 8;
  /** 16 exact buckets, then octaves 2^4 .. 2^62 of eight buckets each. */
  public static final int LATENCY_BUCKETS = EXACT + (63 - 4) * PER_OCTAVE;

  /**
   * One (collective, size class) cell as it travels and is stored: non-zero bucket counts by
   * bucket index, and the largest latency seen (exact).
   */
  public record Cell(String collective, int sizeClass, long maxNanos, Map<Integer, Long> counts) {
    public Cell {
      if (sizeClass < 0 || sizeClass >= SIZE_CLASSES) {
        throw new IllegalArgumentException("latency cell of " + collective + ": size class " + sizeClass
            + " is outside 0.." + (SIZE_CLASSES - 1));
      }
      counts = new TreeMap<>(counts);
      for (Map.Entry<Integer, Long> e : counts.entrySet()) {
        if (e.getKey() < 0 || e.getKey() >= LATENCY_BUCKETS || e.getValue() <= 0) {
          throw new IllegalArgumentException("latency cell of " + collective + ": bucket " + e.getKey()
              + " with count " + e.getValue() + " (buckets 0.." + (LATENCY_BUCKETS - 1) + ", counts > 0)");
        }
      }
      counts = java.util.Collections.unmodifiableMap(counts);
    }
  }

  private static final class Counts {
    final long[] buckets = new long[LATENCY_BUCKETS];
    long maxNanos;
  }

  /** Collective -> size class -> counts (null until a call of that class ran). */
  private final Map<String, Counts[]> cells = new HashMap<>();

  static int sizeClass(long bytes) {
    return bytes <= 1 ? 0 : 64 - Long.numberOfLeadingZeros(bytes - 1);
  }

  /** The largest message of a size class, in bytes. */
  static long sizeClassMaxBytes(int sizeClass) {
    return sizeClass >= 63 ? Long.MAX_VALUE : 1L << sizeClass;
  }

  static int bucket(long nanos) {
    if (nanos < EXACT) {
      return (int) Math.max(0, nanos);
    }
    int octave = 63 - Long.numberOfLeadingZeros(nanos);
    int sub = (int) (nanos >>> (octave - 3)) & (PER_OCTAVE - 1);
    return EXACT + (octave - 4) * PER_OCTAVE + sub;
  }

  /** The smallest latency of a bucket. */
  static long bucketLow(int bucket) {
    if (bucket < EXACT) {
      return bucket;
    }
    int octave = 4 + (bucket - EXACT) / PER_OCTAVE;
    int sub = (bucket - EXACT) % PER_OCTAVE;
    return (long) (PER_OCTAVE + sub) << (octave - 3);
  }

  /** The middle of a bucket: what a quantile falling into it reads. */
  static long bucketMiddle(int bucket) {
    if (bucket < EXACT) {
      return bucket;
    }
    long low = bucketLow(bucket);
    long width = 1L << (4 + (bucket - EXACT) / PER_OCTAVE - 3);
    return low + width / 2;
  }

  public synchronized void record(String collective, long bytes, long nanos) {
    Counts c = counts(collective, sizeClass(bytes));
    c.buckets[bucket(nanos)]++;
    c.maxNanos = Math.max(c.maxNanos, nanos);
  }

  synchronized void clear() {
    cells.clear();
  }

  /** Adds a cell's counts (another rank's, from its report). */
  public synchronized void add(Cell cell) {
    Counts c = counts(cell.collective(), cell.sizeClass());
    cell.counts().forEach((b, n) -> c.buckets[b] += n);
    c.maxNanos = Math.max(c.maxNanos, cell.maxNanos());
  }

  private Counts counts(String collective, int sizeClass) {
    Counts[] bySize = cells.computeIfAbsent(collective, k -> new Counts[SIZE_CLASSES]);
    if (bySize[sizeClass] == null) {
      bySize[sizeClass] = new Counts();
    }
    return bySize[sizeClass];
  }

  /** The non-empty cells, by collective name then size class. */
  public synchronized List<Cell> cells() {
    List<Cell> out = new ArrayList<>();
    new TreeMap<>(cells).forEach((collective, bySize) -> {
      for (int s = 0; s < SIZE_CLASSES; s++) {
        Counts c = bySize[s];
        if (c == null) {
          continue;
        }
        Map<Integer, Long> nonZero = new TreeMap<>();
        for (int b = 0; b < LATENCY_BUCKETS; b++) {
          if (c.buckets[b] > 0) {
            nonZero.put(b, c.buckets[b]);
          }
        }
        if (!nonZero.isEmpty()) {
          out.add(new Cell(collective, s, c.maxNanos, nonZero));
        }
      }
    });
    return out;
  }

  /** One row per non-empty cell: calls, p50, p99 and max latency. */
  public List<GroupReport.Latency> rows() {
    List<GroupReport.Latency> out = new ArrayList<>();
    for (Cell c : cells()) {
      long calls = c.counts().values().stream().mapToLong(Long::longValue).sum();
      out.add(new GroupReport.Latency(c.collective(), sizeClassMaxBytes(c.sizeClass()), calls,
          quantile(c, calls, 0.50), quantile(c, calls, 0.99), c.maxNanos()));
    }
    return out;
  }

  /** The latency below which a fraction {@code q} of the cell's calls fall (bucket middle, at most the max). */
  static long quantile(Cell c, long calls, double q) {
    long rank = Math.max(1, (long) Math.ceil(q * calls));
    long seen = 0;
    for (Map.Entry<Integer, Long> e : c.counts().entrySet()) {
      seen += e.getValue();
      if (seen >= rank) {
        return Math.min(bucketMiddle(e.getKey()), c.maxNanos());
      }
    }
    return c.maxNanos();
  }
}
