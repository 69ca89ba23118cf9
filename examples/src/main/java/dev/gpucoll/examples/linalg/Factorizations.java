package dev.gpucoll.examples.linalg;

import dev.gpucoll.examples.ExampleSpark;
import dev.gpucoll.spark.BarrierPartitionFunction;
import dev.gpucoll.spark.GpuCollectives;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.Function;
import java.util.stream.IntStream;
import org.apache.spark.api.java.JavaSparkContext;

/**
 * What the distributed LU and Cholesky examples share: their problem (size, block, seed, and a
 * defect that makes the matrix singular or not positive definite at a chosen column), the test
 * matrices, the one-process factorizations they are checked and timed against, and the scaled
 * residuals ‖PA − LU‖₁ / (‖A‖₁·n·ε) and ‖A − LLᵀ‖₁ / (‖A‖₁·n·ε) (LAPACK's test ratios; below 10 passes).
 */
public final class Factorizations {
  /** What every rank of a factorization reports besides its part of the factors. */
  public interface RankTimes {
    int rank();

    int p();

    int q();

    long factorNanos();

    long commNanos();

    String backend();

    String kernels();
  }

  /**
   * One barrier stage of {@code ranks} tasks running {@code rank} on each (bad sizes fail before, on
   * the driver, where the caller checks its Config); the ranks' results in rank order.
   */
  static <R extends RankTimes> List<R> onRanks(JavaSparkContext jsc, int ranks, BarrierPartitionFunction<Integer, R> rank) {
    List<R> out = new ArrayList<>(GpuCollectives.barrierMapPartitions(
        jsc.parallelize(IntStream.range(0, ranks).boxed().toList(), ranks), rank).collect());
    out.sort(Comparator.comparingInt(RankTimes::rank));
    return out;
  }

  /**
   * An example's run: its Spark context ({@code master}, or a local-cluster), the factorization on
   * {@code ranks} ranks, the path report, and each rank's grid position, backend, kernels and times.
   */
  static <R extends RankTimes> List<R> runExample(String app, String master, int ranks,
      Function<JavaSparkContext, List<R>> factorization) {
    List<R> out;
    try (JavaSparkContext jsc = ExampleSpark.start(app, master, ranks)) {
      out = factorization.apply(jsc);
      System.out.println("Path report: " + ExampleSpark.lastPathReport());
    }
    for (R r : out) {
      System.out.println("rank " + r.rank() + " = grid (" + r.p() + "," + r.q() + "), " + r.backend()
          + ", " + r.kernels() + ": factorization " + ExampleSpark.ms(r.factorNanos()) + ", of it in collectives "
          + ExampleSpark.ms(r.commNanos()));
    }
    return out;
  }

  /** The example's verdict line; a failed check ends the JVM with status 1. */
  static void exitOnFailure(boolean passes) {
    System.out.println(passes ? "CHECK OK" : "CHECK FAILED");
    if (!passes) {
      System.exit(1);
    }
  }

  public static final double RESIDUAL_LIMIT = 10;
  static final double EPS = Math.ulp(1.0) / 2; // unit roundoff, LAPACK's dlamch('E')

  private Factorizations() {}

  /**
   * @param defectColumn -1 for a regular matrix; else LU's matrix gets an all-zero column there
   *     (singular: no nonzero pivot) and Cholesky's a negative diagonal entry (not positive definite)
   */
  public record Config(int ranks, int n, int blockSize, long seed, int defectColumn, FactorKernels.Kind kernels)
      implements Serializable {
    public Config {
      if (defectColumn < -1 || defectColumn >= n) {
        throw new IllegalArgumentException("defect column " + defectColumn + " is outside the matrix (n = " + n + ")");
      }
      if (kernels == null) {
        throw new IllegalArgumentException("kernels must be cpu or gpu");
      }
    }

    public Config(int ranks, int n, int blockSize, long seed, int defectColumn) {
      this(ranks, n, blockSize, seed, defectColumn, FactorKernels.Kind.CPU);
    }

    public Config(int ranks, int n, int blockSize, long seed) {
      this(ranks, n, blockSize, seed, -1);
    }

    /** Whether the factors must equal the one-process ones bit for bit (the Java kernels on both sides). */
    boolean exact() {
      return kernels == FactorKernels.Kind.CPU;
    }

    BlockCyclicLayout layout() {
      int[] g = BlockCyclicLayout.grid(ranks);
      return new BlockCyclicLayout(n, blockSize, g[0], g[1]);
    }
  }

  /** {@code --kernels cpu|gpu} (default cpu). */
  static FactorKernels.Kind kernelsOption(java.util.Map<String, String> options) {
    String v = options.getOrDefault("kernels", "cpu");
    try {
      return FactorKernels.Kind.valueOf(v.trim().toUpperCase(java.util.Locale.ROOT));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("--kernels must be cpu or gpu, got '" + v + "'");
    }
  }

  /** A factorization that cannot go on, with the global column where it stopped; the same text on every rank. */
  public static final class FactorizationException extends RuntimeException {
    private final int column;

    FactorizationException(int column, String message) {
      super(message);
      this.column = column;
    }

    public int column() {
      return column;
    }
  }

  static FactorizationException singular(int column) {
    return new FactorizationException(column, "LU: the matrix is singular: column " + column
        + " has no nonzero pivot (U(" + column + "," + column + ") = 0)");
  }

  static FactorizationException notANumber(int column, long row) {
    return new FactorizationException(column, "LU: the matrix holds NaN: column " + column + ", row " + row
        + " at its elimination step");
  }

  static FactorizationException notPositiveDefinite(int column) {
    return new FactorizationException(column, "Cholesky: the matrix is not positive definite: the pivot of column "
        + column + " is not positive");
  }

  private static double uniform(long seed, int i, int j) {
    return new SplittableRandom(seed * 1_000_003L + (long) i * 65_537L + j).nextDouble(-1, 1);
  }

  /** LU's matrix: uniform in [-1, 1), the defect column all zero. */
  static double general(Config c, int i, int j) {
    return j == c.defectColumn() ? 0 : uniform(c.seed(), i, j);
  }

  /** Cholesky's matrix: symmetric, diagonally dominant (so positive definite), but for a negative defect diagonal. */
  static double spd(Config c, int i, int j) {
    if (i == j) {
      return i == c.defectColumn() ? -1 : c.n() + uniform(c.seed(), i, i);
    }
    return uniform(c.seed(), Math.min(i, j), Math.max(i, j));
  }

  /** LU's whole matrix, row-major. */
  public static double[] generalMatrix(Config c) {
    return dense(c, (i, j) -> general(c, i, j));
  }

  /** Cholesky's whole matrix, row-major. */
  public static double[] spdMatrix(Config c) {
    return dense(c, (i, j) -> spd(c, i, j));
  }

  private static double[] dense(Config c, BlockCyclicLayout.Element f) {
    int n = c.n();
    double[] a = new double[n * n];
    for (int i = 0; i < n; i++) {
      for (int j = 0; j < n; j++) {
        a[i * n + j] = f.at(i, j);
      }
    }
    return a;
  }

  /**
   * LU with partial pivoting in one process, blocked as the distributed one (panel of nb columns:
   * pivot = largest |value| at or below the diagonal, lowest row among equals; row swap; scaling and
   * rank-1 updates in the panel; then U₁₂ = L₁₁⁻¹ A₁₂ and A₂₂ −= L₂₁ U₁₂). In place: L below the
   * diagonal (unit diagonal implied), U on and above; returns the pivot row of each column.
   */
  public static int[] luInPlace(double[] a, int n, int nb) {
    int[] piv = new int[n];
    for (int k0 = 0; k0 < n; k0 += nb) {
      int kb = Math.min(nb, n - k0);
      for (int j = k0; j < k0 + kb; j++) {
        int r = j;
        double best = Math.abs(a[j * n + j]);
        for (int i = j; i < n; i++) {
          double v = Math.abs(a[i * n + j]);
          if (Double.isNaN(v)) {
            throw notANumber(j, i);
          }
          if (v > best) {
            best = v;
            r = i;
          }
        }
        if (best == 0) {
          throw singular(j);
        }
        piv[j] = r;
        if (r != j) {
          for (int c = 0; c < n; c++) {
            double t = a[j * n + c];
            a[j * n + c] = a[r * n + c];
            a[r * n + c] = t;
          }
        }
        double pivot = a[j * n + j];
        for (int i = j + 1; i < n; i++) {
          double l = a[i * n + j] / pivot;
          a[i * n + j] = l;
          for (int c = j + 1; c < k0 + kb; c++) {
            a[i * n + c] -= l * a[j * n + c];
          }
        }
      }
      int right = k0 + kb;
      DenseKernels.unitLowerSolve(a, k0 * n + k0, n, a, k0 * n + right, n, kb, n - right);
      DenseKernels.subtractProduct(a, right * n + right, n, n - right, n - right, a, right * n + k0, n,
          a, k0 * n + right, n, kb);
    }
    return piv;
  }

  /**
   * Lower Cholesky in one process, blocked as the distributed one (diagonal block factored, panel
   * solved, lower triangle of the trailing matrix updated). In place: L on and below the diagonal.
   */
  public static void choleskyInPlace(double[] a, int n, int nb) {
    double[] pt = new double[nb * n];
    int[] limits = new int[n];
    for (int k0 = 0; k0 < n; k0 += nb) {
      int kb = Math.min(nb, n - k0);
      int bad = DenseKernels.choleskyLower(a, k0 * n + k0, n, kb);
      if (bad >= 0) {
        throw notPositiveDefinite(k0 + bad);
      }
      int right = k0 + kb;
      int rest = n - right;
      DenseKernels.solveLowerTransposed(a, k0 * n + k0, n, a, right * n + k0, n, rest, kb);
      for (int t = 0; t < kb; t++) {
        for (int j = 0; j < rest; j++) {
          pt[t * rest + j] = a[(right + j) * n + k0 + t];
        }
      }
      for (int i = 0; i < rest; i++) {
        limits[i] = i + 1;
      }
      DenseKernels.subtractLowerProduct(a, right * n + right, n, rest, limits, a, right * n + k0, n, pt, 0, rest, kb);
    }
  }

  /**
   * The one-process LU the distributed one is checked and timed against, with the same kind of
   * kernels: the Java {@link #luInPlace}, or cuSOLVER getrf on the whole matrix on this process's GPU.
   */
  static int[] oneProcessLu(FactorKernels kernels, double[] a, int n, int nb) {
    if (kernels instanceof CudaFactorKernels gpu) {
      int[] piv = new int[n];
      int info = gpu.getrf(a, n, piv);
      if (info > 0) {
        throw singular(info - 1);
      }
      return piv;
    }
    return luInPlace(a, n, nb);
  }

  /** The one-process Cholesky: the Java {@link #choleskyInPlace}, or cuSOLVER potrf on the whole matrix. */
  static void oneProcessCholesky(FactorKernels kernels, double[] a, int n, int nb) {
    if (kernels instanceof CudaFactorKernels gpu) {
      int info = gpu.potrf(a, n); // row-major lower = column-major upper, as in choleskyLower
      if (info > 0) {
        throw notPositiveDefinite(info - 1);
      }
      for (int j = 0; j < n; j++) {
        if (!(a[j * n + j] > 0)) {
          throw notPositiveDefinite(j);
        }
      }
      return;
    }
    choleskyInPlace(a, n, nb);
  }

  /**
   * ‖PA − LU‖₁ / (‖A‖₁·n·ε) for the factors {@link #luInPlace} leaves (row swaps {@code piv} in order);
   * the product on {@code kernels} (one GEMM).
   */
  public static double luResidual(double[] a, double[] lu, int[] piv, int n, FactorKernels kernels) {
    double[] pa = a.clone();
    for (int j = 0; j < n; j++) {
      int r = piv[j];
      for (int c = 0; c < n && r != j; c++) {
        double t = pa[j * n + c];
        pa[j * n + c] = pa[r * n + c];
        pa[r * n + c] = t;
      }
    }
    double[] l = new double[n * n];
    double[] u = new double[n * n];
    for (int i = 0; i < n; i++) {
      for (int j = 0; j < n; j++) {
        double v = lu[i * n + j];
        if (j < i) {
          l[i * n + j] = v;
        } else {
          u[i * n + j] = v;
        }
      }
      l[i * n + i] = 1;
    }
    kernels.subtractProduct(pa, 0, n, n, n, l, 0, n, u, 0, n, n);
    return norm1(pa, n) / (norm1(a, n) * n * EPS);
  }

  /** ‖A − LLᵀ‖₁ / (‖A‖₁·n·ε) for L on and below the diagonal of {@code l} (the rest ignored); one GEMM on {@code kernels}. */
  public static double choleskyResidual(double[] a, double[] l, int n, FactorKernels kernels) {
    double[] lower = new double[n * n];
    double[] upper = new double[n * n]; // Lᵀ
    for (int i = 0; i < n; i++) {
      for (int j = 0; j <= i; j++) {
        lower[i * n + j] = l[i * n + j];
        upper[j * n + i] = l[i * n + j];
      }
    }
    double[] diff = a.clone();
    kernels.subtractProduct(diff, 0, n, n, n, lower, 0, n, upper, 0, n, n);
    return norm1(diff, n) / (norm1(a, n) * n * EPS);
  }

  /** The largest column sum of absolute values. */
  static double norm1(double[] a, int n) {
    double max = 0;
    for (int j = 0; j < n; j++) {
      double s = 0;
      for (int i = 0; i < n; i++) {
        s += Math.abs(a[i * n + j]);
      }
      max = Math.max(max, s);
    }
    return max;
  }

  /** The global matrix put together from every rank's local part. */
  static double[] assemble(BlockCyclicLayout lay, int[] gridRow, int[] gridCol, double[][] locals) {
    int n = lay.n();
    double[] out = new double[n * n];
    for (int r = 0; r < locals.length; r++) {
      for (int li = 0; li < lay.localRows(); li++) {
        for (int lj = 0; lj < lay.localCols(); lj++) {
          out[lay.globalRow(gridRow[r], li) * n + lay.globalCol(gridCol[r], lj)] = locals[r][li * lay.localCols() + lj];
        }
      }
    }
    return out;
  }

  /** Largest |x − y| over the elements selected (lower triangle only when {@code lowerOnly}). */
  static double maxDifference(double[] x, double[] y, int n, boolean lowerOnly) {
    double max = 0;
    for (int i = 0; i < n; i++) {
      for (int j = 0; j < (lowerOnly ? i + 1 : n); j++) {
        max = Math.max(max, Math.abs(x[i * n + j] - y[i * n + j]));
      }
    }
    return max;
  }
}
