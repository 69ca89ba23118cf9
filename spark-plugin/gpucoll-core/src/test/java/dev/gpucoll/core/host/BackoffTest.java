package dev.gpucoll.core.host;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.gpucoll.core.host.Backoff.Step;
import org.junit.jupiter.api.Test;

/** The wait policy: what a wait does after waiting so long, with and without a core per rank. */
class BackoffTest {
  /** A call after the trial that opens every {@link Backoff#REMOTE_RESTART_CALLS} calls: its waits learn. */
  private static final long LEARNING_CALL = 2 * Backoff.REMOTE_TRIAL_CALLS + 2;

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
    b.expectRemote(LEARNING_CALL, 8);
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
    b.expectRemote(LEARNING_CALL, 8);
    assertEquals(Step.YIELD, b.step(Backoff.REMOTE_MIN_SPIN_NANOS));
    // Waits met within half the budget say nothing for a longer spin; those that needed most of it grow it.
    for (int i = 0; i < 20; i++) {
      b.learnRemote(false, Backoff.REMOTE_MIN_SPIN_NANOS / 2);
    }
    assertEquals(Backoff.REMOTE_MIN_SPIN_NANOS, b.remoteBudget());
    for (int i = 0; i < 20; i++) {
      b.learnRemote(false, b.remoteBudget() * 3 / 4);
    }
    assertEquals(Backoff.REMOTE_SPIN_NANOS, b.remoteBudget());
    b.expectRemote(LEARNING_CALL, 1 << 20);
    assertEquals(Step.YIELD, b.step(Backoff.REMOTE_LARGE_SPIN_NANOS));
  }

  /**
   * Large calls' waits (past their short spin as the data flows) leave the small calls' budget
   * alone; a budget at its floor is put to a trial at every leader's same call.
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
    b.expectRemote(Backoff.REMOTE_RESTART_CALLS, 8);
    assertEquals(Backoff.REMOTE_MIN_SPIN_NANOS, b.remoteBudget());
    // The trial: its floor's half, then its spinning half.
    b.expectRemote(Backoff.REMOTE_RESTART_CALLS + 1, 8);
    assertEquals(Backoff.REMOTE_MIN_SPIN_NANOS, b.remoteBudget());
    b.expectRemote(Backoff.REMOTE_RESTART_CALLS + 1 + Backoff.REMOTE_TRIAL_CALLS, 8);
    assertEquals(Backoff.REMOTE_SPIN_NANOS, b.remoteBudget());
    assertEquals(Step.SPIN, b.step(Backoff.REMOTE_MIN_SPIN_NANOS));
  }

  /**
   * A leader at the floor whose waits are mostly met at once and now and then outlast the spin (3
   * simulated hosts on 2 cores) stays there: met waits that did not need the spin do not grow it
   * (they once took it back to 2 ms within a few calls).
   */
  @Test
  void waitsMetAtOnceDoNotGrowTheSpin() {
    Backoff b = new Backoff(1, 2);
    shrinkToFloor(b);
    for (int i = 0; i < 400; i++) {
      b.learnRemote(i % 16 == 0, 5_000);
    }
    assertEquals(Backoff.REMOTE_MIN_SPIN_NANOS, b.remoteBudget());
  }

  /**
   * The trial every {@link Backoff#REMOTE_RESTART_CALLS} calls: where spinning 2 ms runs the calls
   * no slower than the floor (or faster: beside other work on the cores a budget at its floor holds
   * itself), the budget starts again from 2 ms.
   */
  @Test
  void aTrialKeepsTheSpinWhereItIsNotSlower() {
    assertEquals(Backoff.REMOTE_SPIN_NANOS, afterTrial(new Backoff(1, 2), 1, 100_000, 20_000));
    assertEquals(Backoff.REMOTE_SPIN_NANOS, afterTrial(new Backoff(1, 2), 1, 20_000, 20_000));
    // Not clearly faster at the floor: a tie keeps the spin.
    assertEquals(Backoff.REMOTE_SPIN_NANOS, afterTrial(new Backoff(1, 2), 1, 90_000, 100_000));
  }

  /**
   * Where spinning slows the calls (the group's ranks outnumber the cores), the trial starts the
   * budget at the floor, at every trial; the spinning half stops spinning as soon as it has taken
   * twice the floor's time.
   */
  @Test
  void aTrialChoosesTheFloorWhereSpinningSlowsTheCalls() {
    Backoff b = new Backoff(1, 2);
    assertEquals(Backoff.REMOTE_MIN_SPIN_NANOS, afterTrial(b, 1, 190_000, 250_000));
    assertEquals(Step.YIELD, b.step(Backoff.REMOTE_MIN_SPIN_NANOS));
    assertEquals(Backoff.REMOTE_MIN_SPIN_NANOS,
        afterTrial(b, Backoff.REMOTE_RESTART_CALLS + 1, 200_000, 6_000_000));
    // Gives up: 2 x 128 floor calls of 200 us = 51.2 ms, reached after 9 spinning calls of 6 ms.
    long first = 2 * Backoff.REMOTE_RESTART_CALLS + 1;
    long t = 0;
    for (long call = first; call < first + Backoff.REMOTE_TRIAL_CALLS; call++, t += 200_000) {
      b.expectRemote(call, 8, t);
    }
    for (long call = first + Backoff.REMOTE_TRIAL_CALLS; call < first + Backoff.REMOTE_TRIAL_CALLS + 20; call++) {
      b.expectRemote(call, 8, t);
      long spun = call - first - Backoff.REMOTE_TRIAL_CALLS;
      assertEquals(spun <= 8 ? Backoff.REMOTE_SPIN_NANOS : Backoff.REMOTE_MIN_SPIN_NANOS, b.remoteBudget(),
          "after " + spun + " spinning calls");
      t += 6_000_000;
    }
  }

  /** During a trial no wait teaches the budget, whatever it met. */
  @Test
  void aTrialsWaitsTeachNothing() {
    Backoff b = new Backoff(1, 2);
    long t = 0;
    for (long call = 1; call <= 2 * Backoff.REMOTE_TRIAL_CALLS; call++, t += 10_000) {
      b.expectRemote(call, 8, t);
      long expected = call <= Backoff.REMOTE_TRIAL_CALLS ? Backoff.REMOTE_MIN_SPIN_NANOS : Backoff.REMOTE_SPIN_NANOS;
      assertEquals(expected, b.remoteBudget());
      if (call > Backoff.REMOTE_TRIAL_CALLS && call <= Backoff.REMOTE_TRIAL_CALLS + 2 * Backoff.REMOTE_SLOW_STREAK) {
        pastSpin(b, Backoff.REMOTE_SPIN_NANOS); // slow waits in a row, which would halve a learnt budget
      }
      b.remoteWaitDone();
      assertEquals(expected, b.remoteBudget());
    }
  }

  /**
   * Runs the trial that starts at call {@code first} (a multiple of the restart period, plus one),
   * its calls taking {@code floorCallNanos} each at the floor, then {@code spinCallNanos} with the
   * spin; returns the budget it chose.
   */
  private static long afterTrial(Backoff b, long first, long floorCallNanos, long spinCallNanos) {
    long t = 1_000_000_000L;
    long n = Backoff.REMOTE_TRIAL_CALLS;
    for (long call = first; call < first + 2 * n; call++) {
      b.expectRemote(call, 8, t);
      t += call < first + n ? floorCallNanos : spinCallNanos;
    }
    b.expectRemote(first + 2 * n, 8, t);
    return b.remoteBudget();
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
    b.expectRemote(LEARNING_CALL, bytes);
    pastSpin(b, spinNanos);
  }

  /** One wait of {@code b} (its call set), run until 64 looks after {@code spinNanos} (and a margin). */
  private static void pastSpin(Backoff b, long spinNanos) {
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
