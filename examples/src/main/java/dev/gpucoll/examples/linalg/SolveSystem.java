package dev.gpucoll.examples.linalg;

import dev.gpucoll.api.ProcessGrid;
import dev.gpucoll.examples.ExampleSpark;
import dev.gpucoll.linalg.BackwardError;
import dev.gpucoll.linalg.Block;
import dev.gpucoll.linalg.Cholesky;
import dev.gpucoll.linalg.Descriptor;
import dev.gpucoll.linalg.LocalMatrix;
import dev.gpucoll.linalg.Lu;
import dev.gpucoll.spark.GpuCollectives;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.apache.spark.HashPartitioner;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import scala.Tuple2;

/**
 * A Spark job that solves A X = B with the product's distributed LU or Cholesky
 * ({@code dev.gpucoll.linalg}) on Spark data: A and B are RDDs of blocks (block-cyclic, ScaLAPACK's
 * descriptor: any n, block and source process) made in an ordinary stage, keyed by the rank that
 * holds each block; one barrier task per rank of a P × Q grid makes its local matrices from its
 * partition, factors, solves and returns its blocks of X. The driver puts X together and measures
 * the backward error ‖B − A X‖₁ / (‖A‖₁ ‖X‖₁ n ε) against A and B made again from the seed.
 *
 * <p>Run: {@code scripts/example.sh solve [--factor lu|cholesky] [--grid 2x2] [--n 301] [--block 16]}.
 */
public final class SolveSystem {
  static final String USAGE = "solve [--factor lu|cholesky] [--grid PxQ] [--n 301] [--block 16] [--nrhs 3]"
      + " [--rsrc 0] [--csrc 0] [--seed 3] [--master local-cluster|local[N]]";

  private SolveSystem() {}

  /** What to solve: A (n × n, blocks nb × nb, first block on process (rsrc, csrc)) and B (n × nrhs). */
  public record Config(boolean cholesky, int gridRows, int gridCols, int n, int nb, int nrhs, int rsrc, int csrc,
      long seed) implements Serializable {
    public Descriptor a() {
      return Descriptor.of(n, n, nb, nb, rsrc, csrc, gridRows, gridCols);
    }

    /** B has A's rows; its columns in blocks of its own. */
    public Descriptor b() {
      return Descriptor.of(n, nrhs, nb, Math.max(1, nb / 2), rsrc, 0, gridRows, gridCols);
    }

    public int ranks() {
      return gridRows * gridCols;
    }

    /**
     * A's element (i, j), made from the seed alone, so any rank can make its part: for Cholesky
     * symmetric with a dominant positive diagonal (so positive definite), for LU general.
     */
    public double aAt(int i, int j) {
      if (cholesky) {
        return i == j ? n + unit(seed, i, j) : unit(seed, Math.min(i, j), Math.max(i, j));
      }
      return unit(seed, i, j);
    }

    public double bAt(int i, int j) {
      return unit(seed + 1, i, n + j);
    }

    private double unit(long s, int i, int j) {
      return 2 * new SplittableRandom(s * 0x9E3779B97F4A7C15L + (long) i * (n + nrhs) + j).nextDouble() - 1;
    }

    /** A, whole, column-major (for the driver's check). */
    double[] wholeA() {
      double[] out = new double[n * n];
      for (int j = 0; j < n; j++) {
        for (int i = 0; i < n; i++) {
          out[i + j * n] = aAt(i, j);
        }
      }
      return out;
    }

    /** B, whole, column-major. */
    double[] wholeB() {
      double[] out = new double[n * nrhs];
      for (int j = 0; j < nrhs; j++) {
        for (int i = 0; i < n; i++) {
          out[i + j * n] = bAt(i, j);
        }
      }
      return out;
    }
  }

  /** How long one rank's factorization and solve took. */
  public record RankTimes(int rank, int prow, int pcol, long factorNanos, long solveNanos, String backend)
      implements Serializable {}

  /** X as an RDD of blocks, and each rank's times. */
  public record Solution(List<Block> x, List<RankTimes> times) {}

  /**
   * A (or B) as Spark data: an RDD of its blocks, made in an ordinary stage and keyed by the rank
   * that holds each, partitioned so that partition r holds rank r's blocks.
   */
  static JavaPairRDD<Integer, Block> blocks(JavaSparkContext jsc, Config c, Descriptor d, boolean ofA) {
    List<int[]> coords = new ArrayList<>();
    for (int bj = 0; bj < d.blockCols(); bj++) {
      for (int bi = 0; bi < d.blockRows(); bi++) {
        coords.add(new int[] {bi, bj});
      }
    }
    return jsc.parallelize(coords, c.ranks()).mapToPair(ij -> {
      int rows = Math.min(d.mb(), d.m() - ij[0] * d.mb());
      int cols = Math.min(d.nb(), d.n() - ij[1] * d.nb());
      double[] data = new double[rows * cols];
      for (int j = 0; j < cols; j++) {
        for (int i = 0; i < rows; i++) {
          int gi = ij[0] * d.mb() + i;
          int gj = ij[1] * d.nb() + j;
          data[i + j * rows] = ofA ? c.aAt(gi, gj) : c.bAt(gi, gj);
        }
      }
      return new Tuple2<>(d.rankOfBlock(ij[0], ij[1]), new Block(ij[0], ij[1], rows, cols, data));
    }).partitionBy(new HashPartitioner(c.ranks()));
  }

  /**
   * A and B go in as RDDs of blocks; the barrier stage's task r gets rank r's blocks of both
   * (partition r of each), makes its local matrices, factors, solves, and gives back its blocks of
   * X and its times: host round trips only at the two ends.
   */
  public static Solution run(JavaSparkContext jsc, Config c) {
    Descriptor da = c.a(); // bad sizes fail here, on the driver, before any task starts
    Descriptor db = c.b();
    JavaRDD<Tuple2<Iterable<Block>, Iterable<Block>>> inputs = blocks(jsc, c, da, true).values()
        .zipPartitions(blocks(jsc, c, db, false).values(), (a, b) -> {
          List<Block> as = new ArrayList<>();
          a.forEachRemaining(as::add);
          List<Block> bs = new ArrayList<>();
          b.forEachRemaining(bs::add);
          return List.of(new Tuple2<Iterable<Block>, Iterable<Block>>(as, bs)).iterator();
        });
    List<Object> out = GpuCollectives.barrierMapPartitions(inputs, (comm, parts) -> {
      Tuple2<Iterable<Block>, Iterable<Block>> mine = parts.next();
      try (ProcessGrid<?> grid = ProcessGrid.of(comm, c.gridRows(), c.gridCols())) {
        int p = grid.myRow();
        int q = grid.myCol();
        LocalMatrix a = LocalMatrix.fromBlocks(da, p, q, mine._1());
        LocalMatrix b = LocalMatrix.fromBlocks(db, p, q, mine._2());
        comm.barrier();
        long t0 = System.nanoTime();
        int[] pivots = c.cholesky() ? null : Lu.getrf(grid, a);
        if (c.cholesky()) {
          Cholesky.potrf(grid, a);
        }
        long t1 = System.nanoTime();
        if (c.cholesky()) {
          Cholesky.potrs(grid, a, b);
        } else {
          Lu.getrs(grid, a, pivots, b);
        }
        long t2 = System.nanoTime();
        List<Object> result = new ArrayList<>(b.toBlocks());
        result.add(new RankTimes(comm.rank(), p, q, t1 - t0, t2 - t1, comm.backend()));
        return result.iterator();
      }
    }).collect();
    List<Block> x = out.stream().filter(o -> o instanceof Block).map(o -> (Block) o).toList();
    List<RankTimes> times = new ArrayList<>(out.stream().filter(o -> o instanceof RankTimes)
        .map(o -> (RankTimes) o).toList());
    times.sort(Comparator.comparingInt(RankTimes::rank));
    return new Solution(x, times);
  }

  /** X, whole, from its blocks. */
  public static double[] wholeX(Config c, List<Block> blocks) {
    Descriptor d = c.b();
    double[] x = new double[c.n() * c.nrhs()];
    for (Block b : blocks) {
      for (int j = 0; j < b.cols(); j++) {
        System.arraycopy(b.data(), j * b.rows(), x, b.blockRow() * d.mb() + (b.blockCol() * d.nb() + j) * c.n(),
            b.rows());
      }
    }
    return x;
  }

  /** The solve's backward error (LAPACK's dget02 ratio; below 10 passes). */
  public static double backwardError(Config c, Solution s) {
    return BackwardError.solve(c.wholeA(), false, wholeX(c, s.x()), c.wholeB(), c.n(), c.nrhs());
  }

  static Config parse(Map<String, String> o) {
    String factor = o.getOrDefault("factor", "lu");
    if (!factor.equals("lu") && !factor.equals("cholesky")) {
      throw new IllegalArgumentException("--factor must be lu or cholesky, got '" + factor + "'");
    }
    String grid = o.getOrDefault("grid", "2x2");
    String[] pq = grid.split("x");
    if (pq.length != 2) {
      throw new IllegalArgumentException("--grid must be PxQ (e.g. 2x3), got '" + grid + "'");
    }
    int rows;
    int cols;
    try {
      rows = Integer.parseInt(pq[0]);
      cols = Integer.parseInt(pq[1]);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("--grid must be PxQ (e.g. 2x3), got '" + grid + "'");
    }
    if (o.containsKey("ranks") && ExampleSpark.intOption(o, "ranks", 0) != rows * cols) {
      throw new IllegalArgumentException("--ranks " + o.get("ranks") + " does not match --grid " + grid
          + " (the grid's P x Q ranks run the job)");
    }
    return new Config(factor.equals("cholesky"), rows, cols, ExampleSpark.intOption(o, "n", 301),
        ExampleSpark.intOption(o, "block", 16), ExampleSpark.intOption(o, "nrhs", 3),
        ExampleSpark.intOption(o, "rsrc", 0), ExampleSpark.intOption(o, "csrc", 0),
        ExampleSpark.intOption(o, "seed", 3));
  }

  public static void main(String[] args) {
    Map<String, String> o = ExampleSpark.options(args, USAGE);
    Config c = parse(o);
    Descriptor d = c.a();
    System.out.println("Solve A X = B by " + (c.cholesky() ? "Cholesky (potrf, potrs)" : "LU (getrf, getrs)")
        + ": A " + c.n() + " x " + c.n() + " in " + c.nb() + " x " + c.nb() + " blocks, first on process ("
        + c.rsrc() + ", " + c.csrc() + "), " + c.nrhs() + " right-hand sides, on a " + d.gridRows() + " x "
        + d.gridCols() + " process grid");
    Solution solution;
    try (JavaSparkContext jsc = ExampleSpark.start("gpucoll-example-solve", o.get("master"), c.ranks())) {
      solution = run(jsc, c);
      System.out.println("Path report: " + ExampleSpark.lastPathReport());
    }
    for (RankTimes p : solution.times()) {
      System.out.println("rank " + p.rank() + " = grid (" + p.prow() + "," + p.pcol() + "), " + p.backend()
          + ": factorization " + ExampleSpark.ms(p.factorNanos()) + ", solve " + ExampleSpark.ms(p.solveNanos()));
    }
    double err = backwardError(c, solution);
    System.out.printf("backward error ||B - A X||/(||A|| ||X|| n eps) = %.3f (limit 10)%n", err);
    Factorizations.exitOnFailure(err < 10);
  }
}
