package dev.gpucoll.cuda.check;

import dev.gpucoll.cuda.CudaNative;
import dev.gpucoll.cusolvermp.CuSolverMp;
import dev.gpucoll.linalg.BackwardError;
import dev.gpucoll.linalg.Descriptor;
import dev.gpucoll.linalg.DeviceMatrix;
import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import org.bytedeco.cuda.cusolver.cusolverDnContext;
import org.bytedeco.cuda.global.cublas;
import org.bytedeco.cuda.global.cudart;
import org.bytedeco.cuda.global.cusolver;
import org.bytedeco.javacpp.DoublePointer;
import org.bytedeco.javacpp.IntPointer;

/**
 * LinalgBench's {@code --qr-eig} section: cuSOLVERMp's QR (geqrf, ormqr), least squares (gels) and
 * symmetric eigensolver (syevd) on a one-rank group's {@code ncclComm_t} (1 × 1: one GPU), each
 * checked against a reference and timed beside the dense cuSOLVER call in the same run, on the
 * seeded matrices of the factorizations (n × n, uniform; symmetric with n on the diagonal):
 * <ul>
 *   <li>geqrf: ‖Qᵀ A − R‖₁ / (‖A‖₁ n ε) (ormqr applies Qᵀ to a copy of A) and the orthogonality of
 *       the applied Q, ‖Qᵀ (Q C) − C‖₁ / (‖C‖₁ n ε) for a seeded C; timed beside cusolverDnDgeqrf;
 *   <li>gels: X of min ‖A X − B‖ (square A: the solve), ‖B − A X‖₂ / (‖A‖_F ‖X‖₂ n ε) as the
 *       factorizations' residual;
 *   <li>syevd (eigenvectors too): the eigenvalues against cusolverDnDsyevd's of the same matrix,
 *       max |λ − λ_dense| / (max |λ_dense| n ε); timed beside it.
 * </ul>
 * Every ratio must be below 10. The host reads back whole matrices: meant for n up to a few
 * thousand.
 */
final class CuSolverMpQrEig {
  private static final double EPS = Math.ulp(1.0) / 2;

  private CuSolverMpQrEig() {}

  /** One size's figures. */
  record Result(int n, int nb, double geqrfMs, double denseGeqrfMs, double qrResidual, double orthogonality,
      double gelsMs, double gelsResidual, double syevdMs, double denseSyevdMs, double eigenvalueError) {
    boolean passes() {
      return qrResidual < 10 && orthogonality < 10 && gelsResidual < 10 && eigenvalueError < 10;
    }

    String line() {
      return String.format(Locale.ROOT, "cuSOLVERMp 1x1 n=%d nb=%d: geqrf %.2f ms (cuSOLVER %.2f), |Q^T A - R| %.3f,"
          + " orthogonality %.3f; gels %.2f ms, residual %.3f; syevd %.2f ms (cuSOLVER %.2f), eigenvalues %.3f%s", n,
          nb, geqrfMs, denseGeqrfMs, qrResidual, orthogonality, gelsMs, gelsResidual, syevdMs, denseSyevdMs,
          eigenvalueError, passes() ? "" : " FAILED");
    }

    String json() {
      return String.format(Locale.ROOT, "{\"n\":%d,\"nb\":%d,\"geqrf_ms\":%.3f,\"cusolver_geqrf_ms\":%.3f,"
          + "\"qr_residual\":%.4f,\"orthogonality\":%.4f,\"gels_ms\":%.3f,\"gels_residual\":%.4f,\"syevd_ms\":%.3f,"
          + "\"cusolver_syevd_ms\":%.3f,\"eigenvalue_error\":%.4f}", n, nb, geqrfMs, denseGeqrfMs, qrResidual,
          orthogonality, gelsMs, gelsResidual, syevdMs, denseSyevdMs, eigenvalueError);
    }
  }

  static Result run(int n, int nb, int repeat, long seed) {
    Descriptor da = Descriptor.of(n, n, nb, nb, 1, 1);
    Descriptor db = Descriptor.of(n, 1, nb, nb, 1, 1);
    Result[] out = new Result[1];
    try (RankGroup g = RankGroup.create(1, 0, null, Duration.ofMinutes(2), 8)) {
      g.onAll(Duration.ofMinutes(10), r -> {
        long stream = r.comm.stream();
        long tau = CudaNative.malloc(8L * CuSolverMp.tauCount(da, 0));
        long eigen = CudaNative.malloc(8L * n);
        try (CuSolverMp mp = CuSolverMp.open(r.comm, 1, 1); DeviceMatrix a = DeviceMatrix.allocate(da, 0, 0);
            DeviceMatrix c = DeviceMatrix.allocate(da, 0, 0); DeviceMatrix b = DeviceMatrix.allocate(db, 0, 0)) {
          double geqrf = median(repeat, () -> {
            a.fillRandom(seed, false, stream);
            r.comm.synchronize();
            long t0 = System.nanoTime();
            mp.geqrf(a.address(), da, tau);
            return System.nanoTime() - t0;
          });
          // Qᵀ A against R
          c.fillRandom(seed, false, stream);
          double[] original = download(c, n, r);
          mp.ormqr(CuSolverMp.Side.LEFT, true, n, a.address(), da, tau, c.address(), da);
          double[] qta = download(c, n, r);
          double[] factored = download(a, n, r);
          double[] diff = new double[n * n];
          for (int j = 0; j < n; j++) {
            for (int i = 0; i < n; i++) {
              diff[i + j * n] = qta[i + j * n] - (i <= j ? factored[i + j * n] : 0);
            }
          }
          double qrResidual = BackwardError.norm1(diff, n, n) / (BackwardError.norm1(original, n, n) * n * EPS);
          // Qᵀ (Q C) against C
          c.fillRandom(seed + 2, false, stream);
          double[] c0 = download(c, n, r);
          mp.ormqr(CuSolverMp.Side.LEFT, false, n, a.address(), da, tau, c.address(), da);
          mp.ormqr(CuSolverMp.Side.LEFT, true, n, a.address(), da, tau, c.address(), da);
          double[] back = download(c, n, r);
          for (int k = 0; k < back.length; k++) {
            back[k] -= c0[k];
          }
          double orthogonality = BackwardError.norm1(back, n, n) / (BackwardError.norm1(c0, n, n) * n * EPS);
          // gels: the solve of the square system, its residual as the factorizations'
          double[] x = new double[n];
          double gels = median(repeat, () -> {
            a.fillRandom(seed, false, stream);
            b.fillRandom(seed + 1, false, stream);
            r.comm.synchronize();
            long t0 = System.nanoTime();
            mp.gels(a.address(), da, b.address(), db);
            return System.nanoTime() - t0;
          });
          copyToHost(b.address(), x, r);
          // syevd, eigenvectors too (ScaLAPACK's pdsyevd computes both)
          double syevd = median(repeat, () -> {
            a.fillRandom(seed, true, stream);
            r.comm.synchronize();
            long t0 = System.nanoTime();
            mp.syevd(true, CuSolverMp.Fill.LOWER, a.address(), da, eigen, c.address(), da);
            return System.nanoTime() - t0;
          });
          double[] lambda = new double[n];
          copyToHost(eigen, lambda, r);
          double[] dense = new double[n];
          double[] denseMs = dense(n, seed, repeat, a, dense, r);
          double worst = 0;
          double scale = 0;
          for (int k = 0; k < n; k++) {
            worst = Math.max(worst, Math.abs(lambda[k] - dense[k]));
            scale = Math.max(scale, Math.abs(dense[k]));
          }
          out[0] = new Result(n, nb, geqrf / 1e6, denseMs[0] / 1e6, qrResidual, orthogonality, gels / 1e6,
              LinalgBench.residual(n, nb, seed, false, x), syevd / 1e6, denseMs[1] / 1e6, worst / (scale * n * EPS));
        } finally {
          CudaNative.free(tau);
          CudaNative.free(eigen);
        }
        return null;
      });
    }
    return out[0];
  }

  /**
   * cuSOLVER's dense geqrf and syevd (eigenvectors too) of the same matrices on this device, each the
   * median of {@code repeat}: their nanoseconds; syevd's eigenvalues into {@code eigenvalues}.
   */
  private static double[] dense(int n, long seed, int repeat, DeviceMatrix a, double[] eigenvalues, RankGroup.Rank r) {
    cusolverDnContext solver = new cusolverDnContext();
    check(cusolver.cusolverDnCreate(solver), "cusolverDnCreate");
    long tau = CudaNative.malloc(8L * n);
    long w = CudaNative.malloc(8L * n);
    long info = CudaNative.malloc(8);
    long work = 0;
    try (IntPointer lwork = new IntPointer(1); IntPointer lworkEig = new IntPointer(1)) {
      DoublePointer pa = ptr(a.address());
      check(cusolver.cusolverDnDgeqrf_bufferSize(solver, n, n, pa, n, lwork), "cusolverDnDgeqrf_bufferSize");
      check(cusolver.cusolverDnDsyevd_bufferSize(solver, cusolver.CUSOLVER_EIG_MODE_VECTOR,
          cublas.CUBLAS_FILL_MODE_LOWER, n, pa, n, ptr(w), lworkEig), "cusolverDnDsyevd_bufferSize");
      int most = Math.max(lwork.get(), lworkEig.get());
      work = CudaNative.malloc(8L * most);
      long workAt = work;
      double geqrf = median(repeat, () -> {
        a.fillRandom(seed, false, 0);
        check(cudart.cudaDeviceSynchronize(), "cudaDeviceSynchronize");
        long t0 = System.nanoTime();
        check(cusolver.cusolverDnDgeqrf(solver, n, n, pa, n, ptr(tau), ptr(workAt), most,
            new IntPointer(CudaNative.ptr(info))), "cusolverDnDgeqrf");
        check(cudart.cudaDeviceSynchronize(), "cudaDeviceSynchronize");
        return System.nanoTime() - t0;
      });
      double syevd = median(repeat, () -> {
        a.fillRandom(seed, true, 0);
        check(cudart.cudaDeviceSynchronize(), "cudaDeviceSynchronize");
        long t0 = System.nanoTime();
        check(cusolver.cusolverDnDsyevd(solver, cusolver.CUSOLVER_EIG_MODE_VECTOR, cublas.CUBLAS_FILL_MODE_LOWER, n,
            pa, n, ptr(w), ptr(workAt), most, new IntPointer(CudaNative.ptr(info))), "cusolverDnDsyevd");
        check(cudart.cudaDeviceSynchronize(), "cudaDeviceSynchronize");
        return System.nanoTime() - t0;
      });
      copyToHost(w, eigenvalues, r);
      return new double[] {geqrf, syevd};
    } finally {
      cusolver.cusolverDnDestroy(solver);
      CudaNative.free(work);
      CudaNative.free(tau);
      CudaNative.free(w);
      CudaNative.free(info);
    }
  }

  private interface Timed {
    long nanos();
  }

  /** The median of {@code repeat} runs after an untimed one. */
  private static double median(int repeat, Timed run) {
    run.nanos();
    long[] t = new long[repeat];
    for (int k = 0; k < repeat; k++) {
      t[k] = run.nanos();
    }
    Arrays.sort(t);
    return t[repeat / 2];
  }

  private static double[] download(DeviceMatrix m, int n, RankGroup.Rank r) {
    double[] out = new double[n * n];
    copyToHost(m.address(), out, r);
    return out;
  }

  private static void copyToHost(long device, double[] out, RankGroup.Rank r) {
    try (DoublePointer host = new DoublePointer(out.length)) {
      CudaNative.memcpyAsync(host.address(), device, 8L * out.length, r.comm.stream());
      r.comm.synchronize();
      check(cudart.cudaDeviceSynchronize(), "cudaDeviceSynchronize");
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
