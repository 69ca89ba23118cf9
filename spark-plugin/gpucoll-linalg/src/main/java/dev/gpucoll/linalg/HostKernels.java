package dev.gpucoll.linalg;

/**
 * The host kernel set of the factorizations and solves: BLAS- and LAPACK-shaped loops on
 * column-major doubles, each operand given as (array, offset, leading dimension), element (i, j)
 * of an operand at {@code off + i + j * ld}. The inner loops run down columns (unit stride).
 */
final class HostKernels {
  private HostKernels() {}

  /** C −= A B: C is m × n, A m × k, B k × n (dgemm with alpha −1, beta 1). */
  static void subtractProduct(double[] c, int cOff, int ldc, int m, int n, double[] a, int aOff, int lda, double[] b,
      int bOff, int ldb, int k) {
    for (int j = 0; j < n; j++) {
      int cj = cOff + j * ldc;
      for (int t = 0; t < k; t++) {
        double btj = b[bOff + t + j * ldb];
        if (btj == 0) {
          continue;
        }
        int at = aOff + t * lda;
        for (int i = 0; i < m; i++) {
          c[cj + i] -= a[at + i] * btj;
        }
      }
    }
  }

  /**
   * C −= A B on or below a staircase: column j updates rows [{@code from[j]}, m) only (the lower
   * triangle of a symmetric update, dsyrk's part); C is m × n, A m × k, B k × n.
   */
  static void subtractProductFrom(double[] c, int cOff, int ldc, int m, int n, int[] from, double[] a, int aOff,
      int lda, double[] b, int bOff, int ldb, int k) {
    for (int j = 0; j < n; j++) {
      int cj = cOff + j * ldc;
      for (int t = 0; t < k; t++) {
        double btj = b[bOff + t + j * ldb];
        int at = aOff + t * lda;
        for (int i = from[j]; i < m; i++) {
          c[cj + i] -= a[at + i] * btj;
        }
      }
    }
  }

  /** C −= Aᵀ B: C is k × n, A m × k, B m × n (the partial sums of a transposed solve). */
  static void subtractTransposedProduct(double[] c, int cOff, int ldc, int k, int n, double[] a, int aOff, int lda,
      double[] b, int bOff, int ldb, int m) {
    for (int j = 0; j < n; j++) {
      for (int t = 0; t < k; t++) {
        int at = aOff + t * lda;
        int bj = bOff + j * ldb;
        double s = 0;
        for (int i = 0; i < m; i++) {
          s += a[at + i] * b[bj + i];
        }
        c[cOff + t + j * ldc] -= s;
      }
    }
  }

  /** B = L⁻¹ B, L the w × w lower triangle, unit (its diagonal taken as 1) or not; B is w × n (dtrsm). */
  static void solveLower(double[] l, int lOff, int ldl, boolean unit, double[] b, int bOff, int ldb, int w, int n) {
    for (int j = 0; j < n; j++) {
      int bj = bOff + j * ldb;
      for (int t = 0; t < w; t++) {
        int lt = lOff + t * ldl;
        if (!unit) {
          b[bj + t] /= l[lt + t];
        }
        double x = b[bj + t];
        if (x == 0) {
          continue;
        }
        for (int i = t + 1; i < w; i++) {
          b[bj + i] -= l[lt + i] * x;
        }
      }
    }
  }

  /** B = U⁻¹ B, U the w × w upper triangle (non-unit); B is w × n. */
  static void solveUpper(double[] u, int uOff, int ldu, double[] b, int bOff, int ldb, int w, int n) {
    for (int j = 0; j < n; j++) {
      int bj = bOff + j * ldb;
      for (int t = w - 1; t >= 0; t--) {
        int ut = uOff + t * ldu;
        b[bj + t] /= u[ut + t];
        double x = b[bj + t];
        if (x == 0) {
          continue;
        }
        for (int i = 0; i < t; i++) {
          b[bj + i] -= u[ut + i] * x;
        }
      }
    }
  }

  /** B = L⁻ᵀ B, L the w × w lower triangle (non-unit); B is w × n. */
  static void solveLowerTransposed(double[] l, int lOff, int ldl, double[] b, int bOff, int ldb, int w, int n) {
    for (int j = 0; j < n; j++) {
      int bj = bOff + j * ldb;
      for (int t = w - 1; t >= 0; t--) {
        int lt = lOff + t * ldl;
        double s = b[bj + t];
        for (int i = t + 1; i < w; i++) {
          s -= l[lt + i] * b[bj + i];
        }
        b[bj + t] = s / l[lt + t];
      }
    }
  }

  /** B = B L⁻ᵀ, L the w × w lower triangle (non-unit); B is m × w: Cholesky's panel, L₂₁ = A₂₁ L₁₁⁻ᵀ. */
  static void solveRightLowerTransposed(double[] l, int lOff, int ldl, double[] b, int bOff, int ldb, int m, int w) {
    for (int j = 0; j < w; j++) {
      int bj = bOff + j * ldb;
      for (int t = 0; t < j; t++) {
        double ljt = l[lOff + j + t * ldl];
        if (ljt == 0) {
          continue;
        }
        int bt = bOff + t * ldb;
        for (int i = 0; i < m; i++) {
          b[bj + i] -= b[bt + i] * ljt;
        }
      }
      double d = l[lOff + j + j * ldl];
      for (int i = 0; i < m; i++) {
        b[bj + i] /= d;
      }
    }
  }

  /**
   * The lower Cholesky factor of the w × w block in place (above the diagonal untouched, as dpotrf
   * with UPLO = 'L'); -1, or the first column whose pivot is not positive (NaN included).
   */
  static int choleskyLower(double[] a, int off, int ld, int w) {
    for (int j = 0; j < w; j++) {
      int aj = off + j * ld;
      double d = a[aj + j];
      for (int t = 0; t < j; t++) {
        double x = a[off + j + t * ld];
        d -= x * x;
      }
      if (!(d > 0)) {
        a[aj + j] = d; // as dpotf2: the failing pivot stays where it was computed
        return j;
      }
      d = Math.sqrt(d);
      a[aj + j] = d;
      for (int t = 0; t < j; t++) {
        double x = a[off + j + t * ld];
        int at = off + t * ld;
        for (int i = j + 1; i < w; i++) {
          a[aj + i] -= a[at + i] * x;
        }
      }
      for (int i = j + 1; i < w; i++) {
        a[aj + i] /= d;
      }
    }
    return -1;
  }
}
