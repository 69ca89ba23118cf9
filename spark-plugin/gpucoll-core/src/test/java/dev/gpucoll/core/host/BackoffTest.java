package dev.gpucoll.core.host;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.gpucoll.core.host.Backoff.Step;
import org.junit.jupiter.api.Test;

/** The wait policy: what a wait does after waiting so long, with and without a core per rank. */
class BackoffTest {
  @Test
  void aCorePerRankSpinsFirstThenYieldsThenParks() {
    Backoff b = new Backoff(2, 2);
    assertEquals(Step.SPIN, b.step(0));
    assertEquals(Step.YIELD, b.step(Backoff.SPIN_NANOS));
    // A peer held up by the scheduler for a few time slices is met by a yield, not a timer sleep.
    assertEquals(Step.YIELD, b.step(5_000_000));
    assertEquals(Step.PARK, b.step(Backoff.YIELD_NANOS));
  }

  /** The host's cores, not this process's share: ranks bound one per core see one each. */
  @Test
  void coresAreTheHostsNotTheProcessShare() {
    assertEquals(true, Backoff.hostCores() >= Runtime.getRuntime().availableProcessors());
  }

  /** More ranks than cores: the peer may need this very core, so no wait spins. */
  @Test
  void moreRanksThanCoresYieldFromTheFirstLook() {
    Backoff b = new Backoff(3, 2);
    assertEquals(Step.YIELD, b.step(0));
    b.expectBytes(1 << 20);
    assertEquals(Step.YIELD, b.step(0));
    assertEquals(Step.YIELD, b.step(5_000_000));
    assertEquals(Step.PARK, b.step(Backoff.YIELD_NANOS));
  }

  /**
   * Waits for another host: waits that keep outlasting their spin (the peer is not running, maybe
   * on this very core) shrink the spin budget, waits met while spinning grow it back.
   */
  @Test
  void remoteWaitsLearnTheirSpinBudget() {
    Backoff b = new Backoff(1, 2);
    b.expectRemote(1, 8);
    assertEquals(Step.YIELD, b.step(Backoff.REMOTE_SPIN_NANOS));
    b.begin().pause(System.nanoTime() + 1_000_000_000L); // a wait met at once
    b.remoteWaitDone();
    assertEquals(Backoff.REMOTE_SPIN_NANOS, b.remoteBudget());
    // A machine that now and then holds a peer up keeps the budget.
    for (int i = 0; i < 3 * Backoff.REMOTE_SLOW_STREAK; i++) {
      if (i % Backoff.REMOTE_SLOW_STREAK == 0) {
        b.remoteWaitDone();
      } else {
        yieldOnce(b);
        b.remoteWaitDone();
      }
    }
    assertEquals(Backoff.REMOTE_SPIN_NANOS, b.remoteBudget());
    // Peers that are never running when waited for: the budget shrinks to its least.
    shrinkToFloor(b);
    assertEquals(Backoff.REMOTE_MIN_SPIN_NANOS, b.remoteBudget());
    b.expectRemote(1, 8);
    assertEquals(Step.YIELD, b.step(Backoff.REMOTE_MIN_SPIN_NANOS));
    for (int i = 0; i < 20; i++) {
      b.remoteWaitDone();
    }
    assertEquals(Backoff.REMOTE_SPIN_NANOS, b.remoteBudget());
    b.expectRemote(1, 1 << 20);
    assertEquals(Step.YIELD, b.step(Backoff.REMOTE_LARGE_SPIN_NANOS));
  }

  /**
   * Large calls' waits (past their short spin as the data flows) leave the small calls' budget
   * alone; a budget at its floor starts again from the top at every leader's same call.
   */
  @Test
  void largeCallsTeachNothingAndTheBudgetRestarts() {
    Backoff b = new Backoff(1, 2);
    for (int i = 0; i < 8 * Backoff.REMOTE_SLOW_STREAK; i++) {
      waitPastSpin(b, 1 << 20, Backoff.REMOTE_LARGE_SPIN_NANOS);
      b.remoteWaitDone();
    }
    assertEquals(Backoff.REMOTE_SPIN_NANOS, b.remoteBudget());
    shrinkToFloor(b);
    assertEquals(Backoff.REMOTE_MIN_SPIN_NANOS, b.remoteBudget());
    b.expectRemote(Backoff.REMOTE_RESTART_CALLS - 1, 8);
    assertEquals(Backoff.REMOTE_MIN_SPIN_NANOS, b.remoteBudget());
    b.expectRemote(Backoff.REMOTE_RESTART_CALLS, 8);
    assertEquals(Backoff.REMOTE_SPIN_NANOS, b.remoteBudget());
    assertEquals(Step.SPIN, b.step(Backoff.REMOTE_MIN_SPIN_NANOS));
  }

  /** Waits that all outlast their spin, enough of them to take the budget to its least. */
  private static void shrinkToFloor(Backoff b) {
    for (int i = 0; i < 8 * Backoff.REMOTE_SLOW_STREAK; i++) {
      yieldOnce(b);
      b.remoteWaitDone();
    }
  }

  /**
   * Runs one wait of {@code b} past its spin budget: 64 looks after the budget (and a margin for a
   * late first look) have passed, whatever the scheduler did meanwhile, so it yields at least once.
   */
  private static void yieldOnce(Backoff b) {
    waitPastSpin(b, 8, b.remoteBudget());
  }

  /** One wait of a call moving {@code bytes}, run until 64 looks after {@code spinNanos} (and a margin). */
  private static void waitPastSpin(Backoff b, long bytes, long spinNanos) {
    b.expectRemote(1, bytes);
    b.begin();
    long deadline = System.nanoTime() + 1_000_000_000L;
    long t0 = System.nanoTime();
    int looksAfterSpin = 0;
    while (looksAfterSpin < 64) {
      b.pause(deadline);
      if (System.nanoTime() - t0 > spinNanos + 1_000_000) {
        looksAfterSpin++;
      }
    }
  }
}
