package dev.gpucoll.spark.rpc;

import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.CollectiveTimeoutException;
import dev.gpucoll.core.config.Durations;
import dev.gpucoll.core.rendezvous.Rendezvous;
import dev.gpucoll.core.rendezvous.RendezvousLimits;
import dev.gpucoll.core.wait.CallBounds;
import dev.gpucoll.spark.rpc.RpcMessages.Arrive;
import dev.gpucoll.spark.rpc.RpcMessages.GiveUp;
import dev.gpucoll.spark.rpc.RpcMessages.Poll;
import dev.gpucoll.spark.rpc.RpcMessages.RoundState;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Rendezvous through the plugin's own RPC: each rank registers its payload with the driver's
 * {@link RendezvousService} and polls with short sleeps until every rank has arrived. One round
 * costs a few RPC round trips (milliseconds), where a {@code BarrierTaskContext.allGather} round
 * costs about a second. Every request is sealed with the job's {@link GroupCredential}, and only
 * answers sealed for that request are believed (an unsealed one only as a failure: the driver
 * refused the request).
 *
 * <p>Internal: public for the other packages of gpucoll-spark, not for users.
 */
public final class PluginRpcRendezvous implements Rendezvous {
  /**
   * Poll back-off. Peers of a barrier stage usually arrive within tens of milliseconds, so the
   * first 50 ms poll every millisecond at most (this ceiling bounds the last-arrival-to-ready
   * latency); longer waits (a slow or missing rank) back off to keep the driver's RPC threads free.
   */
  private static final long FIRST_SLEEP_NANOS = 100_000L;
  private static final long SHORT_WAIT_NANOS = 50_000_000L;
  private static final long SHORT_WAIT_MAX_SLEEP_NANOS = 1_000_000L;
  private static final long LONG_WAIT_MAX_SLEEP_NANOS = 10_000_000L;
  /**
   * A rank still waiting for others after this long says once which ones (peers usually come in
   * milliseconds: this tells a slow rank from a hang long before the timeout); half the timeout
   * when that is shorter.
   */
  public static final long WAIT_NOTICE_NANOS = 5_000_000_000L;

  private static final Logger LOG = LoggerFactory.getLogger(PluginName.CLASS);

  private final RpcChannel channel;
  private final GroupCredential credential;
  /** This rank's requests, numbered in the order they are sent (one at a time: the methods are synchronized). */
  private final Tickets.Sender stamps;
  private final String groupId;
  private final int rank;
  private final int size;
  private long nextRound;

  /**
   * The executor-to-driver ask(), abstracted so the protocol is testable without Spark. Both
   * ways carry {@link RpcMessages} wire bytes only (see there why).
   */
  @FunctionalInterface
  public interface RpcChannel {
    Object ask(byte[] message) throws Exception;
  }

  PluginRpcRendezvous(RpcChannel channel, GroupCredential credential, String groupId, int rank, int size) {
    this(channel, new Tickets(channel::ask), credential, groupId, rank, size);
  }

  /** With {@code tickets} shared by the executor's senders: one ticket request serves them all. */
  public PluginRpcRendezvous(RpcChannel channel, Tickets tickets, GroupCredential credential, String groupId,
      int rank, int size) {
    this.channel = channel;
    this.stamps = new Tickets.Sender(tickets);
    this.credential = credential;
    this.groupId = groupId;
    this.rank = rank;
    this.size = size;
  }

  @Override
  public String groupId() {
    return groupId;
  }

  @Override
  public int rank() {
    return rank;
  }

  @Override
  public int size() {
    return size;
  }

  @Override
  public String kind() {
    return KIND;
  }

  public static final String KIND = "spark-plugin-rpc";

  @Override
  public synchronized List<byte[]> allGather(byte[] payload, Duration timeout) {
    RendezvousLimits.check(groupId, rank, payload);
    long round = nextRound++;
    long start = System.nanoTime();
    long deadline = start + timeout.toNanos();
    RoundState state = ask(new Arrive(groupId, round, rank, size, payload,
        timeout.toMillis(), false), round);
    long sleep = FIRST_SLEEP_NANOS;
    // Spark's task kill and the thread's interrupt end the wait too (bound by the Spark layer).
    CallBounds bounds = CallBounds.current(timeout);
    long noticeAfter = Math.min(WAIT_NOTICE_NANOS, timeout.toNanos() / 2);
    boolean noticed = false;
    while (!state.complete() && state.failure() == null) {
      long now = System.nanoTime();
      if (!noticed && now - start >= noticeAfter) {
        noticed = true;
        LOG.info("gpucoll: rank {} of group {} has waited {} at rendezvous round {} for ranks {} of its {};"
            + " it gives up after {} (spark.gpucoll.timeout)", rank, groupId, Durations.format(now - start), round,
            state.missingRanks(), size, Durations.format(timeout.toNanos()));
      }
      if (now >= deadline) {
        state = ask(new GiveUp(groupId, round, rank,
            (now - start) / 1_000_000L), round);
        if (state.complete()) {
          break;
        }
        throw new CollectiveTimeoutException(rank, null, state.missingRanks(),
            "rendezvous round " + round + " of group " + groupId + ": ranks "
                + state.missingRanks() + " did not arrive within " + timeout.toMillis() + " ms");
      }
      LockSupport.parkNanos(Math.min(sleep, deadline - now));
      String cancelled = bounds.cancellation();
      if (cancelled != null) {
        throw new CollectiveException(rank, null, "cancelled (" + cancelled + ") while waiting for ranks "
            + state.missingRanks() + " at rendezvous round " + round + " of group " + groupId);
      }
      sleep = Math.min(sleep * 2, now - start < SHORT_WAIT_NANOS
          ? SHORT_WAIT_MAX_SLEEP_NANOS : LONG_WAIT_MAX_SLEEP_NANOS);
      state = ask(new Poll(groupId, round, rank), round);
    }
    if (state.failure() != null) {
      throw failure(state, round);
    }
    if (state.payloads().size() != size) {
      throw new CollectiveException(rank, null, "rendezvous round " + round + " of group "
          + groupId + " returned " + state.payloads().size() + " payloads for " + size + " ranks");
    }
    return state.payloads();
  }

  /**
   * Takes part in the next round without waiting for its outcome: for a rank whose decision does
   * not depend on the others' payloads (it has no cached communicator to offer, so the group
   * cannot reuse one). The others still see this rank's payload.
   */
  public synchronized void contribute(byte[] payload, Duration timeout) {
    RendezvousLimits.check(groupId, rank, payload);
    long round = nextRound++;
    RoundState state = ask(new Arrive(groupId, round, rank, size, payload,
        timeout.toMillis(), true), round);
    if (state.failure() != null) {
      throw failure(state, round);
    }
  }

  private CollectiveException failure(RoundState state, long round) {
    List<Integer> missing = state.missingRanks();
    if (missing.contains(rank)) {
      return new CollectiveTimeoutException(rank, null, missing, "rendezvous round " + round
          + ": this rank arrived after the others stopped waiting for ranks " + missing + " ("
          + state.failure() + ")");
    } else if (!missing.isEmpty()) {
      return new CollectiveTimeoutException(rank, null, missing, "rendezvous round " + round
          + ": ranks " + missing + " did not arrive in time (" + state.failure() + ")");
    }
    return new CollectiveException(rank, null, "rendezvous round " + round + " failed: "
        + state.failure());
  }

  private RoundState ask(Object message, long round) {
    Object reply;
    byte[] requestMac;
    try {
      RpcMessages.Sealed sealed = RpcMessages.seal(message, credential, stamps.next());
      requestMac = sealed.mac();
      reply = channel.ask(RpcMessages.encode(sealed));
    } catch (Exception e) {
      throw new CollectiveException(rank, null, "rendezvous round " + round + " of group "
          + groupId + ": RPC to the driver failed: " + e, e);
    }
    if (reply instanceof byte[] wire) {
      try {
        Object answer = RpcMessages.decode(wire);
        if (answer instanceof RpcMessages.Sealed s) {
          RoundState state = RpcMessages.openReply(s, credential, requestMac);
          if (state == null) {
            throw new CollectiveException(rank, null, "rendezvous round " + round + " of group "
                + groupId + ": the driver's answer fails this job's group credential");
          }
          return state;
        }
        if (answer instanceof RoundState s) {
          if (s.failure() != null) {
            return s; // the driver refused the request: its reason
          }
          throw new CollectiveException(rank, null, "rendezvous round " + round + " of group "
              + groupId + ": the driver's answer is not sealed with this job's group credential");
        }
      } catch (IllegalArgumentException e) {
        throw new CollectiveException(rank, null, "rendezvous round " + round + " of group "
            + groupId + ": unreadable answer from the driver: " + e.getMessage(), e);
      }
    }
    throw new CollectiveException(rank, null, "driver answered rendezvous round " + round
        + " of group " + groupId + " with " + (reply == null ? "nothing" : reply.getClass().getName())
        + "; is " + PluginName.CLASS + " the driver plugin?");
  }
}
