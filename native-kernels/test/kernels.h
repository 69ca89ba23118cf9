// What the test programs link (all_kernels.cu, compiled once): a declaration of every kernel of the
// shipped fatbin (kernel_table.h's lists) and of the benchmark fatbin (bench_table.h's, the kernel
// table's "bench" section), and the floor's grid.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "bench_table.h"

#define GC_DECLARE_KERNEL(name, ...) extern "C" __global__ void name(const __grid_constant__ GcArgs a);
GC_SHIPPED_REDUCTION_KERNELS(GC_DECLARE_KERNEL)
GC_SHIPPED_UNTYPED_KERNELS(GC_DECLARE_KERNEL)
GC_SHIPPED_PAIR_KERNELS(GC_DECLARE_KERNEL)
GC_BENCH_REDUCTION_KERNELS(GC_DECLARE_KERNEL)
GC_BENCH_UNTYPED_KERNELS(GC_DECLARE_KERNEL)
#undef GC_DECLARE_KERNEL
#define GC_DECLARE_BATCH_KERNEL(name, ...) \
  extern "C" __global__ void name(const __grid_constant__ GcArgs a, const __grid_constant__ GcBatch b);
GC_SHIPPED_BATCH_KERNELS(GC_DECLARE_BATCH_KERNEL)
#undef GC_DECLARE_BATCH_KERNEL

// In-kernel loops (gpucoll_bench.cu): k collectives inside one launch, epochs a.epoch .. a.epoch + k - 1.
extern "C" __global__ void gc_floor_ll_loop(const __grid_constant__ GcArgs a, int k);
extern "C" __global__ void gc_floor_two_barrier_loop(const __grid_constant__ GcArgs a, int k);
extern "C" __global__ void gc_allreduce_ll_f32_loop(const __grid_constant__ GcArgs a, int k);

// The floor study's in-kernel loops (floor.cuh, gpucoll_bench.cu): name, threads, min blocks per SM,
// floorStudy flags. Each row adds one piece of our per-call work to the previous "wide" row; the
// "narrow" rows add one piece alone to the floor itself.
#define GC_STUDY_LIST(X)                                                                 \
  X(gc_study_n_skipself, 256, 1, study::kSkipSelf)                                       \
  X(gc_study_n_spin, 256, 1, study::kSpin)                                               \
  X(gc_study_n_announce, 256, 1, study::kAnnounce)                                       \
  X(gc_study_n_codec, 256, 1, study::kCodec)                                             \
  X(gc_study_n_lanes, 256, 1, study::kLanes)                                             \
  X(gc_study_n_bytes, 256, 1, study::kBytes)                                             \
  X(gc_study_n_ctx, 256, 1, study::kCtx)                                                 \
  X(gc_study_w_validate_only, 512, 2, study::kValidate)                                  \
  X(gc_study_w_validate_hoist, 512, 2, study::kValidate | study::kHoist)                 \
  X(gc_study_w_check_ranks, 512, 2, study::kSkipSelf | study::kSpin | study::kCheckRanks) \
  X(gc_study_w_check_peers, 512, 2, study::kSkipSelf | study::kSpin | study::kCheckPeers) \
  X(gc_study_w_check_none_err, 512, 2, study::kSkipSelf | study::kSpin | study::kCheckRanks | study::kCheckPeers) \
  X(gc_study_w_floor, 512, 2, 0)                                                         \
  X(gc_study_w_skipself, 512, 2, study::kSkipSelf)                                       \
  X(gc_study_w_ctx, 512, 2, study::kSkipSelf | study::kCtx)                              \
  X(gc_study_w_spin, 512, 2, study::kSkipSelf | study::kCtx | study::kSpin)              \
  X(gc_study_w_validate, 512, 2, study::kSkipSelf | study::kCtx | study::kSpin | study::kValidate) \
  X(gc_study_w_announce, 512, 2, study::kSkipSelf | study::kCtx | study::kSpin | study::kValidate | study::kAnnounce) \
  X(gc_study_w_codec, 512, 2, study::kSkipSelf | study::kCtx | study::kSpin | study::kValidate | study::kAnnounce | study::kCodec)
#define GC_STUDY_DECLARE(name, ...) extern "C" __global__ void name(const __grid_constant__ GcArgs a, int k);
GC_STUDY_LIST(GC_STUDY_DECLARE)
#undef GC_STUDY_DECLARE

// The floor kernels' geometry (floor.cuh): 256 threads, min(8, ceil(count / 2 / 256)) blocks.
constexpr unsigned kFloorThreads = 256;
inline unsigned floorGrid(uint64_t count) {
  const uint64_t g = (count / 2 + kFloorThreads - 1) / kFloorThreads;
  return g < 1 ? 1u : g > 8 ? 8u : (unsigned)g;
}
