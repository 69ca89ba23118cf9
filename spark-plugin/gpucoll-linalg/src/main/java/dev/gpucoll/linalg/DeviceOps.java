package dev.gpucoll.linalg;

import dev.gpucoll.api.CommBuffer;

/**
 * The device kernel set {@link DeviceSolver} runs its steps on, over addresses: column-major fp64
 * operands, each an address and a leading dimension, as in BLAS, all enqueued in order on one
 * stream. {@link DeviceKernels} is CUDA's (cuBLAS, cuSOLVER, the fatbin's kernels); the tests run
 * the same steps on one that emulates a device in host memory.
 */
interface DeviceOps extends AutoCloseable {
  /** The stream everything is enqueued on (a cudaStream_t). */
  long stream();

  long malloc(long bytes);

  void free(long address);

  /** {@code bytes} at {@code address} as a collective's buffer. */
  CommBuffer buffer(long address, long bytes);

  /** dst[i + j * dld] = src[i + j * sld] for i < rows, j < cols (doubles). */
  void copy(long dst, long dld, long src, long sld, long rows, long cols);

  void copyBytes(long dst, long src, long bytes);

  void memset(long dst, int value, long bytes);

  /** Waits for the stream. */
  void sync();

  /** Host memory the stream can copy to and from (valid to read after {@link #sync}). */
  long host();

  int hostInt(long byteOffset);

  long hostLong(long byteOffset);

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

  /** LU with partial pivoting of A (m × n) in place; ipiv (1-based int32) and info (int32, LAPACK's) at addresses. */
  void getrf(long a, int lda, int m, int n, long work, long ipiv, long info);

  /** X = A⁻¹ B with getrf's factors and 1-based pivots. */
  void getrs(long a, int lda, int n, long ipiv, long b, int ldb, int nrhs, long info);

  /** The lower Cholesky factor of A (n × n) in place; info (int32, LAPACK's) at an address. */
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

  /** As above for a plain rows × cols matrix: its first NaN and Inf at j * rows + i. */
  void firstNonFinite(long a, int lda, int rows, int cols, long out);

  @Override
  void close();
}
