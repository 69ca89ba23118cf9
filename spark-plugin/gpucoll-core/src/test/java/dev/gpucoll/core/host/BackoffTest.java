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
}
