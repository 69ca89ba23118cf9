package dev.gpucoll.examples.linalg;

import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.GpuCommunicator;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.examples.ExampleSpark;
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
 * Both are checked against the same computation in one process. The local GEMM runs on cuBLAS
 * when the process has a GPU and libcublas loads, on the CPU otherwise (the output says which);
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
    BlockCyclicLayout layout() {
      int[] g = BlockCyclicLayout.grid(ranks);
      return new BlockCyclicLayout(n, blockSize, g[0], g[1]).requireRowsSplitOverColumns();
    }
  }

  /** One process's part of C, the eigenvalue estimate and the eigenvector it ended with. */
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

  static Result runRank(Communicator comm, Config c) {
    BlockCyclicLayout lay = c.layout();
    int rank = comm.rank();
    int p = rank / lay.gridCols();
    int q = rank % lay.gridCols();
    long compute = 0;
    long communication = 0;
    long t = System.nanoTime();
    try (LocalGemm gemm = LocalGemm.choose(); Communicator row = comm.split(p, q);
        Communicator col = comm.split(q, p)) {
      communication += System.nanoTime() - t;
      // cuSOLVERMp takes the whole grid's communicator (cusolverMpCreateDeviceGrid); the row and
      // column communicators are for panel broadcasts and reductions of our own.
      String nccl = comm instanceof GpuCommunicator g && row instanceof GpuCommunicator gr && g.ncclComm() != 0
          ? String.format("ncclComm_t 0x%x for cusolverMpCreateDeviceGrid(handle, &grid, comm, %d, %d, ...);"
              + " row communicator 0x%x", g.ncclComm(), lay.gridRows(), lay.gridCols(), gr.ncclComm())
          : "no ncclComm_t: the group runs on the " + comm.backend() + " backend"
              + (comm instanceof GpuCommunicator ? " without an NCCL communicator (its ranks share a GPU)" : "");
      int m = lay.localRows();
      int nl = lay.localCols();
      int nb = lay.nb();
      long seed = c.seed();

      // ---- SUMMA: C = A B ----
      t = System.nanoTime();
      double[] a = lay.local(p, q, (i, j) -> element(seed, 1, i, j));
      double[] b = lay.local(p, q, (i, j) -> element(seed, 2, i, j));
      double[] cLocal = new double[m * nl];
      double[] aPanel = new double[m * nb];
      double[] bPanel = new double[nb * nl];
      compute += System.nanoTime() - t;
      for (int k = 0; k < lay.blocks(); k++) {
        t = System.nanoTime();
        int ownerCol = k % lay.gridCols();
        int ownerRow = k % lay.gridRows();
        if (q == ownerCol) {
          int first = (k / lay.gridCols()) * nb; // local column of block column k
          for (int i = 0; i < m; i++) {
            System.arraycopy(a, i * nl + first, aPanel, i * nb, nb);
          }
        }
        if (p == ownerRow) {
          int first = (k / lay.gridRows()) * nb; // local row of block row k
          System.arraycopy(b, first * nl, bPanel, 0, nb * nl);
        }
        long t1 = System.nanoTime();
        row.broadcast(CommBuffer.of(aPanel), CommBuffer.of(aPanel), aPanel.length, DataType.FLOAT64, ownerCol);
        col.broadcast(CommBuffer.of(bPanel), CommBuffer.of(bPanel), bPanel.length, DataType.FLOAT64, ownerRow);
        long t2 = System.nanoTime();
        gemm.multiplyAdd(m, nl, nb, aPanel, bPanel, cLocal);
        long t3 = System.nanoTime();
        compute += (t1 - t) + (t3 - t2);
        communication += t2 - t1;
      }

      // ---- power iteration on S ----
      t = System.nanoTime();
      double[] s = lay.local(p, q, (i, j) -> symmetric(seed, i, j));
      double[] x = new double[nl];
      java.util.Arrays.fill(x, 1 / Math.sqrt(c.n()));
      double[] partial = new double[m];
      int sliceRows = m / lay.gridCols();
      double[] slice = new double[sliceRows];
      double[] slices = new double[sliceRows * comm.size()];
      double[] y = new double[c.n()];
      double[] norm2 = new double[1];
      double eigenvalue = 0;
      compute += System.nanoTime() - t;
      for (int it = 0; it < c.iterations(); it++) {
        t = System.nanoTime();
        java.util.Arrays.fill(partial, 0);
        gemm.multiplyAdd(m, 1, nl, s, x, partial);
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
          int pr = r / lay.gridCols();
          int firstLocal = (r % lay.gridCols()) * sliceRows;
          for (int i = 0; i < sliceRows; i++) {
            y[lay.globalRow(pr, firstLocal + i)] = slices[r * sliceRows + i];
          }
        }
        for (int lj = 0; lj < nl; lj++) {
          x[lj] = y[lay.globalCol(q, lj)];
        }
        long t7 = System.nanoTime();
        compute += (t1 - t) + (t3 - t2) + (t5 - t4) + (t7 - t6);
        communication += (t2 - t1) + (t4 - t3) + (t6 - t5);
      }
      return new Result(rank, p, q, cLocal, eigenvalue, y.clone(), compute, communication,
          comm.backend(), gemm.name(), nccl);
    }
  }

  public static List<Result> runDistributed(JavaSparkContext jsc, Config c) {
    c.layout(); // bad sizes fail here, on the driver, before any task starts
    List<Result> out = new ArrayList<>(GpuCollectives.barrierMapPartitions(
        jsc.parallelize(IntStream.range(0, c.ranks()).boxed().toList(), c.ranks()),
        (comm, rows) -> List.of(runRank(comm, c)).iterator()).collect());
    out.sort((a, b) -> Integer.compare(a.rank(), b.rank()));
    return out;
  }

  /** The one-process answers: C = A B with the same CPU GEMM, and the same power iteration. */
  public record Reference(double[] c, double eigenvalue, double[] eigenvector) {}

  public static Reference reference(Config c) {
    int n = c.n();
    double[] a = new double[n * n];
    double[] b = new double[n * n];
    double[] s = new double[n * n];
    for (int i = 0; i < n; i++) {
      for (int j = 0; j < n; j++) {
        a[i * n + j] = element(c.seed(), 1, i, j);
        b[i * n + j] = element(c.seed(), 2, i, j);
        s[i * n + j] = symmetric(c.seed(), i, j);
      }
    }
    LocalGemm cpu = new LocalGemm.Cpu("CPU");
    double[] prod = new double[n * n];
    cpu.multiplyAdd(n, n, n, a, b, prod);
    double[] x = new double[n];
    java.util.Arrays.fill(x, 1 / Math.sqrt(n));
    double lambda = 0;
    for (int it = 0; it < c.iterations(); it++) {
      double[] y = new double[n];
      cpu.multiplyAdd(n, 1, n, s, x, y);
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
    BlockCyclicLayout lay = c.layout();
    int n = c.n();
    double maxC = 0;
    for (double v : ref.c()) {
      maxC = Math.max(maxC, Math.abs(v));
    }
    double gemm = 0;
    double lambda = 0;
    double vector = 0;
    for (Result r : ranks) {
      for (int li = 0; li < lay.localRows(); li++) {
        for (int lj = 0; lj < lay.localCols(); lj++) {
          double want = ref.c()[lay.globalRow(r.p(), li) * n + lay.globalCol(r.q(), lj)];
          gemm = Math.max(gemm, Math.abs(r.cLocal()[li * lay.localCols() + lj] - want) / maxC);
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
    BlockCyclicLayout lay = c.layout();
    System.out.println("Block-cyclic " + c.n() + " x " + c.n() + " matrices in " + lay.nb() + " x " + lay.nb()
        + " blocks on a " + lay.gridRows() + " x " + lay.gridCols() + " process grid; SUMMA C = A B and "
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
