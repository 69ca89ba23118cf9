package dev.gpucoll.linalg;

import static org.bytedeco.cuda.global.cublas.CUBLAS_DIAG_NON_UNIT;
import static org.bytedeco.cuda.global.cublas.CUBLAS_DIAG_UNIT;
import static org.bytedeco.cuda.global.cublas.CUBLAS_FILL_MODE_LOWER;
import static org.bytedeco.cuda.global.cublas.CUBLAS_FILL_MODE_UPPER;
import static org.bytedeco.cuda.global.cublas.CUBLAS_OP_N;
import static org.bytedeco.cuda.global.cublas.CUBLAS_OP_T;
import static org.bytedeco.cuda.global.cublas.CUBLAS_SIDE_LEFT;
import static org.bytedeco.cuda.global.cublas.CUBLAS_SIDE_RIGHT;

import dev.gpucoll.api.CommBuffer;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import org.bytedeco.cuda.cublas.cublasContext;
import org.bytedeco.cuda.cudart.CUfunc_st;
import org.bytedeco.cuda.cudart.CUmod_st;
import org.bytedeco.cuda.cudart.CUstream_st;
import org.bytedeco.cuda.cusolver.cusolverDnContext;
import org.bytedeco.cuda.global.cublas;
import org.bytedeco.cuda.global.cudart;
import org.bytedeco.cuda.global.cusolver;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.DoublePointer;
import org.bytedeco.javacpp.IntPointer;
import org.bytedeco.javacpp.Loader;
import org.bytedeco.javacpp.LongPointer;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.PointerPointer;

/**
 * The device {@link KernelSet} of one rank: cuBLAS, cuSOLVER and the linear-algebra kernels of the shipped
 * fatbin ({@code native-kernels/include/gpucoll/linalg.cuh}), all on one stream, over device
 * addresses (column-major fp64 operands, each an address and a leading dimension, as in BLAS).
 * Everything that allocates or loads code is done when it opens: a rank that allocated, freed or
 * loaded a kernel lazily while another rank's collective kernel spins on the same GPU could wait for
 * a device that never goes idle.
 */
final class DeviceKernels implements KernelSet {
  static final String FATBIN = "dev/gpucoll/native/gpucoll_kernels.fatbin";
  private static final int THREADS_X = 32;
  private static final int THREADS_Y = 8;
  /** The non-finite scan's block, and its tile: NonFiniteScan::kTileRows of linalg.cuh. */
  private static final int SCAN_THREADS = 256;
  private static final int SCAN_TILE_ROWS = 256;
  private static final long CUBLAS_WORKSPACE = 32L << 20;

  private final long stream;
  private final CUstream_st cuStream;
  private final cublasContext blas = new cublasContext();
  private final cusolverDnContext solver = new cusolverDnContext();
  private final Functions functions;
  private final DoublePointer one = new DoublePointer(1).put(1.0);
  private final DoublePointer minusOne = new DoublePointer(1).put(-1.0);
  private final DoublePointer zero = new DoublePointer(1).put(0.0);
  private final long blasWorkspace;
  /** Pinned host words for what a step reads back (pivots, status), {@link #HOST_WORDS} of 8 bytes. */
  private final long host;
  static final int HOST_WORDS = 1 << 19;

  private DeviceKernels(long stream) {
    this.stream = stream;
    this.cuStream = new CUstream_st(at(stream));
    check(cublas.cublasCreate_v2(blas), "cublasCreate");
    check(cublas.cublasSetStream_v2(blas, cuStream), "cublasSetStream");
    blasWorkspace = cudaMalloc(CUBLAS_WORKSPACE);
    check(cublas.cublasSetWorkspace_v2(blas, at(blasWorkspace), CUBLAS_WORKSPACE), "cublasSetWorkspace");
    check(cusolver.cusolverDnCreate(solver), "cusolverDnCreate");
    check(cusolver.cusolverDnSetStream(solver, cuStream), "cusolverDnSetStream");
    functions = Functions.current();
    Pointer h = new Pointer();
    check(cudart.cudaMallocHost(h, 8L * HOST_WORDS), "cudaMallocHost");
    host = h.address();
  }

  /** The kernel set on {@code stream} (a cudaStream_t) of the calling thread's current device. */
  static DeviceKernels open(long stream) {
    try {
      Loader.load(cudart.class);
      Loader.load(cublas.class);
      Loader.load(cusolver.class);
    } catch (UnsatisfiedLinkError | NoClassDefFoundError | ExceptionInInitializerError e) {
      throw new IllegalStateException("the device kernel set needs CUDA's runtime, cuBLAS and cuSOLVER (libcudart,"
          + " libcublas, libcusolver of the CUDA toolkit on LD_LIBRARY_PATH): " + e, e);
    }
    return new DeviceKernels(stream);
  }

  @Override
  public long stream() {
    return stream;
  }

  @Override
  public boolean oneCallOnOneProcess() {
    return true;
  }

  /** This host's name and the current device's UUID. */
  @Override
  public String gpuIdentity() {
    int[] device = new int[1];
    check(cudart.cudaGetDevice(device), "cudaGetDevice");
    try (org.bytedeco.cuda.cudart.cudaDeviceProp prop = new org.bytedeco.cuda.cudart.cudaDeviceProp()) {
      check(cudart.cudaGetDeviceProperties(prop, device[0]), "cudaGetDeviceProperties");
      StringBuilder uuid = new StringBuilder();
      org.bytedeco.cuda.cudart.CUuuid_st id = new org.bytedeco.cuda.cudart.CUuuid_st(prop.uuid());
      for (int i = 0; i < 16; i++) {
        uuid.append(String.format("%02x", id.bytes(i) & 0xff));
      }
      String host;
      try {
        host = java.net.InetAddress.getLocalHost().getHostName();
      } catch (java.net.UnknownHostException e) {
        host = "localhost";
      }
      return host + "/GPU-" + uuid;
    }
  }

  @Override
  public void close() {
    cusolver.cusolverDnDestroy(solver);
    cublas.cublasDestroy_v2(blas);
    cudart.cudaFree(at(blasWorkspace));
    cudart.cudaFreeHost(at(host));
    one.close();
    minusOne.close();
    zero.close();
  }

  // ---- memory ----

  @Override
  public long malloc(long bytes) {
    return cudaMalloc(bytes);
  }

  @Override
  public void free(long address) {
    cudaFree(address);
  }

  @Override
  public CommBuffer buffer(long address, long bytes) {
    return CommBuffer.device(address, bytes);
  }

  static long cudaMalloc(long bytes) {
    Pointer p = new Pointer();
    check(cudart.cudaMalloc(p, Math.max(bytes, 8)), "cudaMalloc(" + bytes + " B)");
    return p.address();
  }

  static void cudaFree(long address) {
    if (address != 0) {
      check(cudart.cudaFree(at(address)), "cudaFree");
    }
  }

  /** dst[i + j * dld] = src[i + j * sld] for i < rows, j < cols (doubles; either side host or device). */
  @Override
  public void copy(long dst, long dld, long src, long sld, long rows, long cols) {
    if (rows == 0 || cols == 0) {
      return;
    }
    check(cudart.cudaMemcpy2DAsync(at(dst), 8 * dld, at(src), 8 * sld, 8 * rows, cols, cudart.cudaMemcpyDefault,
        cuStream), "cudaMemcpy2DAsync");
  }

  @Override
  public void copyBytes(long dst, long src, long bytes) {
    if (bytes > 0) {
      check(cudart.cudaMemcpyAsync(at(dst), at(src), bytes, cudart.cudaMemcpyDefault, cuStream), "cudaMemcpyAsync");
    }
  }

  @Override
  public void memset(long dst, int value, long bytes) {
    check(cudart.cudaMemsetAsync(at(dst), value, bytes, cuStream), "cudaMemsetAsync");
  }

  @Override
  public void upload(double[] src, long dst, int count) {
    try (DoublePointer staged = new DoublePointer(src)) {
      copyBytes(dst, staged.address(), 8L * count);
      sync();
    }
  }

  @Override
  public void download(long src, double[] dst, int count) {
    try (DoublePointer staged = new DoublePointer((long) count)) {
      copyBytes(staged.address(), src, 8L * count);
      sync();
      staged.get(dst, 0, count);
    }
  }

  /** Waits for this stream (not the device: other ranks' kernels may spin on it), unbounded: the copies at the ends. */
  private void sync() {
    check(cudart.cudaStreamSynchronize(cuStream), "cudaStreamSynchronize");
  }

  /**
   * Polls this stream until it is idle or {@code nanos} pass (cudaStreamSynchronize has no time
   * limit): spinning on the host for the first 50 µs (a panel's status comes back in microseconds),
   * then parking 20 µs between polls.
   */
  @Override
  public boolean syncWithin(long nanos) {
    long start = System.nanoTime();
    while (true) {
      int status = cudart.cudaStreamQuery(cuStream);
      if (status == cudart.cudaSuccess) {
        return true;
      }
      if (status != cudart.cudaErrorNotReady) {
        check(status, "cudaStreamQuery");
      }
      long waited = System.nanoTime() - start;
      if (waited > nanos) {
        return false;
      }
      if (waited < 50_000) {
        Thread.onSpinWait();
      } else {
        java.util.concurrent.locks.LockSupport.parkNanos(20_000);
      }
    }
  }

  /** The pinned host words (valid after {@link #sync}). */
  @Override
  public long host() {
    return host;
  }

  @Override
  public int hostInt(long byteOffset) {
    return new IntPointer(at(host + byteOffset)).get();
  }

  @Override
  public long hostLong(long byteOffset) {
    return new LongPointer(at(host + byteOffset)).get();
  }

  @Override
  public double hostDouble(long byteOffset) {
    return new DoublePointer(at(host + byteOffset)).get();
  }

  @Override
  public void putHostInts(long byteOffset, int[] values, int from, int count) {
    new IntPointer(at(host + byteOffset)).put(values, from, count);
  }

  // ---- BLAS and LAPACK on the device ----

  /** C −= A B: C m × n, A m × k, B k × n (dgemm). */
  @Override
  public void subtractProduct(long c, int ldc, int m, int n, long a, int lda, long b, int ldb, int k) {
    if (m > 0 && n > 0 && k > 0) {
      check(cublas.cublasDgemm_v2(blas, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, minusOne, d(a), lda, d(b), ldb, one,
          d(c), ldc), "cublasDgemm");
    }
  }

  /** C = −Aᵀ B: C k × n, A m × k, B m × n (the partial sums of a transposed solve). */
  @Override
  public void negatedTransposedProduct(long c, int ldc, int k, int n, long a, int lda, long b, int ldb, int m) {
    if (k > 0 && n > 0) {
      check(cublas.cublasDgemm_v2(blas, CUBLAS_OP_T, CUBLAS_OP_N, k, n, m, minusOne, d(a), lda, d(b), ldb, zero,
          d(c), ldc), "cublasDgemm");
    }
  }

  /** The lower triangle of C −= A Aᵀ: C n × n, A n × k (dsyrk). */
  @Override
  public void subtractSymmetricProduct(long c, int ldc, int n, long a, int lda, int k) {
    if (n > 0 && k > 0) {
      check(cublas.cublasDsyrk_v2(blas, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, n, k, minusOne, d(a), lda, one, d(c),
          ldc), "cublasDsyrk");
    }
  }

  /** B += A: both m × n (dgeam in place). */
  @Override
  public void add(long b, int ldb, long a, int lda, int m, int n) {
    if (m > 0 && n > 0) {
      check(cublas.cublasDgeam(blas, CUBLAS_OP_N, CUBLAS_OP_N, m, n, one, d(b), ldb, one, d(a), lda, d(b), ldb),
          "cublasDgeam");
    }
  }

  /** B = L⁻¹ B (left, lower, unit or not): L w × w, B w × n. */
  @Override
  public void solveLower(long l, int ldl, boolean unit, long b, int ldb, int w, int n) {
    trsm(CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, unit, w, n, l, ldl, b, ldb);
  }

  /** B = U⁻¹ B: U w × w upper, non-unit. */
  @Override
  public void solveUpper(long u, int ldu, long b, int ldb, int w, int n) {
    trsm(CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N, false, w, n, u, ldu, b, ldb);
  }

  /** B = L⁻ᵀ B: L w × w lower, non-unit. */
  @Override
  public void solveLowerTransposed(long l, int ldl, long b, int ldb, int w, int n) {
    trsm(CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_T, false, w, n, l, ldl, b, ldb);
  }

  /** B = B L⁻ᵀ: L w × w lower, non-unit; B m × w (Cholesky's panel). */
  @Override
  public void solveRightLowerTransposed(long l, int ldl, long b, int ldb, int m, int w) {
    trsm(CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_T, false, m, w, l, ldl, b, ldb);
  }

  private void trsm(int side, int uplo, int trans, boolean unit, int m, int n, long a, int lda, long b, int ldb) {
    if (m > 0 && n > 0) {
      check(cublas.cublasDtrsm_v2(blas, side, uplo, trans, unit ? CUBLAS_DIAG_UNIT : CUBLAS_DIAG_NON_UNIT, m, n, one,
          d(a), lda, d(b), ldb), "cublasDtrsm");
    }
  }

  /** Doubles of workspace {@link #getrf} needs for an m × n panel with leading dimension lda. */
  @Override
  public int getrfWorkspace(int m, int n, int lda) {
    try (IntPointer lwork = new IntPointer(1)) {
      check(cusolver.cusolverDnDgetrf_bufferSize(solver, m, n, (DoublePointer) null, lda, lwork),
          "cusolverDnDgetrf_bufferSize");
      return lwork.get();
    }
  }

  /** Doubles of workspace {@link #potrf} needs for n × n with leading dimension lda. */
  @Override
  public int potrfWorkspace(int n, int lda) {
    try (IntPointer lwork = new IntPointer(1)) {
      check(cusolver.cusolverDnDpotrf_bufferSize(solver, CUBLAS_FILL_MODE_LOWER, n, (DoublePointer) null, lda, lwork),
          "cusolverDnDpotrf_bufferSize");
      return lwork.get();
    }
  }

  /** LU with partial pivoting of A (m × n) in place: ipiv (1-based, int32) and info on the device. */
  @Override
  public void getrf(long a, int lda, int m, int n, long work, long ipiv, long info) {
    check(cusolver.cusolverDnDgetrf(solver, m, n, d(a), lda, d(work), new IntPointer(at(ipiv)),
        new IntPointer(at(info))), "cusolverDnDgetrf");
  }

  /** X = A⁻¹ B with getrf's factors and 1-based pivots. */
  @Override
  public void getrs(long a, int lda, int n, long ipiv, long b, int ldb, int nrhs, long info) {
    check(cusolver.cusolverDnDgetrs(solver, CUBLAS_OP_N, n, nrhs, d(a), lda, new IntPointer(at(ipiv)), d(b), ldb,
        new IntPointer(at(info))), "cusolverDnDgetrs");
  }

  /** The lower Cholesky factor of A (n × n) in place; info on the device. */
  @Override
  public void potrf(long a, int lda, int n, long work, int lwork, long info) {
    check(cusolver.cusolverDnDpotrf(solver, CUBLAS_FILL_MODE_LOWER, n, d(a), lda, d(work), lwork,
        new IntPointer(at(info))), "cusolverDnDpotrf");
  }

  @Override
  public void potrs(long l, int ldl, int n, long b, int ldb, int nrhs, long info) {
    check(cusolver.cusolverDnDpotrs(solver, CUBLAS_FILL_MODE_LOWER, n, nrhs, d(l), ldl, d(b), ldb,
        new IntPointer(at(info))), "cusolverDnDpotrs");
  }

  // ---- the fatbin's kernels ----

  /** buf[i * ldbuf + j] = a[rows[i] + (c0 + j) * lda], j < ncols; rows: device int32. */
  @Override
  public void gatherRows(long a, int lda, long rows, int nrows, int c0, int ncols, long buf, int ldbuf) {
    rowsKernel(functions.gatherRows, a, lda, rows, nrows, c0, ncols, buf, ldbuf);
  }

  /** a[rows[i] + (c0 + j) * lda] = buf[i * ldbuf + j]. */
  @Override
  public void scatterRows(long a, int lda, long rows, int nrows, int c0, int ncols, long buf, int ldbuf) {
    rowsKernel(functions.scatterRows, a, lda, rows, nrows, c0, ncols, buf, ldbuf);
  }

  private void rowsKernel(CUfunc_st f, long a, int lda, long rows, int nrows, int c0, int ncols, long buf, int ldbuf) {
    if (nrows == 0 || ncols == 0) {
      return;
    }
    try (Args args = new Args(8)) {
      args.ptr(a).i64(lda).ptr(rows).i32(nrows).i32(c0).i32(ncols).ptr(buf).i64(ldbuf);
      launch(f, nrows, ncols, args, cuStream);
    }
  }

  /**
   * Writes the part's first NaN and first Inf (global j * M + i; ~0 when none) to two device words
   * at {@code out}; lower: the lower triangle only.
   */
  @Override
  public void firstNonFinite(long a, Descriptor d, int prow, int pcol, boolean lower, long out) {
    int[] dealt = {d.mb(), prow, d.rsrc(), d.gridRows(), d.nb(), pcol, d.csrc(), d.gridCols()};
    scanNonFinite(a, d.lld(), d.numrocRows(prow), d.numrocCols(pcol), dealt, d.m(), lower, out);
  }

  /** As above for a plain rows × cols matrix: its first NaN and Inf at j * rows + i (lower: i ≥ j only). */
  @Override
  public void firstNonFinite(long a, int lda, int rows, int cols, boolean lower, long out) {
    int[] identity = {1 << 30, 0, 0, 1, 1 << 30, 0, 0, 1}; // one block per dimension: local = global
    scanNonFinite(a, lda, rows, cols, identity, rows, lower, out);
  }

  private void scanNonFinite(long a, long lda, int rows, int cols, int[] dealt, long m, boolean lower, long out) {
    memset(out, 0xFF, 16);
    if (rows == 0 || cols == 0) {
      return;
    }
    try (Args args = new Args(8)) {
      args.ptr(a).i64(lda).i32(rows).i32(cols).dealt(dealt).i64(m).i32(lower ? 1 : 0).ptr(out);
      check(cudart.cuLaunchKernel(functions.firstNonFinite, scanBlocks(rows, cols), 1, 1, SCAN_THREADS, 1, 1, 0,
          cuStream, args.params, null), "cuLaunchKernel");
    }
  }

  /**
   * The scan's grid: a warp per tile of {@link #SCAN_TILE_ROWS} rows of a column where the part has
   * fewer tiles, else as many blocks as the device holds at once (the kernel strides over the rest):
   * every warp then has loads in flight, which is what reaches the card's read speed.
   */
  private int scanBlocks(int rows, int cols) {
    long tiles = (long) cols * ((rows / 2 + 1 + SCAN_TILE_ROWS / 2 - 1) / (SCAN_TILE_ROWS / 2));
    long warpsPerBlock = SCAN_THREADS / 32;
    return (int) Math.max(1, Math.min(functions.scanResidentBlocks, (tiles + warpsPerBlock - 1) / warpsPerBlock));
  }

  /**
   * Fills process (prow, pcol)'s part at {@code a} with the seeded matrix of its global positions
   * (spd: symmetric, N on the diagonal), on {@code stream} of the current device.
   */
  static void fill(long stream, long a, Descriptor d, int prow, int pcol, long seed, boolean spd) {
    int rows = d.numrocRows(prow);
    int cols = d.numrocCols(pcol);
    if (rows == 0 || cols == 0) {
      return;
    }
    int[] dealt = {d.mb(), prow, d.rsrc(), d.gridRows(), d.nb(), pcol, d.csrc(), d.gridCols()};
    try (Args args = new Args(8)) {
      args.ptr(a).i64(d.lld()).i32(rows).i32(cols).dealt(dealt).i64(seed).i32(spd ? 1 : 0).i64(d.n());
      launch(Functions.current().fill, rows, cols, args, new CUstream_st(at(stream)));
    }
  }

  /** The element kernels' launch (row gather and scatter, fill): a thread per element, grid-strided past 65535 blocks. */
  private static void launch(CUfunc_st f, int rows, int cols, Args args, CUstream_st cuStream) {
    int gx = (int) Math.min(65535, (rows + THREADS_X - 1) / THREADS_X);
    int gy = (int) Math.min(65535, (cols + THREADS_Y - 1) / THREADS_Y);
    check(cudart.cuLaunchKernel(f, gx, gy, 1, THREADS_X, THREADS_Y, 1, 0, cuStream, args.params, null),
        "cuLaunchKernel");
  }

  /** A launch's parameters: each one 8 bytes of host memory (the kernel reads its own width). */
  private static final class Args implements AutoCloseable {
    private final BytePointer values;
    final PointerPointer<BytePointer> params;
    private int n;

    Args(int capacity) {
      values = new BytePointer(8L * capacity + 32);
      params = new PointerPointer<>(capacity);
    }

    private Args next() {
      params.put(n, values.getPointer(8L * n));
      n++;
      return this;
    }

    Args ptr(long v) {
      values.putLong(8L * n, v);
      return next();
    }

    Args i64(long v) {
      values.putLong(8L * n, v);
      return next();
    }

    Args i32(int v) {
      values.putInt(8L * n, v);
      return next();
    }

    /** gc_linalg::Dealt {mb, prow, rsrc, nprow, nb, pcol, csrc, npcol}: 32 bytes, after the 8-byte slots. */
    Args dealt(int[] f) {
      long at = values.capacity() - 32;
      for (int i = 0; i < f.length; i++) {
        values.putInt(at + 4L * i, f[i]);
      }
      params.put(n++, values.getPointer(at));
      return this;
    }

    @Override
    public void close() {
      params.close();
      values.close();
    }
  }

  /** The fatbin's linear-algebra kernels, loaded once per device (and eagerly: see the class comment). */
  private static final class Functions {
    private static final java.util.Map<Integer, Functions> BY_DEVICE = new java.util.concurrent.ConcurrentHashMap<>();
    private static byte[] bytes;
    final CUfunc_st gatherRows = new CUfunc_st();
    final CUfunc_st scatterRows = new CUfunc_st();
    final CUfunc_st firstNonFinite = new CUfunc_st();
    final CUfunc_st fill = new CUfunc_st();
    /** How many blocks of the non-finite scan the device runs at once. */
    final int scanResidentBlocks;

    private Functions(CUmod_st module, int device) {
      load(module, gatherRows, "gc_linalg_gather_rows_f64");
      load(module, scatterRows, "gc_linalg_scatter_rows_f64");
      load(module, firstNonFinite, "gc_linalg_first_nonfinite_f64");
      load(module, fill, "gc_linalg_fill_f64");
      int[] multiprocessors = new int[1];
      check(cudart.cudaDeviceGetAttribute(multiprocessors, cudart.cudaDevAttrMultiProcessorCount, device),
          "cudaDeviceGetAttribute(multiprocessors)");
      int[] perMultiprocessor = new int[1];
      check(cudart.cuOccupancyMaxActiveBlocksPerMultiprocessor(perMultiprocessor, firstNonFinite, SCAN_THREADS, 0),
          "cuOccupancyMaxActiveBlocksPerMultiprocessor(gc_linalg_first_nonfinite_f64)");
      scanResidentBlocks = Math.max(1, multiprocessors[0] * perMultiprocessor[0]);
    }

    static Functions current() {
      int[] device = new int[1];
      check(cudart.cudaGetDevice(device), "cudaGetDevice");
      return BY_DEVICE.computeIfAbsent(device[0], dev -> {
        byte[] b = bytes();
        BytePointer data = new BytePointer(b.length);
        data.put(b);
        CUmod_st m = new CUmod_st();
        check(cudart.cuModuleLoadData(m, data), "cuModuleLoadData(" + b.length + " B fatbin)");
        return new Functions(m, dev);
      });
    }

    private static synchronized byte[] bytes() {
      if (bytes == null) {
        try (InputStream in = DeviceKernels.class.getClassLoader().getResourceAsStream(FATBIN)) {
          if (in == null) {
            throw new IllegalStateException("the kernel image " + FATBIN + " is not on the class path (is the"
                + " gpucoll-native-kernels jar missing?)");
          }
          bytes = in.readAllBytes();
        } catch (IOException e) {
          throw new UncheckedIOException("cannot read " + FATBIN, e);
        }
      }
      return bytes;
    }
  }

  private static void load(CUmod_st module, CUfunc_st f, String name) {
    check(cudart.cuModuleGetFunction(f, module, name), "cuModuleGetFunction(" + name + ")");
    check(cudart.cuFuncLoad(f), "cuFuncLoad(" + name + ")");
  }

  static void check(int status, String call) {
    if (status != 0) {
      throw new IllegalStateException(call + " failed: status " + status);
    }
  }

  static Pointer at(long address) {
    return new Address(address);
  }

  private static DoublePointer d(long address) {
    return new DoublePointer(at(address));
  }

  private static final class Address extends Pointer {
    Address(long a) {
      this.address = a;
    }
  }
}
