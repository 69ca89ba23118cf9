package dev.gpucoll.core.rendezvous;

/** Size limits every rendezvous enforces on payloads, so a bug cannot ship megabytes per round. */
public final class RendezvousLimits {
  /** Largest payload one rank may contribute to one round. */
  public static final int MAX_PAYLOAD_BYTES = 1 << 20;

  private RendezvousLimits() {}

  /** Throws IllegalArgumentException naming the group and rank when the payload is null or too big. */
  public static void check(String groupId, int rank, byte[] payload) {
    if (payload == null) {
      throw new IllegalArgumentException("rendezvous " + groupId + ", rank " + rank + ": payload is null");
    }
    if (payload.length > MAX_PAYLOAD_BYTES) {
      throw new IllegalArgumentException("rendezvous " + groupId + ", rank " + rank + ": payload of "
          + payload.length + " bytes exceeds the limit of " + MAX_PAYLOAD_BYTES);
    }
  }
}
