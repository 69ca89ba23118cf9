// The benchmark fatbin (gpucoll_bench.fatbin; test programs only, never in the jar): the kernels of the
// kernel table's "bench" section (bench_table.h: the two-barrier comparison), the floor kernels of
// floor.cuh, and the in-kernel loops the benchmarks time (K collectives inside one launch).
#include "bench_table.h"
#include "gpucoll/collectives.cuh"
#include "floor.cuh"

namespace gc {

// The same movement with a flag barrier before (peers' staging is free) and after (all data is in),
// as vLLM's custom allReduce does; rounds of GC_RAW_PEER_BYTES. For the benchmark comparison.
template <typename T> __device__ void allReduceBarrier2(const GcArgs& a, uint64_t epoch) {
  Ctx c(a, GC_KERNEL_ID(GC_COLL_ALLREDUCE, GC_PROTO_TWO_BARRIER), epoch);
  const uint64_t bytes = a.count * sizeof(T);
  if (!prologue(c, DtypeOf<T>::value, true) || !epochFitsShiftedFlags(c)) return;
  const char* in = reinterpret_cast<const char*>(a.send);
  char* out = reinterpret_cast<char*>(a.recv);
  if (c.n == 1) return copyBytes(out, in, bytes);
  const uint64_t rounds = bytes == 0 ? 1 : ceilDiv(bytes, GC_RAW_PEER_BYTES);
  for (uint64_t k = 0; k < rounds; ++k) {
    const uint64_t base = k * GC_RAW_PEER_BYTES;
    const uint64_t rb = bytes - base < GC_RAW_PEER_BYTES ? bytes - base : GC_RAW_PEER_BYTES;
    const uint64_t units = ceilDiv(rb, 16), per = ceilDiv(units, gridDim.x);
    const uint64_t u0 = blockIdx.x * per, u1 = u0 + per < units ? u0 + per : units;
    if (!flagBarrier(c, (c.epoch << 24) + 2 * k + 1)) return;
    for (uint64_t u = u0 + threadIdx.x; u < u1; u += blockDim.x) {
      U16 x = loadBytes16(in + base + 16 * u, min32(rb - 16 * u, 16));
      for (uint32_t p = 0; p < c.n; ++p) {
        char* dst = c.ws(p) + GC_WS_RAW_OFFSET + (uint64_t)c.rank * GC_RAW_PEER_BYTES + 16 * u;
        *reinterpret_cast<uint4*>(dst) = make_uint4((uint32_t)x.lo, (uint32_t)(x.lo >> 32), (uint32_t)x.hi, (uint32_t)(x.hi >> 32));
      }
    }
    if (!flagBarrier(c, (c.epoch << 24) + 2 * k + 2)) return;
    for (uint64_t u = u0 + threadIdx.x; u < u1; u += blockDim.x) {
      Lanes<T, 16> acc;
      acc.load(loadWs16(c.own() + GC_WS_RAW_OFFSET + 16 * u));
      for (uint32_t r = 1; r < c.n; ++r)
        acc.add(loadWs16(c.own() + GC_WS_RAW_OFFSET + (uint64_t)r * GC_RAW_PEER_BYTES + 16 * u), a.op);
      storeBytes16(out + base + 16 * u, acc.store(a.op, c.n), min32(rb - 16 * u, 16));
    }
  }
}

template <> struct Body<GC_COLL_ALLREDUCE, GC_PROTO_TWO_BARRIER> : NoEarlyLoad {
  template <typename T> static __device__ void run(const GcArgs& a, uint64_t e, uint64_t) { allReduceBarrier2<T>(a, e); }
};

// In-kernel loops of several collectives (benchmarks): the epoch words after the last one.
__device__ __forceinline__ void recordLastEpoch(const GcArgs& a, uint64_t epoch) {
  uint64_t* w = epochWords(a);
  if (w != nullptr && inLastWarp()) storeEpochWords(w, epoch);
}

}  // namespace gc

GC_BENCH_REDUCTION_KERNELS(GC_DEFINE_TYPED_KERNEL)
GC_BENCH_UNTYPED_KERNELS(GC_DEFINE_UNTYPED_KERNEL)

// K collectives inside one launch (no launch gaps). Each thread reads back exactly the slots it
// wrote (same slot index on every rank), so completing collective i proves the peers' same thread
// finished i-1: the loop needs no barrier between iterations, for ours as for the floor.
extern "C" __global__ void __launch_bounds__(kFloorThreads) gc_floor_ll_loop(const __grid_constant__ GcArgs a, int k) {
  for (int i = 0; i < k; ++i) floorLL(a, a.epoch + i);
}
extern "C" __global__ void __launch_bounds__(kFloorThreads) gc_floor_two_barrier_loop(const __grid_constant__ GcArgs a, int k) {
  for (int i = 0; i < k; ++i) floorTwoBarrier(a, a.epoch + i);
}
// Ours above 4 KB: the one-shot recipe gc_allreduce_ll_f32 runs there, K times.
extern "C" __global__ void __launch_bounds__(GC_BLOCK_THREADS, 2) gc_allreduce_ll_f32_loop(const __grid_constant__ GcArgs a, int k) {
  gc::waitForPredecessor();
  const uint64_t e0 = gc::beginEpoch(a);
  for (int i = 0; i < k; ++i) gc::allReduceOneShot<gc::ProtoLL, float, GC_OP_SUM>(a, e0 + i);
  gc::recordLastEpoch(a, e0 + k - 1);
}
// Ours at <= 4 KB: the small path as gc_allreduce_ll_f32 runs it (the early input word, the size rule,
// the op), K times. One loop over the whole body would time that loop's register spills (the recipe's
// state kept live across iterations), which the kernel itself does not have.
extern "C" __global__ void __launch_bounds__(GC_BLOCK_THREADS, 2) gc_allreduce_ll_small_f32_loop(const __grid_constant__ GcArgs a, int k) {
  gc::waitForPredecessor();
  const uint64_t e0 = gc::beginEpoch(a);
  for (int i = 0; i < k; ++i) gc::allReduceIfSmall<float>(a, e0 + i, gc::smallInputWord<float>(a));
  gc::recordLastEpoch(a, e0 + k - 1);
}

// The floor study (floor.cuh): the floor plus one piece of our per-call work at a time. Narrow = the
// floor's geometry (256 threads); wide = ours (512 threads, two blocks per SM, our grid rule).
#define GC_STUDY_LOOP(name, threads, minBlocks, flags)                                                \
  extern "C" __global__ void __launch_bounds__(threads, minBlocks) name(const __grid_constant__ GcArgs a, int k) { \
    for (int i = 0; i < k; ++i) floorStudy<flags>(a, a.epoch + i);                                    \
  }
GC_STUDY_LIST(GC_STUDY_LOOP)
#undef GC_STUDY_LOOP
#define GC_STUDY_ALL_LOOP(name, minBlocks, flags)                                                      \
  extern "C" __global__ void __launch_bounds__(512, minBlocks) name(const __grid_constant__ GcArgs a, int k) { \
    for (int i = 0; i < k; ++i) {                                                                     \
      if (a.nranks == 2) floorAllStudy<2, flags>(a, a.epoch + i);                                     \
      else if (a.nranks == 4) floorAllStudy<4, flags>(a, a.epoch + i);                                \
      else floorAllStudy<8, flags>(a, a.epoch + i);                                                   \
    }                                                                                                 \
  }
GC_STUDY_ALL_LIST(GC_STUDY_ALL_LOOP)
#undef GC_STUDY_ALL_LOOP
