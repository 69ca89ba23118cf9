package dev.gpucoll.core.host;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The direct buffers of one {@link HostUcxCommunicator}, reused from call to call (UCX reads and
 * writes them in place, so they are direct and stay untouched while a request is in flight). A
 * buffer is named by its role and, for the roles held once per host, the host's index.
 */
final class UcxScratch {
  /** What a buffer holds. */
  enum Slot {
    /** This rank's 32-byte header. */
    HEADER,
    /** The host's ranks' headers, gathered. */
    HEADERS,
    /** This rank's problem text. */
    TEXT,
    /** The host's ranks' problem texts, gathered. */
    TEXTS,
    /** The host's header block, sent to the other leaders. */
    HOST_HEADER,
    /** This rank's input. */
    INPUT,
    /** The host's ranks' inputs, gathered into the leader. */
    GATHERED,
    /** allToAllv: this rank's packed sends, then the host's, gathered. */
    PACKED,
    GATHERED_V,
    /** allToAllv: this rank's send and receive counts. */
    COUNTS,
    /** The host's result, broadcast to its ranks. */
    RESULT,
    /** The leader's verdict and its text. */
    VERDICT,
    VERDICT_TEXT,
    /** split's rounds. */
    SPLIT,
    /** Per host: what goes to its leader, what comes from it (two rounds), its header block. */
    OUT,
    /** Per host: this host's header block with the data for that host inline. */
    HEADER_OUT,
    IN,
    IN2,
    PEER_HEADER
  }

  private final int hosts;
  private final ByteBuffer[] buffers;

  UcxScratch(int hosts) {
    this.hosts = hosts;
    this.buffers = new ByteBuffer[Slot.values().length * hosts];
  }

  /** A buffer of {@code bytes} for {@code slot} (position 0, limit bytes), growing as needed. */
  ByteBuffer get(Slot slot, long bytes) {
    return get(slot, 0, bytes);
  }

  /** {@link #get(Slot, long)} of host {@code host}'s copy of {@code slot}. */
  ByteBuffer get(Slot slot, int host, long bytes) {
    if (bytes > Integer.MAX_VALUE - 8) {
      throw new IllegalArgumentException(HostUcxCommunicator.BACKEND + " moves at most 2 GiB per buffer in one call,"
          + " this call needs " + bytes + " bytes in one (" + slot + "): split it into smaller calls");
    }
    int i = slot.ordinal() * hosts + host;
    ByteBuffer b = buffers[i];
    if (b == null || b.capacity() < bytes) {
      b = ByteBuffer.allocateDirect((int) Math.max(bytes, 64)).order(ByteOrder.nativeOrder());
      buffers[i] = b;
    }
    b.clear().limit((int) bytes);
    return b;
  }

  /** Forgets every buffer: one UCX may still write must never be reused. */
  void clear() {
    java.util.Arrays.fill(buffers, null);
  }
}
