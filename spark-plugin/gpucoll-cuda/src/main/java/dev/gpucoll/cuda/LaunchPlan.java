package dev.gpucoll.cuda;

import dev.gpucoll.api.Collective;
import dev.gpucoll.core.Algorithm;

/**
 * One kernel launch, decided on the host before anything is enqueued.
 *
 * @param kernel    the extern "C" name in the fatbin, e.g. gc_allreduce_ll_f32
 * @param grid      gridDim.x (the same on every rank for the per-block channel variants)
 * @param bytes     the per-rank message (allToAllv: the largest per-peer block)
 * @param algorithm the name reports and listeners see, e.g. gpu-ll-oneshot
 */
record LaunchPlan(Collective collective, KernelVariant variant, String kernel, int grid, long bytes,
    Algorithm algorithm) {

  int block() {
    return KernelAbi.BLOCK_THREADS;
  }

  int sharedBytes() {
    return 0;
  }
}
