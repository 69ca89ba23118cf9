package dev.gpucoll.core.host;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.DataType;
import dev.gpucoll.core.Algorithm;
import dev.gpucoll.core.buffers.HostBuffers;
import java.nio.Buffer;
import java.util.List;

/**
 * The seam under the host recipes: flat steps, in each of which every rank publishes one payload
 * and may then read any peer's. A recipe writes its payload into {@link #open}'s views, calls
 * {@link #exchange}, then reads peers through {@link #peer}; it never learns how the bytes moved
 * (a shared-memory segment, {@link ShmSteps}, or the rendezvous, {@link RelaySteps}).
 *
 * <p>Both {@link #open} and {@link #peer} return views whose payload byte 0 sits at {@link #base}
 * (a field, so the shared-memory path allocates nothing per step).
 */
abstract class Steps {
  final int rank;
  final int ranks;
  /** Byte offset of payload byte 0 in the views the last {@link #open} or {@link #peer} returned. */
  int base;

  Steps(int rank, int ranks) {
    this.rank = rank;
    this.ranks = ranks;
  }

  /** Most payload bytes one step carries: a recipe chunks what is larger. */
  abstract int maxPayload();

  /** Starts a step whose payload is {@code bytes} long; returns the views to write it at {@link #base}. */
  abstract HostBuffers.Views open(int bytes);

  /**
   * Publishes the opened step and waits for every rank's; fails alike on every rank when any rank
   * refused its call or called something else than {@code sig}.
   */
  abstract void exchange(Collective c, Signature sig);

  /**
   * Makes bytes [off, off+len) of peer p's payload in the last exchanged step readable; returns
   * the views holding them, payload byte 0 at {@link #base}.
   */
  abstract HostBuffers.Views peer(Collective c, int p, int off, int len);

  /** A step that carries only this rank's problem; throws it after every peer has seen it. */
  abstract Algorithm refuse(Collective c, Signature sig, String problem);

  /**
   * Opens a step whose payload holds one block of {@code len} elements per rank: for every peer q,
   * send[q * stride + off, +len) at element q * len. This rank's own block stays out (it takes
   * that straight from its send buffer).
   */
  final void openBlocks(DataType type, Buffer send, int stride, int off, int len) {
    int es = type.byteSize();
    Buffer out = open(len * es * ranks).of(type);
    int at = base / es;
    for (int q = 0; q < ranks; q++) {
      if (q != rank) {
        HostBuffers.copy(out, at + q * len, send, q * stride + off, len);
      }
    }
  }

  /** One step moving a small byte array from every rank to every rank (split, segment setup). */
  abstract List<byte[]> allGatherBytes(Signature sig, byte[] payload);
}
