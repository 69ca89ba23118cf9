package dev.gpucoll.linalg;

import dev.gpucoll.api.CommBuffer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;

/**
 * The host's {@link KernelSet}: BLAS- and LAPACK-shaped loops in Java over host memory, run at once
 * (the stream is always idle). Memory is byte buffers ({@link Memory}) handed out as addresses:
 * region r's byte b is {@code (r + 1) << 36 | b}, so the schedule's address arithmetic works as on
 * the device (a region holds less than 2 GiB). Element (i, j) of an operand is at
 * {@code address + 8 * (i + j * ld)}; the inner loops run down columns. The update kernels skip a
 * zero multiplier, as reference BLAS does (so a −0.0 is not turned into +0.0 by subtracting a zero
 * product).
 */
class HostKernels implements KernelSet {
  private static final int SHIFT = 36;
  private static final long OFFSET = (1L << SHIFT) - 1;
  private static final int HOST_BYTES = 8 << 19;

  /**
   * Where the regions come from: the Java heap for the host routines (the tests' emulated device
   * brings native memory).
   */
  interface Memory {
    /** A buffer of {@code bytes} bytes (its contents undefined). */
    ByteBuffer allocate(int bytes);

    /** Gives back a buffer {@link #allocate} made. */
    void release(ByteBuffer region);
  }

  private static final Memory HEAP = new Memory() {
    @Override
    public ByteBuffer allocate(int bytes) {
      return ByteBuffer.allocate(bytes);
    }

    @Override
    public void release(ByteBuffer region) {
      // the garbage collector frees it
    }
  };

  private final Memory memory;
  private final List<ByteBuffer> regions = new ArrayList<>();
  private final long host;

  HostKernels() {
    this(HEAP);
  }

  HostKernels(Memory memory) {
    this.memory = memory;
    this.host = newRegion(HOST_BYTES);
  }

  @Override
  public long stream() {
    return 0;
  }

  @Override
  public boolean oneCallOnOneProcess() {
    return false;
  }

  @Override
  public String gpuIdentity() {
    return null;
  }

  // ---- memory ----

  @Override
  public long malloc(long bytes) {
    return newRegion(bytes);
  }

  private long newRegion(long bytes) {
    if (bytes > Integer.MAX_VALUE - 8) {
      throw new IllegalArgumentException("host workspace of " + bytes + " B: a part must be below 2 GiB on the host");
    }
    regions.add(memory.allocate((int) Math.max(8, bytes)).order(ByteOrder.nativeOrder()));
    return (long) regions.size() << SHIFT;
  }

  @Override
  public void free(long address) {
    int r = index(address);
    memory.release(regions.get(r));
    regions.set(r, null);
  }

  private int index(long address) {
    int r = (int) (address >>> SHIFT) - 1;
    if (r < 0 || r >= regions.size() || regions.get(r) == null) {
      throw new IllegalArgumentException("address " + Long.toHexString(address) + " is no live host region");
    }
    return r;
  }

  private ByteBuffer region(long address) {
    return regions.get(index(address));
  }

  private static int at(long address) {
    return (int) (address & OFFSET);
  }

  @Override
  public CommBuffer buffer(long address, long bytes) {
    int from = at(address);
    return CommBuffer.of(region(address).duplicate().position(from).limit(from + (int) bytes).slice()
        .order(ByteOrder.nativeOrder()));
  }

  @Override
  public void upload(double[] src, long dst, int count) {
    region(dst).duplicate().order(ByteOrder.nativeOrder()).position(at(dst)).asDoubleBuffer().put(src, 0, count);
  }

  @Override
  public void download(long src, double[] dst, int count) {
    region(src).duplicate().order(ByteOrder.nativeOrder()).position(at(src)).asDoubleBuffer().get(dst, 0, count);
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
      region(dst).put(at(dst), region(src), at(src), (int) bytes);
    }
  }

  @Override
  public void memset(long dst, int value, long bytes) {
    ByteBuffer b = region(dst);
    for (int i = at(dst); i < at(dst) + bytes; i++) {
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
    return intAt(host + byteOffset);
  }

  @Override
  public long hostLong(long byteOffset) {
    return region(host).getLong(at(host + byteOffset));
  }

  @Override
  public double hostDouble(long byteOffset) {
    return region(host).getDouble(at(host + byteOffset));
  }

  @Override
  public void putHostInts(long byteOffset, int[] values, int from, int count) {
    for (int k = 0; k < count; k++) {
      putInt(host + byteOffset + 4L * k, values[from + k]);
    }
  }

  /** The int32 at {@code address}. */
  int intAt(long address) {
    return region(address).getInt(at(address));
  }

  void putInt(long address, int value) {
    region(address).putInt(at(address), value);
  }

  /** An operand: its region and the byte offset of element (0, 0). */
  private final class M {
    final ByteBuffer b;
    final int o;
    final int ld;

    M(long address, int ld) {
      this.b = region(address);
      this.o = at(address);
      this.ld = ld;
    }

    int i(int i, int j) {
      return o + 8 * (i + j * ld);
    }

    double get(int i, int j) {
      return b.getDouble(i(i, j));
    }

    void set(int i, int j, double v) {
      b.putDouble(i(i, j), v);
    }

    /** C(i, j) −= x * A(i, t) for i in [from, to): one column's axpy. */
    void axpy(int from, int to, int j, M a, int t, double x) {
      int c = i(0, j);
      int s = a.i(0, t);
      for (int i = from; i < to; i++) {
        b.putDouble(c + 8 * i, b.getDouble(c + 8 * i) - a.b.getDouble(s + 8 * i) * x);
      }
    }
  }

  // ---- BLAS and LAPACK ----

  @Override
  public void subtractProduct(long c, int ldc, int m, int n, long a, int lda, long b, int ldb, int k) {
    if (m == 0 || n == 0 || k == 0) {
      return;
    }
    M cc = new M(c, ldc);
    M aa = new M(a, lda);
    M bb = new M(b, ldb);
    for (int j = 0; j < n; j++) {
      for (int t = 0; t < k; t++) {
        double x = bb.get(t, j);
        if (x != 0) {
          cc.axpy(0, m, j, aa, t, x);
        }
      }
    }
  }

  @Override
  public void negatedTransposedProduct(long c, int ldc, int k, int n, long a, int lda, long b, int ldb, int m) {
    if (k == 0 || n == 0) {
      return;
    }
    M cc = new M(c, ldc);
    M aa = m == 0 ? null : new M(a, lda);
    M bb = m == 0 ? null : new M(b, ldb);
    for (int j = 0; j < n; j++) {
      for (int t = 0; t < k; t++) {
        double s = 0;
        for (int i = 0; i < m; i++) {
          s += aa.get(i, t) * bb.get(i, j);
        }
        cc.set(t, j, -s);
      }
    }
  }

  @Override
  public void subtractSymmetricProduct(long c, int ldc, int n, long a, int lda, int k) {
    if (n == 0 || k == 0) {
      return;
    }
    M cc = new M(c, ldc);
    M aa = new M(a, lda);
    for (int j = 0; j < n; j++) {
      for (int t = 0; t < k; t++) {
        double x = aa.get(j, t);
        if (x != 0) {
          cc.axpy(j, n, j, aa, t, x);
        }
      }
    }
  }

  @Override
  public void add(long b, int ldb, long a, int lda, int m, int n) {
    if (m == 0 || n == 0) {
      return;
    }
    M bb = new M(b, ldb);
    M aa = new M(a, lda);
    for (int j = 0; j < n; j++) {
      for (int i = 0; i < m; i++) {
        bb.set(i, j, bb.get(i, j) + aa.get(i, j));
      }
    }
  }

  @Override
  public void solveLower(long l, int ldl, boolean unit, long b, int ldb, int w, int n) {
    if (w == 0 || n == 0) {
      return;
    }
    M ll = new M(l, ldl);
    M bb = new M(b, ldb);
    for (int j = 0; j < n; j++) {
      for (int t = 0; t < w; t++) {
        if (!unit) {
          bb.set(t, j, bb.get(t, j) / ll.get(t, t));
        }
        double x = bb.get(t, j);
        if (x != 0) {
          bb.axpy(t + 1, w, j, ll, t, x);
        }
      }
    }
  }

  @Override
  public void solveUpper(long u, int ldu, long b, int ldb, int w, int n) {
    if (w == 0 || n == 0) {
      return;
    }
    M uu = new M(u, ldu);
    M bb = new M(b, ldb);
    for (int j = 0; j < n; j++) {
      for (int t = w - 1; t >= 0; t--) {
        bb.set(t, j, bb.get(t, j) / uu.get(t, t));
        double x = bb.get(t, j);
        if (x != 0) {
          bb.axpy(0, t, j, uu, t, x);
        }
      }
    }
  }

  @Override
  public void solveLowerTransposed(long l, int ldl, long b, int ldb, int w, int n) {
    if (w == 0 || n == 0) {
      return;
    }
    M ll = new M(l, ldl);
    M bb = new M(b, ldb);
    for (int j = 0; j < n; j++) {
      for (int t = w - 1; t >= 0; t--) {
        double s = bb.get(t, j);
        for (int i = t + 1; i < w; i++) {
          s -= ll.get(i, t) * bb.get(i, j);
        }
        bb.set(t, j, s / ll.get(t, t));
      }
    }
  }

  @Override
  public void solveRightLowerTransposed(long l, int ldl, long b, int ldb, int m, int w) {
    if (m == 0 || w == 0) {
      return;
    }
    M ll = new M(l, ldl);
    M bb = new M(b, ldb);
    for (int j = 0; j < w; j++) {
      for (int t = 0; t < j; t++) {
        double x = ll.get(j, t);
        if (x != 0) {
          bb.axpy(0, m, j, bb, t, x);
        }
      }
      double d = ll.get(j, j);
      for (int i = 0; i < m; i++) {
        bb.set(i, j, bb.get(i, j) / d);
      }
    }
  }

  @Override
  public int getrfWorkspace(int m, int n, int lda) {
    return 1;
  }

  @Override
  public int potrfWorkspace(int n, int lda) {
    return 1;
  }

  /** dgetf2: column by column, the pivot the first largest |value| (a NaN never beats it, as idamax). */
  @Override
  public void getrf(long a, int lda, int m, int n, long work, long ipiv, long info) {
    M aa = new M(a, lda);
    int status = 0;
    for (int j = 0; j < Math.min(m, n); j++) {
      int p = j;
      double best = Math.abs(aa.get(j, j));
      for (int i = j + 1; i < m; i++) {
        double v = Math.abs(aa.get(i, j));
        if (v > best) {
          best = v;
          p = i;
        }
      }
      putInt(ipiv + 4L * j, p + 1);
      double pivot = aa.get(p, j);
      if (pivot != 0) {
        if (p != j) {
          for (int c = 0; c < n; c++) {
            double t = aa.get(j, c);
            aa.set(j, c, aa.get(p, c));
            aa.set(p, c, t);
          }
        }
        for (int i = j + 1; i < m; i++) {
          aa.set(i, j, aa.get(i, j) / pivot);
        }
      } else if (status == 0) {
        status = j + 1;
      }
      for (int c = j + 1; c < n; c++) {
        double u = aa.get(j, c);
        if (u != 0) {
          aa.axpy(j + 1, m, c, aa, j, u);
        }
      }
    }
    putInt(info, status);
  }

  @Override
  public void getrs(long a, int lda, int n, long ipiv, long b, int ldb, int nrhs, long info) {
    M bb = new M(b, ldb);
    for (int k = 0; k < n; k++) {
      int p = intAt(ipiv + 4L * k) - 1;
      for (int j = 0; j < nrhs && p != k; j++) {
        double t = bb.get(k, j);
        bb.set(k, j, bb.get(p, j));
        bb.set(p, j, t);
      }
    }
    solveLower(a, lda, true, b, ldb, n, nrhs);
    solveUpper(a, lda, b, ldb, n, nrhs);
    putInt(info, 0);
  }

  /** dpotf2, lower: the first pivot that is not positive (NaN included) stays where it was computed. */
  @Override
  public void potrf(long a, int lda, int n, long work, int lwork, long info) {
    M aa = new M(a, lda);
    int status = 0;
    for (int j = 0; j < n; j++) {
      double d = aa.get(j, j);
      for (int t = 0; t < j; t++) {
        double x = aa.get(j, t);
        d -= x * x;
      }
      if (!(d > 0)) {
        aa.set(j, j, d);
        status = j + 1;
        break;
      }
      d = Math.sqrt(d);
      aa.set(j, j, d);
      for (int t = 0; t < j; t++) {
        double x = aa.get(j, t);
        if (x != 0) {
          aa.axpy(j + 1, n, j, aa, t, x);
        }
      }
      for (int i = j + 1; i < n; i++) {
        aa.set(i, j, aa.get(i, j) / d);
      }
    }
    putInt(info, status);
  }

  @Override
  public void potrs(long l, int ldl, int n, long b, int ldb, int nrhs, long info) {
    solveLower(l, ldl, false, b, ldb, n, nrhs);
    solveLowerTransposed(l, ldl, b, ldb, n, nrhs);
    putInt(info, 0);
  }

  @Override
  public void gatherRows(long a, int lda, long rows, int nrows, int c0, int ncols, long buf, int ldbuf) {
    M aa = new M(a, lda);
    M out = new M(buf, 1); // element (j, i) of a ldbuf-wide row-major buffer: at j + i * ldbuf
    ByteBuffer r = region(rows);
    for (int i = 0; i < nrows; i++) {
      int li = r.getInt(at(rows) + 4 * i);
      for (int j = 0; j < ncols; j++) {
        out.b.putDouble(out.o + 8 * (i * ldbuf + j), aa.get(li, c0 + j));
      }
    }
  }

  @Override
  public void scatterRows(long a, int lda, long rows, int nrows, int c0, int ncols, long buf, int ldbuf) {
    M aa = new M(a, lda);
    M in = new M(buf, 1);
    ByteBuffer r = region(rows);
    for (int i = 0; i < nrows; i++) {
      int li = r.getInt(at(rows) + 4 * i);
      for (int j = 0; j < ncols; j++) {
        aa.set(li, c0 + j, in.b.getDouble(in.o + 8 * (i * ldbuf + j)));
      }
    }
  }

  @Override
  public void firstNonFinite(long a, Descriptor d, int prow, int pcol, boolean lower, long out) {
    M aa = d.numrocRows(prow) == 0 || d.numrocCols(pcol) == 0 ? null : new M(a, d.lld());
    putPair(out, firstNonFinite(d, prow, pcol, lower, (li, lj) -> aa.get(li, lj)));
  }

  @Override
  public void firstNonFinite(long a, int lda, int rows, int cols, boolean lower, long out) {
    M aa = rows == 0 || cols == 0 ? null : new M(a, lda);
    putPair(out, firstNonFinite(rows, cols, lower, (i, j) -> aa.get(i, j)));
  }

  /** Element (li, lj) of a part, however it is stored. */
  interface Elements {
    double at(int li, int lj);
  }

  /**
   * The part's first NaN and first Inf in the whole matrix's column-major order (global j * M + i;
   * ~0 when none); lower: the lower triangle only. The scan every host-memory kernel set shares.
   */
  static long[] firstNonFinite(Descriptor d, int prow, int pcol, boolean lower, Elements part) {
    long[] first = {-1, -1};
    for (int lj = 0; lj < d.numrocCols(pcol); lj++) {
      long j = d.indxl2gCol(lj, pcol);
      int from = lower ? d.localRowsBefore((int) Math.min(j, d.m()), prow) : 0;
      for (int li = from; li < d.numrocRows(prow); li++) {
        note(first, part.at(li, lj), j * d.m() + d.indxl2gRow(li, prow));
      }
    }
    return first;
  }

  /** As above for a plain rows × cols matrix: positions j * rows + i (lower: i ≥ j only). */
  static long[] firstNonFinite(int rows, int cols, boolean lower, Elements matrix) {
    long[] first = {-1, -1};
    for (int j = 0; j < cols; j++) {
      for (int i = lower ? j : 0; i < rows; i++) {
        note(first, matrix.at(i, j), (long) j * rows + i);
      }
    }
    return first;
  }

  private static void note(long[] first, double v, long position) {
    if (Double.isFinite(v)) {
      return;
    }
    int kind = Double.isNaN(v) ? 0 : 1;
    if (Long.compareUnsigned(position, first[kind]) < 0) {
      first[kind] = position;
    }
  }

  private void putPair(long out, long[] first) {
    region(out).putLong(at(out), first[0]).putLong(at(out) + 8, first[1]);
  }

  @Override
  public void close() {
    for (ByteBuffer r : regions) {
      if (r != null) {
        memory.release(r);
      }
    }
    regions.clear();
  }
}
