// What the test programs link (all_kernels.cu, compiled once): a declaration of every kernel of the
// shipped fatbin and of the benchmark fatbin, from the kernel table's lists, and the floor's grid.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "gpucoll/kernel_abi.h"

#define GC_DECLARE_KERNEL(name, ...) extern "C" __global__ void name(const __grid_constant__ GcArgs a);
GC_SHIPPED_REDUCTION_KERNELS(GC_DECLARE_KERNEL)
GC_SHIPPED_UNTYPED_KERNELS(GC_DECLARE_KERNEL)
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

// The floor kernels' geometry (floor.cuh): 256 threads, min(8, ceil(count / 2 / 256)) blocks.
constexpr unsigned kFloorThreads = 256;
inline unsigned floorGrid(uint64_t count) {
  const uint64_t g = (count / 2 + kFloorThreads - 1) / kFloorThreads;
  return g < 1 ? 1u : g > 8 ? 8u : (unsigned)g;
}
