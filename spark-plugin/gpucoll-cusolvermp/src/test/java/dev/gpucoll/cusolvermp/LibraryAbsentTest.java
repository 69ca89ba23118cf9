package dev.gpucoll.cusolvermp;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import org.junit.jupiter.api.Test;

/** Without libcusolverMp.so.0 the binding says what to install and where to point LD_LIBRARY_PATH. */
class LibraryAbsentTest {

  @Test
  void theShimIsInTheJarForThisPlatform() {
    String platform = CuSolverMpNative.platform();
    assumeTrue(platform != null, "not a platform cuSOLVERMp ships for");
    assertTrue(CuSolverMpNative.class.getResource("/dev/gpucoll/cusolvermp/native/" + platform
        + "/libgpucoll_cusolvermp.so") != null, "the build puts the JNI shim under the platform path");
  }

  @Test
  void anAbsentLibraryIsNamedWithTheWheelAndLdLibraryPath() {
    String message = CuSolverMpNative.loadLibrary("libcusolverMp-absent-for-this-test.so.0");
    assertTrue(message != null, "an absent library does not load");
    assertTrue(message.contains("libcusolverMp-absent-for-this-test.so.0"), message);
    assertTrue(message.contains("nvidia-cusolvermp-cu13==0.8.0.3126"), message);
    assertTrue(message.contains("LD_LIBRARY_PATH"), message);
    // dlopen's own words (the shim loaded and asked the loader) say which file was missing
    assertTrue(message.contains("cannot open shared object file"), message);
  }

  @Test
  void aLibraryWithoutTheSymbolsIsRefusedNamingTheFirstMissingOne() {
    String message = CuSolverMpNative.loadLibrary("libc.so.6");
    assertTrue(message != null, "libc has no cuSOLVERMp symbols");
    assertTrue(message.contains("has no symbol cusolverMpCreate"), message);
  }

  @Test
  void openingWithoutTheLibraryThrowsTheSameMessage() {
    assumeTrue(CuSolverMpNative.loadLibrary(CuSolverMpNative.LIBRARY) != null
        && System.getProperty(CuSolverMpNative.LIBRARY_PROPERTY) == null, "libcusolverMp.so.0 is installed here");
    CuSolverMpUnavailableException e = assertThrows(CuSolverMpUnavailableException.class,
        () -> CuSolverMp.onNcclComm(0x1000, 0, 0, 1, 1));
    assertTrue(e.getMessage().startsWith("cuSOLVERMp unavailable: libcusolverMp.so.0 could not be loaded"),
        e.getMessage());
    assertTrue(e.getMessage().contains("nvidia-cusolvermp-cu13==0.8.0.3126"), e.getMessage());
  }

  @Test
  void theMessageNamesTheOverrideAndTheCudaLibraries() {
    String m = CuSolverMpNative.unavailableMessage("libcusolverMp.so.0", "x");
    assertTrue(m.contains("-Dgpucoll.cusolvermp.library="), m);
    assertTrue(m.contains("libcublas.so.13") && m.contains("libnccl.so.2"), m);
  }
}
