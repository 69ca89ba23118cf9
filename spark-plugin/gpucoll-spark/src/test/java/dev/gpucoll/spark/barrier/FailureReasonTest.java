package dev.gpucoll.spark.barrier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** A failed rank's reason as the report and the tab show it: each message once, bounded. */
class FailureReasonTest {

  @Test
  void causesThatRepeatTheirWrapperAreLeftOut() {
    assertEquals("rank 1 stops: disk full",
        RankReports.failureReason(new RuntimeException("rank 1 stops: disk full",
            new IllegalStateException("disk full"))));
    assertEquals("job failed; caused by: rank 0 did not arrive within 30 s",
        RankReports.failureReason(new RuntimeException("job failed",
            new IllegalStateException("rank 0 did not arrive within 30 s"))));
    assertEquals("java.lang.IllegalStateException", RankReports.failureReason(new IllegalStateException()));
    assertEquals("the task failed without an exception", RankReports.failureReason(null));
  }

  @Test
  void aFailedCollectiveIsNamedByTheUsersCallOrdinal() {
    RuntimeException e = new RuntimeException("task failed", new dev.gpucoll.api.CollectiveException(1,
        dev.gpucoll.api.Collective.ALL_REDUCE, "rank 2 gave up on the group"));
    assertEquals("in allReduce, the task's collective call 10: task failed; caused by: rank 1, allReduce: rank 2"
        + " gave up on the group", RankReports.failureReason(e, 9));
    // Not a collective's failure (the user's own exception, or the group's setup): no ordinal.
    assertEquals("rank 1 stops on purpose", RankReports.failureReason(new IllegalStateException("rank 1 stops on purpose"), 9));
    assertEquals("rank 0, communicator setup: no backend", RankReports.failureReason(
        new dev.gpucoll.api.CollectiveException(0, null, "no backend"), 0));
  }

  @Test
  void aLongReasonIsCut() {
    String r = RankReports.failureReason(new RuntimeException("x".repeat(5000)));
    assertEquals(RankReports.MAX_REASON_CHARS, r.length());
    assertTrue(r.endsWith("..."));
  }
}
