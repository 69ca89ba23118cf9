package dev.gpucoll.core.host;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;

/**
 * An in-process {@link PeerTransport} for tests of {@link HostUcxCommunicator}'s algorithms
 * without UCX: a message is copied into the receiver's mailbox at send time and matched by
 * (source, tag) at the receiver's progress. {@link #kill} makes a transport vanish as a dead
 * process would: its peers see the peer failure.
 */
final class LoopbackTransport implements PeerTransport {
  private static final AtomicLong IDS = new AtomicLong();
  private static final Map<Long, LoopbackTransport> ALL = new ConcurrentHashMap<>();

  private final long id = IDS.incrementAndGet();
  private final long[] peers;
  private final ConcurrentLinkedQueue<Object[]> inbox = new ConcurrentLinkedQueue<>(); // {src, tag, bytes}
  private final Map<Long, List<byte[]>> unexpected = new HashMap<>();
  private final List<Pending> posted = new ArrayList<>();
  private volatile boolean dead;
  private int rankInGroup = -1;

  private static final class Pending implements Request {
    final int peer;
    final long tag;
    final ByteBuffer into;
    volatile boolean done;
    volatile String error;
    long received;

    Pending(int peer, long tag, ByteBuffer into) {
      this.peer = peer;
      this.tag = tag;
      this.into = into;
    }

    @Override
    public boolean done() {
      return done;
    }

    @Override
    public String error() {
      return error;
    }

    @Override
    public long received() {
      return received;
    }
  }

  LoopbackTransport(int size) {
    peers = new long[size];
    ALL.put(id, this);
  }

  /** Makes this transport unreachable, as if its process had died. */
  void kill() {
    dead = true;
  }

  @Override
  public byte[] address() {
    return ByteBuffer.allocate(8).putLong(id).array();
  }

  @Override
  public void connect(int peer, byte[] address) {
    peers[peer] = ByteBuffer.wrap(address).getLong();
  }

  /** The sender's rank as the receiver sees it: sender tags carry it (bits 40..59). */
  @Override
  public Request send(int peer, long tag, ByteBuffer data) {
    Pending p = new Pending(peer, tag, null);
    LoopbackTransport to = ALL.get(peers[peer]);
    if (to == null || to.dead || dead) {
      p.error = "peer " + peer + " is gone";
    } else {
      byte[] b = new byte[data.remaining()];
      data.duplicate().get(b);
      to.inbox.add(new Object[] {(int) ((tag >>> 40) & 0xFFFFF), tag, b});
    }
    p.done = true;
    return p;
  }

  @Override
  public Request recv(int peer, long tag, ByteBuffer into) {
    Pending p = new Pending(peer, tag, into);
    posted.add(p);
    return p;
  }

  @Override
  public boolean progress() {
    boolean moved = false;
    for (Object[] m; (m = inbox.poll()) != null; ) {
      unexpected.computeIfAbsent((Long) m[1], k -> new ArrayList<>()).add((byte[]) m[2]);
    }
    for (int i = 0; i < posted.size(); i++) {
      Pending p = posted.get(i);
      List<byte[]> q = unexpected.get(p.tag);
      if (q != null && !q.isEmpty()) {
        byte[] b = q.remove(0);
        if (b.length > p.into.remaining()) {
          p.error = "message truncated";
        } else {
          p.into.duplicate().put(b);
          p.received = b.length;
        }
        p.done = true;
        posted.remove(i--);
        moved = true;
      }
    }
    return moved;
  }

  @Override
  public void cancel(Request r) {
    Pending p = (Pending) r;
    if (posted.remove(p)) {
      p.error = "cancelled";
      p.done = true;
    }
  }

  @Override
  public String peerFailure(int peer) {
    LoopbackTransport to = ALL.get(peers[peer]);
    if (peers[peer] == 0) {
      return null;
    }
    return to == null || to.dead ? "peer " + peer + " is gone" : null;
  }

  @Override
  public String describe() {
    return "in-process loopback";
  }

  @Override
  public void close() {
    ALL.remove(id);
  }
}
