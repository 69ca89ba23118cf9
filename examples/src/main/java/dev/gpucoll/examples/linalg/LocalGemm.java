package dev.gpucoll.examples.linalg;

import dev.gpucoll.cuda.CudaEnvironment;
import dev.gpucoll.cuda.CudaNative;
import dev.gpucoll.cuda.CudaProbe;
import org.bytedeco.cuda.cublas.cublasContext;
import org.bytedeco.cuda.global.cublas;
import org.bytedeco.javacpp.DoublePointer;
import org.bytedeco.javacpp.Loader;

/**
 * The local GEMM of each SUMMA step, C += A B (row-major doubles): cuBLAS when this process has a
 * usable GPU and libcublas loads, the CPU otherwise. {@link #choose()} says which and why.
 */
interface LocalGemm extends AutoCloseable {
  String name();

  void multiplyAdd(int m, int n, int k, double[] a, double[] b, double[] c);

  /** Releases what the GEMM holds on the device (nothing on the CPU). */
  @Override
  default void close() {}

  /** cuBLAS if it can run here, else the CPU, with the reason in its name. */
  static LocalGemm choose() {
    CudaProbe probe = CudaEnvironment.probe();
    if (!probe.available()) {
      return new Cpu("CPU (no usable GPU: " + probe.unavailableReason().orElse("?") + ")");
    }
    try {
      Loader.load(cublas.class); // libcublas.so.13 must be on the library path
      return new Cublas();
    } catch (UnsatisfiedLinkError | NoClassDefFoundError | ExceptionInInitializerError e) {
      return new Cpu("CPU (libcublas does not load: " + e.getMessage() + ")");
    }
  }

  /** i-k-j loops: the reference GEMM too. */
  record Cpu(String name) implements LocalGemm {
    @Override
    public void multiplyAdd(int m, int n, int k, double[] a, double[] b, double[] c) {
      for (int i = 0; i < m; i++) {
        for (int p = 0; p < k; p++) {
          double aip = a[i * k + p];
          for (int j = 0; j < n; j++) {
            c[i * n + j] += aip * b[p * n + j];
          }
        }
      }
    }
  }

  /** cublasDgemm on the current device; copies in and out on the legacy default stream. */
  final class Cublas implements LocalGemm {
    private final cublasContext handle = new cublasContext();

    Cublas() {
      int rc = cublas.cublasCreate_v2(handle);
      if (rc != 0) {
        throw new IllegalStateException("cublasCreate failed: status " + rc);
      }
    }

    @Override
    public String name() {
      return "cuBLAS dgemm";
    }

    @Override
    public void close() {
      cublas.cublasDestroy_v2(handle);
    }

    @Override
    public void multiplyAdd(int m, int n, int k, double[] a, double[] b, double[] c) {
      long da = CudaNative.malloc(8L * m * k);
      long db = CudaNative.malloc(8L * k * n);
      long dc = CudaNative.malloc(8L * m * n);
      try (DoublePointer ha = new DoublePointer(a); DoublePointer hb = new DoublePointer(b);
          DoublePointer hc = new DoublePointer(c); DoublePointer one = new DoublePointer(1.0)) {
        CudaNative.memcpyAsync(da, ha.address(), 8L * m * k, 0);
        CudaNative.memcpyAsync(db, hb.address(), 8L * k * n, 0);
        CudaNative.memcpyAsync(dc, hc.address(), 8L * m * n, 0);
        // Row-major C = A B is column-major C^T = B^T A^T: swap the operands, no transposes.
        int rc = cublas.cublasDgemm_v2(handle, cublas.CUBLAS_OP_N, cublas.CUBLAS_OP_N, n, m, k, one,
            new DoublePointer(CudaNative.ptr(db)), n, new DoublePointer(CudaNative.ptr(da)), k, one,
            new DoublePointer(CudaNative.ptr(dc)), n);
        if (rc != 0) {
          throw new IllegalStateException("cublasDgemm failed: status " + rc);
        }
        CudaNative.memcpyAsync(hc.address(), dc, 8L * m * n, 0);
        CudaNative.streamSynchronize(0);
        hc.get(c);
      } finally {
        CudaNative.free(da);
        CudaNative.free(db);
        CudaNative.free(dc);
      }
    }
  }
}
