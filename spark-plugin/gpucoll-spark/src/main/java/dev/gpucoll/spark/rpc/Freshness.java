package dev.gpucoll.spark.rpc;

import java.nio.ByteBuffer;
import java.security.SecureRandom;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

/**
 * Why a sealed message counts once: the {@link GroupCredential}'s MAC proves who sealed a message,
 * not when, so someone who reads the traffic could send a rank's request again (within its round,
 * after it, or into a later job) and have it served again. Every sealed message to the driver
 * therefore carries a {@link Stamp} under its MAC: a ticket the driver issued (its own clock, under
 * its own key), the sender's random id, and the sender's sequence number. The driver ({@link Guard})
 * admits a message only with a ticket younger than {@link #TICKET_LIFE_NANOS} and a sequence number
 * it has not seen from that sender; it remembers each sender while its latest ticket is young, so a
 * copy is refused either as seen or as stale, and its memory is bounded by the senders that really
 * sealed something lately. Senders fetch a new ticket ({@link Tickets}) well before theirs ages out.
 *
 * <p>Internal: public for the other packages of gpucoll-spark, not for users.
 */
public final class Freshness {
  /** How long a ticket admits messages. */
  static final long TICKET_LIFE_NANOS = 10L * 60 * 1_000_000_000L;
  /** A sender fetches a new ticket once its own is this old by its own clock: a quarter of the life. */
  static final long TICKET_REFRESH_NANOS = TICKET_LIFE_NANOS / 4;
  /** Sequence numbers below a sender's highest by this much or more are refused unseen (a reordering bound). */
  static final int WINDOW = 64;

  private static final SecureRandom RANDOM = new SecureRandom();

  private Freshness() {}

  /** A ticket: when the driver issued it, by the driver's clock, and the driver's MAC over that. */
  public record Ticket(long issuedNanos, byte[] mac) {}

  /**
   * What a sealed message carries under its MAC: its ticket, its sender and its number there. The
   * driver's answers carry {@link #NONE} (they are bound to their request instead).
   */
  public record Stamp(long issuedNanos, byte[] ticketMac, long sender, long seq) {
    public static final Stamp NONE = new Stamp(0, new byte[0], 0, 0);

    /** The bytes the message's MAC covers before the message itself. */
    byte[] bytes() {
      return ByteBuffer.allocate(24 + ticketMac.length).putLong(issuedNanos).putLong(sender).putLong(seq)
          .put(ticketMac).array();
    }
  }

  /** The driver's side: issues tickets and admits each stamp once. */
  public static final class Guard {
    private static final long SWEEP_EVERY_NANOS = 1_000_000_000L;
    private final GroupCredential key;
    private final LongSupplier clock;
    private final Map<Long, Seen> senders = new ConcurrentHashMap<>();
    private volatile long lastSweep;

    public Guard(LongSupplier clock) {
      byte[] secret = new byte[32];
      RANDOM.nextBytes(secret);
      this.key = new GroupCredential("tickets", secret);
      this.clock = clock;
      this.lastSweep = clock.getAsLong();
    }

    Ticket issue() {
      long now = clock.getAsLong();
      return new Ticket(now, key.mac(ByteBuffer.allocate(8).putLong(now).array()));
    }

    /**
     * Null when {@code s} is fresh (and from now on it is not), else why it is refused. Call it only
     * for a message whose MAC verified: only then is the stamp the sender's own.
     */
    public String admit(Stamp s) {
      long now = clock.getAsLong();
      sweep(now);
      if (!key.verifies(s.ticketMac(), ByteBuffer.allocate(8).putLong(s.issuedNanos()).array())) {
        return "it carries no ticket of this driver";
      }
      if (s.issuedNanos() > now || now - s.issuedNanos() > TICKET_LIFE_NANOS) {
        return "its ticket is stale (a copy of an old message)";
      }
      if (s.seq() <= 0) {
        return "its sequence number " + s.seq() + " is not positive";
      }
      while (true) {
        Seen seen = senders.computeIfAbsent(s.sender(), k -> new Seen());
        synchronized (seen) {
          if (seen.forgotten) {
            continue; // swept meanwhile: its successor decides
          }
          return seen.admit(s.seq(), s.issuedNanos()) ? null
              : "sender " + Long.toHexString(s.sender()) + " sent its message " + s.seq() + " before (a replay)";
        }
      }
    }

    /** Senders remembered now, for tests and diagnostics. */
    int senders() {
      return senders.size();
    }

    /** Forgets the senders whose latest ticket is stale: every copy of their messages is refused as stale. */
    private void sweep(long now) {
      if (now - lastSweep < SWEEP_EVERY_NANOS) {
        return;
      }
      lastSweep = now;
      senders.entrySet().removeIf(e -> {
        synchronized (e.getValue()) {
          e.getValue().forgotten = now - e.getValue().latestTicket > TICKET_LIFE_NANOS;
          return e.getValue().forgotten;
        }
      });
    }

    /** One sender's numbers: the highest admitted, and which of the {@link #WINDOW} below it were. */
    private static final class Seen {
      long highest;
      long window;
      long latestTicket = Long.MIN_VALUE;
      boolean forgotten;

      boolean admit(long seq, long ticket) {
        if (seq > highest) {
          long shift = seq - highest;
          window = shift >= WINDOW ? 0 : window << shift;
          window |= 1;
          highest = seq;
        } else {
          long back = highest - seq;
          if (back >= WINDOW || (window & (1L << back)) != 0) {
            return false;
          }
          window |= 1L << back;
        }
        latestTicket = Math.max(latestTicket, ticket);
        return true;
      }
    }
  }
}
