package dev.gpucoll.core.batch;

import dev.gpucoll.api.CollectiveBatch;
import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.CollectiveMismatchException;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * The all-or-nothing agreement of {@code group()}, the one place that decides whether a batch runs,
 * for every backend and path. Each rank says three words: its batch's {@link RecordedBatch#signature}
 * and the first call it refuses (-1: none), or that its body threw; one exchange of the path's own
 * gives every rank every rank's words, and {@link #agree} turns them into the same verdict on every
 * rank before any call runs. A body that threw, a refused call or a batch that differs on one rank
 * fails every rank at once, naming it, and nothing has moved, so the group stays usable.
 */
public final class GroupAgreement {
  /** Words per rank in the exchange. */
  public static final int WORDS = 3;
  /** What a rank sends in place of a refused call's index when its group() body threw. */
  private static final long BODY_THREW = -2;

  private GroupAgreement() {}

  /** Every rank's {@code mine} ({@link #WORDS} longs), in rank order: one all-gather over the path's own channel. */
  @FunctionalInterface
  public interface Exchange {
    long[] allGather(long[] mine);
  }

  /**
   * This rank's side of one group().
   *
   * @param batch what the body recorded; null when it threw
   * @param threw what the body threw, or null
   * @param refused the index of the first call this rank refuses, -1 when none
   * @param refusal that call's error from its own method's checks, null when none
   */
  public record Proposal(RecordedBatch batch, Throwable threw, int refused, CollectiveException refusal) {
    long[] words() {
      long[] sig = batch == null ? new long[2] : batch.signature();
      return new long[] {sig[0], sig[1], threw != null ? BODY_THREW : refused};
    }
  }

  /**
   * Records the batch ({@code record} runs the body; what it throws is kept, not raised) and checks
   * its calls in order with {@code check} (null: the call passes) up to the first it refuses.
   */
  public static Proposal propose(Supplier<RecordedBatch> record,
      Function<RecordedBatch.Call, CollectiveException> check) {
    RecordedBatch batch;
    try {
      batch = record.get();
    } catch (Throwable t) {
      return new Proposal(null, t, -1, null);
    }
    List<RecordedBatch.Call> calls = batch.calls();
    for (int i = 0; i < calls.size(); i++) {
      CollectiveException why = check.apply(calls.get(i));
      if (why != null) {
        return new Proposal(batch, null, i, why);
      }
    }
    return new Proposal(batch, null, -1, null);
  }

  /**
   * Exchanges this rank's words and returns when every rank's batch runs; otherwise throws the
   * same verdict's error on every rank: this rank's body's own error unchanged, then a peer's
   * body that threw, a batch that differs ({@link CollectiveMismatchException}), this rank's
   * refusal, a peer's refusal. An exchange that fails throws {@code failure}'s error (added to the
   * body's when the body threw too).
   */
  public static void agree(int rank, Proposal mine, Exchange exchange,
      Function<Throwable, CollectiveException> failure) {
    long[] gathered = null;
    try {
      gathered = exchange.allGather(mine.words());
    } catch (Throwable t) {
      CollectiveException e = failure.apply(t);
      if (mine.threw() == null) {
        throw e;
      }
      mine.threw().addSuppressed(e);
    }
    if (mine.threw() != null) {
      throw sneaky(mine.threw()); // what the body threw reaches its caller unchanged
    }
    int size = gathered.length / WORDS;
    for (int r = 0; r < size; r++) {
      if (gathered[WORDS * r + 2] == BODY_THREW) {
        throw new CollectiveException(rank, null, "rank " + r + "'s group() body threw (its error says what), so no"
            + " call of this group() ran on any rank");
      }
    }
    long[] signatures = new long[2 * size];
    for (int r = 0; r < size; r++) {
      signatures[2 * r] = gathered[WORDS * r];
      signatures[2 * r + 1] = gathered[WORDS * r + 1];
    }
    String mismatch = RecordedBatch.mismatch(signatures);
    if (mismatch != null) {
      throw new CollectiveMismatchException(rank, null, mismatch);
    }
    RecordedBatch batch = mine.batch();
    if (mine.refusal() != null) {
      throw batch.refused(rank, mine.refused(), mine.refusal());
    }
    for (int r = 0; r < size; r++) {
      int theirs = (int) gathered[WORDS * r + 2];
      if (theirs >= 0) {
        throw batch.refused(rank, theirs, new CollectiveException(rank, batch.calls().get(theirs).collective(),
            "rank " + r + " refused its arguments (its error says why)"));
      }
    }
  }

  /** Runs {@code body} on a fresh batch between {@code enter} and {@code leave} (a communicator's recording flag). */
  public static RecordedBatch recordBetween(Consumer<CollectiveBatch> body, Runnable enter, Runnable leave) {
    enter.run();
    try {
      return RecordedBatch.record(body);
    } finally {
      leave.run();
    }
  }

  /** Throws {@code t} as it is, checked or not. */
  @SuppressWarnings("unchecked")
  private static <T extends Throwable> RuntimeException sneaky(Throwable t) throws T {
    throw (T) t;
  }
}
