package dev.gpucoll.cusolvermp;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Locale;

/**
 * The JNI shim (src/main/c/gpucoll_cusolvermp.c, shipped in this jar under
 * {@code dev/gpucoll/cusolvermp/native/<platform>/}) and the libcusolverMp.so.0 it dlopen()s: both
 * loaded once, on first use. Every call returns cuSOLVERMp's cusolverStatus_t; handles are raw
 * addresses; out-parameters come back through one-element (two for workspace sizes) arrays.
 */
final class CuSolverMpNative {
  /** The library's file name, as the wheel ships it. */
  static final String LIBRARY = "libcusolverMp.so.0";
  /** The wheel whose cusolverMp.h 0.8 the shim's prototypes follow. */
  static final String WHEEL = "nvidia-cusolvermp-cu13==0.8.0.3126";
  /** Loads another file or name instead of {@link #LIBRARY} (a path, or a name the loader searches). */
  static final String LIBRARY_PROPERTY = "gpucoll.cusolvermp.library";

  private CuSolverMpNative() {}

  /** The shim: null when loaded, else why not. */
  private static final class Shim {
    static final String PROBLEM = loadShim();
  }

  /** The library: null when loaded, else why not (the whole message of {@link CuSolverMpUnavailableException}). */
  private static final class Library {
    static final String PROBLEM = loadLibrary(System.getProperty(LIBRARY_PROPERTY, LIBRARY));
  }

  /** Throws {@link CuSolverMpUnavailableException} unless the shim and the library are loaded. */
  static void require() {
    String problem = Library.PROBLEM;
    if (problem != null) {
      throw new CuSolverMpUnavailableException(problem);
    }
  }

  /**
   * Loads the shim (once) and then {@code library}; null when both are loaded, else why not. A
   * failed load leaves a library loaded before in place.
   */
  static String loadLibrary(String library) {
    String shim = Shim.PROBLEM;
    if (shim != null) {
      return shim;
    }
    String why = load0(library);
    return why == null ? null : unavailableMessage(library, why);
  }

  private static String loadShim() {
    String platform = platform();
    if (platform == null) {
      return "cuSOLVERMp unavailable: no JNI shim for " + System.getProperty("os.name") + " "
          + System.getProperty("os.arch") + " (cuSOLVERMp ships for Linux x86_64 and aarch64)";
    }
    String resource = "/dev/gpucoll/cusolvermp/native/" + platform + "/libgpucoll_cusolvermp.so";
    try (InputStream in = CuSolverMpNative.class.getResourceAsStream(resource)) {
      if (in == null) {
        return "cuSOLVERMp unavailable: this jar holds no JNI shim at " + resource
            + " (it was built on another platform)";
      }
      Path file = Files.createTempFile("gpucoll_cusolvermp", ".so");
      file.toFile().deleteOnExit();
      Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
      System.load(file.toAbsolutePath().toString());
      return null;
    } catch (IOException | UnsatisfiedLinkError e) {
      return "cuSOLVERMp unavailable: the JNI shim " + resource + " could not be loaded: " + e;
    }
  }

  /** What a user must do when {@code library} does not load: the wheel, LD_LIBRARY_PATH, and the loader's words. */
  static String unavailableMessage(String library, String loaderSays) {
    return "cuSOLVERMp unavailable: " + library + " could not be loaded (" + loaderSays + "). Install the wheel "
        + WHEEL + " (pip install --no-deps " + WHEEL + ", or pip download and unzip it) and put its"
        + " nvidia/cu13/lib directory on LD_LIBRARY_PATH, together with the CUDA 13 libraries it needs"
        + " (libcublas.so.13, libcusolver.so.12, libcusparse.so.12, libnvJitLink.so.13, libcudart.so.13: e.g."
        + " /usr/local/cuda/lib64) and the libnccl.so.2 the communicator uses (NCCL >= 2.28; cuSOLVERMp 0.9"
        + " needs NCCL >= 2.29); or name the file with -D" + LIBRARY_PROPERTY + "=/path/to/" + LIBRARY
        + ". LD_LIBRARY_PATH is now " + System.getenv().getOrDefault("LD_LIBRARY_PATH", "(unset)");
  }

  static String platform() {
    String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
    String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
    if (!os.startsWith("linux")) {
      return null;
    }
    return switch (arch) {
      case "amd64", "x86_64" -> "linux-x86_64";
      case "aarch64", "arm64" -> "linux-arm64";
      default -> null;
    };
  }

  // ---- the shim (names as in cusolverMp.h; see the C file for the prototypes) ----

  private static native String load0(String library);

  static native int create(int device, long stream, long[] handle);

  static native int destroy(long handle);

  static native int getVersion(long handle, int[] version);

  static native int createDeviceGrid(long handle, long ncclComm, int rows, int cols, int mapping, long[] grid);

  static native int destroyGrid(long grid);

  static native int createMatrixDesc(long grid, int dataType, long m, long n, long mb, long nb, int rsrc, int csrc,
      long lld, long[] desc);

  static native int destroyMatrixDesc(long desc);

  static native int getrfBufferSize(long handle, long m, long n, long a, long ia, long ja, long descA, long ipiv,
      int computeType, long[] sizes);

  static native int getrf(long handle, long m, long n, long a, long ia, long ja, long descA, long ipiv,
      int computeType, long dWork, long dBytes, long hWork, long hBytes, long info);

  static native int getrsBufferSize(long handle, int trans, long n, long nrhs, long a, long ia, long ja, long descA,
      long ipiv, long b, long ib, long jb, long descB, int computeType, long[] sizes);

  static native int getrs(long handle, int trans, long n, long nrhs, long a, long ia, long ja, long descA, long ipiv,
      long b, long ib, long jb, long descB, int computeType, long dWork, long dBytes, long hWork, long hBytes,
      long info);

  static native int potrfBufferSize(long handle, int uplo, long n, long a, long ia, long ja, long descA,
      int computeType, long[] sizes);

  static native int potrf(long handle, int uplo, long n, long a, long ia, long ja, long descA, int computeType,
      long dWork, long dBytes, long hWork, long hBytes, long info);

  static native int potrsBufferSize(long handle, int uplo, long n, long nrhs, long a, long ia, long ja, long descA,
      long b, long ib, long jb, long descB, int computeType, long[] sizes);

  static native int potrs(long handle, int uplo, long n, long nrhs, long a, long ia, long ja, long descA, long b,
      long ib, long jb, long descB, int computeType, long dWork, long dBytes, long hWork, long hBytes, long info);

  // QR, least squares and the symmetric eigensolver: optional entry points; NO_SYMBOL when the
  // loaded library lacks one.

  /** What an optional entry point returns when the loaded library does not have it. */
  static final int NO_SYMBOL = -1;

  static native int geqrfBufferSize(long handle, long m, long n, long a, long ia, long ja, long descA,
      int computeType, long[] sizes);

  static native int geqrf(long handle, long m, long n, long a, long ia, long ja, long descA, long tau,
      int computeType, long dWork, long dBytes, long hWork, long hBytes, long info);

  static native int ormqrBufferSize(long handle, int side, int trans, long m, long n, long k, long a, long ia,
      long ja, long descA, long tau, long c, long ic, long jc, long descC, int computeType, long[] sizes);

  static native int ormqr(long handle, int side, int trans, long m, long n, long k, long a, long ia, long ja,
      long descA, long tau, long c, long ic, long jc, long descC, int computeType, long dWork, long dBytes,
      long hWork, long hBytes, long info);

  static native int gelsBufferSize(long handle, int trans, long m, long n, long nrhs, long a, long ia, long ja,
      long descA, long b, long ib, long jb, long descB, int computeType, long[] sizes);

  static native int gels(long handle, int trans, long m, long n, long nrhs, long a, long ia, long ja, long descA,
      long b, long ib, long jb, long descB, int computeType, long dWork, long dBytes, long hWork, long hBytes,
      long info);

  static native int syevdBufferSize(long handle, boolean vectors, int uplo, long n, long a, long ia, long ja,
      long descA, long d, long q, long iq, long jq, long descQ, int computeType, long[] sizes);

  static native int syevd(long handle, boolean vectors, int uplo, long n, long a, long ia, long ja, long descA,
      long d, long q, long iq, long jq, long descQ, int computeType, long dWork, long dBytes, long hWork,
      long hBytes, long info);
}
