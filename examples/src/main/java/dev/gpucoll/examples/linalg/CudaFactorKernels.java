package dev.gpucoll.examples.linalg;

import dev.gpucoll.cuda.CudaEnvironment;
import dev.gpucoll.cuda.CudaNative;
import dev.gpucoll.cuda.CudaProbe;
import org.bytedeco.cuda.cublas.cublasContext;
import org.bytedeco.cuda.cusolver.cusolverDnContext;
import org.bytedeco.cuda.global.cublas;
import org.bytedeco.cuda.global.cusolver;
import org.bytedeco.javacpp.DoublePointer;
import org.bytedeco.javacpp.IntPointer;
import org.bytedeco.javacpp.Loader;

/**
 * cuBLAS and cuSOLVER on the current device, for {@link FactorKernels}. Each call copies its
 * operands from the Java arrays to the device and the result back, on the legacy default stream,
 * and waits: the matrices of the examples live in Java, as the CPU kernels' do.
 */
final class CudaFactorKernels implements FactorKernels {
  private final cublasContext blas = new cublasContext();
  private final cusolverDnContext solver = new cusolverDnContext();

  private CudaFactorKernels() {
    check(cublas.cublasCreate_v2(blas), "cublasCreate");
    int rc = cusolver.cusolverDnCreate(solver);
    if (rc != 0) {
      cublas.cublasDestroy_v2(blas);
      throw new IllegalStateException("cusolverDnCreate failed: status " + rc);
    }
  }

  /** The GPU kernels, or an error naming why this process cannot run them. */
  static CudaFactorKernels open() {
    CudaProbe probe = CudaEnvironment.probe();
    if (!probe.available()) {
      throw new IllegalStateException("--kernels gpu: no usable GPU here: " + probe.unavailableReason().orElse("?"));
    }
    try {
      Loader.load(cublas.class); // libcublas.so.13
      Loader.load(cusolver.class); // libcusolver.so.12 (CUDA 13)
    } catch (UnsatisfiedLinkError | NoClassDefFoundError | ExceptionInInitializerError e) {
      throw new IllegalStateException("--kernels gpu: cuBLAS or cuSOLVER does not load (put the CUDA toolkit's"
          + " libcublas and libcusolver on LD_LIBRARY_PATH): " + e, e);
    }
    return new CudaFactorKernels();
  }

  @Override
  public String name() {
    return "GPU (cuBLAS dgemm, cuSOLVER potrf)";
  }

  @Override
  public void close() {
    cusolver.cusolverDnDestroy(solver);
    cublas.cublasDestroy_v2(blas);
  }

  private static void check(int rc, String call) {
    if (rc != 0) {
      throw new IllegalStateException(call + " failed: status " + rc);
    }
  }

  /** Elements from the first to the last of a rows × cols row-major block with leading dimension ld. */
  private static long span(int rows, int cols, int ld) {
    return (long) (rows - 1) * ld + cols;
  }

  @Override
  public void subtractProduct(double[] c, int cOff, int ldc, int rows, int cols, double[] l, int lOff, int ldl,
      double[] u, int uOff, int ldu, int k) {
    if (rows == 0 || cols == 0 || k == 0) {
      return;
    }
    long cs = span(rows, cols, ldc);
    long ls = span(rows, k, ldl);
    long us = span(k, cols, ldu);
    long dc = CudaNative.malloc(8 * cs);
    long dl = CudaNative.malloc(8 * ls);
    long du = CudaNative.malloc(8 * us);
    try (DoublePointer hc = new DoublePointer(cs); DoublePointer hl = new DoublePointer(ls);
        DoublePointer hu = new DoublePointer(us); DoublePointer one = new DoublePointer(1.0);
        DoublePointer minusOne = new DoublePointer(-1.0)) {
      hc.put(c, cOff, (int) cs);
      hl.put(l, lOff, (int) ls);
      hu.put(u, uOff, (int) us);
      CudaNative.memcpyAsync(dc, hc.address(), 8 * cs, 0);
      CudaNative.memcpyAsync(dl, hl.address(), 8 * ls, 0);
      CudaNative.memcpyAsync(du, hu.address(), 8 * us, 0);
      // Row-major C −= L U is column-major Cᵀ −= Uᵀ Lᵀ: the operands swap, no transposes.
      check(cublas.cublasDgemm_v2(blas, cublas.CUBLAS_OP_N, cublas.CUBLAS_OP_N, cols, rows, k, minusOne,
          new DoublePointer(CudaNative.ptr(du)), ldu, new DoublePointer(CudaNative.ptr(dl)), ldl, one,
          new DoublePointer(CudaNative.ptr(dc)), ldc), "cublasDgemm");
      CudaNative.memcpyAsync(hc.address(), dc, 8 * cs, 0);
      CudaNative.streamSynchronize(0);
      hc.get(c, cOff, (int) cs);
    } finally {
      CudaNative.free(dc);
      CudaNative.free(dl);
      CudaNative.free(du);
    }
  }

  @Override
  public void subtractLowerProduct(double[] c, int cOff, int ldc, int rows, int cols, int[] limits, double[] p,
      int pOff, int ldp, double[] pt, int ptOff, int ldpt, int k) {
    subtractProduct(c, cOff, ldc, rows, cols, p, pOff, ldp, pt, ptOff, ldpt, k);
  }

  @Override
  public int choleskyLower(double[] a, int off, int ld, int nb) {
    double[] block = new double[nb * nb];
    for (int i = 0; i < nb; i++) {
      System.arraycopy(a, off + i * ld, block, i * nb, nb);
    }
    // The row-major lower triangle is the column-major upper one: potrf UPPER reads and writes it.
    int info = potrf(block, nb);
    for (int i = 0; i < nb; i++) {
      System.arraycopy(block, i * nb, a, off + i * ld, nb);
    }
    if (info > 0) {
      return info - 1;
    }
    for (int j = 0; j < nb; j++) { // cuSOLVER does not stop at NaN: the CPU kernel would have
      if (!(a[off + j * ld + j] > 0)) {
        return j;
      }
    }
    return -1;
  }

  /** cusolverDnDpotrf (upper, column-major) of the n × n array in place; LAPACK's info. */
  int potrf(double[] m, int n) {
    long bytes = 8L * n * n;
    long dm = CudaNative.malloc(bytes);
    long dinfo = CudaNative.malloc(4);
    long dwork = 0;
    try (DoublePointer hm = new DoublePointer(m); IntPointer lwork = new IntPointer(1); IntPointer info = new IntPointer(1)) {
      CudaNative.memcpyAsync(dm, hm.address(), bytes, 0);
      DoublePointer dA = new DoublePointer(CudaNative.ptr(dm));
      check(cusolver.cusolverDnDpotrf_bufferSize(solver, cublas.CUBLAS_FILL_MODE_UPPER, n, dA, n, lwork),
          "cusolverDnDpotrf_bufferSize");
      dwork = CudaNative.malloc(8L * Math.max(1, lwork.get()));
      check(cusolver.cusolverDnDpotrf(solver, cublas.CUBLAS_FILL_MODE_UPPER, n, dA, n,
          new DoublePointer(CudaNative.ptr(dwork)), lwork.get(), new IntPointer(CudaNative.ptr(dinfo))),
          "cusolverDnDpotrf");
      CudaNative.memcpyAsync(hm.address(), dm, bytes, 0);
      CudaNative.memcpyAsync(info.address(), dinfo, 4, 0);
      CudaNative.streamSynchronize(0);
      hm.get(m);
      if (info.get() < 0) {
        throw new IllegalStateException("cusolverDnDpotrf: argument " + -info.get() + " is wrong");
      }
      return info.get();
    } finally {
      CudaNative.free(dm);
      CudaNative.free(dinfo);
      if (dwork != 0) {
        CudaNative.free(dwork);
      }
    }
  }

  /**
   * cusolverDnDgetrf of the row-major n × n array in place (transposed for the column-major call
   * and back): L below the diagonal, U on and above; the 0-based pivot rows in {@code piv}; LAPACK's info.
   */
  int getrf(double[] a, int n, int[] piv) {
    double[] t = transpose(a, n);
    long bytes = 8L * n * n;
    long dm = CudaNative.malloc(bytes);
    long dinfo = CudaNative.malloc(4);
    long dpiv = CudaNative.malloc(4L * n);
    long dwork = 0;
    try (DoublePointer hm = new DoublePointer(t); IntPointer lwork = new IntPointer(1); IntPointer info = new IntPointer(1);
        IntPointer hpiv = new IntPointer(n)) {
      CudaNative.memcpyAsync(dm, hm.address(), bytes, 0);
      DoublePointer dA = new DoublePointer(CudaNative.ptr(dm));
      check(cusolver.cusolverDnDgetrf_bufferSize(solver, n, n, dA, n, lwork), "cusolverDnDgetrf_bufferSize");
      dwork = CudaNative.malloc(8L * Math.max(1, lwork.get()));
      check(cusolver.cusolverDnDgetrf(solver, n, n, dA, n, new DoublePointer(CudaNative.ptr(dwork)),
          new IntPointer(CudaNative.ptr(dpiv)), new IntPointer(CudaNative.ptr(dinfo))), "cusolverDnDgetrf");
      CudaNative.memcpyAsync(hm.address(), dm, bytes, 0);
      CudaNative.memcpyAsync(hpiv.address(), dpiv, 4L * n, 0);
      CudaNative.memcpyAsync(info.address(), dinfo, 4, 0);
      CudaNative.streamSynchronize(0);
      hm.get(t);
      double[] back = transpose(t, n);
      System.arraycopy(back, 0, a, 0, a.length);
      for (int j = 0; j < n; j++) {
        piv[j] = hpiv.get(j) - 1; // LAPACK's pivots are 1-based
      }
      if (info.get() < 0) {
        throw new IllegalStateException("cusolverDnDgetrf: argument " + -info.get() + " is wrong");
      }
      return info.get();
    } finally {
      CudaNative.free(dm);
      CudaNative.free(dinfo);
      CudaNative.free(dpiv);
      if (dwork != 0) {
        CudaNative.free(dwork);
      }
    }
  }

  private static double[] transpose(double[] a, int n) {
    double[] t = new double[n * n];
    for (int i = 0; i < n; i++) {
      for (int j = 0; j < n; j++) {
        t[j * n + i] = a[i * n + j];
      }
    }
    return t;
  }
}
