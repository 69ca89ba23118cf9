package dev.gpucoll.cuda;

/** A CUDA runtime or driver call failed; the message names the call and the CUDA error. */
public class CudaException extends RuntimeException {
  private final int code;

  public CudaException(String call, int code, String errorText) {
    super(call + " failed: " + errorText + " (" + code + ")");
    this.code = code;
  }

  public CudaException(String message) {
    super(message);
    this.code = -1;
  }

  /** The cudaError_t / CUresult value, or -1 when the failure was not a CUDA return code. */
  public int code() {
    return code;
  }
}
