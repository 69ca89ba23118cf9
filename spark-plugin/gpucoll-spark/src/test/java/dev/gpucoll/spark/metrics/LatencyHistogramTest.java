package dev.gpucoll.spark.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.spark.GroupReport;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

class LatencyHistogramTest {

  @Test
  void sizeClassesArePowersOfTwo() {
    assertEquals(0, LatencyHistogram.sizeClass(0));
    assertEquals(0, LatencyHistogram.sizeClass(1));
    assertEquals(1, LatencyHistogram.sizeClass(2));
    assertEquals(8, LatencyHistogram.sizeClass(256));
    assertEquals(9, LatencyHistogram.sizeClass(257));
    assertEquals(26, LatencyHistogram.sizeClass(64 << 20));
    assertEquals(63, LatencyHistogram.sizeClass(Long.MAX_VALUE));
    assertEquals(256, LatencyHistogram.sizeClassMaxBytes(8));
  }

  @Test
  void bucketsTileTheRangeWithoutGapsAndEachValueFallsInsideItsBucket() {
    for (int b = 0; b < LatencyHistogram.LATENCY_BUCKETS - 1; b++) {
      long low = LatencyHistogram.bucketLow(b);
      long next = LatencyHistogram.bucketLow(b + 1);
      assertTrue(next > low, "bucket " + b);
      assertEquals(b, LatencyHistogram.bucket(low), "low edge of " + b);
      assertEquals(b, LatencyHistogram.bucket(next - 1), "high edge of " + b);
      long mid = LatencyHistogram.bucketMiddle(b);
      assertTrue(mid >= low && mid < next, "middle of " + b);
      if (low >= 16) {
        assertTrue((next - low) * 8 <= low, "bucket " + b + " is at most 1/8 of its low edge wide");
      }
    }
    assertEquals(LatencyHistogram.LATENCY_BUCKETS - 1, LatencyHistogram.bucket(Long.MAX_VALUE));
    assertEquals(0, LatencyHistogram.bucket(-5));
  }

  @Test
  void quantilesAreWithinTheBucketErrorOfTheExactOnes() {
    Random rnd = new Random(7);
    LatencyHistogram h = new LatencyHistogram();
    long[] values = new long[10_000];
    for (int i = 0; i < values.length; i++) {
      values[i] = 5_000 + (long) (rnd.nextExponential() * 20_000);
      h.record("allGather", 4096, values[i]);
    }
    java.util.Arrays.sort(values);
    GroupReport.Latency row = h.rows().get(0);
    assertEquals(10_000, row.calls());
    assertEquals(4096, row.maxBytes());
    assertEquals(values[values.length - 1], row.maxNanos());
    assertClose(values[4_999], row.p50Nanos());
    assertClose(values[9_899], row.p99Nanos());
  }

  private static void assertClose(long exact, long read) {
    assertTrue(Math.abs(read - exact) <= exact / 16 + 1, "read " + read + ", exact " + exact);
  }

  @Test
  void cellsRoundTripThroughAdd() {
    LatencyHistogram a = new LatencyHistogram();
    a.record("allReduce", 8, 3_000);
    a.record("allReduce", 8, 3_100);
    a.record("broadcast", 1 << 20, 200_000);
    LatencyHistogram b = new LatencyHistogram();
    a.cells().forEach(b::add);
    assertEquals(a.cells(), b.cells());
    assertEquals(List.of("allReduce", "broadcast"), b.rows().stream().map(GroupReport.Latency::collective).toList());
    b.clear();
    assertTrue(b.cells().isEmpty());
  }

  @Test
  void aCellOutsideTheLayoutIsRefused() {
    assertThrows(IllegalArgumentException.class, () -> new LatencyHistogram.Cell("x", 64, 1, Map.of(1, 1L)));
    assertThrows(IllegalArgumentException.class, () -> new LatencyHistogram.Cell("x", 1, 1, Map.of(1, 0L)));
    assertThrows(IllegalArgumentException.class,
        () -> new LatencyHistogram.Cell("x", 1, 1, Map.of(LatencyHistogram.LATENCY_BUCKETS, 1L)));
  }
}
