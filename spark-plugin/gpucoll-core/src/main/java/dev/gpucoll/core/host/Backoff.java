package dev.gpucoll.core.host;

import dev.gpucoll.core.wait.HostCores;
import java.util.concurrent.locks.LockSupport;

/**
 * How a rank waits, the one wait policy of the host backend: for a peer's flag in shared memory,
 * and for a message from another host (a leader driving UCX's progress, {@link #expectRemote}):
 * spin (Thread.onSpinWait) for a budget, then yield, then park with a doubling sleep. Spinning wins when every rank has its own core. When the host's
 * ranks outnumber its cores, the peer a rank waits for is often ready to run on this very core:
 * then the rank does not spin at all and yields at every look (sched_yield hands the core to the
 * peer at once, and returns at once when nobody else wants it), as Open MPI does when
 * oversubscribed; a park, by contrast, sleeps a timer slice (50 us and more) after the peer is done.
 */
final class Backoff {
  /**
   * Spin budget before yielding for small messages. Short, because when two ranks share a core
   * (more ranks than cores, or a loaded machine) every wait costs about twice this budget; with a
   * core per rank a small message arrives well within it.
   */
  static final long SPIN_NANOS = 10_000;
  /**
   * Longest spin budget, for steps moving large chunks: the peer legitimately takes tens of
   * microseconds to copy one, and a rank that yields then may lose its core for a whole time
   * slice on a loaded machine.
   */
  static final long MAX_SPIN_NANOS = 200_000;
  /**
   * How long a wait yields before it parks: long enough that a peer delayed by the scheduler (a
   * few time slices) is met by a yield, short enough that a rank whose peer is busy elsewhere for
   * seconds soon stops asking for the core.
   */
  static final long YIELD_NANOS = 20_000_000;
  /**
   * Spin budget of a wait for another host, for calls up to {@link #REMOTE_LARGE_BYTES}: long, as
   * MPI's busy polling, since a message from another host takes tens of microseconds and a rank
   * that yields on a busy machine loses its core for a scheduler time slice (measured: 8 B
   * allReduce 25 us spinning, 140-170 us with a 50 us budget at load 28 on 2 cores).
   */
  static final long REMOTE_SPIN_NANOS = 2_000_000;
  /**
   * Spin budget of a wait for another host in a larger call: its waits are long anyway, and a
   * spinning rank takes the CPU that the kernel's TCP stack and the peer's reduction need
   * (measured: 1 MB allReduce 5 ms with a 50 us budget, 16-84 ms with 2 ms).
   */
  static final long REMOTE_LARGE_SPIN_NANOS = 50_000;
  static final long REMOTE_LARGE_BYTES = 64 << 10;
  /**
   * Least spin budget of a wait for another host. Where waits for other hosts keep outlasting
   * their spin, the peer this rank waits for is not running, and most likely needs this very core
   * (simulated hosts on one machine, an oversubscribed host): spinning on only delays it (measured:
   * 3 simulated hosts on 2 cores, 8 B calls 4-8 ms with a fixed 2 ms budget, against 0.9-1.6 ms for
   * the calls that spun 50 us). So every {@link #REMOTE_SLOW_STREAK} waits in a row that had to
   * yield halve the budget, down to this, and a wait met only after more than half its budget
   * doubles it again: where a message arrives within the spin, as on a host with a core per rank,
   * the budget stays; a loaded machine that now and then holds a peer up does not shrink it
   * (measured: shrinking at every yielding wait left 2 simulated hosts at load 16 with 80 us medians
   * at 8 B, 13 us with 2 ms). A wait met sooner says nothing for a longer spin: where the group's
   * ranks outnumber the cores, waits met within 20 us doubled a budget at the floor back to 2 ms
   * within a few calls, whose waits that did outlast it then spun 2 ms on a core a peer needed
   * (measured: 3 simulated hosts on 2 cores, calls of 4-6 ms for hundreds of calls against 0.2-0.3
   * ms at the floor).
   */
  static final long REMOTE_MIN_SPIN_NANOS = 20_000;
  /** Waits in a row that had to yield before the learnt budget halves. */
  static final int REMOTE_SLOW_STREAK = 4;
  /**
   * Every this many calls, on every leader at the same calls (by their numbers), the learnt budget
   * is put to a trial ({@link #REMOTE_TRIAL_CALLS}). Beside other work on the cores a budget at its
   * floor holds itself: every wait yields the core to that work, so the peer's waits outlast their
   * spin too and no wait is met while spinning (measured: 2 simulated hosts on 2 cores beside a
   * compiler, 8 B calls 100 us at the floor against 15-26 us with a 2 ms spin, Open MPI 16 us). A
   * 2 ms budget can hold itself as wrongly where the group's ranks outnumber the cores (3 simulated
   * hosts on 2 cores): a leader whose peers are mostly there when it looks meets most waits at once,
   * so 4 slow waits in a row are rare, while each wait that does outlast it spins 2 ms on the core a
   * peer needs (measured: one of 3 leaders kept 2 ms for 6000 calls, 94 % of its waits met within 20
   * us, at 400-2000 us a call against 180-210 us once every leader was at the floor).
   */
  static final long REMOTE_RESTART_CALLS = 4096;
  /**
   * The trial: the first this many calls of every {@link #REMOTE_RESTART_CALLS} (from the first)
   * spin at most {@link #REMOTE_MIN_SPIN_NANOS}, the next as many up to {@link #REMOTE_SPIN_NANOS}
   * (no wait learns meanwhile), and the budget then starts from the floor when its calls took at
   * most {@link #REMOTE_FLOOR_WINS} of the spinning calls' time, else from the top. Spinning calls
   * that have already taken {@link #REMOTE_SPIN_GIVES_UP} times the floor's whole half stop
   * spinning at once (measured: 3 simulated hosts on 2 cores, every leader spinning 2 ms, 4-6 ms a
   * call against 0.3 ms at the floor). Every leader times the same calls of one collective, whose
   * period is the group's, so they choose alike.
   */
  static final long REMOTE_TRIAL_CALLS = 128;
  /** The floor wins a trial when its calls took at most this share of the spinning calls' time. */
  static final double REMOTE_FLOOR_WINS = 0.8;
  /** A trial's spinning half ends early once it took this many times the floor's half. */
  static final long REMOTE_SPIN_GIVES_UP = 2;
  /** Longest sleep between checks: a chunked large message waits many times per call. */
  private static final long MAX_PARK_NANOS = 100_000;

  /** More ranks on this host than cores: waits never spin, they yield from the first look. */
  private final boolean oversubscribed;
  private long start;
  private long spinNanos;
  /** The learnt spin budget of waits for other hosts ({@link #expectRemote}, {@link #remoteWaitDone}). */
  private long remoteBudget = REMOTE_SPIN_NANOS;
  /** True once the wait in progress has gone past its spin. */
  private boolean yielded;
  /** Waits for other hosts in a row that had to yield. */
  private int slowStreak;
  /** The call in progress moves more than {@link #REMOTE_LARGE_BYTES}. */
  private boolean largeCall;
  private long parkNanos;
  private int calls;
  /** The call in progress is one of a trial's: its waits teach nothing. */
  private boolean trial;
  /** When the trial's present half began (System.nanoTime), and how long its floor's half took. */
  private long trialStart;
  private long floorHalfNanos;

  /** How a wait that has gone on for a while looks next. */
  enum Step { SPIN, YIELD, PARK }

  /**
   * @param ranksOnHost threads of the group on this host that wait: its ranks, twice over for Python
   *     tasks (each one's process waits while its executor runs the call)
   * @param cores the host's cores ({@link #hostCores})
   */
  Backoff(int ranksOnHost, int cores) {
    this.oversubscribed = HostCores.oversubscribed(ranksOnHost, cores);
    this.spinNanos = oversubscribed ? 0 : SPIN_NANOS;
  }

  /** The host's online CPUs ({@link HostCores#online}). */
  static int hostCores() {
    return HostCores.online();
  }


  /** Sets the spin budget for the next waits from the bytes a step moves (about 2 bytes / ns). */
  void expectBytes(long bytes) {
    spinNanos = oversubscribed ? 0 : Math.min(MAX_SPIN_NANOS, SPIN_NANOS + bytes / 2);
  }

  /**
   * Sets the spin budget for the waits of call {@code call} (numbered from 1, the same on every
   * leader) on another host, from the bytes the call moves; the budget holds however many ranks
   * share this host (the wait is for the network, not for them). Every
   * {@link #REMOTE_RESTART_CALLS} calls, from the first, the learnt budget is put to a trial.
   */
  void expectRemote(long call, long bytes) {
    expectRemote(call, bytes, System.nanoTime());
  }

  /** {@link #expectRemote(long, long)} at time {@code now} (System.nanoTime): the policy, apart from the clock. */
  void expectRemote(long call, long bytes, long now) {
    long phase = (call - 1) % REMOTE_RESTART_CALLS;
    if (phase == 0) {
      trialStart = now;
      remoteBudget = REMOTE_MIN_SPIN_NANOS;
    } else if (phase == REMOTE_TRIAL_CALLS) {
      floorHalfNanos = now - trialStart;
      trialStart = now;
      remoteBudget = REMOTE_SPIN_NANOS;
    } else if (phase > REMOTE_TRIAL_CALLS && phase < 2 * REMOTE_TRIAL_CALLS
        && now - trialStart > REMOTE_SPIN_GIVES_UP * floorHalfNanos) {
      remoteBudget = REMOTE_MIN_SPIN_NANOS; // the spinning half lost already
    } else if (phase == 2 * REMOTE_TRIAL_CALLS) {
      boolean floorWins = remoteBudget == REMOTE_MIN_SPIN_NANOS
          || floorHalfNanos <= REMOTE_FLOOR_WINS * (now - trialStart);
      remoteBudget = floorWins ? REMOTE_MIN_SPIN_NANOS : REMOTE_SPIN_NANOS;
      slowStreak = 0;
    }
    trial = phase < 2 * REMOTE_TRIAL_CALLS;
    largeCall = bytes > REMOTE_LARGE_BYTES;
    spinNanos = Math.min(remoteBudget, largeCall ? REMOTE_LARGE_SPIN_NANOS : REMOTE_SPIN_NANOS);
  }

  /**
   * A wait for another host ended: {@link #REMOTE_SLOW_STREAK} in a row that had to go past their
   * spin halve the learnt budget, one met after more than half of it doubles it (within
   * [{@link #REMOTE_MIN_SPIN_NANOS}, {@link #REMOTE_SPIN_NANOS}]). The waits of large calls teach
   * nothing: they spin {@link #REMOTE_LARGE_SPIN_NANOS} at most and outlast it as the data flows, so
   * they would shrink the small calls' budget whatever the peer does; nor do a trial's.
   */
  void remoteWaitDone() {
    boolean slow = yielded;
    yielded = false;
    if (!largeCall && !trial) {
      learnRemote(slow, start == 0 ? 0 : System.nanoTime() - start);
    }
  }

  /**
   * The learnt budget after a wait of a small call outside a trial that went past its spin
   * ({@code slow}) or was met after {@code waitedNanos}: the policy, apart from the clock.
   */
  void learnRemote(boolean slow, long waitedNanos) {
    if (!slow) {
      slowStreak = 0;
      if (2 * waitedNanos > remoteBudget) {
        remoteBudget = Math.min(REMOTE_SPIN_NANOS, remoteBudget * 2);
      }
    } else if (++slowStreak >= REMOTE_SLOW_STREAK) {
      slowStreak = 0;
      remoteBudget = Math.max(REMOTE_MIN_SPIN_NANOS, remoteBudget / 2);
    }
  }

  /** The spin budget the next wait for another host of a small call starts with. */
  long remoteBudget() {
    return remoteBudget;
  }

  boolean oversubscribed() {
    return oversubscribed;
  }

  /** Starts a wait. */
  Backoff begin() {
    start = 0;
    calls = 0;
    parkNanos = 5_000;
    return this;
  }

  /**
   * Waits a little. Returns false once {@code deadline} (System.nanoTime) has passed. Every 64th
   * call returns with {@link #slowCheckDue()} true so the caller can look at the peer's state.
   */
  boolean pause(long deadline) {
    calls++;
    if ((calls & 15) != 0 && start != 0 && System.nanoTime() - start < spinNanos) {
      Thread.onSpinWait();
      return true;
    }
    long now = System.nanoTime();
    if (start == 0) {
      start = now;
    }
    if (now - deadline > 0) {
      return false;
    }
    switch (step(now - start)) {
      case SPIN -> Thread.onSpinWait();
      case YIELD -> {
        yielded = true;
        Thread.yield();
      }
      case PARK -> {
        yielded = true;
        LockSupport.parkNanos(parkNanos);
        parkNanos = Math.min(parkNanos * 2, MAX_PARK_NANOS);
      }
    }
    return true;
  }

  /** What a wait does after {@code waitedNanos}: the policy, apart from the clock. */
  Step step(long waitedNanos) {
    if (waitedNanos < spinNanos) {
      return Step.SPIN;
    }
    return waitedNanos < YIELD_NANOS ? Step.YIELD : Step.PARK;
  }

  boolean slowCheckDue() {
    return (calls & 63) == 0;
  }
}
