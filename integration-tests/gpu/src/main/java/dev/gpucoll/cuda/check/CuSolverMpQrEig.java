package dev.gpucoll.cuda.check;

import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.GpuCommunicator;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.core.CommunicatorFactory;
import dev.gpucoll.core.config.GpuCollConf;
import dev.gpucoll.core.rendezvous.FileRendezvous;
import dev.gpucoll.cuda.CudaNative;
import dev.gpucoll.cusolvermp.CuSolverMp;
import dev.gpucoll.linalg.Descriptor;
import dev.gpucoll.linalg.DeviceMatrix;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.bytedeco.cuda.cusolver.cusolverDnContext;
import org.bytedeco.cuda.global.cublas;
import org.bytedeco.cuda.global.cudart;
import org.bytedeco.cuda.global.cusolver;
import org.bytedeco.javacpp.DoublePointer;
import org.bytedeco.javacpp.IntPointer;

/**
 * LinalgBench's {@code --qr-eig} section: cuSOLVERMp's QR (geqrf, ormqr), least squares (gels) and
 * symmetric eigensolver (syevd) on a group's {@code ncclComm_t}, each checked against a reference and
 * timed beside the dense cuSOLVER call of the same run, on the seeded matrices of the factorizations
 * (n × n, uniform; symmetric with n on the diagonal):
 * <ul>
 *   <li>geqrf: ‖Qᵀ A − R‖₁ / (‖A‖₁ n ε) (ormqr applies Qᵀ to a copy of A) and the orthogonality of
 *       the applied Q, ‖Qᵀ (Q C) − C‖₁ / (‖C‖₁ n ε) for a seeded C; timed beside cusolverDnDgeqrf;
 *   <li>gels: X of min ‖A X − B‖ (square A: the solve), ‖B − A X‖₂ / (‖A‖_F ‖X‖₂ n ε) as the
 *       factorizations' residual;
 *   <li>syevd (eigenvectors too): the eigenvalues against cusolverDnDsyevd's of the same matrix,
 *       max |λ − λ_dense| / (max |λ_dense| n ε), and the same on every rank, bit for bit; timed
 *       beside it.
 * </ul>
 * Every ratio must be below 10, and a routine that fails is named without hiding the others. One
 * recipe ({@link #onRank}) runs on every rank of a grid: the 1 × 1 grid in this process
 * ({@link #run}), a P × Q grid as P·Q processes ({@link #runGrid}), a GPU each when the machine has
 * enough; otherwise all on GPU 0, each claiming a host of its own (NCCL_HOSTID) so that NCCL accepts
 * them in one communicator over its network transport. cuSOLVERMp itself supports one handle per
 * GPU: ranks sharing a GPU are outside what it promises (on the GPU machine geqrf and ormqr ran on
 * a 2 × 2 grid so placed and gels stopped with CUSOLVER_STATUS_INTERNAL_ERROR, docs/linalg.md). The
 * norms are summed across the grid with the group's allReduce; the dense reference runs in this
 * process once the grid's processes are gone.
 */
final class CuSolverMpQrEig {
  private static final double EPS = Math.ulp(1.0) / 2;
  private static final String FIGURES = "figures.bin";

  private CuSolverMpQrEig() {}

  /** One grid's and size's figures. */
  record Result(String grid, int n, int nb, double geqrfMs, double denseGeqrfMs, double qrResidual,
      double orthogonality, double gelsMs, double gelsResidual, double syevdMs, double denseSyevdMs,
      double eigenvalueError, boolean eigenvaluesAgree, List<String> failures) {
    boolean passes() {
      return failures.isEmpty() && qrResidual < 10 && orthogonality < 10 && gelsResidual < 10 && eigenvalueError < 10
          && eigenvaluesAgree;
    }

    String line() {
      return String.format(Locale.ROOT, "cuSOLVERMp %s n=%d nb=%d: geqrf %.2f ms (cuSOLVER %.2f), |Q^T A - R| %.3f,"
          + " orthogonality %.3f; gels %.2f ms, residual %.3f; syevd %.2f ms (cuSOLVER %.2f), eigenvalues %.3f%s%s%s",
          grid, n, nb, geqrfMs, denseGeqrfMs, qrResidual, orthogonality, gelsMs, gelsResidual, syevdMs, denseSyevdMs,
          eigenvalueError, eigenvaluesAgree ? "" : ", NOT the same on every rank",
          failures.isEmpty() ? "" : "; " + String.join("; ", failures), passes() ? "" : " FAILED");
    }

    String json() {
      return String.format(Locale.ROOT, "{\"grid\":\"%s\",\"n\":%d,\"nb\":%d,\"geqrf_ms\":%s,"
          + "\"cusolver_geqrf_ms\":%s,\"qr_residual\":%s,\"orthogonality\":%s,\"gels_ms\":%s,\"gels_residual\":%s,"
          + "\"syevd_ms\":%s,\"cusolver_syevd_ms\":%s,\"eigenvalue_error\":%s,\"eigenvalues_same_on_every_rank\":%b,"
          + "\"failures\":%d}", grid, n, nb, number(geqrfMs, 3), number(denseGeqrfMs, 3), number(qrResidual, 4),
          number(orthogonality, 4), number(gelsMs, 3), number(gelsResidual, 4), number(syevdMs, 3),
          number(denseSyevdMs, 3), number(eigenvalueError, 4), eigenvaluesAgree, failures.size());
    }

    /** A JSON number, or null for a routine that failed (NaN). */
    private static String number(double v, int decimals) {
      return Double.isFinite(v) ? String.format(Locale.ROOT, "%." + decimals + "f", v) : "null";
    }
  }

  /**
   * What one rank of the grid measured: the calls' median milliseconds, the QR checks (norms summed
   * over the grid), the solution X and the eigenvalues (gathered: every rank has them whole),
   * whether every rank's eigenvalues were bit-equal, and the routines that failed (their figures NaN).
   */
  record RankFigures(double geqrfMs, double qrResidual, double orthogonality, double gelsMs, double syevdMs,
      boolean eigenvaluesAgree, double[] x, double[] lambda, List<String> failures) {
    void write(Path file) throws IOException {
      try (DataOutputStream out = new DataOutputStream(Files.newOutputStream(file))) {
        for (double d : new double[] {geqrfMs, qrResidual, orthogonality, gelsMs, syevdMs}) {
          out.writeDouble(d);
        }
        out.writeBoolean(eigenvaluesAgree);
        out.writeInt(x.length);
        for (double[] v : List.of(x, lambda)) {
          for (double d : v) {
            out.writeDouble(d);
          }
        }
        out.writeInt(failures.size());
        for (String f : failures) {
          out.writeUTF(f);
        }
      }
    }

    static RankFigures read(Path file) throws IOException {
      try (DataInputStream in = new DataInputStream(Files.newInputStream(file))) {
        double[] f = new double[5];
        for (int k = 0; k < f.length; k++) {
          f[k] = in.readDouble();
        }
        boolean agree = in.readBoolean();
        int n = in.readInt();
        double[][] v = new double[2][n];
        for (double[] row : v) {
          for (int k = 0; k < n; k++) {
            row[k] = in.readDouble();
          }
        }
        List<String> failures = new ArrayList<>();
        for (int k = in.readInt(); k > 0; k--) {
          failures.add(in.readUTF());
        }
        return new RankFigures(f[0], f[1], f[2], f[3], f[4], agree, v[0], v[1], failures);
      }
    }
  }

  /** The 1 × 1 grid: one rank in this process. */
  static Result run(int n, int nb, int repeat, long seed) {
    RankFigures[] figures = new RankFigures[1];
    try (RankGroup g = RankGroup.create(1, 0, null, Duration.ofMinutes(2), 8)) {
      g.onAll(Duration.ofMinutes(10), r -> {
        figures[0] = onRank(r.comm, 1, 1, n, nb, repeat, seed);
        return null;
      });
    }
    return against("1x1", n, nb, repeat, seed, figures[0]);
  }

  /**
   * A {@code rows × cols} grid of processes, bounded by {@code limit}: rank r on GPU r when the
   * machine has a GPU per rank, else every rank on GPU 0 as a host of its own to NCCL. Throws, naming
   * the ranks, when a process fails or does not finish.
   */
  static Result runGrid(int rows, int cols, int n, int nb, int repeat, long seed, Duration limit) throws Exception {
    Path dir = Files.createTempDirectory("gpucoll-cusolvermp-grid");
    boolean gpuPerRank = deviceCount() >= rows * cols;
    List<String> failures = ProcessRanks.run(CuSolverMpQrEig.class, rows * cols, limit,
        r -> List.of(dir.toString(), Integer.toString(r), Integer.toString(rows), Integer.toString(cols),
            Integer.toString(n), Integer.toString(nb), Integer.toString(repeat), Long.toString(seed),
            Integer.toString(gpuPerRank ? r : 0), hostOf(r, gpuPerRank)),
        r -> gpuPerRank ? Map.of() : Map.of("NCCL_HOSTID", hostOf(r, false))).stream()
        .filter(l -> l.startsWith("FAIL")).toList();
    if (!failures.isEmpty()) {
      throw new IllegalStateException(rows + " x " + cols + " grid, n=" + n + ": " + String.join(" | ", failures));
    }
    return against(rows + "x" + cols + (gpuPerRank ? "" : " (one GPU)"), n, nb, repeat, seed,
        RankFigures.read(dir.resolve(FIGURES)));
  }

  private static int deviceCount() {
    try (IntPointer count = new IntPointer(1)) {
      check(cudart.cudaGetDeviceCount(count), "cudaGetDeviceCount");
      return count.get();
    }
  }

  /** Rank r's host, to our factory and (sharing a GPU) to NCCL: its own when it shares GPU 0. */
  private static String hostOf(int rank, boolean gpuPerRank) {
    return gpuPerRank ? "localhost" : "gpucoll-grid-host-" + rank;
  }

  /**
   * One rank of a {@link #runGrid} grid: args = rendezvous folder, rank, rows, cols, n, nb, repeat,
   * seed, device, host. Rank 0 writes the figures into the folder; every rank prints one RESULT line.
   */
  public static void main(String[] args) {
    int rank = Integer.parseInt(args[1]);
    try {
      Path dir = Path.of(args[0]);
      int rows = Integer.parseInt(args[2]);
      int cols = Integer.parseInt(args[3]);
      CudaNative.setDevice(Integer.parseInt(args[8]));
      GpuCollConf conf = GpuCollConf.of(Map.of(GpuCollConf.TIMEOUT.key(), "120s"));
      try (FileRendezvous rdv = new FileRendezvous(dir, "cusolvermp-grid", rank, rows * cols);
          Communicator c = CommunicatorFactory.create(rdv, conf, args[9])) {
        if (!(c instanceof GpuCommunicator g)) {
          throw new IllegalStateException("the factory chose backend " + c.backend() + ", not gpu");
        }
        RankFigures f = onRank(g, rows, cols, Integer.parseInt(args[4]), Integer.parseInt(args[5]),
            Integer.parseInt(args[6]), Long.parseLong(args[7]));
        if (rank == 0) {
          f.write(dir.resolve(FIGURES));
        }
        System.out.println("RESULT rank " + rank + " of " + rows + " x " + cols + ": done, paths " + c.observedPaths());
      }
    } catch (Throwable t) {
      System.out.println("RESULT FAIL rank " + rank + ": " + t);
      t.printStackTrace(System.out);
      System.exit(1);
    }
    System.exit(0); // NCCL's and JavaCPP's threads would keep the JVM
  }

  /** The recipe every rank of a {@code rows × cols} grid (row-major over {@code comm}'s ranks) runs. */
  static RankFigures onRank(GpuCommunicator comm, int rows, int cols, int n, int nb, int repeat, long seed) {
    int prow = comm.rank() / cols;
    int pcol = comm.rank() % cols;
    Descriptor da = Descriptor.of(n, n, nb, nb, rows, cols);
    Descriptor db = Descriptor.of(n, 1, nb, nb, rows, cols);
    long stream = comm.stream();
    long tau = CudaNative.malloc(8L * Math.max(1, CuSolverMp.tauCount(da, pcol)));
    long eigen = CudaNative.malloc(8L * n);
    try (CuSolverMp mp = CuSolverMp.open(comm, rows, cols); DeviceMatrix a = DeviceMatrix.allocate(da, prow, pcol);
        DeviceMatrix c = DeviceMatrix.allocate(da, prow, pcol); DeviceMatrix b = DeviceMatrix.allocate(db, prow, pcol)) {
      List<String> failures = new ArrayList<>();
      double[] qr = stage(failures, "geqrf / ormqr", 3, () -> {
        double geqrf = median(repeat, comm, () -> a.fillRandom(seed, false, stream),
            () -> mp.geqrf(a.address(), da, tau));
        // Qᵀ A against R: column sums of |Qᵀ A − R| and of |A| over this rank's part, then over the grid
        c.fillRandom(seed, false, stream);
        double[] original = local(c, comm);
        mp.ormqr(CuSolverMp.Side.LEFT, true, n, a.address(), da, tau, c.address(), da);
        double[] qta = local(c, comm);
        double[] factored = local(a, comm);
        double[] sums = new double[2 * n];
        forEachLocal(c, (k, i, j) -> {
          sums[j] += Math.abs(qta[k] - (i <= j ? factored[k] : 0));
          sums[n + j] += Math.abs(original[k]);
        });
        comm.allReduce(sums, ReduceOp.SUM);
        double qrResidual = max(sums, 0, n) / (max(sums, n, 2 * n) * n * EPS);
        // Qᵀ (Q C) against C
        c.fillRandom(seed + 2, false, stream);
        double[] c0 = local(c, comm);
        mp.ormqr(CuSolverMp.Side.LEFT, false, n, a.address(), da, tau, c.address(), da);
        mp.ormqr(CuSolverMp.Side.LEFT, true, n, a.address(), da, tau, c.address(), da);
        double[] back = local(c, comm);
        Arrays.fill(sums, 0);
        forEachLocal(c, (k, i, j) -> {
          sums[j] += Math.abs(back[k] - c0[k]);
          sums[n + j] += Math.abs(c0[k]);
        });
        comm.allReduce(sums, ReduceOp.SUM);
        return new double[] {geqrf, qrResidual, max(sums, 0, n) / (max(sums, n, 2 * n) * n * EPS)};
      });
      // gels: the solve of the square system; X gathered whole for the residual
      double[] x = new double[n];
      double gels = stage(failures, "gels", 1, () -> {
        double ns = median(repeat, comm, () -> {
          a.fillRandom(seed, false, stream);
          b.fillRandom(seed + 1, false, stream);
        }, () -> mp.gels(a.address(), da, b.address(), db));
        double[] solved = local(b, comm);
        forEachLocal(b, (k, i, j) -> x[i] = solved[k]);
        comm.allReduce(x, ReduceOp.SUM);
        return new double[] {ns};
      })[0];
      // syevd, eigenvectors too (ScaLAPACK's pdsyevd computes both); every rank gets the eigenvalues
      double[] lambda = new double[n];
      boolean[] agree = {false};
      double syevd = stage(failures, "syevd", 1, () -> {
        double ns = median(repeat, comm, () -> a.fillRandom(seed, true, stream),
            () -> mp.syevd(true, CuSolverMp.Fill.LOWER, a.address(), da, eigen, c.address(), da));
        toHost(eigen, lambda, comm);
        double[] most = lambda.clone();
        double[] least = lambda.clone();
        comm.allReduce(most, ReduceOp.MAX);
        comm.allReduce(least, ReduceOp.MIN);
        agree[0] = Arrays.equals(most, least);
        return new double[] {ns};
      })[0];
      if (Double.isNaN(gels)) {
        Arrays.fill(x, Double.NaN);
      }
      if (Double.isNaN(syevd)) {
        Arrays.fill(lambda, Double.NaN);
        agree[0] = true; // the failure itself is reported
      }
      return new RankFigures(qr[0] / 1e6, qr[1], qr[2], gels / 1e6, syevd / 1e6, agree[0], x, lambda, failures);
    } finally {
      CudaNative.free(tau);
      CudaNative.free(eigen);
    }
  }

  /** A grid's figures against the dense reference, computed here (the grid's processes are gone). */
  private static Result against(String grid, int n, int nb, int repeat, long seed, RankFigures f) {
    double[] dense = new double[n];
    double[] denseMs = dense(n, seed, repeat, dense);
    double worst = 0;
    double scale = 0;
    for (int k = 0; k < n; k++) {
      worst = Math.max(worst, Math.abs(f.lambda()[k] - dense[k]));
      scale = Math.max(scale, Math.abs(dense[k]));
    }
    return new Result(grid, n, nb, f.geqrfMs(), denseMs[0] / 1e6, f.qrResidual(), f.orthogonality(), f.gelsMs(),
        LinalgBench.residual(n, nb, seed, false, f.x()), f.syevdMs(), denseMs[1] / 1e6, worst / (scale * n * EPS),
        f.eigenvaluesAgree(), f.failures());
  }

  /**
   * cuSOLVER's dense geqrf and syevd (eigenvectors too) of the same matrices on this device, each the
   * median of {@code repeat}: their nanoseconds; syevd's eigenvalues into {@code eigenvalues}.
   */
  private static double[] dense(int n, long seed, int repeat, double[] eigenvalues) {
    cusolverDnContext solver = new cusolverDnContext();
    check(cusolver.cusolverDnCreate(solver), "cusolverDnCreate");
    Descriptor whole = Descriptor.of(n, n, n, n, 1, 1);
    long tau = CudaNative.malloc(8L * n);
    long w = CudaNative.malloc(8L * n);
    long info = CudaNative.malloc(8);
    long work = 0;
    try (DeviceMatrix a = DeviceMatrix.allocate(whole, 0, 0); IntPointer lwork = new IntPointer(1);
        IntPointer lworkEig = new IntPointer(1)) {
      DoublePointer pa = ptr(a.address());
      check(cusolver.cusolverDnDgeqrf_bufferSize(solver, n, n, pa, n, lwork), "cusolverDnDgeqrf_bufferSize");
      check(cusolver.cusolverDnDsyevd_bufferSize(solver, cusolver.CUSOLVER_EIG_MODE_VECTOR,
          cublas.CUBLAS_FILL_MODE_LOWER, n, pa, n, ptr(w), lworkEig), "cusolverDnDsyevd_bufferSize");
      int most = Math.max(lwork.get(), lworkEig.get());
      work = CudaNative.malloc(8L * most);
      long workAt = work;
      double geqrf = medianAlone(repeat, () -> a.fillRandom(seed, false, 0),
          () -> check(cusolver.cusolverDnDgeqrf(solver, n, n, pa, n, ptr(tau), ptr(workAt), most,
              new IntPointer(CudaNative.ptr(info))), "cusolverDnDgeqrf"));
      double syevd = medianAlone(repeat, () -> a.fillRandom(seed, true, 0),
          () -> check(cusolver.cusolverDnDsyevd(solver, cusolver.CUSOLVER_EIG_MODE_VECTOR,
              cublas.CUBLAS_FILL_MODE_LOWER, n, pa, n, ptr(w), ptr(workAt), most, new IntPointer(CudaNative.ptr(info))),
              "cusolverDnDsyevd"));
      try (DoublePointer host = new DoublePointer(n)) {
        CudaNative.memcpyAsync(host.address(), w, 8L * n, 0);
        check(cudart.cudaDeviceSynchronize(), "cudaDeviceSynchronize");
        host.get(eigenvalues);
      }
      return new double[] {geqrf, syevd};
    } finally {
      cusolver.cusolverDnDestroy(solver);
      CudaNative.free(work);
      CudaNative.free(tau);
      CudaNative.free(w);
      CudaNative.free(info);
    }
  }

  /** Each element of this rank's part: its index in {@link #local}'s array and its global (i, j). */
  private interface LocalElement {
    void at(int k, int i, int j);
  }

  /** One routine's part of the recipe: its figures. */
  private interface Stage {
    double[] run();
  }

  /**
   * Runs a routine's part; when it throws, its {@code figures} are NaN and the failure is named, so
   * that the next routine still runs (every rank fails a collective call alike, or the group's
   * timeout names the one that did not).
   */
  private static double[] stage(List<String> failures, String name, int figures, Stage body) {
    try {
      return body.run();
    } catch (RuntimeException e) {
      failures.add(name + " failed: " + e.getMessage());
      double[] nan = new double[figures];
      Arrays.fill(nan, Double.NaN);
      return nan;
    }
  }

  private static void forEachLocal(DeviceMatrix m, LocalElement body) {
    Descriptor d = m.descriptor();
    for (int lj = 0; lj < m.cols(); lj++) {
      int j = d.indxl2gCol(lj, m.pcol());
      for (int li = 0; li < m.rows(); li++) {
        body.at(li + lj * d.lld(), d.indxl2gRow(li, m.prow()), j);
      }
    }
  }

  private static double max(double[] v, int from, int to) {
    double m = 0;
    for (int k = from; k < to; k++) {
      m = Math.max(m, v[k]);
    }
    return m;
  }

  /** The median nanoseconds of {@code repeat} calls after an untimed one, each prepared and started together. */
  private static double median(int repeat, GpuCommunicator comm, Runnable prepare, Runnable call) {
    return medianAlone(repeat, () -> {
      prepare.run();
      comm.synchronize();
      comm.barrier();
    }, call);
  }

  private static double medianAlone(int repeat, Runnable prepare, Runnable call) {
    long[] t = new long[repeat + 1];
    for (int k = 0; k < t.length; k++) {
      prepare.run();
      check(cudart.cudaDeviceSynchronize(), "cudaDeviceSynchronize");
      long t0 = System.nanoTime();
      call.run();
      check(cudart.cudaDeviceSynchronize(), "cudaDeviceSynchronize");
      t[k] = System.nanoTime() - t0;
    }
    long[] timed = Arrays.copyOfRange(t, 1, t.length);
    Arrays.sort(timed);
    return timed[repeat / 2];
  }

  /** This rank's part as LLD × local columns doubles. */
  private static double[] local(DeviceMatrix m, GpuCommunicator comm) {
    double[] out = new double[m.descriptor().lld() * m.cols()];
    toHost(m.address(), out, comm);
    return out;
  }

  private static void toHost(long device, double[] out, GpuCommunicator comm) {
    if (out.length == 0) {
      return;
    }
    try (DoublePointer host = new DoublePointer(out.length)) {
      CudaNative.memcpyAsync(host.address(), device, 8L * out.length, comm.stream());
      comm.synchronize();
      host.get(out);
    }
  }

  private static DoublePointer ptr(long address) {
    return new DoublePointer(CudaNative.ptr(address));
  }

  private static void check(int status, String call) {
    if (status != 0) {
      throw new IllegalStateException(call + " failed: status " + status);
    }
  }
}
