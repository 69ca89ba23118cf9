package dev.gpucoll.linalg;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The local GEMM against C += A B written out, on the host kernels (the same bits: the same loop
 * order) and on the emulated device (reference BLAS, within rounding), for shapes with padded leading
 * dimensions whose padding must stay untouched; and its refusals.
 */
class LocalGemmTest {
  private static final double PADDING = 12345.5;

  @Test
  void theHostProductIsTheLoopWrittenOutBitForBit() {
    try (LocalGemm gemm = LocalGemm.onHost()) {
      checkShapes(gemm, 0);
    }
  }

  @Test
  void theDeviceKernelSetGivesTheSameProductWithinRounding() {
    try (LocalGemm gemm = new LocalGemm(new EmulatedDevice(), "emulated device")) {
      checkShapes(gemm, 1e-14);
    }
  }

  private static void checkShapes(LocalGemm gemm, double tolerance) {
    SplittableRandom random = new SplittableRandom(7);
    int[][] shapes = {{1, 1, 1}, {3, 4, 5}, {8, 1, 8}, {5, 7, 2}, {0, 3, 2}, {3, 0, 2}, {3, 2, 0}, {16, 16, 16}};
    for (int[] s : shapes) {
      int m = s[0];
      int n = s[1];
      int k = s[2];
      int lda = m + 1;
      int ldb = k + 2;
      int ldc = m + 3;
      double[] a = matrix(random, m, k, lda);
      double[] b = matrix(random, k, n, ldb);
      if (k > 0 && n > 0) {
        b[0] = 0; // a zero multiplier
      }
      double[] c = matrix(random, m, n, ldc);
      double[] want = c.clone();
      for (int j = 0; j < n; j++) {
        for (int t = 0; t < k; t++) {
          double x = b[t + j * ldb];
          if (x != 0) { // as BLAS: adding a zero product would turn a −0.0 into +0.0
            for (int i = 0; i < m; i++) {
              want[i + j * ldc] += a[i + t * lda] * x;
            }
          }
        }
      }
      gemm.multiplyAdd(m, n, k, a, lda, b, ldb, c, ldc);
      String shape = m + " x " + n + " x " + k + " on " + gemm.name();
      for (int idx = 0; idx < c.length; idx++) {
        if (idx % ldc >= m) {
          assertEquals(PADDING, c[idx], shape + ": padding at " + idx);
        } else if (tolerance == 0) {
          assertEquals(Double.doubleToRawLongBits(want[idx]), Double.doubleToRawLongBits(c[idx]), shape + " at " + idx);
        } else {
          assertEquals(want[idx], c[idx], tolerance * k, shape + " at " + idx);
        }
      }
    }
  }

  @Test
  void aNegativeZeroMeetingOnlyZeroProductsStays() {
    try (LocalGemm gemm = LocalGemm.onHost()) {
      double[] c = {-0.0, 1};
      gemm.multiplyAdd(2, 1, 1, new double[] {5, 2}, 2, new double[] {0}, 1, c, 2);
      assertEquals(Double.doubleToRawLongBits(-0.0), Double.doubleToRawLongBits(c[0]));
      gemm.multiplyAdd(2, 1, 1, new double[] {5, 2}, 2, new double[] {3}, 1, c, 2);
      assertEquals(15, c[0]);
      assertEquals(7, c[1]);
    }
  }

  @Test
  void badOperandsAreRefusedByName() {
    try (LocalGemm gemm = LocalGemm.onHost()) {
      double[] x = new double[4];
      refused("A is -1 x 2: sizes must not be negative", () -> gemm.multiplyAdd(-1, 2, 2, x, 1, x, 2, x, 1));
      refused("B's leading dimension 1 is below max(1, its 2 rows)", () -> gemm.multiplyAdd(2, 2, 2, x, 2, x, 1, x, 2));
      refused("C is null", () -> gemm.multiplyAdd(2, 2, 2, x, 2, x, 2, null, 2));
      refused("C has 4 elements; 2 x 2 with leading dimension 3 needs 5",
          () -> gemm.multiplyAdd(2, 2, 2, x, 2, x, 2, x, 3));
    }
  }

  private static void refused(String want, Runnable call) {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call::run);
    assertTrue(e.getMessage().contains(want), e.getMessage());
  }

  /** rows × cols in [-1, 1), column-major with leading dimension ld, the padding rows {@link #PADDING}. */
  private static double[] matrix(SplittableRandom random, int rows, int cols, int ld) {
    double[] x = new double[ld * cols];
    for (int idx = 0; idx < x.length; idx++) {
      x[idx] = idx % ld < rows ? random.nextDouble(-1, 1) : PADDING;
    }
    return x;
  }
}
