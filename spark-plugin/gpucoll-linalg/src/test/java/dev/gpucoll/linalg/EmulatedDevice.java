package dev.gpucoll.linalg;

import dev.ludovic.netlib.lapack.JavaLAPACK;
import dev.ludovic.netlib.lapack.LAPACK;
import java.nio.ByteBuffer;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.Pointer;
import org.netlib.blas.Dgemm;
import org.netlib.blas.Dsyrk;
import org.netlib.blas.Dtrsm;
import org.netlib.util.intW;

/**
 * A device kernel set over host memory, for running {@link DeviceSolver}'s steps without a GPU:
 * {@link HostKernels} over native memory (the collectives get direct ByteBuffers, the host
 * backend's buffers), running a 1 × 1 grid as one call as the device does, and each BLAS / LAPACK
 * call as reference netlib's on a copy of its operands. Everything runs at once: the stream is
 * always idle. So the steps' layout, index and planning code is checked here, and the CUDA calls
 * behind {@link DeviceKernels} on the GPU machine.
 */
class EmulatedDevice extends HostKernels {
  private static final LAPACK LAPACK = JavaLAPACK.getInstance();
  /** The GPU this emulated device claims to be (null: none): ranks given the same one share it. */
  private final String gpu;

  EmulatedDevice() {
    this(null);
  }

  EmulatedDevice(String gpu) {
    super(new NativeMemory());
    this.gpu = gpu;
  }

  /** Native memory from malloc, each region a direct ByteBuffer over it. */
  private static final class NativeMemory implements Memory {
    @Override
    public ByteBuffer allocate(int bytes) {
      Pointer p = Pointer.malloc(bytes);
      if (p.isNull()) {
        throw new OutOfMemoryError("malloc(" + bytes + ")");
      }
      return new BytePointer(p).capacity(bytes).asByteBuffer();
    }

    @Override
    public void release(ByteBuffer region) {
      Pointer.free(new Pointer(region));
    }
  }

  @Override
  public boolean oneCallOnOneProcess() {
    return true;
  }

  @Override
  public String gpuIdentity() {
    return gpu;
  }

  private double[] load(long address, long count) {
    double[] out = new double[(int) count];
    download(address, out, out.length);
    return out;
  }

  private void store(long address, double[] values) {
    upload(values, address, values.length);
  }

  private static long span(long rows, long cols, long ld) {
    return rows == 0 || cols == 0 ? 0 : ld * (cols - 1) + rows;
  }

  /** Operands loaded, changed by {@code op}, and c stored back. */
  private interface Op {
    void run(double[] a, double[] b, double[] c);
  }

  private void blas(long a, long aCount, long b, long bCount, long c, long cCount, Op op) {
    double[] va = a == 0 ? null : load(a, aCount);
    double[] vb = b == 0 ? null : load(b, bCount);
    double[] vc = load(c, cCount);
    op.run(va, vb, vc);
    store(c, vc);
  }

  @Override
  public void subtractProduct(long c, int ldc, int m, int n, long a, int lda, long b, int ldb, int k) {
    if (m > 0 && n > 0 && k > 0) {
      blas(a, span(m, k, lda), b, span(k, n, ldb), c, span(m, n, ldc),
          (va, vb, vc) -> Dgemm.dgemm("N", "N", m, n, k, -1, va, 0, lda, vb, 0, ldb, 1, vc, 0, ldc));
    }
  }

  @Override
  public void negatedTransposedProduct(long c, int ldc, int k, int n, long a, int lda, long b, int ldb, int m) {
    if (k > 0 && n > 0) {
      if (m == 0) {
        store(c, new double[(int) span(k, n, ldc)]);
        return;
      }
      blas(a, span(m, k, lda), b, span(m, n, ldb), c, span(k, n, ldc),
          (va, vb, vc) -> Dgemm.dgemm("T", "N", k, n, m, -1, va, 0, lda, vb, 0, ldb, 0, vc, 0, ldc));
    }
  }

  @Override
  public void subtractSymmetricProduct(long c, int ldc, int n, long a, int lda, int k) {
    if (n > 0 && k > 0) {
      blas(a, span(n, k, lda), 0, 0, c, span(n, n, ldc),
          (va, vb, vc) -> Dsyrk.dsyrk("L", "N", n, k, -1, va, 0, lda, 1, vc, 0, ldc));
    }
  }

  private void trsm(String side, String uplo, String trans, boolean unit, int m, int n, long a, int lda, long b,
      int ldb) {
    if (m > 0 && n > 0) {
      int order = side.equals("L") ? m : n;
      blas(a, span(order, order, lda), 0, 0, b, span(m, n, ldb),
          (va, vb, vc) -> Dtrsm.dtrsm(side, uplo, trans, unit ? "U" : "N", m, n, 1, va, 0, lda, vc, 0, ldb));
    }
  }

  @Override
  public void solveLower(long l, int ldl, boolean unit, long b, int ldb, int w, int n) {
    trsm("L", "L", "N", unit, w, n, l, ldl, b, ldb);
  }

  @Override
  public void solveUpper(long u, int ldu, long b, int ldb, int w, int n) {
    trsm("L", "U", "N", false, w, n, u, ldu, b, ldb);
  }

  @Override
  public void solveLowerTransposed(long l, int ldl, long b, int ldb, int w, int n) {
    trsm("L", "L", "T", false, w, n, l, ldl, b, ldb);
  }

  @Override
  public void solveRightLowerTransposed(long l, int ldl, long b, int ldb, int m, int w) {
    trsm("R", "L", "T", false, m, w, l, ldl, b, ldb);
  }

  @Override
  public void getrf(long a, int lda, int m, int n, long work, long ipiv, long info) {
    double[] va = load(a, span(m, n, lda));
    int[] piv = new int[Math.min(m, n)];
    intW status = new intW(0);
    LAPACK.dgetrf(m, n, va, Math.max(1, lda), piv, status);
    store(a, va);
    for (int k = 0; k < piv.length; k++) {
      putInt(ipiv + 4L * k, piv[k]);
    }
    putInt(info, status.val);
  }

  @Override
  public void getrs(long a, int lda, int n, long ipiv, long b, int ldb, int nrhs, long info) {
    int[] piv = new int[n];
    for (int k = 0; k < n; k++) {
      piv[k] = intAt(ipiv + 4L * k);
    }
    double[] vb = load(b, span(n, nrhs, ldb));
    intW status = new intW(0);
    LAPACK.dgetrs("N", n, nrhs, load(a, span(n, n, lda)), lda, piv, vb, ldb, status);
    store(b, vb);
    putInt(info, status.val);
  }

  @Override
  public void potrf(long a, int lda, int n, long work, int lwork, long info) {
    double[] va = load(a, span(n, n, lda));
    intW status = new intW(0);
    LAPACK.dpotrf("L", n, va, Math.max(1, lda), status);
    store(a, va);
    putInt(info, status.val);
  }

  @Override
  public void potrs(long l, int ldl, int n, long b, int ldb, int nrhs, long info) {
    double[] vb = load(b, span(n, nrhs, ldb));
    intW status = new intW(0);
    LAPACK.dpotrs("L", n, nrhs, load(l, span(n, n, ldl)), ldl, vb, ldb, status);
    store(b, vb);
    putInt(info, status.val);
  }
}
