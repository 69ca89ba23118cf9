package dev.gpucoll.cuda;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CommBuffer;

/**
 * Which calls a CUDA graph capture of a gpu communicator refuses, and why: everything that waits on
 * the host or allocates, since a captured graph replays device work only. Pure, so every rule is
 * tested without a GPU.
 */
final class CaptureRules {
  private CaptureRules() {}

  /** Why {@code c} on these buffers, taking {@code kind}, cannot be captured; null when it can. */
  static String refusal(Collective c, CommBuffer send, CommBuffer recv, GroupRoute.Kind kind) {
    if (c == Collective.BARRIER) {
      return "barrier() waits for the stream on the host; inside a graph the stream orders the collectives";
    }
    if (send instanceof CommBuffer.Host || recv instanceof CommBuffer.Host) {
      return "host buffers are copied through pinned memory and waited for on the host; capture device buffers";
    }
    if (kind == GroupRoute.Kind.STAGED) {
      return "this group takes " + dev.gpucoll.core.Algorithm.GPU_STAGED_HOST.id() + " (ranks share a GPU and"
          + " must not spin), which runs on the host";
    }
    return null;
  }

  /** Why a communicator method other than a collective cannot be called while capturing. */
  static String refusal(String method) {
    return switch (method) {
      case "synchronize" -> "synchronize() waits on the host for work that a capture only records";
      case "setStream" -> "the stream being captured cannot change in the middle of the capture";
      case "split" -> "split() forms a new group through the rendezvous and allocates device memory";
      case "allocSymmetric" -> "allocSymmetric() allocates and registers memory, which a graph cannot replay";
      case "capture" -> "a capture is already in progress on this communicator";
      case "group" -> null;
      default -> method + "() cannot be captured";
    };
  }

  static String message(String why) {
    return "cannot be captured into a CUDA graph: " + why + "; the capture is discarded";
  }
}
