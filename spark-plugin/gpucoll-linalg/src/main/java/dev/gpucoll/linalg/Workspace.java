package dev.gpucoll.linalg;

import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;

/**
 * The scratch memory of one solver, one buffer per {@link Slot}, on its kernel set. A slot grows by
 * allocating anew; nothing is freed before {@link #close()} (on the device cudaFree waits for the
 * whole device, which a peer's collective may keep busy).
 */
final class Workspace implements AutoCloseable {
  /** What a buffer holds. */
  enum Slot {
    /** getrf: the factored panel in global row order, its pivots and status. */
    PANEL,
    /** getrf: this rank's rows of the factored panel, contiguous. */
    PANEL_MINE,
    /** The send side of a column allGather (a process row's panel rows, padded to the widest). */
    SEND,
    /** The receive side of a column allGather. */
    GATHERED,
    /** getrf: U₁₂ broadcast down the column. */
    U12,
    /** cuSOLVER's getrf / potrf workspace. */
    FACTOR_WORK,
    /** getrf on one process: the pivots (int32). */
    PIVOTS,
    /** potrf: L₁₁ with its status. */
    DIAGONAL,
    /** potrf: the rows of L₂₁ that match this rank's columns, transposed. */
    TRANSPOSED,
    /** Local row lists (int32) of a gather or scatter kernel. */
    ROW_LIST,
    /** The solves: the block of X broadcast down the column. */
    SOLVE_X,
    /** The solves: the partial sums of the transposed solve. */
    SOLVE_SUMS,
    /** The solves: the triangle's block column. */
    SOLVE_COLUMN,
    /** The interchanges: rows that leave this rank. */
    SWAP_SEND,
    /** The interchanges: rows that arrive. */
    SWAP_RECV,
    /** Statuses and scan results (device words). */
    STATUS
  }

  private final KernelSet kernels;
  private final Map<Slot, long[]> held = new EnumMap<>(Slot.class);
  private final List<Long> retired = new ArrayList<>();

  Workspace(KernelSet kernels) {
    this.kernels = kernels;
  }

  /** The buffer of {@code slot}, at least {@code bytes} long. */
  long need(Slot slot, long bytes) {
    long[] have = held.get(slot);
    if (have != null && have[1] >= bytes) {
      return have[0];
    }
    if (have != null) {
      retired.add(have[0]);
    }
    long address = kernels.malloc(Math.max(8, bytes));
    held.put(slot, new long[] {address, bytes});
    return address;
  }

  @Override
  public void close() {
    for (long[] s : held.values()) {
      kernels.free(s[0]);
    }
    for (long r : retired) {
      kernels.free(r);
    }
    held.clear();
    retired.clear();
  }
}
