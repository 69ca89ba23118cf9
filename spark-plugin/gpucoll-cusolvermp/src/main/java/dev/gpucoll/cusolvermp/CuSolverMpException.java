package dev.gpucoll.cusolvermp;

/** A cuSOLVERMp or CUDA call that did not succeed: the message names the call and its status. */
public final class CuSolverMpException extends RuntimeException {
  private final int status;

  CuSolverMpException(String message, int status) {
    super(message);
    this.status = status;
  }

  /** The call's cusolverStatus_t (or cudaError_t for a CUDA call). */
  public int status() {
    return status;
  }
}
