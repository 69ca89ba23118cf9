package dev.gpucoll.cusolvermp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.net.URISyntaxException;
import java.nio.file.Path;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Every argument reaches cuSOLVERMp's C entry point at its place, whole: the shim is run against a
 * stand-in library (src/test/c/fake_cusolvermp.c) that expects argument i to hold L(i) (64-bit) or
 * I(i) (32-bit) and returns 1000 + i for the first that does not.
 */
class ShimMarshallingTest {
  private static final long HANDLE = 0xABC0;

  private static long l(int i) {
    return 0x10000000000L + 101 + i;
  }

  private static int i(int i) {
    return 101 + i;
  }

  @BeforeAll
  static void loadTheStandIn() throws URISyntaxException {
    Path fake = Path.of(ShimMarshallingTest.class.getResource("/libfake_cusolvermp.so").toURI());
    assertNull(CuSolverMpNative.loadLibrary(fake.toString()));
  }

  @Test
  void handlesGridsAndDescriptors() {
    long[] out = new long[1];
    assertEquals(0, CuSolverMpNative.create(i(1), l(2), out));
    assertEquals(HANDLE, out[0]);
    assertEquals(0, CuSolverMpNative.destroy(l(0)));
    int[] version = new int[1];
    assertEquals(0, CuSolverMpNative.getVersion(l(0), version));
    assertEquals(800, version[0]);
    out[0] = 0;
    assertEquals(0, CuSolverMpNative.createDeviceGrid(l(0), l(2), i(3), i(4), i(5), out));
    assertEquals(HANDLE, out[0]);
    assertEquals(0, CuSolverMpNative.destroyGrid(l(0)));
    out[0] = 0;
    assertEquals(0, CuSolverMpNative.createMatrixDesc(l(1), i(2), l(3), l(4), l(5), l(6), i(7), i(8), l(9), out));
    assertEquals(HANDLE, out[0]);
    assertEquals(0, CuSolverMpNative.destroyMatrixDesc(l(0)));
  }

  @Test
  void aWrongArgumentIsCaughtAtItsPlace() {
    assertEquals(1000 + 9, CuSolverMpNative.createMatrixDesc(l(1), i(2), l(3), l(4), l(5), l(6), i(7), i(8), 7,
        new long[1]));
  }

  @Test
  void luCalls() {
    long[] sizes = new long[2];
    assertEquals(0, CuSolverMpNative.getrfBufferSize(l(0), l(1), l(2), l(3), l(4), l(5), l(6), l(7), i(8), sizes));
    assertArrayEquals(new long[] {123456789012L, 42}, sizes);
    assertEquals(0, CuSolverMpNative.getrf(l(0), l(1), l(2), l(3), l(4), l(5), l(6), l(7), i(8), l(9), l(10), l(11),
        l(12), l(13)));
    sizes = new long[2];
    assertEquals(0, CuSolverMpNative.getrsBufferSize(l(0), i(1), l(2), l(3), l(4), l(5), l(6), l(7), l(8), l(9),
        l(10), l(11), l(12), i(13), sizes));
    assertArrayEquals(new long[] {123456789012L, 42}, sizes);
    assertEquals(0, CuSolverMpNative.getrs(l(0), i(1), l(2), l(3), l(4), l(5), l(6), l(7), l(8), l(9), l(10), l(11),
        l(12), i(13), l(14), l(15), l(16), l(17), l(18)));
  }

  @Test
  void choleskyCalls() {
    long[] sizes = new long[2];
    assertEquals(0, CuSolverMpNative.potrfBufferSize(l(0), i(1), l(2), l(3), l(4), l(5), l(6), i(7), sizes));
    assertArrayEquals(new long[] {123456789012L, 42}, sizes);
    assertEquals(0, CuSolverMpNative.potrf(l(0), i(1), l(2), l(3), l(4), l(5), l(6), i(7), l(8), l(9), l(10), l(11),
        l(12)));
    sizes = new long[2];
    assertEquals(0, CuSolverMpNative.potrsBufferSize(l(0), i(1), l(2), l(3), l(4), l(5), l(6), l(7), l(8), l(9),
        l(10), l(11), i(12), sizes));
    assertArrayEquals(new long[] {123456789012L, 42}, sizes);
    assertEquals(0, CuSolverMpNative.potrs(l(0), i(1), l(2), l(3), l(4), l(5), l(6), l(7), l(8), l(9), l(10), l(11),
        i(12), l(13), l(14), l(15), l(16), l(17)));
  }

  @Test
  void qrLeastSquaresAndEigensolverCalls() {
    long[] sizes = new long[2];
    assertEquals(0, CuSolverMpNative.geqrfBufferSize(l(0), l(1), l(2), l(3), l(4), l(5), l(6), i(7), sizes));
    assertArrayEquals(new long[] {123456789012L, 42}, sizes);
    assertEquals(0, CuSolverMpNative.geqrf(l(0), l(1), l(2), l(3), l(4), l(5), l(6), l(7), i(8), l(9), l(10), l(11),
        l(12), l(13)));
    sizes = new long[2];
    assertEquals(0, CuSolverMpNative.ormqrBufferSize(l(0), i(1), i(2), l(3), l(4), l(5), l(6), l(7), l(8), l(9),
        l(10), l(11), l(12), l(13), l(14), i(15), sizes));
    assertArrayEquals(new long[] {123456789012L, 42}, sizes);
    assertEquals(0, CuSolverMpNative.ormqr(l(0), i(1), i(2), l(3), l(4), l(5), l(6), l(7), l(8), l(9), l(10), l(11),
        l(12), l(13), l(14), i(15), l(16), l(17), l(18), l(19), l(20)));
    sizes = new long[2];
    assertEquals(0, CuSolverMpNative.gelsBufferSize(l(0), i(1), l(2), l(3), l(4), l(5), l(6), l(7), l(8), l(9),
        l(10), l(11), l(12), i(13), sizes));
    assertArrayEquals(new long[] {123456789012L, 42}, sizes);
    assertEquals(0, CuSolverMpNative.gels(l(0), i(1), l(2), l(3), l(4), l(5), l(6), l(7), l(8), l(9), l(10), l(11),
        l(12), i(13), l(14), l(15), l(16), l(17), l(18)));
    sizes = new long[2];
    assertEquals(0, CuSolverMpNative.syevdBufferSize(l(0), true, i(2), l(3), l(4), l(5), l(6), l(7), l(8), l(9),
        l(10), l(11), l(12), i(13), sizes));
    assertArrayEquals(new long[] {123456789012L, 42}, sizes);
    assertEquals(0, CuSolverMpNative.syevd(l(0), true, i(2), l(3), l(4), l(5), l(6), l(7), l(8), l(9), l(10), l(11),
        l(12), i(13), l(14), l(15), l(16), l(17), l(18)));
    assertEquals(1001, CuSolverMpNative.syevd(l(0), false, i(2), l(3), l(4), l(5), l(6), l(7), l(8), l(9), l(10),
        l(11), l(12), i(13), l(14), l(15), l(16), l(17), l(18)), "eigenvalues only: compz \"N\"");
  }
}
