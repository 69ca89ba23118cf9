package dev.gpucoll.linalg;

/**
 * One process's part of a distributed matrix in device memory: the same local array as
 * {@link LocalMatrix} (fp64, column-major, the descriptor's LLD, {@link Descriptor#numrocRows} ×
 * {@link Descriptor#numrocCols} elements), at a device address of the calling thread's current
 * device. It is what {@link DeviceSolver}'s routines take, and what cuSOLVERMp takes for the same
 * descriptor. {@link DeviceSolver#upload} and {@link DeviceSolver#download} move it to and from the
 * host, once at each end.
 *
 * <p>{@link #close()} frees memory this object allocated (never wrapped memory). cudaFree waits for
 * the whole device: close after the group's last collective, never while other ranks of this GPU
 * may still be inside one.
 */
public final class DeviceMatrix implements AutoCloseable {
  private final Descriptor desc;
  private final int prow;
  private final int pcol;
  private final long address;
  /** Frees the memory at close, or null (wrapped memory the caller owns). */
  private final java.util.function.LongConsumer free;
  private boolean closed;

  private DeviceMatrix(Descriptor desc, int prow, int pcol, long address, java.util.function.LongConsumer free) {
    if (desc == null) {
      throw new IllegalArgumentException("descriptor is null");
    }
    if (prow < 0 || prow >= desc.gridRows() || pcol < 0 || pcol >= desc.gridCols()) {
      throw new IllegalArgumentException("process (" + prow + ", " + pcol + ") is outside the " + desc.gridRows()
          + " x " + desc.gridCols() + " grid");
    }
    this.desc = desc;
    this.prow = prow;
    this.pcol = pcol;
    this.address = address;
    this.free = free;
  }

  /** Process (prow, pcol)'s part, allocated on the current device (contents undefined). */
  public static DeviceMatrix allocate(Descriptor desc, int prow, int pcol) {
    DeviceMatrix shape = new DeviceMatrix(desc, prow, pcol, 0, null);
    return new DeviceMatrix(desc, prow, pcol, DeviceKernels.cudaMalloc(shape.bytes()), DeviceKernels::cudaFree);
  }

  /**
   * Process (prow, pcol)'s part over device memory the caller owns (at least LLD × local columns
   * doubles, e.g. a CuPy, cuDF or torch buffer); not freed by {@link #close()}.
   */
  public static DeviceMatrix wrap(Descriptor desc, int prow, int pcol, long deviceAddress) {
    if (deviceAddress == 0) {
      throw new IllegalArgumentException("device address is 0");
    }
    return new DeviceMatrix(desc, prow, pcol, deviceAddress, null);
  }

  /** Over memory that {@code free} releases at close. */
  static DeviceMatrix wrap(Descriptor desc, int prow, int pcol, long address, java.util.function.LongConsumer free) {
    return new DeviceMatrix(desc, prow, pcol, address, free);
  }

  public Descriptor descriptor() {
    return desc;
  }

  public int prow() {
    return prow;
  }

  public int pcol() {
    return pcol;
  }

  /** Local rows (NUMROC of M over the process rows). */
  public int rows() {
    return desc.numrocRows(prow);
  }

  /** Local columns. */
  public int cols() {
    return desc.numrocCols(pcol);
  }

  /** The device address of local element (0, 0); element (li, lj) is {@code 8 * (li + lj * lld)} bytes on. */
  public long address() {
    requireOpen();
    return address;
  }

  /** Bytes of the local array: LLD × local columns doubles. */
  public long bytes() {
    return 8L * desc.lld() * cols();
  }

  /**
   * Fills this part with a seeded test matrix that depends on the global positions alone (every grid
   * and block size deals the same matrix, as ScaLAPACK's pdmatgen): uniform in [−0.5, 0.5), or with
   * {@code spd} symmetric with N added to the diagonal (positive definite). Enqueued on
   * {@code stream} (a cudaStream_t of the current device, e.g. {@link DeviceSolver#stream()}).
   */
  public void fillRandom(long seed, boolean spd, long stream) {
    DeviceKernels.fill(stream, address(), desc, prow, pcol, seed, spd);
  }

  /** Device address of local element (li, lj). */
  long at(long li, long lj) {
    return address() + 8 * (li + lj * desc.lld());
  }

  private void requireOpen() {
    if (closed) {
      throw new IllegalStateException("process (" + prow + ", " + pcol + ")'s device matrix is closed");
    }
  }

  @Override
  public void close() {
    if (!closed && free != null) {
      free.accept(address);
    }
    closed = true;
  }
}
