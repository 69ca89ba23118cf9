// The floor for the benchmarks (gc_bench, gc_bench2): minimal kernels with nothing but the protocol.
#pragma once

#include "bench_table.h"  // GC_WS_RAW_OFFSET: floorTwoBarrier's staging
#include "gpucoll/primitives.cuh"
#include "kernels.h"  // kFloorThreads, floorGrid

// No argument checks, no bounded waits, no error record, no arrival words, no epoch words; fp32 sum,
// count even, buffers 16-byte aligned and padded to 16 bytes; epochs from GcArgs.epoch (the host's).
// The minimal LL kernel: one block of 256 threads for <= 1 KB (min(8, ceil(count / 2 / 256)) blocks
// above); each thread takes two floats and stores {float a, epoch, float b, epoch} as ONE 16-byte
// volatile store into every peer's inbox ([2 halves by epoch parity][source rank][packet], in the
// workspace's LL region); then, for each source rank in turn, it spins on a 16-byte volatile load of
// that source's packet until both epoch words equal the epoch, and sums in rank order.
__device__ __forceinline__ void floorLL(const GcArgs& a, uint64_t epoch) {
  const uint32_t n = a.nranks, rank = a.rank, half = (uint32_t)(epoch & 1), e = (uint32_t)epoch;
  const uint64_t packets = a.count / 2, srcBytes = (uint64_t)GC_LL_SLOTS * 16u;
  const float2* in = reinterpret_cast<const float2*>(a.send);
  float2* out = reinterpret_cast<float2*>(a.recv);
  const uint64_t mine = ((uint64_t)half * GC_MAX_RANKS + rank) * srcBytes;
  for (uint64_t s = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; s < packets; s += (uint64_t)gridDim.x * blockDim.x) {
    const float2 v = in[s];
    for (uint32_t p = 0; p < n; ++p)
      gc::stVolatile4(reinterpret_cast<char*>(a.peers[p]) + GC_WS_LL_OFFSET + mine + s * 16u, __float_as_uint(v.x), e, __float_as_uint(v.y), e);
  }
  const char* inbox = reinterpret_cast<const char*>(a.peers[rank]) + GC_WS_LL_OFFSET + (uint64_t)half * GC_MAX_RANKS * srcBytes;
  for (uint64_t s = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; s < packets; s += (uint64_t)gridDim.x * blockDim.x) {
    float2 acc = make_float2(0.f, 0.f);
    for (uint32_t r = 0; r < n; ++r) {
      uint4 u;
      do u = gc::ldVolatile4(inbox + r * srcBytes + s * 16u);
      while (u.y != e || u.w != e);
      if (r == 0) acc = make_float2(__uint_as_float(u.x), __uint_as_float(u.z));
      else acc = make_float2(acc.x + __uint_as_float(u.x), acc.y + __uint_as_float(u.z));
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

// The floor study: the floor with one piece of our kernels' per-call work added at a time, to measure
// what each costs (gc_bench --floor-study). Flags of floorStudy<F>; kWide is a launch geometry (512
// threads with __launch_bounds__(512, 2), our grid rule) chosen by the kernel, not by the body.

template <uint32_t F> __device__ __forceinline__ void floorStudy(const GcArgs& a, uint64_t epoch) {
  using namespace study;
  const gc::Ctx c(a, GC_KERNEL_ID(GC_COLL_ALLREDUCE, GC_PROTO_LL), epoch);
  constexpr bool bytesCodec = (F & kBytes) != 0, lanes = (F & kLanes) != 0;
  uint64_t first = 0;
  if ((F & kHoist) && gc::tid() < a.count / 2) first = *reinterpret_cast<const uint64_t*>(a.send + 8 * gc::tid());
  if ((F & kValidate) && !gc::validate(c, GC_DT_FLOAT32, true)) return;
  if (F & kCheckRanks) {
    const bool bad = a.nranks - 1u >= GC_MAX_RANKS || a.rank >= a.nranks || blockDim.x != GC_BLOCK_THREADS || gridDim.x > GC_MAX_BLOCKS;
    if (bad) {
      if (threadIdx.x == 0) c.recordError(GC_ERR_BAD_ARGS, GC_NO_PEER, 0, 0, 1);
      return;
    }
  }
  if (F & kCheckPeers) {
    bool bad = false;
#pragma unroll
    for (uint32_t r = 0; r < GC_MAX_RANKS; ++r) bad |= r < a.nranks && a.peers[r] == 0;
    if (bad) {
      if (threadIdx.x == 0) c.recordError(GC_ERR_BAD_ARGS, GC_NO_PEER, 0, 0, 5);
      return;
    }
  }
  const uint32_t n = a.nranks, rank = a.rank, half = (uint32_t)(epoch & 1), e = (uint32_t)epoch | 1u;
  const uint64_t packets = a.count / 2, srcBytes = (uint64_t)GC_LL_SLOTS * 16u, bytes = a.count * 4;
  const char* in = reinterpret_cast<const char*>(a.send);
  char* out = reinterpret_cast<char*>(a.recv);
  auto ws = [&](uint32_t p) { return (F & kCtx) ? c.ws(p) : reinterpret_cast<char*>(a.peers[p]); };
  const uint64_t mine = ((uint64_t)half * GC_MAX_RANKS + rank) * srcBytes;
  const uint64_t t0 = gc::tid(), stride = gc::nthreads();
  for (uint64_t s = t0; s < packets; s += stride) {
    const uint64_t v = (F & kHoist) && s == t0 ? first
                     : bytesCodec ? gc::loadBytes8(in + 8 * s, gc::min32(bytes - 8 * s, 8))
                                  : *reinterpret_cast<const uint64_t*>(in + 8 * s);
    for (uint32_t p = 0; p < n; ++p)
      if (!(F & kSkipSelf) || p != rank)
        gc::stVolatile4(ws(p) + GC_WS_LL_OFFSET + mine + s * 16u, (uint32_t)v, e, (uint32_t)(v >> 32), e);
  }
  if (F & kAnnounce) gc::announce(c);
  const char* inbox = ws(rank) + GC_WS_LL_OFFSET + (uint64_t)half * GC_MAX_RANKS * srcBytes;
  for (uint64_t s = t0; s < packets; s += stride) {
    gc::Lanes<float, 8> acc;
    float2 sum = make_float2(0.f, 0.f);
    for (uint32_t r = 0; r < n; ++r) {
      uint64_t v;
      if ((F & kSkipSelf) && r == rank) {
        v = bytesCodec ? gc::loadBytes8(in + 8 * s, gc::min32(bytes - 8 * s, 8)) : *reinterpret_cast<const uint64_t*>(in + 8 * s);
      } else {
        gc::Spinner sp;
        uint4 u;
        for (;;) {
          u = gc::ldVolatile4(inbox + r * srcBytes + s * 16u);
          if (u.y == e && u.w == e) break;
          if ((F & kSpin) && !sp.keepWaiting(c, r, e, u.y)) return;
        }
        v = (uint64_t)u.x | ((uint64_t)u.z << 32);
      }
      if (lanes) {
        if (r == 0) acc.load(gc::U16{v, 0}); else acc.add(gc::U16{v, 0}, GC_OP_SUM);
      } else {
        const float x = __uint_as_float((uint32_t)v), y = __uint_as_float((uint32_t)(v >> 32));
        sum = r == 0 ? make_float2(x, y) : make_float2(sum.x + x, sum.y + y);
      }
    }
    const uint64_t y = lanes ? acc.store(GC_OP_SUM, n).lo
                             : (uint64_t)__float_as_uint(sum.x) | ((uint64_t)__float_as_uint(sum.y) << 32);
    if (bytesCodec) gc::storeBytes8(out + 8 * s, y, gc::min32(bytes - 8 * s, 8));
    else *reinterpret_cast<uint64_t*>(out + 8 * s) = y;
  }
}

// The floor study of the small path (allReduceSmall): the minimal LL kernel reshaped as the small path
// (N at compile time, one packet per thread, the own part from the input, every source polled in each
// pass) plus one piece of the product's per-call work at a time, flags of study:: (kSpin, kValidate,
// kCheckRanks, kAnnounce, kLanes, kBytes), so each piece's cost is measured on the shape that ships.
template <uint32_t N, uint32_t F> __device__ __forceinline__ void floorAllStudy(const GcArgs& a, uint64_t epoch) {
  using namespace study;
  const gc::Ctx c(a, GC_KERNEL_ID(GC_COLL_ALLREDUCE, GC_PROTO_LL), epoch);
  const uint64_t bytes = a.count * 4, s = threadIdx.x, srcBytes = (uint64_t)GC_LL_SLOTS * 16u;
  const bool data = s * 8 < bytes;
  if (!data && !((F & kAnnounce) && gc::inLastWarp())) return;
  const char* in = reinterpret_cast<const char*>(a.send);
  char* out = reinterpret_cast<char*>(a.recv);
  const bool whole = (F & kBytes) ? gc::whole8(in, out, bytes) : true;
  const uint64_t mine = !data ? 0 : (F & kBytes) ? gc::loadWord8(in, s, bytes, whole) : reinterpret_cast<const uint64_t*>(in)[s];
  if ((F & kValidate) && !gc::validate(c, GC_DT_FLOAT32, true)) return;
  if ((F & kCheckRanks) && !gc::smallArgsOk<N>(c)) return;
  const uint32_t rank = a.rank, e = (uint32_t)epoch | 1u, half = (uint32_t)(epoch & 1);
  if (data) {
    const uint64_t off = GC_WS_LL_OFFSET + ((uint64_t)half * GC_MAX_RANKS + rank) * srcBytes + s * 16u;
#pragma unroll
    for (uint32_t j = 1; j < N; ++j)
      gc::stVolatile4(reinterpret_cast<char*>(a.peers[(rank + j) % N]) + off, (uint32_t)mine, e, (uint32_t)(mine >> 32), e);
  }
  if (F & kAnnounce) gc::announce(c);
  if (!data) return;
  const char* at = reinterpret_cast<const char*>(a.peers[rank]) + GC_WS_LL_OFFSET + (uint64_t)half * GC_MAX_RANKS * srcBytes + s * 16u;
  uint4 u[N];
  gc::Spinner sp;
  for (;;) {
#pragma unroll
    for (uint32_t r = 0; r < N; ++r) u[r] = gc::ldVolatile4(at + r * srcBytes);
    bool late = false;
#pragma unroll
    for (uint32_t r = 0; r < N; ++r) late |= r != rank && (u[r].y != e || u[r].w != e);
    if (!late) break;
    if ((F & kSpin) && sp.due()) {
      uint32_t peer = 0;
#pragma unroll
      for (uint32_t r = N; r-- > 0;) peer = r != rank && (u[r].y != e || u[r].w != e) ? r : peer;
      if (!sp.check(c, peer, e, 0)) return;
    }
  }
  uint64_t y;
  if (F & kLanes) {
    gc::Lanes<float, 8> acc;
#pragma unroll
    for (uint32_t r = 0; r < N; ++r) {
      const gc::U16 v{r == rank ? mine : (uint64_t)u[r].x | ((uint64_t)u[r].z << 32), 0};
      if (r == 0) acc.load(v); else acc.add(v, GC_OP_SUM);
    }
    y = acc.store(GC_OP_SUM, N).lo;
  } else {
    float2 acc = make_float2(0.f, 0.f);
#pragma unroll
    for (uint32_t r = 0; r < N; ++r) {
      const float x0 = r == rank ? __uint_as_float((uint32_t)mine) : __uint_as_float(u[r].x);
      const float x1 = r == rank ? __uint_as_float((uint32_t)(mine >> 32)) : __uint_as_float(u[r].z);
      acc = r == 0 ? make_float2(x0, x1) : make_float2(acc.x + x0, acc.y + x1);
    }
    y = (uint64_t)__float_as_uint(acc.x) | ((uint64_t)__float_as_uint(acc.y) << 32);
  }
  if (F & kBytes) gc::storeWord8(out, s, y, bytes, whole);
  else reinterpret_cast<uint64_t*>(out)[s] = y;
}

