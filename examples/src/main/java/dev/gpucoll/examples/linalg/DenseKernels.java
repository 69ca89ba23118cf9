package dev.gpucoll.examples.linalg;

/**
 * The CPU kernels of the factorizations, on row-major doubles given as (array, offset, leading
 * dimension). The distributed factorizations and their one-process references call the same
 * kernels on the same elements in the same order, so their factors agree bit for bit.
 */
final class DenseKernels {
  private DenseKernels() {}

  /** C -= L U: C rows × cols, L rows × k, U k × cols; each element subtracts its k products in order. */
  static void subtractProduct(double[] c, int cOff, int ldc, int rows, int cols, double[] l, int lOff, int ldl,
      double[] u, int uOff, int ldu, int k) {
    for (int i = 0; i < rows; i++) {
      int ci = cOff + i * ldc;
      for (int t = 0; t < k; t++) {
        double lit = l[lOff + i * ldl + t];
        int ut = uOff + t * ldu;
        for (int j = 0; j < cols; j++) {
          c[ci + j] -= lit * u[ut + j];
        }
      }
    }
  }

  /** B = L⁻¹ B for the unit lower triangle of the nb × nb block L; B is nb × cols. */
  static void unitLowerSolve(double[] l, int lOff, int ldl, double[] b, int bOff, int ldb, int nb, int cols) {
    for (int i = 1; i < nb; i++) {
      int bi = bOff + i * ldb;
      for (int t = 0; t < i; t++) {
        double lit = l[lOff + i * ldl + t];
        int bt = bOff + t * ldb;
        for (int j = 0; j < cols; j++) {
          b[bi + j] -= lit * b[bt + j];
        }
      }
    }
  }

  /**
   * The lower Cholesky factor of the nb × nb block in place (its upper part untouched); returns -1,
   * or the first column whose diagonal is not positive (NaN included): the block is not positive
   * definite there.
   */
  static int choleskyLower(double[] a, int off, int ld, int nb) {
    for (int j = 0; j < nb; j++) {
      int rj = off + j * ld;
      double d = a[rj + j];
      for (int t = 0; t < j; t++) {
        d -= a[rj + t] * a[rj + t];
      }
      if (!(d > 0)) {
        return j;
      }
      d = Math.sqrt(d);
      a[rj + j] = d;
      for (int i = j + 1; i < nb; i++) {
        int ri = off + i * ld;
        double v = a[ri + j];
        for (int t = 0; t < j; t++) {
          v -= a[ri + t] * a[rj + t];
        }
        a[ri + j] = v / d;
      }
    }
    return -1;
  }

  /** X = B L⁻ᵀ for the lower nb × nb block L: each row of B (rows × nb) solved in place. */
  static void solveLowerTransposed(double[] l, int lOff, int ldl, double[] b, int bOff, int ldb, int rows, int nb) {
    for (int i = 0; i < rows; i++) {
      int bi = bOff + i * ldb;
      for (int j = 0; j < nb; j++) {
        int lj = lOff + j * ldl;
        double v = b[bi + j];
        for (int t = 0; t < j; t++) {
          v -= b[bi + t] * l[lj + t];
        }
        b[bi + j] = v / l[lj + j];
      }
    }
  }

  /**
   * The symmetric update of the lower triangle: C[i][j] -= Σt P[i][t] Pᵀ[t][j] for the columns
   * j < {@code limits[i]} of row i; P is rows × k, Pᵀ k × cols.
   */
  static void subtractLowerProduct(double[] c, int cOff, int ldc, int rows, int[] limits, double[] p, int pOff,
      int ldp, double[] pt, int ptOff, int ldpt, int k) {
    for (int i = 0; i < rows; i++) {
      int ci = cOff + i * ldc;
      int cols = limits[i];
      for (int t = 0; t < k; t++) {
        double pit = p[pOff + i * ldp + t];
        int tt = ptOff + t * ldpt;
        for (int j = 0; j < cols; j++) {
          c[ci + j] -= pit * pt[tt + j];
        }
      }
    }
  }
}
