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
extern "C" __global__ void gc_allreduce_ll_f32_loop(const __grid_constant__ GcArgs a, int k);        // the recipe (> 4 KB)
extern "C" __global__ void gc_allreduce_ll_small_f32_loop(const __grid_constant__ GcArgs a, int k);  // the small path (<= 4 KB)

// The floor study's flags (floorStudy<F> in floor.cuh): one piece of our per-call work each.
namespace study {
constexpr uint32_t kSkipSelf = 1;   // the own part read from the input, not sent through the own inbox
constexpr uint32_t kSpin = 2;       // every wait bounded by gc::Spinner (poll counter, clock, abort word)
constexpr uint32_t kValidate = 4;   // gc::validate() of the arguments each call
constexpr uint32_t kAnnounce = 8;   // the arrival word stored to every peer each call
constexpr uint32_t kCtx = 32;       // peer addresses through gc::Ctx (a pointer to the parameter block)
constexpr uint32_t kLanes = 64;     // Lanes accumulation (instead of float2 sums)
constexpr uint32_t kBytes = 128;    // any-size byte codecs (loadBytes8/storeBytes8)
constexpr uint32_t kCodec = kLanes | kBytes;
constexpr uint32_t kHoist = 256;    // this thread's first input word loaded before the argument checks
constexpr uint32_t kCheckRanks = 512;   // only nranks, rank and the launch geometry checked
constexpr uint32_t kCheckPeers = 1024;  // only the 16 peer workspace pointers checked
}  // namespace study

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
// The small path's study loops (floorAllStudy in floor.cuh; 512 threads, one block, <= 4 KB, 2, 4 or 8
// ranks): name, min blocks per SM, flags (kCheckRanks here: the small path's own test, rank and own
// workspace). a_floor is the minimal LL kernel with the own part read from the input and every source
// polled in each pass (the floor of part 1 at <= 4 KB, with floorLL); a_all is the shipped path's work
// (ours minus the size rule, the op switch and the early input load).
#define GC_STUDY_ALL_LIST(X)                                                                   \
  X(gc_study_a_floor, 1, 0)                                                                    \
  X(gc_study_a_floor_b2, 2, 0)                                                                 \
  X(gc_study_a_spin, 2, study::kSpin)                                                          \
  X(gc_study_a_validate, 2, study::kValidate)                                                  \
  X(gc_study_a_announce, 2, study::kAnnounce)                                                  \
  X(gc_study_a_lanes, 2, study::kLanes)                                                        \
  X(gc_study_a_bytes, 2, study::kBytes)                                                        \
  X(gc_study_a_check_rank, 2, study::kCheckRanks)                                             \
  X(gc_study_a_all_but_announce, 2, study::kSpin | study::kCheckRanks | study::kCodec)        \
  X(gc_study_a_all, 2, study::kSpin | study::kCheckRanks | study::kAnnounce | study::kCodec)
#define GC_STUDY_DECLARE(name, ...) extern "C" __global__ void name(const __grid_constant__ GcArgs a, int k);
GC_STUDY_LIST(GC_STUDY_DECLARE)
GC_STUDY_ALL_LIST(GC_STUDY_DECLARE)
#undef GC_STUDY_DECLARE

// The floor kernels' geometry (floor.cuh): 256 threads, min(8, ceil(count / 2 / 256)) blocks.
constexpr unsigned kFloorThreads = 256;
inline unsigned floorGrid(uint64_t count) {
  const uint64_t g = (count / 2 + kFloorThreads - 1) / kFloorThreads;
  return g < 1 ? 1u : g > 8 ? 8u : (unsigned)g;
}
