// The floor for the benchmarks (gc_bench, gc_bench2): minimal kernels with nothing but the protocol.
#pragma once

#include "gpucoll/kernel_abi.h"
#include "gpucoll/primitives.cuh"

// No argument checks, no bounded waits, no error record, no arrival words, no epoch words; fp32 sum,
// count even, buffers 16-byte aligned and padded to 16 bytes; epochs from GcArgs.epoch (the host's).
// Minimal LL: each thread pushes 16-byte {8 B data, 8 B epoch} slots into every peer's inbox (the
// workspace LL region, epoch-parity halves); the receiver polls the slot of every peer until all
// flags equal the epoch, then sums in rank order. 256 threads, min(8, count/512) blocks.
constexpr unsigned kFloorThreads = 256;
unsigned floorGrid(uint64_t count) {
  const uint64_t g = count / 512;
  return g < 1 ? 1u : g > 8 ? 8u : (unsigned)g;
}
__device__ __forceinline__ void floorLL(const GcArgs& a, uint64_t epoch) {
  const uint32_t n = a.nranks, rank = a.rank, half = (uint32_t)(epoch & 1);
  const uint64_t slots = a.count / 2;
  const uint64_t* in = reinterpret_cast<const uint64_t*>(a.send);
  float2* out = reinterpret_cast<float2*>(a.recv);
  const uint64_t srcStride = (uint64_t)GC_LL_SLOTS * 16u;
  for (uint64_t s = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; s < slots; s += (uint64_t)gridDim.x * blockDim.x) {
    const uint64_t v = in[s];
    for (uint32_t p = 0; p < n; ++p)
      gc::st16(reinterpret_cast<char*>(a.peers[p]) + GC_WS_LL_OFFSET + ((uint64_t)(half * GC_MAX_RANKS + rank) * GC_LL_SLOTS + s) * 16u, v, epoch);
  }
  const char* inbox = reinterpret_cast<const char*>(a.peers[rank]) + GC_WS_LL_OFFSET + (uint64_t)half * GC_MAX_RANKS * srcStride;
  for (uint64_t s = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; s < slots; s += (uint64_t)gridDim.x * blockDim.x) {
    uint64_t d[GC_MAX_RANKS];
    uint32_t pending = (1u << n) - 1;
    while (pending) {
#pragma unroll
      for (uint32_t r = 0; r < GC_MAX_RANKS; ++r)
        if (pending & (1u << r)) {
          uint64_t v, f;
          gc::ld16(inbox + r * srcStride + s * 16, v, f);
          if (f == epoch) { d[r] = v; pending &= ~(1u << r); }
        }
    }
    float2 acc = make_float2(__uint_as_float((uint32_t)d[0]), __uint_as_float((uint32_t)(d[0] >> 32)));
#pragma unroll
    for (uint32_t r = 1; r < GC_MAX_RANKS; ++r)
      if (r < n) {
        acc.x += __uint_as_float((uint32_t)d[r]);
        acc.y += __uint_as_float((uint32_t)(d[r] >> 32));
      }
    out[s] = acc;
  }
}
// Minimal two-barrier: flag barrier (staging free), raw 16-byte pushes into every peer's staging,
// flag barrier (all data in), sum in rank order from the own staging. Same geometry.
__device__ __forceinline__ void floorBarrier(const GcArgs& a, uint64_t value) {
  __syncthreads();
  if (threadIdx.x < a.nranks) {
    __threadfence_system();
    gc::st64(reinterpret_cast<char*>(a.peers[threadIdx.x]) + GC_WS_BARRIER + 8ull * (blockIdx.x * GC_MAX_RANKS + a.rank), value);
    const char* w = reinterpret_cast<const char*>(a.peers[a.rank]) + GC_WS_BARRIER + 8ull * (blockIdx.x * GC_MAX_RANKS + threadIdx.x);
    while (gc::ldAcquire64(w) < value) {}
  }
  __syncthreads();
}
__device__ __forceinline__ void floorTwoBarrier(const GcArgs& a, uint64_t epoch) {
  const uint32_t n = a.nranks, rank = a.rank;
  const uint64_t units = (a.count + 3) / 4;  // buffers padded to 16 bytes
  const uint4* in = reinterpret_cast<const uint4*>(a.send);
  float4* out = reinterpret_cast<float4*>(a.recv);
  floorBarrier(a, (epoch << 24) + 1);
  for (uint64_t u = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; u < units; u += (uint64_t)gridDim.x * blockDim.x) {
    const uint4 v = in[u];
    for (uint32_t p = 0; p < n; ++p)
      reinterpret_cast<uint4*>(reinterpret_cast<char*>(a.peers[p]) + GC_WS_RAW_OFFSET + (uint64_t)rank * GC_RAW_PEER_BYTES)[u] = v;
  }
  floorBarrier(a, (epoch << 24) + 2);
  const char* raw = reinterpret_cast<const char*>(a.peers[rank]) + GC_WS_RAW_OFFSET;
  for (uint64_t u = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; u < units; u += (uint64_t)gridDim.x * blockDim.x) {
    gc::U16 x = gc::loadWs16(raw + 16 * u);
    float4 acc = make_float4(__uint_as_float((uint32_t)x.lo), __uint_as_float((uint32_t)(x.lo >> 32)),
                             __uint_as_float((uint32_t)x.hi), __uint_as_float((uint32_t)(x.hi >> 32)));
    for (uint32_t r = 1; r < n; ++r) {
      x = gc::loadWs16(raw + (uint64_t)r * GC_RAW_PEER_BYTES + 16 * u);
      acc.x += __uint_as_float((uint32_t)x.lo);
      acc.y += __uint_as_float((uint32_t)(x.lo >> 32));
      acc.z += __uint_as_float((uint32_t)x.hi);
      acc.w += __uint_as_float((uint32_t)(x.hi >> 32));
    }
    out[u] = acc;
  }
}
__global__ void __launch_bounds__(kFloorThreads) floorLLKernel(const __grid_constant__ GcArgs a) { floorLL(a, a.epoch); }
__global__ void __launch_bounds__(kFloorThreads) floorTwoBarrierKernel(const __grid_constant__ GcArgs a) { floorTwoBarrier(a, a.epoch); }

