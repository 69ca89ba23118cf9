package dev.gpucoll.spark.rpc;

import java.util.Arrays;

/**
 * A rank's payload as the driver holds it between arrival and the round's completion: chunks of
 * at most {@link #CHUNK_BYTES}. One array of a payload's size would be a humongous object under
 * G1 from half a region up (a 1 MiB payload in 1 MiB regions takes two regions, 2 MiB), so a
 * budget in payload bytes would hold about twice as much heap; chunks this small are ordinary
 * objects, and their heap cost is what {@link #heapBytes} charges.
 */
final class HeldPayload {
  /** Far below half of G1's smallest region (1 MiB). */
  static final int CHUNK_BYTES = 64 << 10;
  /** Array header and alignment, per array (a compressed-oops JVM uses 16; 24 covers the others). */
  private static final long ARRAY_OVERHEAD_BYTES = 24;
  /** A reference in the chunk table. */
  private static final long REFERENCE_BYTES = 8;

  private HeldPayload() {}

  static byte[][] split(byte[] payload) {
    int chunks = chunks(payload.length);
    byte[][] out = new byte[chunks][];
    for (int i = 0; i < chunks; i++) {
      int from = i * CHUNK_BYTES;
      out[i] = Arrays.copyOfRange(payload, from, Math.min(payload.length, from + CHUNK_BYTES));
    }
    return out;
  }

  static byte[] join(byte[][] chunks) {
    int length = 0;
    for (byte[] c : chunks) {
      length += c.length;
    }
    byte[] out = new byte[length];
    int at = 0;
    for (byte[] c : chunks) {
      System.arraycopy(c, 0, out, at, c.length);
      at += c.length;
    }
    return out;
  }

  static boolean equals(byte[][] chunks, byte[] payload) {
    int at = 0;
    for (byte[] c : chunks) {
      if (at + c.length > payload.length
          || !Arrays.equals(c, 0, c.length, payload, at, at + c.length)) {
        return false;
      }
      at += c.length;
    }
    return at == payload.length;
  }

  /** Heap bytes that {@link #split} of a payload of {@code length} bytes holds. */
  static long heapBytes(int length) {
    int chunks = chunks(length);
    long padded = 0;
    if (chunks > 0) {
      long last = length - (long) (chunks - 1) * CHUNK_BYTES;
      padded = (chunks - 1) * align(CHUNK_BYTES) + align(last);
    }
    return ARRAY_OVERHEAD_BYTES + REFERENCE_BYTES * chunks + ARRAY_OVERHEAD_BYTES * chunks + padded;
  }

  private static int chunks(int length) {
    return (length + CHUNK_BYTES - 1) / CHUNK_BYTES;
  }

  private static long align(long bytes) {
    return (bytes + 7) / 8 * 8;
  }
}
