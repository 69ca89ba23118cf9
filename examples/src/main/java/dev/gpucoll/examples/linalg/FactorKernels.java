package dev.gpucoll.examples.linalg;

/**
 * The compute of the factorizations, chosen with {@code --kernels}: {@link #CPU}, the Java kernels
 * of {@link DenseKernels}; or the GPU of this process ({@link CudaFactorKernels}: cuBLAS dgemm for
 * the trailing updates, cuSOLVER potrf for Cholesky's diagonal blocks, and cuSOLVER getrf / potrf
 * on the whole matrix for the one-process factorization). The panel steps (pivot search, row swaps,
 * scaling, triangular solves) run in Java either way.
 */
interface FactorKernels extends AutoCloseable {
  String name();

  /** C −= L U (row-major; see {@link DenseKernels#subtractProduct}). */
  void subtractProduct(double[] c, int cOff, int ldc, int rows, int cols, double[] l, int lOff, int ldl, double[] u,
      int uOff, int ldu, int k);

  /**
   * The trailing update of Cholesky: at least the lower triangle, C[i][j] −= Σt P[i][t] Pᵀ[t][j] for
   * j < {@code limits[i]}; the GPU updates the whole rectangle of {@code cols} columns (what lies
   * above the diagonal is never read).
   */
  void subtractLowerProduct(double[] c, int cOff, int ldc, int rows, int cols, int[] limits, double[] p, int pOff,
      int ldp, double[] pt, int ptOff, int ldpt, int k);

  /** The lower Cholesky factor of the nb × nb block in place; -1, or the first column that is not positive definite. */
  int choleskyLower(double[] a, int off, int ld, int nb);

  @Override
  default void close() {}

  /** Which kernels a run uses. */
  enum Kind {
    CPU,
    GPU;

    /** The kernels of this kind for the calling thread; GPU fails naming why it cannot run here. */
    FactorKernels open() {
      return this == CPU ? Cpu.INSTANCE : CudaFactorKernels.open();
    }
  }

  /** The Java kernels. */
  final class Cpu implements FactorKernels {
    static final Cpu INSTANCE = new Cpu();

    @Override
    public String name() {
      return "CPU (Java)";
    }

    @Override
    public void subtractProduct(double[] c, int cOff, int ldc, int rows, int cols, double[] l, int lOff, int ldl,
        double[] u, int uOff, int ldu, int k) {
      DenseKernels.subtractProduct(c, cOff, ldc, rows, cols, l, lOff, ldl, u, uOff, ldu, k);
    }

    @Override
    public void subtractLowerProduct(double[] c, int cOff, int ldc, int rows, int cols, int[] limits, double[] p,
        int pOff, int ldp, double[] pt, int ptOff, int ldpt, int k) {
      DenseKernels.subtractLowerProduct(c, cOff, ldc, rows, limits, p, pOff, ldp, pt, ptOff, ldpt, k);
    }

    @Override
    public int choleskyLower(double[] a, int off, int ld, int nb) {
      return DenseKernels.choleskyLower(a, off, ld, nb);
    }
  }
}
