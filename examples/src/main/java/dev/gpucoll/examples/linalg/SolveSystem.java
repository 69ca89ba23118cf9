package dev.gpucoll.examples.linalg;

import dev.gpucoll.api.ProcessGrid;
import dev.gpucoll.examples.ExampleSpark;
import dev.gpucoll.linalg.BackwardError;
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
import java.util.stream.IntStream;
import org.apache.spark.api.java.JavaSparkContext;

/**
 * A Spark job that solves A X = B with the product's distributed LU or Cholesky
 * ({@code dev.gpucoll.linalg}): one barrier task per rank of a P × Q grid, each building only its
 * own part of A and B (block-cyclic, ScaLAPACK's descriptor: any n, block and source process),
 * factoring, solving and returning its part of X. The driver puts X together and measures the
 * backward error ‖B − A X‖₁ / (‖A‖₁ ‖X‖₁ n ε) against A and B made again from the seed.
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

  /** One rank's part of X, where it sits and how long the factorization and the solve took. */
  public record Part(int rank, int prow, int pcol, double[] x, long factorNanos, long solveNanos, String backend)
      implements Serializable {}

  /** Fills process (prow, pcol)'s part of the descriptor's matrix with f. */
  private static LocalMatrix part(Descriptor d, int prow, int pcol, java.util.function.BiFunction<Integer, Integer,
      Double> f) {
    LocalMatrix m = LocalMatrix.allocate(d, prow, pcol);
    for (int lj = 0; lj < m.cols(); lj++) {
      for (int li = 0; li < m.rows(); li++) {
        m.set(li, lj, f.apply(d.indxl2gRow(li, prow), d.indxl2gCol(lj, pcol)));
      }
    }
    return m;
  }

  public static List<Part> run(JavaSparkContext jsc, Config c) {
    c.a(); // bad sizes fail here, on the driver, before any task starts
    c.b();
    List<Part> parts = new ArrayList<>(GpuCollectives.barrierMapPartitions(
        jsc.parallelize(IntStream.range(0, c.ranks()).boxed().toList(), c.ranks()), (comm, rows) -> {
          try (ProcessGrid<?> grid = ProcessGrid.of(comm, c.gridRows(), c.gridCols())) {
            int p = grid.myRow();
            int q = grid.myCol();
            LocalMatrix a = part(c.a(), p, q, c::aAt);
            LocalMatrix b = part(c.b(), p, q, c::bAt);
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
            return List.of(new Part(comm.rank(), p, q, b.data(), t1 - t0, t2 - t1, comm.backend())).iterator();
          }
        }).collect());
    parts.sort(Comparator.comparingInt(Part::rank));
    return parts;
  }

  /** X from every rank's part. */
  public static double[] gatherX(Config c, List<Part> parts) {
    Descriptor d = c.b();
    double[] x = new double[c.n() * c.nrhs()];
    for (Part p : parts) {
      LocalMatrix.wrap(d, p.prow(), p.pcol(), p.x()).gather(x, c.n());
    }
    return x;
  }

  /** The solve's backward error (LAPACK's dget02 ratio; below 10 passes). */
  public static double backwardError(Config c, List<Part> parts) {
    return BackwardError.solve(c.wholeA(), false, gatherX(c, parts), c.wholeB(), c.n(), c.nrhs());
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
    List<Part> parts;
    try (JavaSparkContext jsc = ExampleSpark.start("gpucoll-example-solve", o.get("master"), c.ranks())) {
      parts = run(jsc, c);
      System.out.println("Path report: " + ExampleSpark.lastPathReport());
    }
    for (Part p : parts) {
      System.out.println("rank " + p.rank() + " = grid (" + p.prow() + "," + p.pcol() + "), " + p.backend()
          + ": factorization " + ExampleSpark.ms(p.factorNanos()) + ", solve " + ExampleSpark.ms(p.solveNanos()));
    }
    double err = backwardError(c, parts);
    System.out.printf("backward error ||B - A X||/(||A|| ||X|| n eps) = %.3f (limit 10)%n", err);
    Factorizations.exitOnFailure(err < 10);
  }
}
