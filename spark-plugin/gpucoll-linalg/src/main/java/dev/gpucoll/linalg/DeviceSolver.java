package dev.gpucoll.linalg;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.GpuCommunicator;
import dev.gpucoll.api.ProcessGrid;
import dev.gpucoll.api.ReduceOp;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * LU (getrf, getrs) and Cholesky (potrf, potrs) of a block-cyclic matrix in device memory:
 * {@link GridSolver}'s schedule, the one {@link Lu} and {@link Cholesky} run on the host, on the
 * device kernel set ({@link DeviceKernels}: cuBLAS, cuSOLVER, the fatbin's kernels). One per rank,
 * opened collectively over a grid of GPU communicators, like a cuSOLVERMp handle: it puts the
 * grid's row and column communicators on the whole grid's stream, so that every kernel, copy and
 * collective of a rank runs in order on one stream, and keeps its workspace until {@link #close()}.
 * On a 1 × 1 grid a routine is one cuSOLVER call on the whole local array, with the same checks and
 * errors as on a larger grid.
 *
 * <p><b>Ranks that share a GPU never spin beside a library call.</b> A collective kernel that spins
 * for a peer holds the GPU; a peer inside cuBLAS or cuSOLVER that waits for the device then never
 * returns, and neither does the spinning kernel. So when ranks of the grid share a GPU, every
 * communicator of the grid that joins them must take the communicator's non-spinning path (the
 * staged path, {@code gpu-staged-host}: device to host, the host backend, back; what the route
 * gives such groups unless spinning kernels are forced): {@link #open} refuses a grid whose
 * communicators would spin there, on every rank alike, naming the ranks and the path. Every wait
 * of a routine is bounded ({@link #open(ProcessGrid, Duration)}: the stream's by the solver, the
 * collectives' by the group's timeout) and, when it expires, names the rank (grid position and
 * global rank), the routine and the step.
 */
public final class DeviceSolver implements AutoCloseable {
  /** How long a routine waits for this rank's stream by default. */
  public static final Duration DEFAULT_WAIT_LIMIT = Duration.ofMinutes(5);

  private final GridSolver solver;

  /** Over {@code kernels}: CUDA's ({@link DeviceKernels}), or in tests one that emulates a device in host memory. */
  DeviceSolver(ProcessGrid<? extends Communicator> grid, KernelSet kernels, Duration waitLimit) {
    try {
      requireNoSpinningBesideLibraryCalls(grid, kernels.gpuIdentity());
    } catch (RuntimeException e) {
      kernels.close();
      throw e;
    }
    this.solver = new GridSolver(grid, kernels, waitLimit);
  }

  /** {@link #open(ProcessGrid, Duration)} with {@link #DEFAULT_WAIT_LIMIT}. */
  public static DeviceSolver open(ProcessGrid<? extends GpuCommunicator> grid) {
    return open(grid, DEFAULT_WAIT_LIMIT);
  }

  /**
   * This rank's solver over {@code grid} (on this thread's current device, the grid's stream). Opens
   * cuBLAS and cuSOLVER handles and loads the kernels: call it on every rank before the first
   * routine, not between collectives of other ranks on the same GPU. Collective: refuses, on every
   * rank, a grid whose ranks share a GPU while its communicators would spin (see the class comment).
   *
   * @param waitLimit how long a routine waits for this rank's stream before it names the stop
   */
  public static DeviceSolver open(ProcessGrid<? extends GpuCommunicator> grid, Duration waitLimit) {
    if (grid == null) {
      throw new IllegalArgumentException("grid is null");
    }
    if (waitLimit == null || waitLimit.isNegative() || waitLimit.isZero()) {
      throw new IllegalArgumentException("the wait limit must be positive, not " + waitLimit);
    }
    long stream = grid.all().stream();
    if (grid.row().stream() != stream) {
      grid.row().setStream(stream);
    }
    if (grid.column().stream() != stream) {
      grid.column().setStream(stream);
    }
    return new DeviceSolver(grid, DeviceKernels.open(stream), waitLimit);
  }

  /**
   * Fails on every rank when ranks that share a GPU (the same {@link KernelSet#gpuIdentity}) meet
   * in a communicator of the grid whose collectives would spin: one allGather of the identities and
   * one allReduce of the verdicts over the whole grid, on host buffers.
   */
  static void requireNoSpinningBesideLibraryCalls(ProcessGrid<? extends Communicator> grid, String gpu) {
    Communicator all = grid.all();
    // Each GPU as 64 bits of its identity's name-based UUID; no GPU: a value of this rank alone.
    long[] mine = {gpu == null ? -1 - all.rank()
        : java.util.UUID.nameUUIDFromBytes(gpu.getBytes(java.nio.charset.StandardCharsets.UTF_8))
            .getMostSignificantBits() & Long.MAX_VALUE};
    long[] ids = new long[all.size()];
    all.allGather(CommBuffer.of(mine), CommBuffer.of(ids), 1, DataType.INT64);
    int rows = grid.rows();
    int cols = grid.cols();
    List<String> problems = new ArrayList<>();
    List<Integer> rowRanks = new ArrayList<>();
    List<Integer> columnRanks = new ArrayList<>();
    List<Integer> everyRank = new ArrayList<>();
    for (int j = 0; j < cols; j++) {
      rowRanks.add(grid.myRow() * cols + j);
    }
    for (int i = 0; i < rows; i++) {
      columnRanks.add(i * cols + grid.myCol());
    }
    for (int r = 0; r < all.size(); r++) {
      everyRank.add(r);
    }
    spinsOnSharedGpu(grid.row(), "grid row " + grid.myRow() + "'s communicator", rowRanks, ids, problems);
    spinsOnSharedGpu(grid.column(), "grid column " + grid.myCol() + "'s communicator", columnRanks, ids, problems);
    spinsOnSharedGpu(all, "the whole grid's communicator", everyRank, ids, problems);
    long[] verdict = {problems.isEmpty() ? Long.MAX_VALUE : all.rank()};
    all.allReduce(CommBuffer.of(verdict), CommBuffer.of(verdict), 1, DataType.INT64, ReduceOp.MIN);
    if (!problems.isEmpty()) {
      throw new IllegalArgumentException("DeviceSolver: global rank " + all.rank() + " at grid position ("
          + grid.myRow() + ", " + grid.myCol() + "): " + String.join("; ", problems) + "; a spinning collective"
          + " beside a cuBLAS or cuSOLVER call of a rank on the same GPU can stop both for good. Form the group"
          + " without spark.gpucoll.internal.spinOnSharedGpu or a forced kernel variant or algorithm (such"
          + " groups take gpu-staged-host), or give each rank its own GPU");
    }
    if (verdict[0] != Long.MAX_VALUE) {
      throw new IllegalArgumentException("DeviceSolver: global rank " + verdict[0] + " found ranks sharing a GPU in"
          + " a communicator of the grid whose collectives spin (its own error says which), so no rank opens");
    }
  }

  /** Adds a problem when {@code comm}'s members (global ranks) share a GPU and its collectives spin. */
  private static void spinsOnSharedGpu(Communicator comm, String name, List<Integer> members, long[] ids,
      List<String> problems) {
    List<Integer> sharing = new ArrayList<>();
    for (int a : members) {
      for (int b : members) {
        if (a != b && ids[a] == ids[b] && !sharing.contains(a)) {
          sharing.add(a);
        }
      }
    }
    if (sharing.isEmpty()) {
      return;
    }
    for (Collective c : List.of(Collective.BROADCAST, Collective.ALL_GATHER, Collective.ALL_REDUCE,
        Collective.ALL_TO_ALLV)) {
      String path;
      try {
        path = comm.explain(c, 8).algorithm();
      } catch (RuntimeException e) { // said as a problem: every rank then refuses alike, none waits alone
        problems.add(name + " joins global ranks " + sharing + ", which share a GPU, and cannot say the path of"
            + " its " + c.name().toLowerCase(java.util.Locale.ROOT) + ": " + e);
        return;
      }
      if (!path.equals("gpu-staged-host") && !path.startsWith("host-") && !path.equals("unsupported")) {
        problems.add(name + " joins global ranks " + sharing + ", which share a GPU, and its " + c.name()
            .toLowerCase(java.util.Locale.ROOT) + " takes " + path + ", whose kernels spin while they wait");
        return;
      }
    }
  }

  /** The cudaStream_t every routine enqueues on (the grid's). */
  public long stream() {
    return solver.kernels().stream();
  }

  /** Waits until everything enqueued so far on {@link #stream()} has run (at most the wait limit). */
  public void synchronize() {
    solver.await("synchronize", "the stream");
  }

  // ---- host ends ----

  /** A device copy of this rank's host part (waits for the copy). */
  public DeviceMatrix upload(LocalMatrix part) {
    KernelSet k = solver.kernels();
    DeviceMatrix a = DeviceMatrix.wrap(part.descriptor(), part.prow(), part.pcol(), k.malloc(8L
        * part.descriptor().lld() * part.cols()), k::free);
    copyIn(part, a);
    return a;
  }

  /** Copies this rank's host part into {@code a} (same descriptor and process), and waits. */
  public void copyIn(LocalMatrix part, DeviceMatrix a) {
    requireSameShape(part, a);
    solver.kernels().upload(part.data(), a.address(), a.descriptor().lld() * a.cols());
  }

  /** A host copy of {@code a} (waits for the copy). */
  public LocalMatrix download(DeviceMatrix a) {
    LocalMatrix part = LocalMatrix.allocate(a.descriptor(), a.prow(), a.pcol());
    solver.kernels().download(a.address(), part.data(), a.descriptor().lld() * a.cols());
    return part;
  }

  private static void requireSameShape(LocalMatrix part, DeviceMatrix a) {
    if (!part.descriptor().equals(a.descriptor()) || part.prow() != a.prow() || part.pcol() != a.pcol()) {
      throw new IllegalArgumentException("the host part (process (" + part.prow() + ", " + part.pcol() + ") of "
          + part.descriptor() + ") is not the device matrix's (process (" + a.prow() + ", " + a.pcol() + ") of "
          + a.descriptor() + ")");
    }
  }

  // ---- the routines ----

  /**
   * P A = L U in place, as {@link Lu#getrf(ProcessGrid, LocalMatrix)}: the pivots, the same on every
   * rank (LAPACK's IPIV, 0-based, global rows). Collective over the grid.
   */
  public int[] getrf(DeviceMatrix a) {
    return solver.getrf(part(a, "A"));
  }

  /**
   * Solves A X = B with getrf's factors and pivots, as {@link Lu#getrs}: {@code b} (A's row blocks;
   * its own NB and CSRC) is overwritten with X. Collective over the grid.
   */
  public void getrs(DeviceMatrix lu, int[] pivots, DeviceMatrix b) {
    solver.getrs(part(lu, "the factors"), pivots, part(b, "B"));
  }

  /** A = L Lᵀ in place (L on and below the diagonal; above it untouched), as {@link Cholesky#potrf}. */
  public void potrf(DeviceMatrix a) {
    solver.potrf(part(a, "A"));
  }

  /** Solves A X = B with L from {@link #potrf}, as {@link Cholesky#potrs}. */
  public void potrs(DeviceMatrix l, DeviceMatrix b) {
    solver.potrs(part(l, "the factor"), part(b, "B"));
  }

  private static Part part(DeviceMatrix a, String name) {
    if (a == null) {
      throw new IllegalArgumentException(name + " is null");
    }
    return new Part(a.descriptor(), a.prow(), a.pcol(), a.address());
  }

  /** Frees the workspace and the handles (cudaFree waits for the device: after the grid's last collective). */
  @Override
  public void close() {
    try {
      solver.close();
    } finally {
      solver.kernels().close();
    }
  }
}
