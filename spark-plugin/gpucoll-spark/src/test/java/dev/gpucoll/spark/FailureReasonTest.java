package dev.gpucoll.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** A failed rank's reason as the report and the tab show it: each message once, bounded. */
class FailureReasonTest {

  @Test
  void causesThatRepeatTheirWrapperAreLeftOut() {
    assertEquals("rank 1 stops: disk full",
        GpuCollectives.failureReason(new RuntimeException("rank 1 stops: disk full",
            new IllegalStateException("disk full"))));
    assertEquals("job failed; caused by: rank 0 did not arrive within 30 s",
        GpuCollectives.failureReason(new RuntimeException("job failed",
            new IllegalStateException("rank 0 did not arrive within 30 s"))));
    assertEquals("java.lang.IllegalStateException", GpuCollectives.failureReason(new IllegalStateException()));
    assertEquals("the task failed without an exception", GpuCollectives.failureReason(null));
  }

  @Test
  void aLongReasonIsCut() {
    String r = GpuCollectives.failureReason(new RuntimeException("x".repeat(5000)));
    assertEquals(GpuCollectives.MAX_REASON_CHARS, r.length());
    assertTrue(r.endsWith("..."));
  }
}
