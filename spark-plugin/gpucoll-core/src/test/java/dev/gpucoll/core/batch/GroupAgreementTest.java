package dev.gpucoll.core.batch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CollectiveBatch;
import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.CollectiveMismatchException;
import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.InvalidArgumentException;
import dev.gpucoll.api.ReduceOp;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/** The verdict of group()'s agreement from every rank's words, the same on every rank, in its order of precedence. */
class GroupAgreementTest {
  private static final CommBuffer BUF = CommBuffer.of(new float[4]);

  private static Consumer<CollectiveBatch> calls(int n) {
    return g -> {
      for (int i = 0; i < n; i++) {
        g.allReduce(BUF, BUF, 4, DataType.FLOAT32, ReduceOp.SUM);
      }
    };
  }

  /** Each rank's proposal, then every rank's verdict over all their words (null: the batch runs). */
  private static List<Throwable> verdicts(List<GroupAgreement.Proposal> ranks) {
    long[] all = new long[GroupAgreement.WORDS * ranks.size()];
    for (int r = 0; r < ranks.size(); r++) {
      System.arraycopy(ranks.get(r).words(), 0, all, GroupAgreement.WORDS * r, GroupAgreement.WORDS);
    }
    List<Throwable> out = new ArrayList<>();
    for (int r = 0; r < ranks.size(); r++) {
      try {
        GroupAgreement.agree(r, ranks.get(r), mine -> all, t -> new CollectiveException(0, null, "exchange failed"));
        out.add(null);
      } catch (Throwable t) {
        out.add(t);
      }
    }
    return out;
  }

  private static GroupAgreement.Proposal proposal(Consumer<CollectiveBatch> body, int refuse) {
    int[] index = {0};
    return GroupAgreement.propose(() -> RecordedBatch.record(body), call -> index[0]++ == refuse
        ? new InvalidArgumentException(0, call.collective(), "recv buffer holds 3 elements") : null);
  }

  @Test
  void theSameBatchOnEveryRankRuns() {
    assertEquals(java.util.Arrays.asList(null, null, null),
        verdicts(List.of(proposal(calls(2), -1), proposal(calls(2), -1), proposal(calls(2), -1))));
  }

  @Test
  void aBodyThatThrewFailsEveryRankNamingItAndReachesItsOwnCallerUnchanged() {
    IllegalStateException own = new IllegalStateException("the body's own");
    List<Throwable> v = verdicts(List.of(proposal(calls(1), 0),
        proposal(g -> {
          throw own;
        }, -1), proposal(calls(2), -1)));
    assertSame(own, v.get(1));
    for (int r : new int[] {0, 2}) {
      assertTrue(v.get(r).getMessage().contains("rank 1's group() body threw"), v.get(r).getMessage());
    }
  }

  @Test
  void differentBatchesAreAMismatchBeforeAnyRefusal() {
    List<Throwable> v = verdicts(List.of(proposal(calls(1), 0), proposal(calls(2), -1)));
    for (Throwable t : v) {
      assertTrue(t instanceof CollectiveMismatchException, String.valueOf(t));
      assertTrue(t.getMessage().contains("rank 0: 1 call, rank 1: 2 calls"), t.getMessage());
    }
  }

  @Test
  void aRefusalFailsEveryRankNamingTheCallAndTheRankThatRefused() {
    List<Throwable> v = verdicts(List.of(proposal(calls(2), -1), proposal(calls(2), 1)));
    assertTrue(v.get(1) instanceof InvalidArgumentException, String.valueOf(v.get(1)));
    assertTrue(v.get(1).getMessage().contains("call 2 of the 2 in this group() was refused, so none of them ran:"
        + " recv buffer holds 3 elements"), v.get(1).getMessage());
    assertEquals(Collective.ALL_REDUCE, ((CollectiveException) v.get(0)).collective());
    assertTrue(v.get(0).getMessage().contains("call 2 of the 2") && v.get(0).getMessage().contains(
        "rank 1 refused its arguments"), v.get(0).getMessage());
  }

  @Test
  void aFailedExchangeIsTheFailuresErrorOrAddedToTheBodysOwn() {
    CollectiveException failed = new CollectiveException(0, null, "exchange failed");
    GroupAgreement.Exchange broken = mine -> {
      throw new IllegalStateException("transport");
    };
    assertSame(failed, assertThrows(CollectiveException.class,
        () -> GroupAgreement.agree(0, proposal(calls(1), -1), broken, t -> failed)));
    IllegalStateException own = new IllegalStateException("the body's own");
    GroupAgreement.Proposal threw = proposal(g -> {
      throw own;
    }, -1);
    assertSame(own, assertThrows(IllegalStateException.class, () -> GroupAgreement.agree(0, threw, broken, t -> failed)));
    assertSame(failed, own.getSuppressed()[0]);
  }
}
