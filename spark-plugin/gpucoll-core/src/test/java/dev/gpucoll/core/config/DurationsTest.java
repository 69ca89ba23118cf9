package dev.gpucoll.core.config;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class DurationsTest {

  @Test
  void formatsAsSparksUiDoesAndBelowAMillisecond() {
    assertEquals("2.0 min", Durations.format(Duration.ofMinutes(2)));
    assertEquals("30 s", Durations.format(Duration.ofSeconds(30)));
    assertEquals("0.3 s", Durations.format(Duration.ofMillis(300)));
    assertEquals("42 ms", Durations.format(Duration.ofMillis(42)));
    assertEquals("2.5 ms", Durations.format(2_500_000));
    assertEquals("12.5 us", Durations.format(12_500));
    assertEquals("250 us", Durations.format(250_000));
    assertEquals("850 ns", Durations.format(850));
    assertEquals("0 ns", Durations.format(0));
    assertEquals("15 min", Durations.format(Duration.ofMinutes(15)));
    assertEquals("1.5 h", Durations.format(Duration.ofMinutes(90)));
    assertEquals("-", Durations.format((Duration) null));
    assertEquals("-3 s", Durations.format(-3_000_000_000L));
  }
}
