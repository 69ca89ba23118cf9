package dev.gpucoll.cusolvermp;

/**
 * cuSOLVERMp cannot be used in this process: libcusolverMp.so.0 (or a library it needs) did not
 * load, or this jar has no JNI shim for the platform. The message names the library, the wheel
 * that ships it ({@code nvidia-cusolvermp-cu13==0.8.0.3126}) and LD_LIBRARY_PATH.
 */
public final class CuSolverMpUnavailableException extends IllegalStateException {
  CuSolverMpUnavailableException(String message) {
    super(message);
  }
}
