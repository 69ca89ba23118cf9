package dev.gpucoll.linalg;

import dev.gpucoll.api.CommBuffer;
import dev.ludovic.netlib.lapack.JavaLAPACK;
import dev.ludovic.netlib.lapack.LAPACK;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.Pointer;
import org.netlib.blas.Dgemm;
import org.netlib.blas.Dsyrk;
import org.netlib.blas.Dtrsm;
import org.netlib.util.intW;

/**
 * A device kernel set over host memory, for running {@link DeviceSolver}'s steps without a GPU: its
 * "device" addresses are native host memory, the collectives get them as direct ByteBuffers (the
 * host backend's buffers), and each BLAS / LAPACK call is reference netlib's on a copy of its
 * operands. Everything runs at once: the stream is always idle. So the steps' layout, index and
 * planning code is checked here, and the CUDA calls behind {@link DeviceKernels} on the GPU machine.
 */
class EmulatedDevice implements KernelSet {
  private static final LAPACK LAPACK = JavaLAPACK.getInstance();
  private final List<Pointer> live = new ArrayList<>();
  private final long host = malloc(1 << 22);
  /** The GPU this emulated device claims to be (null: none): ranks given the same one share it. */
  private final String gpu;

  EmulatedDevice() {
    this(null);
  }

  EmulatedDevice(String gpu) {
    this.gpu = gpu;
  }

  @Override
  public boolean oneCallOnOneProcess() {
    return true;
  }

  @Override
  public String gpuIdentity() {
    return gpu;
  }

  @Override
  public void upload(double[] src, long dst, int count) {
    bytes(dst, 8L * count).asDoubleBuffer().put(src, 0, count);
  }

  @Override
  public void download(long src, double[] dst, int count) {
    bytes(src, 8L * count).asDoubleBuffer().get(dst, 0, count);
  }

  @Override
  public long stream() {
    return 0;
  }

  @Override
  public synchronized long malloc(long bytes) {
    Pointer p = Pointer.malloc(Math.max(8, bytes));
    if (p.isNull()) {
      throw new OutOfMemoryError("malloc(" + bytes + ")");
    }
    live.add(p);
    return p.address();
  }

  @Override
  public synchronized void free(long address) {
    for (int i = 0; i < live.size(); i++) {
      if (live.get(i).address() == address) {
        Pointer.free(live.remove(i));
        return;
      }
    }
    throw new AssertionError("free of an address this device did not allocate: " + address);
  }

  @Override
  public CommBuffer buffer(long address, long bytes) {
    return CommBuffer.of(bytes(address, bytes));
  }

  static ByteBuffer bytes(long address, long bytes) {
    return new BytePointer(DeviceKernels.at(address)).capacity(bytes).asByteBuffer().order(ByteOrder.nativeOrder());
  }

  static double[] load(long address, long count) {
    double[] out = new double[(int) count];
    bytes(address, 8 * count).asDoubleBuffer().get(out);
    return out;
  }

  static void store(long address, double[] values) {
    bytes(address, 8L * values.length).asDoubleBuffer().put(values);
  }

  private static long span(long rows, long cols, long ld) {
    return rows == 0 || cols == 0 ? 0 : ld * (cols - 1) + rows;
  }

  @Override
  public void copy(long dst, long dld, long src, long sld, long rows, long cols) {
    for (long j = 0; j < cols; j++) {
      copyBytes(dst + 8 * j * dld, src + 8 * j * sld, 8 * rows);
    }
  }

  @Override
  public void copyBytes(long dst, long src, long bytes) {
    if (bytes > 0) {
      ByteBuffer from = bytes(src, bytes);
      bytes(dst, bytes).put(from);
    }
  }

  @Override
  public void memset(long dst, int value, long bytes) {
    ByteBuffer b = bytes(dst, bytes);
    for (int i = 0; i < bytes; i++) {
      b.put(i, (byte) value);
    }
  }

  @Override
  public boolean syncWithin(long nanos) {
    return true;
  }

  @Override
  public long host() {
    return host;
  }

  @Override
  public int hostInt(long byteOffset) {
    return bytes(host + byteOffset, 4).getInt(0);
  }

  @Override
  public long hostLong(long byteOffset) {
    return bytes(host + byteOffset, 8).getLong(0);
  }

  @Override
  public double hostDouble(long byteOffset) {
    return bytes(host + byteOffset, 8).getDouble(0);
  }

  @Override
  public void putHostInts(long byteOffset, int[] values, int from, int count) {
    bytes(host + byteOffset, 4L * count).asIntBuffer().put(values, from, count);
  }

  /** An operand loaded, changed by {@code op}, and stored back when {@code write}. */
  private interface Op {
    void run(double[] a, double[] b, double[] c);
  }

  private static void blas(long a, long aCount, long b, long bCount, long c, long cCount, Op op) {
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
        double[] zero = new double[(int) span(k, n, ldc)];
        store(c, zero);
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

  @Override
  public void add(long b, int ldb, long a, int lda, int m, int n) {
    if (m > 0 && n > 0) {
      blas(a, span(m, n, lda), 0, 0, b, span(m, n, ldb), (va, vb, vc) -> {
        for (int j = 0; j < n; j++) {
          for (int i = 0; i < m; i++) {
            vc[i + j * ldb] += va[i + j * lda];
          }
        }
      });
    }
  }

  private static void trsm(String side, String uplo, String trans, boolean unit, int m, int n, long a, int lda,
      long b, int ldb) {
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
  public int getrfWorkspace(int m, int n, int lda) {
    return 1;
  }

  @Override
  public int potrfWorkspace(int n, int lda) {
    return 1;
  }

  @Override
  public void getrf(long a, int lda, int m, int n, long work, long ipiv, long info) {
    double[] va = load(a, span(m, n, lda));
    int[] piv = new int[Math.min(m, n)];
    intW status = new intW(0);
    LAPACK.dgetrf(m, n, va, Math.max(1, lda), piv, status);
    store(a, va);
    bytes(ipiv, 4L * piv.length).asIntBuffer().put(piv);
    bytes(info, 4).putInt(0, status.val);
  }

  @Override
  public void getrs(long a, int lda, int n, long ipiv, long b, int ldb, int nrhs, long info) {
    int[] piv = new int[n];
    bytes(ipiv, 4L * n).asIntBuffer().get(piv);
    double[] vb = load(b, span(n, nrhs, ldb));
    intW status = new intW(0);
    LAPACK.dgetrs("N", n, nrhs, load(a, span(n, n, lda)), lda, piv, vb, ldb, status);
    store(b, vb);
    bytes(info, 4).putInt(0, status.val);
  }

  @Override
  public void potrf(long a, int lda, int n, long work, int lwork, long info) {
    double[] va = load(a, span(n, n, lda));
    intW status = new intW(0);
    LAPACK.dpotrf("L", n, va, Math.max(1, lda), status);
    store(a, va);
    bytes(info, 4).putInt(0, status.val);
  }

  @Override
  public void potrs(long l, int ldl, int n, long b, int ldb, int nrhs, long info) {
    double[] vb = load(b, span(n, nrhs, ldb));
    intW status = new intW(0);
    LAPACK.dpotrs("L", n, nrhs, load(l, span(n, n, ldl)), ldl, vb, ldb, status);
    store(b, vb);
    bytes(info, 4).putInt(0, status.val);
  }

  @Override
  public void gatherRows(long a, int lda, long rows, int nrows, int c0, int ncols, long buf, int ldbuf) {
    for (int i = 0; i < nrows; i++) {
      int r = bytes(rows + 4L * i, 4).getInt(0);
      for (int j = 0; j < ncols; j++) {
        copyBytes(buf + 8L * ((long) i * ldbuf + j), a + 8L * (r + (long) (c0 + j) * lda), 8);
      }
    }
  }

  @Override
  public void scatterRows(long a, int lda, long rows, int nrows, int c0, int ncols, long buf, int ldbuf) {
    for (int i = 0; i < nrows; i++) {
      int r = bytes(rows + 4L * i, 4).getInt(0);
      for (int j = 0; j < ncols; j++) {
        copyBytes(a + 8L * (r + (long) (c0 + j) * lda), buf + 8L * ((long) i * ldbuf + j), 8);
      }
    }
  }

  @Override
  public void firstNonFinite(long a, Descriptor d, int prow, int pcol, boolean lower, long out) {
    long[] first = HostKernels.firstNonFinite(d, prow, pcol, lower, (li, lj) -> element(a, d.lld(), li, lj));
    bytes(out, 16).putLong(0, first[0]).putLong(8, first[1]);
  }

  @Override
  public void firstNonFinite(long a, int lda, int rows, int cols, boolean lower, long out) {
    long[] first = HostKernels.firstNonFinite(rows, cols, lower, (i, j) -> element(a, lda, i, j));
    bytes(out, 16).putLong(0, first[0]).putLong(8, first[1]);
  }

  private static double element(long a, int ld, int i, int j) {
    return bytes(a + 8L * (i + (long) j * ld), 8).getDouble(0);
  }

  @Override
  public synchronized void close() {
    for (Pointer p : live) {
      Pointer.free(p);
    }
    live.clear();
  }
}
