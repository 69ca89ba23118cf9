package dev.gpucoll.spark.rpc;

import dev.gpucoll.spark.rpc.Freshness.Stamp;
import dev.gpucoll.spark.rpc.Freshness.Ticket;
import java.security.SecureRandom;

/**
 * The executor's side of {@link Freshness}: its current ticket, fetched from the driver when there
 * is none or it is getting old, and the {@link Sender}s that stamp its sealed messages with it.
 *
 * <p>Internal: public for the other packages of gpucoll-spark, not for users.
 */
public final class Tickets {
  private static final SecureRandom RANDOM = new SecureRandom();

  /** How a sender asks the driver for a ticket: the wire bytes of a request in, the answer out. */
  @FunctionalInterface
  public interface Channel {
    Object ask(byte[] message) throws Exception;
  }

  private final Channel channel;
  private Ticket current;
  private long fetchedAt;

  public Tickets(Channel channel) {
    this.channel = channel;
  }

  /** The ticket to stamp with now: the one held, or a new one once it is {@link Freshness#TICKET_REFRESH_NANOS} old. */
  public synchronized Ticket current() throws Exception {
    long now = System.nanoTime();
    if (current == null || now - fetchedAt > Freshness.TICKET_REFRESH_NANOS) {
      Object reply = channel.ask(RpcMessages.encode(new RpcMessages.TicketRequest()));
      Object answer = reply instanceof byte[] wire ? RpcMessages.decode(wire) : reply;
      if (!(answer instanceof Ticket t)) {
        throw new IllegalStateException("the driver answered a ticket request with "
            + (answer instanceof RpcMessages.RoundState s && s.failure() != null ? s.failure()
                : answer == null ? "nothing" : answer.getClass().getName())
            + "; is " + PluginName.CLASS + " the driver plugin, of the same gpucoll jar?");
      }
      current = t;
      fetchedAt = now;
    }
    return current;
  }

  /** One sender's messages: a random id no other sender has, and its numbers in the order it stamps them. */
  public static final class Sender {
    private final Tickets tickets;
    private final long id = RANDOM.nextLong();
    private long seq;

    public Sender(Tickets tickets) {
      this.tickets = tickets;
    }

    /** The next message's stamp; the caller sends in the order it stamps (hold this sender's lock across both). */
    public synchronized Stamp next() throws Exception {
      Ticket t = tickets.current();
      return new Stamp(t.issuedNanos(), t.mac(), id, ++seq);
    }
  }
}
