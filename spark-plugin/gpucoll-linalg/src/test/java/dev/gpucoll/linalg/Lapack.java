package dev.gpucoll.linalg;

import dev.ludovic.netlib.lapack.JavaLAPACK;
import dev.ludovic.netlib.lapack.LAPACK;
import org.netlib.util.intW;

/** Reference LAPACK (netlib's Fortran compiled to Java by f2j), 0-based pivots. */
final class Lapack {
  private static final LAPACK LAPACK = JavaLAPACK.getInstance();

  private Lapack() {}

  /** dgetrf of the column-major M × N matrix in place; its pivots, 0-based; INFO > 0 fails. */
  static int[] getrf(double[] a, int m, int n) {
    int[] ipiv = new int[Math.min(m, n)];
    intW info = new intW(0);
    LAPACK.dgetrf(m, n, a, Math.max(1, m), ipiv, info);
    if (info.val != 0) {
      throw new AssertionError("dgetrf: INFO = " + info.val);
    }
    for (int k = 0; k < ipiv.length; k++) {
      ipiv[k]--;
    }
    return ipiv;
  }

  /** dpotrf (lower) of the N × N matrix in place; INFO > 0 fails. */
  static void potrf(double[] a, int n) {
    intW info = new intW(0);
    LAPACK.dpotrf("L", n, a, Math.max(1, n), info);
    if (info.val != 0) {
      throw new AssertionError("dpotrf: INFO = " + info.val);
    }
  }
}
