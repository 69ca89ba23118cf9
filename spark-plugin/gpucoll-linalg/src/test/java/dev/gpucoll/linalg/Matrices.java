package dev.gpucoll.linalg;

import java.util.Random;

/** Test matrices, column-major, and the whole-matrix views of distributed parts. */
final class Matrices {
  private Matrices() {}

  /** M × N, entries uniform in [-1, 1). */
  static double[] general(int m, int n, long seed) {
    Random r = new Random(seed);
    double[] a = new double[m * n];
    for (int i = 0; i < a.length; i++) {
      a[i] = 2 * r.nextDouble() - 1;
    }
    return a;
  }

  /** N × N symmetric positive definite: G Gᵀ / N + I (both triangles set). */
  static double[] spd(int n, long seed) {
    double[] g = general(n, n, seed);
    double[] a = new double[n * n];
    for (int j = 0; j < n; j++) {
      for (int i = 0; i < n; i++) {
        double s = 0;
        for (int t = 0; t < n; t++) {
          s += g[i + t * n] * g[j + t * n];
        }
        a[i + j * n] = s / n + (i == j ? 1 : 0);
      }
    }
    return a;
  }

  /** The whole matrix from every rank's part (parts in rank order). */
  static double[] gather(java.util.List<LocalMatrix> parts) {
    Descriptor d = parts.get(0).descriptor();
    double[] whole = new double[d.m() * d.n()];
    for (LocalMatrix part : parts) {
      part.gather(whole, Math.max(1, d.m()));
    }
    return whole;
  }
}
