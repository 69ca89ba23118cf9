package dev.gpucoll.linalg;

/**
 * One process's local GEMM, C += A B on column-major fp64 arrays in Java memory (element (i, j) of
 * an operand at {@code x[i + j * ld]}, as BLAS and {@link LocalMatrix}), for programs that run
 * their own steps over this module's parts, such as SUMMA over a {@link Descriptor}'s local arrays.
 * It runs on a {@link KernelSet}, the same product the factorizations' trailing updates run:
 * {@link #onHost()} the host's Java loops, {@link #onDevice()} cuBLAS's dgemm on the calling
 * thread's current device, the operands copied in and out on each call.
 */
public final class LocalGemm implements AutoCloseable {
  private final KernelSet kernels;
  private final String name;

  LocalGemm(KernelSet kernels, String name) {
    this.kernels = kernels;
    this.name = name;
  }

  /** On the host: {@link HostKernels}. */
  public static LocalGemm onHost() {
    return new LocalGemm(new HostKernels(), "CPU");
  }

  /**
   * On the calling thread's current device, on its legacy default stream: {@link DeviceKernels}.
   *
   * @throws IllegalStateException naming the library when CUDA's runtime, cuBLAS or cuSOLVER does
   *     not load
   */
  public static LocalGemm onDevice() {
    return new LocalGemm(DeviceKernels.open(0), "cuBLAS dgemm");
  }

  /** Where the products run, for a program's output. */
  public String name() {
    return name;
  }

  /**
   * C += A B: C m × n (leading dimension ldc), A m × k (lda), B k × n (ldb). Returns once C holds
   * the result.
   */
  public void multiplyAdd(int m, int n, int k, double[] a, int lda, double[] b, int ldb, double[] c, int ldc) {
    int aLength = operand("A", m, k, a, lda);
    int bLength = operand("B", k, n, b, ldb);
    int cLength = operand("C", m, n, c, ldc);
    if (m == 0 || n == 0 || k == 0) {
      return;
    }
    // The kernel sets subtract (C −= A B, the factorizations' update); with −A that is C += A B, and
    // as negation is exact, the same bits.
    double[] negated = new double[aLength];
    for (int t = 0; t < aLength; t++) {
      negated[t] = -a[t];
    }
    long da = kernels.malloc(8L * aLength);
    long db = 0;
    long dc = 0;
    try {
      db = kernels.malloc(8L * bLength);
      dc = kernels.malloc(8L * cLength);
      kernels.upload(negated, da, aLength);
      kernels.upload(b, db, bLength);
      kernels.upload(c, dc, cLength);
      kernels.subtractProduct(dc, ldc, m, n, da, lda, db, ldb, k);
      kernels.download(dc, c, cLength);
    } finally {
      kernels.free(da);
      if (db != 0) {
        kernels.free(db);
      }
      if (dc != 0) {
        kernels.free(dc);
      }
    }
  }

  /** How many elements of {@code x} the rows × cols operand spans; fails naming a bad size. */
  private static int operand(String what, int rows, int cols, double[] x, int ld) {
    if (rows < 0 || cols < 0) {
      throw new IllegalArgumentException(what + " is " + rows + " x " + cols + ": sizes must not be negative");
    }
    if (ld < Math.max(1, rows)) {
      throw new IllegalArgumentException(what + "'s leading dimension " + ld + " is below max(1, its " + rows
          + " rows)");
    }
    if (x == null) {
      throw new IllegalArgumentException(what + " is null");
    }
    long need = rows == 0 || cols == 0 ? 0 : (long) ld * (cols - 1) + rows;
    if (x.length < need) {
      throw new IllegalArgumentException(what + " has " + x.length + " elements; " + rows + " x " + cols
          + " with leading dimension " + ld + " needs " + need);
    }
    return (int) need;
  }

  /** Releases what the kernel set holds (handles and workspace on the device). */
  @Override
  public void close() {
    kernels.close();
  }
}
