package dev.gpucoll.examples.linalg;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CollectiveListener;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.GpuCommunicator;
import dev.gpucoll.api.ProcessGrid;
import dev.gpucoll.examples.ExampleSpark;
import dev.gpucoll.linalg.Cholesky;
import dev.gpucoll.linalg.Descriptor;
import dev.gpucoll.linalg.DeviceMatrix;
import dev.gpucoll.linalg.DeviceSolver;
import dev.gpucoll.linalg.LocalMatrix;
import dev.gpucoll.linalg.Lu;
import dev.gpucoll.spark.BarrierPartitionFunction;
import dev.gpucoll.spark.GpuCollectives;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.stream.IntStream;
import org.apache.spark.api.java.JavaSparkContext;

/**
 * What the LU and Cholesky examples share: their problem (size, block, seed, and a defect that
 * makes the matrix singular or not positive definite at a chosen column), each rank's run in a
 * barrier stage, and the check. The factorizations are gpucoll-linalg's: {@link Lu} and
 * {@link Cholesky} on host parts ({@code --kernels cpu}), {@link DeviceSolver} on device parts over
 * the ranks' GPU communicators ({@code --kernels gpu}); the examples hold none of their own. Each
 * rank builds its part of A from the seed (block-cyclic over the most square P × Q grid for the rank
 * count, any n), factors it, and solves A x = b for a seeded b.
 *
 * <p>The check runs the same example on one rank (a 1 × 1 grid: on the host the same steps, on the
 * device one cuSOLVER call) and compares: the solve residuals ‖b − A x‖₁ / (‖A‖₁ ‖x‖₁ n ε) of both
 * below 10 (LAPACK's dget02 ratio), and on the host (where every grid's factors are the same bits)
 * the pivots and every factor bit for bit.
 */
public final class Factorizations {
  public static final double RESIDUAL_LIMIT = 10;
  static final double EPS = Math.ulp(1.0) / 2; // unit roundoff, LAPACK's dlamch('E')

  private Factorizations() {}

  /** Which factorization. */
  public enum Routine {
    /** LU with partial pivoting (getrf, getrs). */
    LU,
    /** Cholesky, lower (potrf, potrs). */
    CHOLESKY
  }

  /** Where the factorization runs: {@code --kernels cpu|gpu}. */
  public enum Kernels {
    /** gpucoll-linalg's host routines on each rank's part in Java memory. */
    CPU,
    /** gpucoll-linalg's DeviceSolver on each rank's part in its GPU's memory (needs the GPU backend). */
    GPU
  }

  /**
   * @param defectColumn -1 for a regular matrix; else LU's matrix gets an all-zero column there
   *     (singular: no nonzero pivot) and Cholesky's a negative diagonal entry (not positive definite)
   */
  public record Config(int ranks, int n, int blockSize, long seed, int defectColumn, Kernels kernels)
      implements Serializable {
    public Config {
      if (ranks < 1 || n < 1 || blockSize < 1) {
        throw new IllegalArgumentException("ranks, n and the block size must be positive: " + ranks + ", " + n + ", "
            + blockSize);
      }
      if (defectColumn < -1 || defectColumn >= n) {
        throw new IllegalArgumentException("defect column " + defectColumn + " is outside the matrix (n = " + n + ")");
      }
      if (kernels == null) {
        throw new IllegalArgumentException("kernels must be cpu or gpu");
      }
    }

    public Config(int ranks, int n, int blockSize, long seed, int defectColumn) {
      this(ranks, n, blockSize, seed, defectColumn, Kernels.CPU);
    }

    public Config(int ranks, int n, int blockSize, long seed) {
      this(ranks, n, blockSize, seed, -1);
    }

    /** The same problem on one rank: the reference the check compares with. */
    public Config onOneRank() {
      return new Config(1, n, blockSize, seed, defectColumn, kernels);
    }

    /** Whether the factors must equal the one-rank ones bit for bit (the host routines on both sides). */
    boolean exact() {
      return kernels == Kernels.CPU;
    }

    /** A's descriptor: n × n in blocks of blockSize over the most square grid for the rank count. */
    public Descriptor descriptor() {
      return Descriptor.onMostSquareGrid(n, n, blockSize, blockSize, ranks);
    }

    /** b's descriptor: one column with A's row blocks. */
    Descriptor rhsDescriptor() {
      Descriptor d = descriptor();
      return Descriptor.of(n, 1, blockSize, blockSize, d.gridRows(), d.gridCols());
    }

    String gridName() {
      Descriptor d = descriptor();
      return d.gridRows() + "x" + d.gridCols();
    }
  }

  /**
   * One rank's results: its parts of the factors and of x (column-major, the descriptors' LLD), the
   * pivots (LU; every rank has all of them), and its times.
   */
  public record RankResult(int rank, int p, int q, double[] factor, double[] x, int[] pivots, long factorNanos,
      long commNanos, String backend, String kernels) implements Serializable {}

  /** {@code --kernels cpu|gpu} (default cpu). */
  static Kernels kernelsOption(java.util.Map<String, String> options) {
    String v = options.getOrDefault("kernels", "cpu");
    try {
      return Kernels.valueOf(v.trim().toUpperCase(Locale.ROOT));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("--kernels must be cpu or gpu, got '" + v + "'");
    }
  }

  private static double uniform(long seed, int i, int j) {
    return new SplittableRandom(seed * 1_000_003L + (long) i * 65_537L + j).nextDouble(-1, 1);
  }

  /** A's element (i, j): LU's uniform in [-1, 1) with the defect column zero; Cholesky's symmetric, diagonally dominant. */
  static double element(Routine routine, Config c, int i, int j) {
    if (routine == Routine.LU) {
      return j == c.defectColumn() ? 0 : uniform(c.seed(), i, j);
    }
    if (i == j) {
      return i == c.defectColumn() ? -1 : c.n() + uniform(c.seed(), i, i);
    }
    return uniform(c.seed(), Math.min(i, j), Math.max(i, j));
  }

  /** b's element i. */
  static double rhs(Config c, int i) {
    return uniform(c.seed() + 1, i, -1);
  }

  /**
   * This rank's factorization and solve; collective over {@code comm} (a grid of {@link Config#ranks}).
   * A matrix that cannot be factored fails every rank with gpucoll-linalg's
   * {@link dev.gpucoll.linalg.FactorizationException} naming the column.
   */
  public static RankResult factorRank(Routine routine, Communicator comm, Config c) {
    Descriptor d = c.descriptor();
    Descriptor db = c.rhsDescriptor();
    if (c.kernels() == Kernels.GPU && !(comm instanceof GpuCommunicator)) {
      throw new IllegalStateException("--kernels gpu needs the GPU backend; this rank's communicator is "
          + comm.backend());
    }
    int p = comm.rank() / d.gridCols();
    int q = comm.rank() % d.gridCols();
    LocalMatrix a = LocalMatrix.generate(d, p, q, (i, j) -> element(routine, c, i, j));
    LocalMatrix b = LocalMatrix.generate(db, p, q, (i, j) -> rhs(c, i));
    AtomicLong commNanos = new AtomicLong();
    CollectiveListener timer = new CollectiveListener() {
      @Override
      public void onCollective(Collective collective, String algorithm, long bytes, long nanos) {
        commNanos.addAndGet(nanos);
      }
    };
    long[] factorNanos = new long[2];
    int[] pivots;
    if (c.kernels() == Kernels.GPU) {
      try (ProcessGrid<GpuCommunicator> grid = ProcessGrid.of((GpuCommunicator) comm, d.gridRows(), d.gridCols());
          DeviceSolver solver = DeviceSolver.open(grid)) {
        listen(grid, timer);
        try (DeviceMatrix da = solver.upload(a); DeviceMatrix dx = solver.upload(b)) {
          pivots = timed(comm, factorNanos, commNanos, () -> {
            int[] piv = routine == Routine.LU ? solver.getrf(da) : null;
            if (routine == Routine.CHOLESKY) {
              solver.potrf(da);
            }
            solver.synchronize();
            return piv;
          });
          if (routine == Routine.LU) {
            solver.getrs(da, pivots, dx);
          } else {
            solver.potrs(da, dx);
          }
          a = solver.download(da);
          b = solver.download(dx);
          comm.barrier(); // every rank's last collective done before a cudaFree waits for the device
        }
      }
    } else {
      try (ProcessGrid<Communicator> grid = ProcessGrid.of(comm, d.gridRows(), d.gridCols())) {
        listen(grid, timer);
        LocalMatrix factor = a;
        pivots = timed(comm, factorNanos, commNanos, () -> {
          if (routine == Routine.LU) {
            return Lu.getrf(grid, factor);
          }
          Cholesky.potrf(grid, factor);
          return null;
        });
        if (routine == Routine.LU) {
          Lu.getrs(grid, a, pivots, b);
        } else {
          Cholesky.potrs(grid, a, b);
        }
      }
    }
    return new RankResult(comm.rank(), p, q, a.data(), b.data(), pivots, factorNanos[0], factorNanos[1],
        comm.backend(), c.kernels() == Kernels.GPU ? "GPU (DeviceSolver: cuBLAS, cuSOLVER)" : "CPU (Lu, Cholesky)");
  }

  private static void listen(ProcessGrid<? extends Communicator> grid, CollectiveListener timer) {
    grid.all().addListener(timer);
    grid.row().addListener(timer);
    grid.column().addListener(timer);
  }

  private interface Factor {
    int[] run();
  }

  /**
   * {@code factor} between two barriers (every rank starts the clock together): its time into
   * nanos[0], the time its collectives took ({@code inCollectives}' growth) into nanos[1].
   */
  private static int[] timed(Communicator comm, long[] nanos, AtomicLong inCollectives, Factor factor) {
    comm.barrier();
    long c0 = inCollectives.get();
    long t0 = System.nanoTime();
    int[] pivots = factor.run();
    nanos[1] = inCollectives.get() - c0;
    comm.barrier();
    nanos[0] = System.nanoTime() - t0;
    return pivots;
  }

  /**
   * One barrier stage of {@link Config#ranks} tasks factoring on each (bad sizes fail before, on the
   * driver); the ranks' results in rank order.
   */
  public static List<RankResult> runDistributed(Routine routine, JavaSparkContext jsc, Config c) {
    c.descriptor();
    BarrierPartitionFunction<Integer, RankResult> rank = (comm, rows) -> List.of(factorRank(routine, comm, c))
        .iterator();
    List<RankResult> out = new ArrayList<>(GpuCollectives.barrierMapPartitions(
        jsc.parallelize(IntStream.range(0, c.ranks()).boxed().toList(), c.ranks()), rank).collect());
    out.sort(Comparator.comparingInt(RankResult::rank));
    return out;
  }

  /**
   * An example's run: its Spark context ({@code master}, or a local-cluster), the factorization on
   * the config's ranks, the path report, each rank's grid position, backend, kernels and times; then
   * the same on one rank, the check's reference. The two runs' results, in that order.
   */
  @SuppressWarnings("unchecked")
  static List<RankResult>[] runTwice(Routine routine, String app, String master, Config c) {
    List<RankResult>[] out = new List[2];
    try (JavaSparkContext jsc = ExampleSpark.start(app, master, c.ranks())) {
      out[0] = runDistributed(routine, jsc, c);
      System.out.println("Path report: " + ExampleSpark.lastPathReport());
      out[1] = runDistributed(routine, jsc, c.onOneRank());
    }
    for (RankResult r : out[0]) {
      System.out.println("rank " + r.rank() + " = grid (" + r.p() + "," + r.q() + "), " + r.backend() + ", "
          + r.kernels() + ": factorization " + ExampleSpark.ms(r.factorNanos()) + ", of it in collectives "
          + ExampleSpark.ms(r.commNanos()));
    }
    System.out.println("one rank: factorization " + ExampleSpark.ms(out[1].get(0).factorNanos()));
    return out;
  }

  /** The example's verdict line; a failed check ends the JVM with status 1. */
  static void exitOnFailure(boolean passes) {
    System.out.println(passes ? "CHECK OK" : "CHECK FAILED");
    if (!passes) {
      System.exit(1);
    }
  }

  /** The distributed run against the one-rank run of the same problem. */
  public record Check(double residual, double referenceResidual, boolean samePivots, double maxFactorDifference,
      boolean exact) {
    /** Both residuals below the limit; on the host also the same pivots and the same bits. */
    public boolean passes() {
      return residual < RESIDUAL_LIMIT && referenceResidual < RESIDUAL_LIMIT
          && (!exact || samePivots && maxFactorDifference == 0);
    }
  }

  public static Check check(Routine routine, Config c, List<RankResult> ranks, List<RankResult> oneRank) {
    double[] factor = whole(c.descriptor(), ranks, RankResult::factor);
    double[] reference = whole(c.onOneRank().descriptor(), oneRank, RankResult::factor);
    boolean lowerOnly = routine == Routine.CHOLESKY;
    double diff = 0;
    for (int j = 0; j < c.n(); j++) {
      for (int i = lowerOnly ? j : 0; i < c.n(); i++) {
        double x = factor[i + j * c.n()];
        double y = reference[i + j * c.n()];
        diff = Math.max(diff, Double.doubleToRawLongBits(x) == Double.doubleToRawLongBits(y) ? 0
            : Double.isNaN(x - y) ? Double.POSITIVE_INFINITY : Math.max(Math.abs(x - y), Double.MIN_VALUE));
      }
    }
    boolean samePivots = routine == Routine.CHOLESKY || Arrays.equals(ranks.get(0).pivots(), oneRank.get(0).pivots());
    return new Check(residual(routine, c, whole(c.rhsDescriptor(), ranks, RankResult::x)),
        residual(routine, c, whole(c.onOneRank().rhsDescriptor(), oneRank, RankResult::x)), samePivots, diff,
        c.exact());
  }

  /** The whole matrix (column-major, leading dimension n) from every rank's part. */
  private static double[] whole(Descriptor d, List<RankResult> ranks, Function<RankResult, double[]> local) {
    double[] out = new double[d.m() * d.n()];
    for (RankResult r : ranks) {
      LocalMatrix.wrap(d, r.p(), r.q(), local.apply(r)).gather(out, d.m());
    }
    return out;
  }

  /** ‖b − A x‖₁ / (‖A‖₁ ‖x‖₁ n ε), A and b generated again here. */
  static double residual(Routine routine, Config c, double[] x) {
    int n = c.n();
    double[] r = new double[n];
    double[] columnSums = new double[n];
    for (int i = 0; i < n; i++) {
      r[i] = rhs(c, i);
    }
    for (int j = 0; j < n; j++) {
      for (int i = 0; i < n; i++) {
        double aij = element(routine, c, i, j);
        r[i] -= aij * x[j];
        columnSums[j] += Math.abs(aij);
      }
    }
    double normA = Arrays.stream(columnSums).max().orElse(0);
    double normX = Arrays.stream(x).map(Math::abs).sum();
    double normR = Arrays.stream(r).map(Math::abs).sum();
    return normR / (normA * normX * n * EPS);
  }
}
