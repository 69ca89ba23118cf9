package dev.gpucoll.cuda.nccl;

/** NCCL cannot be used in this process (no driver, no libnccl.so.2, too old); the message says why. */
public final class NcclUnavailableException extends RuntimeException {
  public NcclUnavailableException(String why) {
    super("NCCL unavailable: " + why);
  }
}
