package dev.gpucoll.cuda;

import dev.gpucoll.api.Collective;
import dev.gpucoll.core.Algorithm;

/**
 * One kernel launch, decided by {@link GroupRoute} from the kernel table before anything is enqueued.
 *
 * @param entry     the kernel table's entry (collective, protocol, capacity, grid rule)
 * @param kernel    the extern "C" name in the fatbin, e.g. gc_allreduce_ll_f32
 * @param grid      gridDim.x (the same on every rank for the per-block channel kernels)
 * @param count     elements per rank (per peer for data movement; allToAllv: the largest block)
 * @param bytes     {@code count} times the element size
 * @param algorithm the name reports and listeners see, e.g. gpu-ll-oneshot
 */
record LaunchPlan(Collective collective, KernelTable.Kernel entry, String kernel, int grid, long count, long bytes,
    Algorithm algorithm) {

  int block() {
    return KernelTable.BLOCK_THREADS;
  }

  int sharedBytes() {
    return 0;
  }
}
