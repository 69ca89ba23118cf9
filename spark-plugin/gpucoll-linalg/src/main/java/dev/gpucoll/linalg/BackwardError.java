package dev.gpucoll.linalg;

/**
 * LAPACK's test ratios of a factorization or a solve, on whole column-major matrices, computed
 * apart from the factorization: each product is summed in double-double arithmetic (an exact
 * product by fma, a compensated sum), so the residual shows the factors' own rounding instead of
 * repeating it. Norms are 1-norms; ε = 2⁻⁵³ (LAPACK's dlamch('E')). A ratio of order 1 is what a
 * backward stable factorization gives; LAPACK's tests accept below 30.
 */
public final class BackwardError {
  private BackwardError() {}

  /** 2⁻⁵³: the unit roundoff of fp64. */
  public static final double EPS = 0x1p-53;

  /**
   * ‖P A − L U‖₁ / (‖A‖₁ · max(M, N) · ε), as LAPACK's dget01: {@code a} the M × N input,
   * {@code lu} getrf's factors (leading dimension M), {@code pivots} getrf's.
   */
  public static double lu(double[] a, double[] lu, int[] pivots, int m, int n) {
    double[] pa = a.clone();
    for (int k = 0; k < pivots.length; k++) {
      swapRows(pa, m, n, k, pivots[k]);
    }
    int kmax = Math.min(m, n);
    double worst = 0;
    for (int j = 0; j < n; j++) {
      double column = 0;
      for (int i = 0; i < m; i++) {
        // (L U)(i, j) = Σ_{t ≤ min(i, j)} L(i, t) U(t, j), L(i, i) = 1
        double[] s = {0, 0};
        int tmax = Math.min(Math.min(i, j), kmax - 1);
        for (int t = 0; t <= tmax; t++) {
          double l = t == i ? 1 : lu[i + t * m];
          add(s, l, lu[t + j * m]);
        }
        add(s, -1, pa[i + j * m]);
        column += Math.abs(s[0] + s[1]);
      }
      worst = Math.max(worst, column);
    }
    return ratio(worst, norm1(a, m, n), Math.max(m, n));
  }

  /**
   * ‖A − L Lᵀ‖₁ / (‖A‖₁ · N · ε), as LAPACK's dpot01: {@code a} the N × N symmetric input (its
   * lower triangle read), {@code l} potrf's factor (its lower triangle read).
   */
  public static double cholesky(double[] a, double[] l, int n) {
    double[] sym = symmetric(a, n);
    double worst = 0;
    for (int j = 0; j < n; j++) {
      double column = 0;
      for (int i = 0; i < n; i++) {
        double[] s = {0, 0};
        for (int t = 0; t <= Math.min(i, j); t++) {
          add(s, l[i + t * n], l[j + t * n]);
        }
        add(s, -1, sym[i + j * n]);
        column += Math.abs(s[0] + s[1]);
      }
      worst = Math.max(worst, column);
    }
    return ratio(worst, norm1(sym, n, n), n);
  }

  /**
   * ‖B − A X‖₁ / (‖A‖₁ · ‖X‖₁ · N · ε), as LAPACK's dget02: A N × N, X and B N × NRHS; with
   * {@code symmetricLower} A is the symmetric matrix of {@code a}'s lower triangle.
   */
  public static double solve(double[] a, boolean symmetricLower, double[] x, double[] b, int n, int nrhs) {
    double[] full = symmetricLower ? symmetric(a, n) : a;
    double worst = 0;
    double xnorm = 0;
    for (int j = 0; j < nrhs; j++) {
      double column = 0;
      for (int i = 0; i < n; i++) {
        double[] s = {0, 0};
        for (int t = 0; t < n; t++) {
          add(s, full[i + t * n], x[t + j * n]);
        }
        add(s, -1, b[i + j * n]);
        column += Math.abs(s[0] + s[1]);
      }
      worst = Math.max(worst, column);
    }
    xnorm = norm1(x, n, nrhs);
    double anorm = norm1(full, n, n);
    if (anorm == 0 || xnorm == 0) {
      return worst == 0 ? 0 : Double.POSITIVE_INFINITY;
    }
    return worst / anorm / xnorm / (n * EPS);
  }

  /** s += x · y in double-double: s[0] the high part, s[1] the low. */
  private static void add(double[] s, double x, double y) {
    double p = x * y;
    double pe = Math.fma(x, y, -p); // the product's rounding error, exactly
    double sum = s[0] + p;
    double bv = sum - s[0];
    double se = (s[0] - (sum - bv)) + (p - bv); // the sum's rounding error (Knuth's two-sum)
    s[0] = sum;
    s[1] += se + pe;
  }

  private static double ratio(double residual, double anorm, int n) {
    if (anorm == 0) {
      return residual == 0 ? 0 : Double.POSITIVE_INFINITY;
    }
    return residual / anorm / (n * EPS);
  }

  /** ‖A‖₁, the largest column sum of |values|, of the m × n column-major {@code a}. */
  public static double norm1(double[] a, int m, int n) {
    double worst = 0;
    for (int j = 0; j < n; j++) {
      double s = 0;
      for (int i = 0; i < m; i++) {
        s += Math.abs(a[i + j * m]);
      }
      worst = Math.max(worst, s);
    }
    return worst;
  }

  private static double[] symmetric(double[] a, int n) {
    double[] s = new double[n * n];
    for (int j = 0; j < n; j++) {
      for (int i = j; i < n; i++) {
        s[i + j * n] = a[i + j * n];
        s[j + i * n] = a[i + j * n];
      }
    }
    return s;
  }

  private static void swapRows(double[] a, int m, int n, int x, int y) {
    if (x == y) {
      return;
    }
    for (int j = 0; j < n; j++) {
      double t = a[x + j * m];
      a[x + j * m] = a[y + j * m];
      a[y + j * m] = t;
    }
  }
}
