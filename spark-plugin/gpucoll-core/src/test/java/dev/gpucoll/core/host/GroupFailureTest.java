package dev.gpucoll.core.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.CollectiveTimeoutException;
import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.core.wait.CallBounds;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Outcomes every rank agrees on: a late rank does not complete, overlapping receives are refused. */
class GroupFailureTest {

  /**
   * Rank 1 arrives after rank 0 gave up waiting for it. Rank 0's step header is there, so rank 1
   * used to complete the call while rank 0 failed; now the group is marked failed and rank 1 fails.
   */
  @Test
  void aRankArrivingAfterItsPeerGaveUpFailsInsteadOfCompleting() {
    List<Ranks.Outcome<String>> out = Ranks.run(2, Ranks.conf(), comm -> {
      float[] v = {1f};
      if (comm.rank() == 1) {
        Thread.sleep(1_000);
      } else {
        CallBounds.bind(Duration.ofMillis(200), null);
      }
      try {
        comm.allReduce(v, ReduceOp.SUM);
        return "completed with " + v[0];
      } catch (CollectiveException e) {
        return e.getClass().getSimpleName() + ": " + e.getMessage();
      } finally {
        CallBounds.unbind();
      }
    });
    List<String> results = Ranks.values(out);
    assertTrue(results.get(0).startsWith(CollectiveTimeoutException.class.getSimpleName())
        && results.get(0).contains("rank 1 did not arrive"), results.get(0));
    assertTrue(results.get(1).contains("rank 0 gave up on the group") && results.get(1).contains("unusable"),
        results.get(1));
    // Errors name the caller's call on the communicator (its first here), never an internal protocol step.
    for (String r : results) {
      assertTrue(r.contains("call 1") && !r.contains("step"), r);
    }
  }

  /**
   * An error the library does not raise itself: an InternalError (what the JVM raises for SIGBUS,
   * as when a tmpfs ran out of pages under a sparse segment) thrown inside rank 1's call, here by
   * a listener of its own. Rank 1 gets a CollectiveException whose causes hold no Error; the group
   * is marked failed, so the peers fail at once naming rank 1 and the error instead of waiting out
   * the timeout; later calls refuse; a new group forms.
   */
  @Test
  void anUnexpectedErrorInACallMarksTheGroupFailedOnEveryRank() {
    int n = 3;
    List<Ranks.Outcome<String>> out = Ranks.run(n, Ranks.conf(), comm -> {
      if (comm.rank() == 1) {
        comm.addListener((c, algorithm, bytes, nanos) -> {
          throw new InternalError("a fault occurred in an unsafe memory access operation");
        });
      }
      String first;
      try {
        comm.allReduce(new float[1 << 10], ReduceOp.SUM);
        first = "completed";
      } catch (CollectiveException e) {
        first = e.getMessage() + " | cause " + e.getCause();
        for (Throwable c = e; c != null; c = c.getCause()) {
          assertTrue(!(c instanceof Error), "an Error among the causes: " + c);
        }
      }
      long t0 = System.nanoTime();
      String next;
      try {
        comm.barrier();
        next = "later call ran";
      } catch (CollectiveException later) {
        next = later.getMessage();
      }
      long ms = (System.nanoTime() - t0) / 1_000_000;
      assertTrue(ms < 5_000, "the next call failed after " + ms + " ms, not at once: " + next);
      String unusable = ((dev.gpucoll.core.report.ReportingCommunicator) comm).unusableReason();
      return first + " | next: " + next + " | unusable: " + unusable;
    });
    List<String> results = Ranks.values(out);
    assertTrue(results.get(1).startsWith("rank 1, allReduce: unexpected java.lang.InternalError")
        && results.get(1).contains("cause dev.gpucoll.core.UnexpectedError: java.lang.InternalError"), results.get(1));
    // A peer completes the call (rank 1 failed after the data moved) or, arriving after rank 1
    // marked the group, fails it; either way its next call fails naming rank 1 and the error.
    for (int r : new int[] {0, 2}) {
      String next = results.get(r).substring(results.get(r).indexOf(" | next: "));
      assertTrue(next.contains("rank 1 gave up") && next.contains("InternalError"), results.get(r));
    }
    for (String r : results) {
      assertTrue(!r.contains("later call ran") && !r.contains("unusable: null"), r);
    }
    List<Integer> sums = Ranks.values(Ranks.run(n, Ranks.conf(), comm -> {
      int[] v = {1};
      comm.allReduce(v, ReduceOp.SUM);
      return v[0];
    }));
    assertEquals(List.of(n, n, n), sums, "a new group forms and works");
  }

  @Test
  void overlappingAllToAllvReceiveRangesFailOnEveryRank() {
    int n = 3;
    List<Ranks.Outcome<String>> out = Ranks.run(n, Ranks.conf(), comm -> {
      long[] ones = {1, 1, 1};
      long[] displs = {0, 1, 2};
      // Rank 2 would receive rank 0's and rank 1's element into the same slot.
      long[] recvDispls = comm.rank() == 2 ? new long[] {0, 0, 2} : displs;
      try {
        comm.allToAllv(CommBuffer.of(new int[3]), ones, displs, CommBuffer.of(new int[3]), ones, recvDispls,
            DataType.INT32);
        return "no error";
      } catch (CollectiveException e) {
        // The group still works afterwards: a bad argument is no failure of the group.
        int[] v = {1};
        comm.allReduce(v, ReduceOp.SUM);
        assertEquals(n, v[0]);
        return e.getMessage();
      }
    });
    for (String msg : Ranks.values(out)) {
      assertTrue(msg.contains("recvDispls/recvCounts overlap: the range from rank 0 [0, 1) and the range from rank 1"
          + " [0, 1) share elements"), msg);
    }
  }
}
