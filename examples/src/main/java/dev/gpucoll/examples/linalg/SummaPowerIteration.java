package dev.gpucoll.examples.linalg;

import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.GpuCommunicator;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.cuda.CudaEnvironment;
import dev.gpucoll.cuda.CudaProbe;
import dev.gpucoll.examples.ExampleSpark;
import dev.gpucoll.linalg.Descriptor;
import dev.gpucoll.linalg.LocalGemm;
import dev.gpucoll.linalg.LocalMatrix;
import dev.gpucoll.spark.GpuCollectives;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.stream.IntStream;
import org.apache.spark.api.java.JavaSparkContext;

/**
 * Linear algebra on a 2-D process grid in a barrier stage, the way ScaLAPACK-style libraries
 * (cuSOLVERMp) work: {@code split} makes row and column communicators of a P × Q grid, matrices
 * are block-cyclic, and
 * <ul>
 *   <li>SUMMA computes C = A B: for each block column k, its owner broadcasts its panel of A along
 *       the row communicator, the owner of block row k broadcasts its panel of B along the column
 *       communicator, and every process adds the product of the two panels to its part of C;</li>
 *   <li>power iteration finds the dominant eigenvalue of a symmetric S: each process multiplies
 *       its block by its part of x, the partial products are summed with {@code reduceScatter}
 *       along the row communicator, the norm with one {@code allReduce}, and the slices of the new
 *       x are put together with {@code allGather}.</li>
 * </ul>
 * The matrices are gpucoll-linalg's: a {@link Descriptor} over the most square grid, each process's
 * part a {@link LocalMatrix}. Both are checked against the same computation in one process. The
 * local GEMM is gpucoll-linalg's {@link LocalGemm}: on cuBLAS when the process has a GPU and CUDA's
 * libraries load, on the CPU otherwise (the output says which);
 * on the GPU backend the group's raw {@code ncclComm_t} is printed, which is what a cuSOLVERMp
 * program passes to {@code cusolverMpCreateDeviceGrid} with the grid shape.
 *
 * <p>Run: {@code scripts/example.sh linalg [--ranks 4] [--n 192] [--block 16] [--iterations 40]}.
 */
public final class SummaPowerIteration {
  static final String USAGE = "linalg [--ranks 4] [--n 192] [--block 16] [--iterations 40]"
      + " [--seed 5] [--master local-cluster|local[N]]";
  static final double TOLERANCE = 1e-10;

  private SummaPowerIteration() {}

  public record Config(int ranks, int n, int blockSize, int iterations, long seed) implements Serializable {
    /**
     * The matrices' descriptor: n × n in blocks of blockSize over the most square grid for the rank
     * count. The steps below need whole blocks on every process (SUMMA's panels) and each
     * process's rows split evenly over the grid columns (power iteration's reduceScatter).
     */
    Descriptor descriptor() {
      if (n <= 0 || blockSize <= 0 || ranks <= 0) {
        throw new IllegalArgumentException("sizes must be positive: n " + n + ", block " + blockSize + ", ranks "
            + ranks);
      }
      Descriptor d = Descriptor.onMostSquareGrid(n, n, blockSize, blockSize, ranks);
      if (n % (blockSize * d.gridRows()) != 0 || n % (blockSize * d.gridCols()) != 0) {
        throw new IllegalArgumentException("n = " + n + " must be a multiple of block size " + blockSize
            + " times the grid's rows (" + d.gridRows() + ") and columns (" + d.gridCols() + ")");
      }
      if ((n / d.gridRows()) % d.gridCols() != 0) {
        throw new IllegalArgumentException("each process's " + (n / d.gridRows()) + " rows must split"
            + " evenly over the " + d.gridCols() + " grid columns (for reduceScatter)");
      }
      return d;
    }
  }

  /**
   * One process's part of C (column-major, the descriptor's LLD), the eigenvalue estimate and the
   * eigenvector it ended with.
   */
  public record Result(int rank, int p, int q, double[] cLocal, double eigenvalue, double[] eigenvector,
      long computeNanos, long commNanos, String backend, String gemm, String ncclComm)
      implements Serializable {}

  // Matrix elements from the seed: every process builds its own blocks, nothing is shipped.
  static double element(long seed, int matrix, int i, int j) {
    return new SplittableRandom(seed * 1_000_003L + matrix * 7_919L + (long) i * 65_537L + j)
        .nextDouble(-1, 1);
  }

  static double symmetric(long seed, int i, int j) {
    // positive entries: the Perron eigenvalue dominates and power iteration converges fast
    return 0.5 + 0.5 * element(seed, 3, Math.min(i, j), Math.max(i, j));
  }

  /** The local GEMM and, for the output, where it runs and why. */
  private record Gemm(LocalGemm gemm, String description) implements AutoCloseable {
    /** On this process's GPU when it has a usable one and CUDA's libraries load, else on the CPU. */
    static Gemm choose() {
      CudaProbe probe = CudaEnvironment.probe();
      if (!probe.available()) {
        return onHost("no usable GPU: " + probe.unavailableReason().orElse("?"));
      }
      try {
        LocalGemm device = LocalGemm.onDevice();
        return new Gemm(device, device.name());
      } catch (IllegalStateException e) {
        return onHost("CUDA's libraries do not load: " + e.getMessage());
      }
    }

    private static Gemm onHost(String why) {
      LocalGemm host = LocalGemm.onHost();
      return new Gemm(host, host.name() + " (" + why + ")");
    }

    @Override
    public void close() {
      gemm.close();
    }
  }

  static Result runRank(Communicator comm, Config c) {
    Descriptor d = c.descriptor();
    int rank = comm.rank();
    int p = d.prow(rank);
    int q = d.pcol(rank);
    long compute = 0;
    long communication = 0;
    long t = System.nanoTime();
    try (Gemm chosen = Gemm.choose(); Communicator row = comm.split(p, q);
        Communicator col = comm.split(q, p)) {
      LocalGemm gemm = chosen.gemm();
      communication += System.nanoTime() - t;
      // cuSOLVERMp takes the whole grid's communicator (cusolverMpCreateDeviceGrid); the row and
      // column communicators are for panel broadcasts and reductions of our own.
      String nccl = comm instanceof GpuCommunicator g && row instanceof GpuCommunicator gr && g.ncclComm() != 0
          ? String.format("ncclComm_t 0x%x for cusolverMpCreateDeviceGrid(handle, &grid, comm, %d, %d, ...);"
              + " row communicator 0x%x", g.ncclComm(), d.gridRows(), d.gridCols(), gr.ncclComm())
          : "no ncclComm_t: the group runs on the " + comm.backend() + " backend"
              + (comm instanceof GpuCommunicator ? " without an NCCL communicator (its ranks share a GPU)" : "");
      int m = d.numrocRows(p);
      int nl = d.numrocCols(q);
      int nb = d.nb();
      int lld = d.lld();
      long seed = c.seed();

      // ---- SUMMA: C = A B ----
      t = System.nanoTime();
      double[] a = LocalMatrix.generate(d, p, q, (i, j) -> element(seed, 1, i, j)).data();
      double[] b = LocalMatrix.generate(d, p, q, (i, j) -> element(seed, 2, i, j)).data();
      double[] cLocal = LocalMatrix.allocate(d, p, q).data();
      double[] aPanel = new double[m * nb]; // m × nb, leading dimension m
      double[] bPanel = new double[nb * nl]; // nb × nl, leading dimension nb
      compute += System.nanoTime() - t;
      for (int k = 0; k < d.blockCols(); k++) {
        t = System.nanoTime();
        int ownerCol = d.indxg2pCol(k * nb);
        int ownerRow = d.indxg2pRow(k * nb);
        if (q == ownerCol) {
          int first = d.indxg2lCol(k * nb); // local column of block column k
          for (int j = 0; j < nb; j++) {
            System.arraycopy(a, (first + j) * lld, aPanel, j * m, m);
          }
        }
        if (p == ownerRow) {
          int first = d.indxg2lRow(k * nb); // local row of block row k
          for (int lj = 0; lj < nl; lj++) {
            System.arraycopy(b, first + lj * lld, bPanel, lj * nb, nb);
          }
        }
        long t1 = System.nanoTime();
        row.broadcast(CommBuffer.of(aPanel), CommBuffer.of(aPanel), aPanel.length, DataType.FLOAT64, ownerCol);
        col.broadcast(CommBuffer.of(bPanel), CommBuffer.of(bPanel), bPanel.length, DataType.FLOAT64, ownerRow);
        long t2 = System.nanoTime();
        gemm.multiplyAdd(m, nl, nb, aPanel, m, bPanel, nb, cLocal, lld);
        long t3 = System.nanoTime();
        compute += (t1 - t) + (t3 - t2);
        communication += t2 - t1;
      }

      // ---- power iteration on S ----
      t = System.nanoTime();
      double[] s = LocalMatrix.generate(d, p, q, (i, j) -> symmetric(seed, i, j)).data();
      double[] x = new double[nl];
      java.util.Arrays.fill(x, 1 / Math.sqrt(c.n()));
      double[] partial = new double[m];
      int sliceRows = m / d.gridCols();
      double[] slice = new double[sliceRows];
      double[] slices = new double[sliceRows * comm.size()];
      double[] y = new double[c.n()];
      double[] norm2 = new double[1];
      double eigenvalue = 0;
      compute += System.nanoTime() - t;
      for (int it = 0; it < c.iterations(); it++) {
        t = System.nanoTime();
        java.util.Arrays.fill(partial, 0);
        gemm.multiplyAdd(m, 1, nl, s, lld, x, nl, partial, m);
        long t1 = System.nanoTime();
        // row p's part of S x, summed over the grid row; process q keeps slice q
        row.reduceScatter(CommBuffer.of(partial), CommBuffer.of(slice), sliceRows, DataType.FLOAT64, ReduceOp.SUM);
        long t2 = System.nanoTime();
        norm2[0] = 0;
        for (double v : slice) {
          norm2[0] += v * v;
        }
        long t3 = System.nanoTime();
        comm.allReduce(norm2, ReduceOp.SUM);
        long t4 = System.nanoTime();
        eigenvalue = Math.sqrt(norm2[0]); // ||S x|| with ||x|| = 1
        for (int i = 0; i < sliceRows; i++) {
          slice[i] /= eigenvalue;
        }
        long t5 = System.nanoTime();
        comm.allGather(CommBuffer.of(slice), CommBuffer.of(slices), sliceRows, DataType.FLOAT64);
        long t6 = System.nanoTime();
        for (int r = 0; r < comm.size(); r++) { // rank r = (r / Q, r % Q) holds slice r % Q of its row
          int pr = d.prow(r);
          int firstLocal = d.pcol(r) * sliceRows;
          for (int i = 0; i < sliceRows; i++) {
            y[d.indxl2gRow(firstLocal + i, pr)] = slices[r * sliceRows + i];
          }
        }
        for (int lj = 0; lj < nl; lj++) {
          x[lj] = y[d.indxl2gCol(lj, q)];
        }
        long t7 = System.nanoTime();
        compute += (t1 - t) + (t3 - t2) + (t5 - t4) + (t7 - t6);
        communication += (t2 - t1) + (t4 - t3) + (t6 - t5);
      }
      return new Result(rank, p, q, cLocal, eigenvalue, y.clone(), compute, communication,
          comm.backend(), chosen.description(), nccl);
    }
  }

  public static List<Result> runDistributed(JavaSparkContext jsc, Config c) {
    c.descriptor(); // bad sizes fail here, on the driver, before any task starts
    List<Result> out = new ArrayList<>(GpuCollectives.barrierMapPartitions(
        jsc.parallelize(IntStream.range(0, c.ranks()).boxed().toList(), c.ranks()),
        (comm, rows) -> List.of(runRank(comm, c)).iterator()).collect());
    out.sort((a, b) -> Integer.compare(a.rank(), b.rank()));
    return out;
  }

  /**
   * The one-process answers: C = A B (column-major, leading dimension n) with the host's GEMM, and
   * the same power iteration.
   */
  public record Reference(double[] c, double eigenvalue, double[] eigenvector) {}

  public static Reference reference(Config c) {
    int n = c.n();
    double[] a = new double[n * n];
    double[] b = new double[n * n];
    double[] s = new double[n * n];
    for (int i = 0; i < n; i++) {
      for (int j = 0; j < n; j++) {
        a[i + j * n] = element(c.seed(), 1, i, j);
        b[i + j * n] = element(c.seed(), 2, i, j);
        s[i + j * n] = symmetric(c.seed(), i, j);
      }
    }
    try (LocalGemm cpu = LocalGemm.onHost()) {
      return reference(c, cpu, a, b, s);
    }
  }

  private static Reference reference(Config c, LocalGemm cpu, double[] a, double[] b, double[] s) {
    int n = c.n();
    double[] prod = new double[n * n];
    cpu.multiplyAdd(n, n, n, a, n, b, n, prod, n);
    double[] x = new double[n];
    java.util.Arrays.fill(x, 1 / Math.sqrt(n));
    double lambda = 0;
    for (int it = 0; it < c.iterations(); it++) {
      double[] y = new double[n];
      cpu.multiplyAdd(n, 1, n, s, n, x, n, y, n);
      double norm2 = 0;
      for (double v : y) {
        norm2 += v * v;
      }
      lambda = Math.sqrt(norm2);
      for (int i = 0; i < n; i++) {
        x[i] = y[i] / lambda;
      }
    }
    return new Reference(prod, lambda, x);
  }

  /** Largest differences from the reference, relative to the largest reference value. */
  public record Check(double gemmError, double eigenvalueError, double eigenvectorError) {
    public boolean passes() {
      return gemmError <= TOLERANCE && eigenvalueError <= TOLERANCE && eigenvectorError <= TOLERANCE;
    }
  }

  public static Check check(Config c, List<Result> ranks, Reference ref) {
    Descriptor d = c.descriptor();
    int n = c.n();
    double maxC = 0;
    for (double v : ref.c()) {
      maxC = Math.max(maxC, Math.abs(v));
    }
    double gemm = 0;
    double lambda = 0;
    double vector = 0;
    for (Result r : ranks) {
      LocalMatrix part = LocalMatrix.wrap(d, r.p(), r.q(), r.cLocal());
      for (int lj = 0; lj < part.cols(); lj++) {
        for (int li = 0; li < part.rows(); li++) {
          double want = ref.c()[d.indxl2gRow(li, r.p()) + d.indxl2gCol(lj, r.q()) * n];
          gemm = Math.max(gemm, Math.abs(part.get(li, lj) - want) / maxC);
        }
      }
      lambda = Math.max(lambda, Math.abs(r.eigenvalue() - ref.eigenvalue()) / ref.eigenvalue());
      for (int i = 0; i < n; i++) {
        vector = Math.max(vector, Math.abs(r.eigenvector()[i] - ref.eigenvector()[i]));
      }
    }
    return new Check(gemm, lambda, vector);
  }

  public static void main(String[] args) {
    Map<String, String> o = ExampleSpark.options(args, USAGE);
    Config c = new Config(ExampleSpark.intOption(o, "ranks", 4), ExampleSpark.intOption(o, "n", 192),
        ExampleSpark.intOption(o, "block", 16), ExampleSpark.intOption(o, "iterations", 40),
        ExampleSpark.intOption(o, "seed", 5));
    Descriptor d = c.descriptor();
    System.out.println("Block-cyclic " + c.n() + " x " + c.n() + " matrices in " + d.nb() + " x " + d.nb()
        + " blocks on a " + d.gridRows() + " x " + d.gridCols() + " process grid; SUMMA C = A B and "
        + c.iterations() + " power iterations");
    List<Result> ranks;
    try (JavaSparkContext jsc = ExampleSpark.start("gpucoll-example-linalg", o.get("master"), c.ranks())) {
      long t0 = System.nanoTime();
      ranks = runDistributed(jsc, c);
      System.out.println("Barrier job: " + ExampleSpark.ms(System.nanoTime() - t0));
      System.out.println("Path report: " + ExampleSpark.lastPathReport());
    }
    System.out.println();
    for (Result r : ranks) {
      System.out.println("rank " + r.rank() + " = grid (" + r.p() + "," + r.q() + "), " + r.backend()
          + ": compute " + ExampleSpark.ms(r.computeNanos()) + ", communication "
          + ExampleSpark.ms(r.commNanos()) + " (waits included)");
    }
    System.out.println("local GEMM (rank 0): " + ranks.get(0).gemm());
    System.out.println(ranks.get(0).ncclComm());
    Check check = check(c, ranks, reference(c));
    System.out.printf("dominant eigenvalue %.12f; differences from one process: C %.1e, eigenvalue %.1e,"
        + " eigenvector %.1e (limit %.0e)%n", ranks.get(0).eigenvalue(), check.gemmError(),
        check.eigenvalueError(), check.eigenvectorError(), TOLERANCE);
    System.out.println(check.passes() ? "CHECK OK" : "CHECK FAILED");
    if (!check.passes()) {
      System.exit(1);
    }
  }
}
