package dev.gpucoll.cuda;

import dev.gpucoll.api.Collective;
import java.util.List;

/**
 * One kernel launch, decided on the host before anything is enqueued.
 *
 * @param kernel    the extern "C" name in the fatbin, e.g. gc_allreduce_ll_f32
 * @param grid      gridDim.x (the same on every rank for the per-block channel variants)
 * @param algorithm the name reports and listeners see, e.g. "gpu-ll-oneshot"
 * @param reasons   why this variant, for {@link dev.gpucoll.api.PathChoice}
 */
public record LaunchPlan(Collective collective, KernelVariant variant, String kernel, int grid, long bytes,
    String algorithm, List<String> reasons) {

  public LaunchPlan {
    reasons = reasons == null ? List.of() : List.copyOf(reasons);
  }

  public int block() {
    return KernelAbi.BLOCK_THREADS;
  }

  public int sharedBytes() {
    return 0;
  }
}
