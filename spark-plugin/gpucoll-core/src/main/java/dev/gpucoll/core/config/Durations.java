package dev.gpucoll.core.config;

import java.time.Duration;
import java.util.Locale;

/**
 * Durations as people read them, in the form of Spark's UI ("120 ms", "1.5 s", "30 s", "2.0 min",
 * "1.2 h"), extended below a millisecond ("850 ns", "12.5 us") for collective latencies. The one
 * formatter for durations in messages, reports and the UI tab; never {@code Duration.toString}'s
 * "PT2M".
 */
public final class Durations {
  private Durations() {}

  public static String format(Duration d) {
    return d == null ? "-" : format(d.toNanos());
  }

  /** {@code nanos} (saturated at Long.MAX_VALUE by the caller, as Duration.toNanos does). */
  public static String format(long nanos) {
    if (nanos < 0) {
      return "-" + format(nanos == Long.MIN_VALUE ? Long.MAX_VALUE : -nanos);
    }
    if (nanos < 1_000) {
      return nanos + " ns";
    }
    if (nanos < 1_000_000) {
      double us = nanos / 1e3;
      return us < 100 ? fixed(us, 1) + " us" : fixed(us, 0) + " us";
    }
    long ms = nanos / 1_000_000;
    if (ms < 10) {
      return fixed(nanos / 1e6, 1) + " ms";
    }
    if (ms < 100) {
      return ms + " ms";
    }
    double s = ms / 1e3;
    if (s < 1) {
      return fixed(s, 1) + " s";
    }
    if (s < 60) {
      return fixed(s, 0) + " s";
    }
    double min = s / 60;
    if (min < 10) {
      return fixed(min, 1) + " min";
    }
    if (min < 60) {
      return fixed(min, 0) + " min";
    }
    return fixed(min / 60, 1) + " h";
  }

  private static String fixed(double v, int decimals) {
    return String.format(Locale.ROOT, "%." + decimals + "f", v);
  }
}
