package dev.gpucoll.cusolvermp;

import static org.bytedeco.cuda.global.cudart.cudaFree;
import static org.bytedeco.cuda.global.cudart.cudaGetErrorString;
import static org.bytedeco.cuda.global.cudart.cudaMalloc;
import static org.bytedeco.cuda.global.cudart.cudaMallocManaged;
import static org.bytedeco.cuda.global.cudart.cudaMemAttachGlobal;
import static org.bytedeco.cuda.global.cudart.cudaSetDevice;
import static org.bytedeco.cuda.global.cudart.cudaStreamSynchronize;

import dev.gpucoll.api.GpuCommunicator;
import dev.gpucoll.api.ProcessGrid;
import dev.gpucoll.linalg.Descriptor;
import dev.gpucoll.linalg.FactorizationException;
import dev.gpucoll.linalg.FactorizationException.Reason;
import java.util.LinkedHashMap;
import java.util.Map;
import org.bytedeco.cuda.cudart.CUstream_st;
import org.bytedeco.javacpp.IntPointer;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.PointerPointer;

/**
 * cuSOLVERMp's LU ({@code cusolverMpGetrf} / {@code cusolverMpGetrs}), Cholesky
 * ({@code cusolverMpPotrf} / {@code cusolverMpPotrs}), QR ({@code cusolverMpGeqrf} /
 * {@code cusolverMpOrmqr}), least squares ({@code cusolverMpGels}) and the symmetric eigensolver
 * ({@code cusolverMpSyevd}) on a group's NCCL communicator, for fp64
 * matrices dealt block-cyclically over a P × Q grid as a {@link Descriptor} says and already in
 * device memory: each rank's local array column-major with leading dimension
 * {@link Descriptor#lld()}, on this rank's device.
 *
 * <p><b>Opening</b> is collective (cuSOLVERMp forms its device grid over the communicator): every
 * rank of the group calls {@link #open} with the same shape. The handle is made on
 * {@link GpuCommunicator#device()} and {@link GpuCommunicator#stream()} as they are at open, the
 * device grid on {@link GpuCommunicator#ncclComm()} with {@code CUSOLVERMP_GRID_MAPPING_ROW_MAJOR}:
 * rank r is process (r / Q, r % Q), as {@link ProcessGrid} and {@link Descriptor#rank} place it.
 * A group without an NCCL communicator is refused. {@link #onNcclComm} takes a raw
 * {@code ncclComm_t} made elsewhere instead.
 *
 * <p><b>Calls</b> are collective too, in the same order on every rank, and each waits for the
 * stream before it returns, to read cuSOLVERMp's INFO: a singular matrix (getrf) or one that is not
 * positive definite (potrf) raises the same {@link FactorizationException} as gpucoll-linalg's own
 * routines, naming the 0-based column. Workspace (device: cudaMalloc; host: malloc) grows to the
 * largest any call asked for and is kept until {@link #close()}; so are cuSOLVERMp's matrix
 * descriptors, one per distinct {@link Descriptor}. The current CUDA device of the calling thread is
 * set to the handle's. One thread at a time: a rank's calls come from its task.
 *
 * <p>cuSOLVERMp's own limits (its block-size and alignment rules) are checked by cuSOLVERMp: an
 * argument it refuses comes back as a {@link CuSolverMpException} naming the call and
 * {@code CUSOLVER_STATUS_INVALID_VALUE}.
 *
 * <p>Needs libcusolverMp.so.0 (cuSOLVERMp 0.8, the wheel {@code nvidia-cusolvermp-cu13==0.8.0.3126})
 * on LD_LIBRARY_PATH; without it the first open throws {@link CuSolverMpUnavailableException}
 * saying so. It must load the same libnccl.so.2 the communicator runs on (the process's, already
 * loaded by then).
 */
public final class CuSolverMp implements AutoCloseable {
  /** cusolverMpGridMapping_t CUSOLVERMP_GRID_MAPPING_ROW_MAJOR (cusolverMp.h 0.8; COL_MAJOR is 0). */
  static final int GRID_MAPPING_ROW_MAJOR = 1;
  /** cudaDataType CUDA_R_64F (library_types.h): the data and compute type of every call. */
  static final int CUDA_R_64F = 1;
  /** cublasOperation_t CUBLAS_OP_N: getrs solves A X = B. */
  static final int CUBLAS_OP_N = 0;

  /** Which triangle of A potrf reads and writes, and potrs reads (cublasFillMode_t). */
  public enum Fill {
    /** A = L Lᵀ, L in the lower triangle (CUBLAS_FILL_MODE_LOWER). */
    LOWER(0),
    /** A = Uᵀ U, U in the upper triangle (CUBLAS_FILL_MODE_UPPER). */
    UPPER(1);

    final int cublas;

    Fill(int cublas) {
      this.cublas = cublas;
    }
  }

  private final int device;
  private final long stream;
  private final int rows;
  private final int cols;
  private final String where;
  private long handle;
  private long grid;
  private final Map<Descriptor, Long> matrices = new LinkedHashMap<>();
  private long deviceWork;
  private long deviceWorkBytes;
  private long hostWork;
  private long hostWorkBytes;
  /** cuSOLVERMp's INFO: managed memory, so that it reads right whether the library writes it from the device or the host. */
  private long info;
  private boolean closed;

  /** Opens on the grid's whole communicator ({@link ProcessGrid#all()}), P × Q as the grid. Collective. */
  public static CuSolverMp open(ProcessGrid<? extends GpuCommunicator> grid) {
    return open(grid.all(), grid.rows(), grid.cols());
  }

  /**
   * Opens on {@code whole}, a group of {@code rows × cols} ranks in a row-major grid (no row and
   * column communicators are needed: cuSOLVERMp forms its own). Collective.
   *
   * @throws IllegalArgumentException when the shape does not fit the group, or the group has no NCCL
   *     communicator ({@link GpuCommunicator#ncclComm()} is 0)
   * @throws CuSolverMpUnavailableException when libcusolverMp.so.0 does not load
   */
  public static CuSolverMp open(GpuCommunicator whole, int rows, int cols) {
    String where = "rank " + whole.rank() + " of " + whole.size();
    checkShape(rows, cols);
    if ((long) rows * cols != whole.size()) {
      throw new IllegalArgumentException(where + ": a " + rows + " x " + cols + " grid does not fit a group of "
          + whole.size() + " ranks");
    }
    long comm = whole.ncclComm();
    if (comm == 0) {
      throw new IllegalArgumentException(where + ": cuSOLVERMp needs the group's NCCL communicator and this group"
          + " has none (ncclComm() is 0): the group formed none (ranks that share a GPU, which NCCL refuses;"
          + " NCCL not loadable on every rank; a forced kernel variant; or the staged path; the group's"
          + " findings say which)");
    }
    return new CuSolverMp(comm, whole.device(), whole.stream(), rows, cols, where);
  }

  /**
   * Opens on a raw {@code ncclComm_t} made without this library (ncclCommInitRank, ncclCommInitAll),
   * whose ranks form a row-major {@code rows × cols} grid, on {@code device} and {@code stream}
   * (a cudaStream_t; 0 the legacy default stream). The communicator stays the caller's. Collective.
   */
  public static CuSolverMp onNcclComm(long ncclComm, int device, long stream, int rows, int cols) {
    checkShape(rows, cols);
    if (ncclComm == 0) {
      throw new IllegalArgumentException("cuSOLVERMp needs an NCCL communicator: ncclComm_t is 0");
    }
    if (device < 0) {
      throw new IllegalArgumentException("device " + device + " is negative");
    }
    return new CuSolverMp(ncclComm, device, stream, rows, cols, "ncclComm_t 0x" + Long.toHexString(ncclComm));
  }

  private static void checkShape(int rows, int cols) {
    if (rows < 1 || cols < 1) {
      throw new IllegalArgumentException("a " + rows + " x " + cols + " grid: rows and columns must be positive");
    }
  }

  private CuSolverMp(long comm, int device, long stream, int rows, int cols, String where) {
    CuSolverMpNative.require();
    this.device = device;
    this.stream = stream;
    this.rows = rows;
    this.cols = cols;
    this.where = where;
    try {
      cuda(cudaSetDevice(device), "cudaSetDevice(" + device + ")");
      long[] out = new long[1];
      status(CuSolverMpNative.create(device, stream, out), "cusolverMpCreate(device " + device + ")");
      handle = out[0];
      status(CuSolverMpNative.createDeviceGrid(handle, comm, rows, cols, GRID_MAPPING_ROW_MAJOR, out),
          "cusolverMpCreateDeviceGrid(" + rows + " x " + cols + ", CUSOLVERMP_GRID_MAPPING_ROW_MAJOR)");
      grid = out[0];
      PointerPointer<Pointer> p = new PointerPointer<>(1);
      cuda(cudaMallocManaged(p, Integer.BYTES, cudaMemAttachGlobal), "cudaMallocManaged(info)");
      info = p.get(0).address();
      new IntPointer(new Address(info)).put(0, 0);
    } catch (RuntimeException e) {
      close();
      throw e;
    }
  }

  /** cuSOLVERMp's version (cusolverMpGetVersion: major * 1000 + minor * 100 + patch). */
  public int version() {
    checkOpen();
    int[] v = new int[1];
    status(CuSolverMpNative.getVersion(handle, v), "cusolverMpGetVersion");
    return v[0];
  }

  /**
   * LU with partial pivoting, P A = L U, in place (cusolverMpGetrf). {@code dIpiv}: this rank's
   * int64 pivot array on the device, at least {@link #pivotCount} entries.
   *
   * @throws FactorizationException (SINGULAR) when U(j, j) is exactly zero; j is named 0-based
   */
  public void getrf(long dA, Descriptor a, long dIpiv) {
    enter(a, "getrf");
    requireAddress(dA, "A", "getrf");
    requireAddress(dIpiv, "ipiv", "getrf");
    MatrixArguments x = MatrixArguments.of(a);
    long desc = matrix(a);
    long[] sizes = new long[2];
    status(CuSolverMpNative.getrfBufferSize(handle, x.m(), x.n(), dA, x.ia(), x.ja(), desc, dIpiv, CUDA_R_64F, sizes),
        "cusolverMpGetrf_bufferSize(" + x.m() + " x " + x.n() + ")");
    reserve(sizes);
    status(CuSolverMpNative.getrf(handle, x.m(), x.n(), dA, x.ia(), x.ja(), desc, dIpiv, CUDA_R_64F, deviceWork,
        deviceWorkBytes, hostWork, hostWorkBytes, info), "cusolverMpGetrf(" + x.m() + " x " + x.n() + ")");
    int i = awaitInfo("cusolverMpGetrf");
    if (i > 0) {
      int column = i - 1;
      throw FactorizationException.of(Reason.SINGULAR, column, column, "cusolverMpGetrf: the matrix is singular:"
          + " column " + column + " has no nonzero pivot (U(" + column + "," + column + ") = 0; 0-based)");
    }
  }

  /**
   * Solves A X = B with getrf's factors and pivots (cusolverMpGetrs); X overwrites B. A is N × N, B
   * N × NRHS on the same grid.
   */
  public void getrs(long dA, Descriptor a, long dIpiv, long dB, Descriptor b) {
    enter(a, "getrs");
    checkSolve(a, b, "getrs");
    requireAddress(dA, "A", "getrs");
    requireAddress(dIpiv, "ipiv", "getrs");
    requireAddress(dB, "B", "getrs");
    MatrixArguments xa = MatrixArguments.of(a);
    MatrixArguments xb = MatrixArguments.of(b);
    long descA = matrix(a);
    long descB = matrix(b);
    long[] sizes = new long[2];
    status(CuSolverMpNative.getrsBufferSize(handle, CUBLAS_OP_N, xa.n(), xb.n(), dA, xa.ia(), xa.ja(), descA, dIpiv,
        dB, xb.ia(), xb.ja(), descB, CUDA_R_64F, sizes), "cusolverMpGetrs_bufferSize(n " + xa.n() + ", nrhs "
        + xb.n() + ")");
    reserve(sizes);
    status(CuSolverMpNative.getrs(handle, CUBLAS_OP_N, xa.n(), xb.n(), dA, xa.ia(), xa.ja(), descA, dIpiv, dB,
        xb.ia(), xb.ja(), descB, CUDA_R_64F, deviceWork, deviceWorkBytes, hostWork, hostWorkBytes, info),
        "cusolverMpGetrs(n " + xa.n() + ", nrhs " + xb.n() + ")");
    awaitInfo("cusolverMpGetrs");
  }

  /**
   * Cholesky, A = L Lᵀ ({@link Fill#LOWER}) or Uᵀ U, in place in that triangle (cusolverMpPotrf).
   *
   * @throws FactorizationException (NOT_POSITIVE_DEFINITE) naming the 0-based column whose leading
   *     minor is not positive definite
   */
  public void potrf(Fill uplo, long dA, Descriptor a) {
    enter(a, "potrf");
    checkSquare(a, "potrf");
    requireAddress(dA, "A", "potrf");
    MatrixArguments x = MatrixArguments.of(a);
    long desc = matrix(a);
    long[] sizes = new long[2];
    status(CuSolverMpNative.potrfBufferSize(handle, uplo.cublas, x.n(), dA, x.ia(), x.ja(), desc, CUDA_R_64F, sizes),
        "cusolverMpPotrf_bufferSize(" + uplo + ", n " + x.n() + ")");
    reserve(sizes);
    status(CuSolverMpNative.potrf(handle, uplo.cublas, x.n(), dA, x.ia(), x.ja(), desc, CUDA_R_64F, deviceWork,
        deviceWorkBytes, hostWork, hostWorkBytes, info), "cusolverMpPotrf(" + uplo + ", n " + x.n() + ")");
    int i = awaitInfo("cusolverMpPotrf");
    if (i > 0) {
      int column = i - 1;
      throw FactorizationException.of(Reason.NOT_POSITIVE_DEFINITE, column, column, "cusolverMpPotrf: the matrix"
          + " is not positive definite: the leading minor of order " + i + " is not (column " + column
          + ", 0-based)");
    }
  }

  /** Solves A X = B with potrf's factor in the {@code uplo} triangle (cusolverMpPotrs); X overwrites B. */
  public void potrs(Fill uplo, long dA, Descriptor a, long dB, Descriptor b) {
    enter(a, "potrs");
    checkSolve(a, b, "potrs");
    requireAddress(dA, "A", "potrs");
    requireAddress(dB, "B", "potrs");
    MatrixArguments xa = MatrixArguments.of(a);
    MatrixArguments xb = MatrixArguments.of(b);
    long descA = matrix(a);
    long descB = matrix(b);
    long[] sizes = new long[2];
    status(CuSolverMpNative.potrsBufferSize(handle, uplo.cublas, xa.n(), xb.n(), dA, xa.ia(), xa.ja(), descA, dB,
        xb.ia(), xb.ja(), descB, CUDA_R_64F, sizes), "cusolverMpPotrs_bufferSize(" + uplo + ", n " + xa.n()
        + ", nrhs " + xb.n() + ")");
    reserve(sizes);
    status(CuSolverMpNative.potrs(handle, uplo.cublas, xa.n(), xb.n(), dA, xa.ia(), xa.ja(), descA, dB, xb.ia(),
        xb.ja(), descB, CUDA_R_64F, deviceWork, deviceWorkBytes, hostWork, hostWorkBytes, info),
        "cusolverMpPotrs(" + uplo + ", n " + xa.n() + ", nrhs " + xb.n() + ")");
    awaitInfo("cusolverMpPotrs");
  }

  // ---- QR, least squares and the symmetric eigensolver ----

  /** Which side Q multiplies from in {@link #ormqr} (cublasSideMode_t). */
  public enum Side {
    /** C = op(Q) C (CUBLAS_SIDE_LEFT). */
    LEFT(0),
    /** C = C op(Q) (CUBLAS_SIDE_RIGHT). */
    RIGHT(1);

    final int cublas;

    Side(int cublas) {
      this.cublas = cublas;
    }
  }

  /** cublasOperation_t CUBLAS_OP_T: ormqr applies Qᵀ. */
  static final int CUBLAS_OP_T = 1;

  /**
   * QR, A = Q R, in place (cusolverMpGeqrf): R on and above the diagonal, the Householder vectors
   * below it, their scalars in {@code dTau} (this rank's part, at least {@link #tauCount} doubles on
   * the device), as ScaLAPACK's pdgeqrf.
   */
  public void geqrf(long dA, Descriptor a, long dTau) {
    enter(a, "geqrf");
    requireAddress(dA, "A", "geqrf");
    requireAddress(dTau, "tau", "geqrf");
    MatrixArguments x = MatrixArguments.of(a);
    long desc = matrix(a);
    long[] sizes = new long[2];
    optional(CuSolverMpNative.geqrfBufferSize(handle, x.m(), x.n(), dA, x.ia(), x.ja(), desc, CUDA_R_64F, sizes),
        "cusolverMpGeqrf_bufferSize(" + x.m() + " x " + x.n() + ")");
    reserve(sizes);
    optional(CuSolverMpNative.geqrf(handle, x.m(), x.n(), dA, x.ia(), x.ja(), desc, dTau, CUDA_R_64F, deviceWork,
        deviceWorkBytes, hostWork, hostWorkBytes, info), "cusolverMpGeqrf(" + x.m() + " x " + x.n() + ")");
    awaitInfo("cusolverMpGeqrf");
  }

  /**
   * C = op(Q) C or C op(Q) with geqrf's Q of {@code a} (its first k reflectors; cusolverMpOrmqr),
   * op(Q) = Qᵀ when {@code transpose}. C is on A's grid.
   */
  public void ormqr(Side side, boolean transpose, int k, long dA, Descriptor a, long dTau, long dC, Descriptor c) {
    enter(a, "ormqr");
    requireAddress(dA, "A", "ormqr");
    requireAddress(dTau, "tau", "ormqr");
    requireAddress(dC, "C", "ormqr");
    if (c.gridRows() != a.gridRows() || c.gridCols() != a.gridCols()) {
      throw new IllegalArgumentException("ormqr: C's descriptor is for a " + c.gridRows() + " x " + c.gridCols()
          + " grid, A's for " + a.gridRows() + " x " + a.gridCols());
    }
    int order = side == Side.LEFT ? c.m() : c.n();
    if (k < 0 || k > Math.min(a.m(), a.n()) || a.m() != order) {
      throw new IllegalArgumentException("ormqr: Q of a " + a.m() + " x " + a.n() + " A (k = " + k + " reflectors)"
          + " cannot multiply a " + c.m() + " x " + c.n() + " C from the " + side.name().toLowerCase(
              java.util.Locale.ROOT));
    }
    MatrixArguments xa = MatrixArguments.of(a);
    MatrixArguments xc = MatrixArguments.of(c);
    long descA = matrix(a);
    long descC = matrix(c);
    int trans = transpose ? CUBLAS_OP_T : CUBLAS_OP_N;
    String call = "(" + side + (transpose ? ", T" : ", N") + ", " + xc.m() + " x " + xc.n() + ", k " + k + ")";
    long[] sizes = new long[2];
    optional(CuSolverMpNative.ormqrBufferSize(handle, side.cublas, trans, xc.m(), xc.n(), k, dA, xa.ia(), xa.ja(),
        descA, dTau, dC, xc.ia(), xc.ja(), descC, CUDA_R_64F, sizes), "cusolverMpOrmqr_bufferSize" + call);
    reserve(sizes);
    optional(CuSolverMpNative.ormqr(handle, side.cublas, trans, xc.m(), xc.n(), k, dA, xa.ia(), xa.ja(), descA, dTau,
        dC, xc.ia(), xc.ja(), descC, CUDA_R_64F, deviceWork, deviceWorkBytes, hostWork, hostWorkBytes, info),
        "cusolverMpOrmqr" + call);
    awaitInfo("cusolverMpOrmqr");
  }

  /**
   * The least-squares solution of min ‖A X − B‖ (A M × N, M ≥ N, full rank; cusolverMpGels, no
   * transpose): A is overwritten by its QR factors, B's first N rows by X. B is M × NRHS on A's grid.
   */
  public void gels(long dA, Descriptor a, long dB, Descriptor b) {
    enter(a, "gels");
    requireAddress(dA, "A", "gels");
    requireAddress(dB, "B", "gels");
    if (a.m() < a.n() || b.m() != a.m() || b.gridRows() != a.gridRows() || b.gridCols() != a.gridCols()) {
      throw new IllegalArgumentException("gels: A must be M x N with M >= N and B M x NRHS on A's grid: A is "
          + a.m() + " x " + a.n() + ", B " + b.m() + " x " + b.n());
    }
    MatrixArguments xa = MatrixArguments.of(a);
    MatrixArguments xb = MatrixArguments.of(b);
    long descA = matrix(a);
    long descB = matrix(b);
    String call = "(" + xa.m() + " x " + xa.n() + ", nrhs " + xb.n() + ")";
    long[] sizes = new long[2];
    optional(CuSolverMpNative.gelsBufferSize(handle, CUBLAS_OP_N, xa.m(), xa.n(), xb.n(), dA, xa.ia(), xa.ja(), descA,
        dB, xb.ia(), xb.ja(), descB, CUDA_R_64F, sizes), "cusolverMpGels_bufferSize" + call);
    reserve(sizes);
    optional(CuSolverMpNative.gels(handle, CUBLAS_OP_N, xa.m(), xa.n(), xb.n(), dA, xa.ia(), xa.ja(), descA, dB,
        xb.ia(), xb.ja(), descB, CUDA_R_64F, deviceWork, deviceWorkBytes, hostWork, hostWorkBytes, info),
        "cusolverMpGels" + call);
    awaitInfo("cusolverMpGels");
  }

  /**
   * The eigenvalues of the symmetric A (read in the {@code uplo} triangle; A is destroyed), in
   * ascending order into {@code dD} (N doubles on the device, on every rank), and with
   * {@code vectors} its eigenvectors into Q (cusolverMpSyevd; Q: N × N on A's grid, ignored
   * otherwise but still described).
   *
   * @throws CuSolverMpException when INFO > 0: the divide and conquer did not converge
   */
  public void syevd(boolean vectors, Fill uplo, long dA, Descriptor a, long dD, long dQ, Descriptor q) {
    enter(a, "syevd");
    checkSquare(a, "syevd");
    requireAddress(dA, "A", "syevd");
    requireAddress(dD, "D", "syevd");
    requireAddress(dQ, "Q", "syevd");
    if (!q.equals(a)) {
      throw new IllegalArgumentException("syevd: Q must be dealt as A is: A " + a + ", Q " + q);
    }
    MatrixArguments xa = MatrixArguments.of(a);
    MatrixArguments xq = MatrixArguments.of(q);
    long descA = matrix(a);
    long descQ = matrix(q);
    String call = "(" + (vectors ? "V" : "N") + ", " + uplo + ", n " + xa.n() + ")";
    long[] sizes = new long[2];
    optional(CuSolverMpNative.syevdBufferSize(handle, vectors, uplo.cublas, xa.n(), dA, xa.ia(), xa.ja(), descA, dD,
        dQ, xq.ia(), xq.ja(), descQ, CUDA_R_64F, sizes), "cusolverMpSyevd_bufferSize" + call);
    reserve(sizes);
    optional(CuSolverMpNative.syevd(handle, vectors, uplo.cublas, xa.n(), dA, xa.ia(), xa.ja(), descA, dD, dQ,
        xq.ia(), xq.ja(), descQ, CUDA_R_64F, deviceWork, deviceWorkBytes, hostWork, hostWorkBytes, info),
        "cusolverMpSyevd" + call);
    int i = awaitInfo("cusolverMpSyevd");
    if (i > 0) {
      throw new CuSolverMpException("cusolverMpSyevd" + call + " on " + where + ": INFO = " + i + ": the"
          + " eigensolver did not converge", i);
    }
  }

  /** Doubles of tau that {@link #geqrf} writes on process column {@code pcol}: LOCc(N) + NB. */
  public static long tauCount(Descriptor a, int pcol) {
    return (long) a.numrocCols(pcol) + a.nb();
  }

  /** A call of an optional entry point: a library without it is named, as one that fails. */
  private void optional(int s, String call) {
    if (s == CuSolverMpNative.NO_SYMBOL) {
      String symbol = call.substring(0, call.indexOf('('));
      throw new CuSolverMpUnavailableException("cuSOLVERMp on " + where + ": the loaded library has no " + symbol
          + " (cuSOLVERMp 0.8, " + CuSolverMpNative.WHEEL + ", has it)");
    }
    status(s, call);
  }

  /**
   * How many int64 entries getrf's pivot array needs on process row {@code prow}: LOCr(M) + MB,
   * ScaLAPACK's IPIV length (enough for cuSOLVERMp's).
   */
  public static long pivotCount(Descriptor a, int prow) {
    return (long) a.numrocRows(prow) + a.mb();
  }

  public int device() {
    return device;
  }

  /** The cudaStream_t every call runs on (the communicator's at open). */
  public long stream() {
    return stream;
  }

  // ---- arguments ----

  private void enter(Descriptor a, String routine) {
    checkOpen();
    if (a.gridRows() != rows || a.gridCols() != cols) {
      throw new IllegalArgumentException(routine + ": the descriptor is for a " + a.gridRows() + " x " + a.gridCols()
          + " process grid, cuSOLVERMp's grid is " + rows + " x " + cols);
    }
    cuda(cudaSetDevice(device), "cudaSetDevice(" + device + ")");
  }

  private void checkOpen() {
    if (closed) {
      throw new IllegalStateException("cuSOLVERMp on " + where + " is closed");
    }
  }

  static void checkSquare(Descriptor a, String routine) {
    if (a.m() != a.n()) {
      throw new IllegalArgumentException(routine + ": A must be square, it is " + a.m() + " x " + a.n());
    }
  }

  /** A square, B with A's order of rows on A's grid. */
  static void checkSolve(Descriptor a, Descriptor b, String routine) {
    checkSquare(a, routine);
    if (b.m() != a.n()) {
      throw new IllegalArgumentException(routine + ": B has " + b.m() + " rows, A is " + a.n() + " x " + a.n());
    }
    if (b.gridRows() != a.gridRows() || b.gridCols() != a.gridCols()) {
      throw new IllegalArgumentException(routine + ": B's descriptor is for a " + b.gridRows() + " x " + b.gridCols()
          + " grid, A's for " + a.gridRows() + " x " + a.gridCols());
    }
  }

  private static void requireAddress(long address, String what, String routine) {
    if (address == 0) {
      throw new IllegalArgumentException(routine + ": the device address of " + what + " is 0");
    }
  }

  /** cuSOLVERMp's matrix descriptor for {@code d}, made once. */
  private long matrix(Descriptor d) {
    Long desc = matrices.get(d);
    if (desc == null) {
      MatrixArguments x = MatrixArguments.of(d);
      long[] out = new long[1];
      status(CuSolverMpNative.createMatrixDesc(grid, CUDA_R_64F, x.m(), x.n(), x.mb(), x.nb(), x.rsrc(), x.csrc(),
          x.lld(), out), "cusolverMpCreateMatrixDesc(" + d + ")");
      desc = out[0];
      matrices.put(d, desc);
    }
    return desc;
  }

  // ---- workspace and INFO ----

  /** Grows the workspaces to {@code sizes} (device bytes, host bytes); what was there is not kept. */
  private void reserve(long[] sizes) {
    if (sizes[0] > deviceWorkBytes) {
      freeDeviceWork();
      PointerPointer<Pointer> p = new PointerPointer<>(1);
      cuda(cudaMalloc(p, sizes[0]), "cudaMalloc(" + sizes[0] + " B of cuSOLVERMp device workspace)");
      deviceWork = p.get(0).address();
      deviceWorkBytes = sizes[0];
    }
    if (sizes[1] > hostWorkBytes) {
      freeHostWork();
      Pointer p = Pointer.malloc(sizes[1]);
      if (p == null || p.isNull()) {
        throw new OutOfMemoryError("malloc(" + sizes[1] + " B of cuSOLVERMp host workspace) failed");
      }
      hostWork = p.address();
      hostWorkBytes = sizes[1];
    }
  }

  /** Waits for the stream and returns INFO; a negative INFO (an illegal argument) is thrown. */
  private int awaitInfo(String call) {
    cuda(cudaStreamSynchronize(new CUstream_st(new Address(stream))), "cudaStreamSynchronize after " + call);
    IntPointer p = new IntPointer(new Address(info));
    int i = p.get(0);
    p.put(0, 0); // the next call starts from 0: INFO is only written where something is found
    if (i < 0) {
      throw new IllegalArgumentException(call + " reported INFO = " + i + ": its argument " + -i + " is illegal");
    }
    return i;
  }

  // ---- statuses ----

  private void status(int s, String call) {
    if (s != 0) {
      throw new CuSolverMpException(call + " on " + where + " failed: " + statusName(s) + " (" + s + ")", s);
    }
  }

  private void cuda(int e, String call) {
    if (e != 0) {
      throw new CuSolverMpException(call + " on " + where + " failed: " + cudaGetErrorString(e).getString() + " ("
          + e + ")", e);
    }
  }

  /** cusolverStatus_t's names (cusolver_common.h, CUDA 13). */
  static String statusName(int s) {
    return switch (s) {
      case 0 -> "CUSOLVER_STATUS_SUCCESS";
      case 1 -> "CUSOLVER_STATUS_NOT_INITIALIZED";
      case 2 -> "CUSOLVER_STATUS_ALLOC_FAILED";
      case 3 -> "CUSOLVER_STATUS_INVALID_VALUE";
      case 4 -> "CUSOLVER_STATUS_ARCH_MISMATCH";
      case 5 -> "CUSOLVER_STATUS_MAPPING_ERROR";
      case 6 -> "CUSOLVER_STATUS_EXECUTION_FAILED";
      case 7 -> "CUSOLVER_STATUS_INTERNAL_ERROR";
      case 8 -> "CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED";
      case 9 -> "CUSOLVER_STATUS_NOT_SUPPORTED";
      case 10 -> "CUSOLVER_STATUS_ZERO_PIVOT";
      case 11 -> "CUSOLVER_STATUS_INVALID_LICENSE";
      case 31 -> "CUSOLVER_STATUS_INVALID_WORKSPACE";
      default -> "cusolverStatus_t " + s;
    };
  }

  // ---- close ----

  /**
   * Waits for the stream, then destroys cuSOLVERMp's matrix descriptors, grid and handle and frees
   * the workspaces. The communicator stays open. Idempotent.
   */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    RuntimeException first = null;
    try {
      cuda(cudaSetDevice(device), "cudaSetDevice(" + device + ")");
      cuda(cudaStreamSynchronize(new CUstream_st(new Address(stream))), "cudaStreamSynchronize at close");
    } catch (RuntimeException e) {
      first = e;
    }
    for (Long desc : matrices.values()) {
      first = keep(first, () -> status(CuSolverMpNative.destroyMatrixDesc(desc), "cusolverMpDestroyMatrixDesc"));
    }
    matrices.clear();
    if (grid != 0) {
      long g = grid;
      first = keep(first, () -> status(CuSolverMpNative.destroyGrid(g), "cusolverMpDestroyGrid"));
      grid = 0;
    }
    if (handle != 0) {
      long h = handle;
      first = keep(first, () -> status(CuSolverMpNative.destroy(h), "cusolverMpDestroy"));
      handle = 0;
    }
    first = keep(first, this::freeDeviceWork);
    freeHostWork();
    if (info != 0) {
      long i = info;
      info = 0;
      first = keep(first, () -> cuda(cudaFree(new Address(i)), "cudaFree(info)"));
    }
    if (first != null) {
      throw first;
    }
  }

  private static RuntimeException keep(RuntimeException first, Runnable step) {
    try {
      step.run();
    } catch (RuntimeException e) {
      if (first == null) {
        return e;
      }
      first.addSuppressed(e);
    }
    return first;
  }

  private void freeDeviceWork() {
    if (deviceWork != 0) {
      long w = deviceWork;
      deviceWork = 0;
      deviceWorkBytes = 0;
      cuda(cudaFree(new Address(w)), "cudaFree(device workspace)");
    }
  }

  private void freeHostWork() {
    if (hostWork != 0) {
      Pointer.free(new Address(hostWork));
      hostWork = 0;
      hostWorkBytes = 0;
    }
  }

  /** A JavaCPP view of a raw address. */
  private static final class Address extends Pointer {
    Address(long address) {
      this.address = address;
    }
  }
}
