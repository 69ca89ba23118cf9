package dev.gpucoll.linalg;

import dev.gpucoll.api.CommBuffer;

/**
 * The operations the factorizations and solves of {@link GridSolver} run their steps on, over
 * addresses: column-major fp64 operands, each an address and a leading dimension, as in BLAS, all
 * run in order on one stream. Two implementations: {@link DeviceKernels} (cuBLAS, cuSOLVER and the
 * fatbin's kernels on a CUDA stream) and {@link HostKernels} (Java loops over host memory); the
 * tests add one that emulates a device with reference BLAS and LAPACK. The schedule above them is
 * written once.
 */
interface KernelSet extends AutoCloseable {
  /** The stream everything is enqueued on (a cudaStream_t; 0 on the host). */
  long stream();

  /**
   * Whether a 1 × 1 grid runs each routine as one call on the whole local array (cuSOLVER's tuned
   * code on the device) rather than the panel steps every other grid runs (the host: so 1 × 1
   * factors equal P × Q's bit for bit).
   */
  boolean oneCallOnOneProcess();

  /**
   * The GPU this runs on, as "host/UUID": ranks with the same one share a GPU (null on the host,
   * where no kernel spins).
   */
  String gpuIdentity();

  long malloc(long bytes);

  void free(long address);

  /** {@code bytes} at {@code address} as a collective's buffer. */
  CommBuffer buffer(long address, long bytes);

  /** count doubles from a Java array into memory at {@code dst}, and waits. */
  void upload(double[] src, long dst, int count);

  /** count doubles at {@code src} into a Java array, after everything enqueued before. */
  void download(long src, double[] dst, int count);

  /** dst[i + j * dld] = src[i + j * sld] for i < rows, j < cols (doubles). */
  void copy(long dst, long dld, long src, long sld, long rows, long cols);

  void copyBytes(long dst, long src, long bytes);

  void memset(long dst, int value, long bytes);

  /**
   * Waits for the stream, at most {@code nanos}: false when it has not finished by then (the
   * caller names who waited for what).
   */
  boolean syncWithin(long nanos);

  /** Host memory the stream can copy to and from (valid to read after a sync). */
  long host();

  int hostInt(long byteOffset);

  long hostLong(long byteOffset);

  double hostDouble(long byteOffset);

  void putHostInts(long byteOffset, int[] values, int from, int count);

  /** C −= A B: C m × n, A m × k, B k × n. */
  void subtractProduct(long c, int ldc, int m, int n, long a, int lda, long b, int ldb, int k);

  /** C = −Aᵀ B: C k × n, A m × k, B m × n. */
  void negatedTransposedProduct(long c, int ldc, int k, int n, long a, int lda, long b, int ldb, int m);

  /** The lower triangle of C −= A Aᵀ: C n × n, A n × k. */
  void subtractSymmetricProduct(long c, int ldc, int n, long a, int lda, int k);

  /** B += A: both m × n. */
  void add(long b, int ldb, long a, int lda, int m, int n);

  /** B = L⁻¹ B: L w × w lower (unit: its diagonal taken as 1), B w × n. */
  void solveLower(long l, int ldl, boolean unit, long b, int ldb, int w, int n);

  /** B = U⁻¹ B: U w × w upper, non-unit. */
  void solveUpper(long u, int ldu, long b, int ldb, int w, int n);

  /** B = L⁻ᵀ B: L w × w lower, non-unit. */
  void solveLowerTransposed(long l, int ldl, long b, int ldb, int w, int n);

  /** B = B L⁻ᵀ: L w × w lower, non-unit; B m × w. */
  void solveRightLowerTransposed(long l, int ldl, long b, int ldb, int m, int w);

  /** Doubles of workspace {@link #getrf} needs. */
  int getrfWorkspace(int m, int n, int lda);

  /** Doubles of workspace {@link #potrf} needs. */
  int potrfWorkspace(int n, int lda);

  /**
   * LU with partial pivoting of A (m × n) in place, as LAPACK's dgetrf (the pivot: the first largest
   * |value|); ipiv (1-based int32) and info (int32, LAPACK's) at addresses.
   */
  void getrf(long a, int lda, int m, int n, long work, long ipiv, long info);

  /** X = A⁻¹ B with getrf's factors and 1-based pivots. */
  void getrs(long a, int lda, int n, long ipiv, long b, int ldb, int nrhs, long info);

  /**
   * The lower Cholesky factor of A (n × n) in place, as LAPACK's dpotrf: info (int32) at an address;
   * where info = j + 1 > 0, A(j, j) holds the pivot that was not positive.
   */
  void potrf(long a, int lda, int n, long work, int lwork, long info);

  void potrs(long l, int ldl, int n, long b, int ldb, int nrhs, long info);

  /** buf[i * ldbuf + j] = a[rows[i] + (c0 + j) * lda], j < ncols; rows: int32 at an address. */
  void gatherRows(long a, int lda, long rows, int nrows, int c0, int ncols, long buf, int ldbuf);

  /** a[rows[i] + (c0 + j) * lda] = buf[i * ldbuf + j]. */
  void scatterRows(long a, int lda, long rows, int nrows, int c0, int ncols, long buf, int ldbuf);

  /**
   * The part's first NaN and first Inf in the whole matrix's column-major order (global j * M + i;
   * ~0 when none), two u64 at {@code out}; lower: the lower triangle only.
   */
  void firstNonFinite(long a, Descriptor d, int prow, int pcol, boolean lower, long out);

  /** As above for a plain rows × cols matrix: its first NaN and Inf at j * rows + i (lower: i ≥ j only). */
  void firstNonFinite(long a, int lda, int rows, int cols, boolean lower, long out);

  @Override
  void close();
}
