// Barrier-free communication primitives for one NVLink (or one-GPU) domain, after the LLBuffer API of
// "Every Microsecond Counts". All data moves as pushes into the RECEIVER's workspace (see kernel_abi.h
// section 4); receivers poll only their own memory. Every spin is bounded (Spinner).
//
//   LLBuffer    16-byte slots {8 B data, 8 B flag = epoch} written by ONE 16-byte store: send, bcast,
//               recv, recvReduce (fixed rank order). Double-buffered by epoch parity.
//   Sentinel    raw 16-byte units over a region prefilled with GC_SENTINEL_WORD; the receiver polls until
//               the unit differs from the sentinel, then refills it. A payload unit that IS the sentinel
//               pattern is sent as an escape word (= epoch) instead, so every payload comes out exact.
//   LL128 lines 128-byte lines {u32 counter, u32 pad, 120 B data}: every rank adds its data with
//               hardware atomics, then bumps the counter; the owner waits for counter == nranks.
//   Pipe        per-block 16 KB chunks + flag, with credits (ack words) so any size streams through.
//   FlagBarrier per-block barrier words (gc_barrier, and the two-barrier comparison kernels of the
//               benchmark fatbin).
//
// Why no barrier between calls: see kernel_abi.h section 3. Invariant: when a rank's kernel at epoch e
// completes, every peer has started epoch e. A collective that receives from every peer gets that for
// free; the others (broadcast, sparse allToAllv, tiny two-shot / LL128 / pipe calls) wait for the
// peers' arrival words before they exit (finishArrivals). So a rank about to write a peer's half at
// epoch e (completed e-1 => the peer started e-1 => it finished e-2, the last user of this half)
// never waits on anything at the start of a call.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "gpucoll/kernel_abi.h"

namespace gc {

// ------------------------------------------------------------------ memory operations (system scope)

__device__ __forceinline__ uint64_t globaltimer() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ void st16(void* p, uint64_t lo, uint64_t hi) {
  asm volatile("st.relaxed.sys.global.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(lo), "l"(hi) : "memory");
}
__device__ __forceinline__ void ld16(const void* p, uint64_t& lo, uint64_t& hi) {
  asm volatile("ld.relaxed.sys.global.v2.u64 {%0, %1}, [%2];" : "=l"(lo), "=l"(hi) : "l"(p) : "memory");
}
__device__ __forceinline__ void st64(void* p, uint64_t v) {
  asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ void stRelease64(void* p, uint64_t v) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ uint64_t ld64(const void* p) {
  uint64_t v;
  asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ uint64_t ldAcquire64(const void* p) {
  uint64_t v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ uint32_t ldAcquire32(const void* p) {
  uint32_t v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st32(void* p, uint32_t v) {
  asm volatile("st.relaxed.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ uint32_t ld32(const void* p) {
  uint32_t v;
  asm volatile("ld.relaxed.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// 16-byte unit as two words; the lower-addressed word is lo.
struct U16 {
  uint64_t lo, hi;
};

// Loads/stores of up to 8 / 16 bytes at any element-aligned address (user buffers may be offset by
// count*size); the fast path is one aligned vector access.
__device__ __forceinline__ uint32_t granule(const void* p, uint32_t nb, uint32_t max) {
  uint32_t g = max;
  while (g > 1 && ((reinterpret_cast<uintptr_t>(p) | nb) & (g - 1))) g >>= 1;
  return g;
}
__device__ __forceinline__ uint64_t loadBytes8(const char* p, uint32_t nb) {
  if (nb == 8 && (reinterpret_cast<uintptr_t>(p) & 7) == 0) return *reinterpret_cast<const uint64_t*>(p);
  uint64_t v = 0;
  uint32_t g = granule(p, nb, 8);
  for (uint32_t i = 0; i < nb; i += g) {
    uint64_t x = g == 4 ? *reinterpret_cast<const uint32_t*>(p + i)
               : g == 2 ? *reinterpret_cast<const uint16_t*>(p + i)
                        : *reinterpret_cast<const uint8_t*>(p + i);
    v |= x << (8 * i);
  }
  return v;
}
__device__ __forceinline__ void storeBytes8(char* p, uint64_t v, uint32_t nb) {
  if (nb == 8 && (reinterpret_cast<uintptr_t>(p) & 7) == 0) {
    *reinterpret_cast<uint64_t*>(p) = v;
    return;
  }
  uint32_t g = granule(p, nb, 8);
  for (uint32_t i = 0; i < nb; i += g) {
    uint64_t x = v >> (8 * i);
    if (g == 4) *reinterpret_cast<uint32_t*>(p + i) = static_cast<uint32_t>(x);
    else if (g == 2) *reinterpret_cast<uint16_t*>(p + i) = static_cast<uint16_t>(x);
    else *reinterpret_cast<uint8_t*>(p + i) = static_cast<uint8_t>(x);
  }
}
__device__ __forceinline__ U16 loadBytes16(const char* p, uint32_t nb) {
  if (nb == 16 && (reinterpret_cast<uintptr_t>(p) & 15) == 0) {
    uint4 v = *reinterpret_cast<const uint4*>(p);
    return U16{(uint64_t)v.x | ((uint64_t)v.y << 32), (uint64_t)v.z | ((uint64_t)v.w << 32)};
  }
  U16 u;
  u.lo = loadBytes8(p, nb < 8 ? nb : 8);
  u.hi = nb > 8 ? loadBytes8(p + 8, nb - 8) : 0;
  return u;
}
__device__ __forceinline__ void storeBytes16(char* p, U16 u, uint32_t nb) {
  if (nb == 16 && (reinterpret_cast<uintptr_t>(p) & 15) == 0) {
    *reinterpret_cast<uint4*>(p) = make_uint4((uint32_t)u.lo, (uint32_t)(u.lo >> 32), (uint32_t)u.hi,
                                              (uint32_t)(u.hi >> 32));
    return;
  }
  storeBytes8(p, u.lo, nb < 8 ? nb : 8);
  if (nb > 8) storeBytes8(p + 8, u.hi, nb - 8);
}
// Workspace data written by peers: bypass L1 (it is not coherent with peer writes).
__device__ __forceinline__ U16 loadWs16(const void* p) {
  U16 u;
  ld16(p, u.lo, u.hi);
  return u;
}

// ------------------------------------------------------------------ context, errors, bounded spinning

struct Ctx {
  const GcArgs* a;
  uint64_t epoch;
  uint64_t timeoutNs;
  uint32_t rank, n, kernel;

  // epoch: args.epoch for a launch; args.epoch + i for the i-th collective of an in-kernel loop.
  __device__ Ctx(const GcArgs& args, uint32_t kernelId, uint64_t epochOfCall)
      : a(&args), epoch(epochOfCall), timeoutNs(args.timeout_ns ? args.timeout_ns : GC_DEFAULT_TIMEOUT_NS),
        rank(args.rank), n(args.nranks), kernel(kernelId) {}
  __device__ char* ws(uint32_t r) const { return reinterpret_cast<char*>(a->peers[r]); }
  __device__ char* own() const { return ws(rank); }
  __device__ uint32_t half() const { return static_cast<uint32_t>(epoch & 1); }

  // First peer whose arrival word is below this epoch (it never started this call), or GC_NO_PEER.
  __device__ uint32_t absentPeer() const {
    for (uint32_t p = 0; p < n; ++p)
      if (p != rank && ld64(own() + GC_WS_ARRIVED + 8u * p) < epoch) return p;
    return GC_NO_PEER;
  }

  // First error of the call wins (claim word in the own workspace); `code` is written last.
  __device__ void recordError(uint32_t code, uint32_t peer, uint64_t waited, uint64_t observed,
                              uint64_t detail) const {
    if (a->error_record == 0) return;
    if (rank < n && n <= GC_MAX_RANKS && a->peers[rank] != 0) {
      auto* claim = reinterpret_cast<unsigned long long*>(own() + GC_WS_ERR_CLAIM);
      if (atomicMax(claim, static_cast<unsigned long long>(epoch)) >= epoch) return;
    }
    volatile GcErrorRecord* e = reinterpret_cast<volatile GcErrorRecord*>(a->error_record);
    e->rank = rank;
    e->peer = peer;
    e->kernel = kernel;
    e->epoch = epoch;
    e->waited = waited;
    e->observed = observed;
    e->detail = detail;
    e->block = blockIdx.x;
    e->thread = threadIdx.x;
    __threadfence_system();
    e->code = code;
    __threadfence_system();
  }
};

// Bounds one wait: %globaltimer deadline, checked every 64 polls; the host abort word lives in mapped
// host memory (a PCIe round trip to read), so it is read only once a wait has lasted 20 us, then every
// 20 us -- never on the fast path.
struct Spinner {
  uint64_t t0 = 0, nextAbortCheck = 0;
  uint32_t polls = 0;
  static constexpr uint64_t kAbortCheckNs = 20000;
  // Returns false (after recording the error) when the wait must be abandoned.
  __device__ __forceinline__ bool keepWaiting(const Ctx& c, uint32_t peer, uint64_t waited,
                                              uint64_t observed) {
    if ((++polls & 63) != 0) return true;
    const uint64_t now = globaltimer();
    if (t0 == 0) {
      t0 = now;
      nextAbortCheck = now + kAbortCheckNs;
      return true;
    }
    if (now >= nextAbortCheck) {
      nextAbortCheck = now + kAbortCheckNs;
      if (c.a->abort_word != 0 && *reinterpret_cast<const volatile uint32_t*>(c.a->abort_word) != 0) {
        c.recordError(GC_ERR_ABORTED, peer, waited, observed, peer);
        return false;
      }
    }
    if (now - t0 > c.timeoutNs) {
      // Name the rank that never started this call if there is one (the true culprit: whoever we
      // polled may itself be stuck on it); `detail` keeps the peer this thread was polling.
      const uint32_t absent = c.absentPeer();
      c.recordError(GC_ERR_TIMEOUT, absent != GC_NO_PEER ? absent : peer, waited, observed, peer);
      return false;
    }
    return true;
  }
};

// Spins until *word >= target (acquire). peer names whom we wait for in an error.
__device__ __forceinline__ bool waitAtLeast(const Ctx& c, const void* word, uint64_t target, uint32_t peer) {
  Spinner s;
  uint64_t v;
  while ((v = ldAcquire64(word)) < target) {
    if (!s.keepWaiting(c, peer, target, v)) return false;
  }
  return true;
}

// Relaxed variant for words that only gate our own later stores (no data is read after them).
__device__ __forceinline__ bool waitAtLeastRelaxed(const Ctx& c, const void* word, uint64_t target, uint32_t peer) {
  Spinner s;
  uint64_t v;
  while ((v = ld64(word)) < target) {
    if (!s.keepWaiting(c, peer, target, v)) return false;
  }
  return true;
}

// Every kernel tells every peer which epoch it started (block 0 only; any block proves the launch).
// Bookkeeping (arrival words, epoch words, arrival waits) runs in the LAST warp of a block: small calls
// put their data in warp 0, whose lanes then never diverge into it.
__device__ __forceinline__ bool inLastWarp() { return threadIdx.x >= blockDim.x - 32; }
__device__ __forceinline__ void announce(const Ctx& c) {
  const uint32_t p = threadIdx.x & 31;
  if (blockIdx.x == 0 && inLastWarp() && p < c.n && p != c.rank)
    st64(c.ws(p) + GC_WS_ARRIVED + 8u * c.rank, c.epoch);
}

// For a collective that did not receive from every peer: before the kernel exits, one warp of block 0
// waits until every peer announced this epoch (see the invariant at the top). In steady state the
// words are already there: one local load per peer.
__device__ __forceinline__ void finishArrivals(const Ctx& c) {
  if (blockIdx.x != 0 || !inLastWarp()) return;
  for (uint32_t p = threadIdx.x & 31; p < c.n; p += 32)
    if (p != c.rank && !waitAtLeastRelaxed(c, c.own() + GC_WS_ARRIVED + 8u * p, c.epoch, p)) return;
}

// ------------------------------------------------------------------ launch: dependent launch, device epochs

// Programmatic dependent launch (sm_90+): a kernel launched with the programmatic-serialization
// attribute may start while its predecessor on the stream still runs; it must wait before touching
// anything the predecessor writes. Both are no-ops for a plain launch.
__device__ __forceinline__ void waitForPredecessor() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void allowSuccessorLaunch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
}

// The epoch of this launch: max(args.epoch, the last epoch this rank ran + 1), the latter from the
// rank's own epoch words (kernel_abi.h section 3). One word per block index, so no block can overwrite
// a word another block of the same launch still has to read; beginEpoch sets them all.
__device__ __forceinline__ uint64_t* epochWords(const GcArgs& a) {
  if (a.nranks == 0 || a.nranks > GC_MAX_RANKS || a.rank >= a.nranks || a.peers[a.rank] == 0 ||
      blockIdx.x >= GC_MAX_BLOCKS || blockDim.x != GC_BLOCK_THREADS)
    return nullptr;
  return reinterpret_cast<uint64_t*>(a.peers[a.rank] + GC_WS_EPOCH);
}
// The last warp sets the epoch words for the next launch: block b's own word, and (block 0) the words of
// block indices this launch does not have.
__device__ __forceinline__ void storeEpochWords(uint64_t* w, uint64_t epoch) {
  const uint32_t lane = threadIdx.x & 31;
  if (lane == 0) st64(w + blockIdx.x, epoch);
  if (blockIdx.x == 0)
    for (uint32_t j = gridDim.x + lane; j < GC_MAX_BLOCKS; j += 32) st64(w + j, epoch);
}
// Every thread, once, at the start of a launch. Every warp but the last reads its block's word and
// arrives at the named barrier kEpochBarrier; the last warp reads, waits there until all have read,
// and at once stores this launch's epoch for the next one (nobody in this launch reads it again), so
// nothing is left to do at the end of the launch and no other warp ever waits.
constexpr int kEpochBarrier = 1;  // __syncthreads uses barrier 0
__device__ __forceinline__ uint64_t beginEpoch(const GcArgs& a) {
  uint64_t* w = epochWords(a);
  if (w == nullptr) return a.epoch;  // bad arguments: validate() reports them
  const uint64_t next = ld64(w + blockIdx.x) + 1;
  const uint64_t epoch = a.epoch > next ? a.epoch : next;
  if (!inLastWarp()) {
    asm volatile("barrier.arrive %0, %1;" ::"n"(kEpochBarrier), "r"(blockDim.x) : "memory");
  } else {
    asm volatile("barrier.sync %0, %1;" ::"n"(kEpochBarrier), "r"(blockDim.x) : "memory");
    storeEpochWords(w, epoch);
  }
  return epoch;
}
// ------------------------------------------------------------------ element types and reductions

template <typename T> struct Acc { using type = T; };
template <> struct Acc<__half> { using type = float; };
template <> struct Acc<__nv_bfloat16> { using type = float; };

template <typename T> __device__ __forceinline__ T fromBits(uint64_t b);
template <> __device__ __forceinline__ float fromBits<float>(uint64_t b) { return __uint_as_float((uint32_t)b); }
template <> __device__ __forceinline__ double fromBits<double>(uint64_t b) { return __longlong_as_double((long long)b); }
template <> __device__ __forceinline__ int32_t fromBits<int32_t>(uint64_t b) { return (int32_t)(uint32_t)b; }
template <> __device__ __forceinline__ int64_t fromBits<int64_t>(uint64_t b) { return (int64_t)b; }
template <> __device__ __forceinline__ int8_t fromBits<int8_t>(uint64_t b) { return (int8_t)(uint8_t)b; }
template <> __device__ __forceinline__ uint8_t fromBits<uint8_t>(uint64_t b) { return (uint8_t)b; }
template <> __device__ __forceinline__ __half fromBits<__half>(uint64_t b) { return __ushort_as_half((unsigned short)b); }
template <> __device__ __forceinline__ __nv_bfloat16 fromBits<__nv_bfloat16>(uint64_t b) {
  return __ushort_as_bfloat16((unsigned short)b);
}
__device__ __forceinline__ uint64_t toBits(float x) { return __float_as_uint(x); }
__device__ __forceinline__ uint64_t toBits(double x) { return (uint64_t)__double_as_longlong(x); }
__device__ __forceinline__ uint64_t toBits(int32_t x) { return (uint32_t)x; }
__device__ __forceinline__ uint64_t toBits(int64_t x) { return (uint64_t)x; }
__device__ __forceinline__ uint64_t toBits(int8_t x) { return (uint8_t)x; }
__device__ __forceinline__ uint64_t toBits(uint8_t x) { return x; }
__device__ __forceinline__ uint64_t toBits(__half x) { return __half_as_ushort(x); }
__device__ __forceinline__ uint64_t toBits(__nv_bfloat16 x) { return __bfloat16_as_ushort(x); }

__device__ __forceinline__ float toAcc(__half x) { return __half2float(x); }
__device__ __forceinline__ float toAcc(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename T> __device__ __forceinline__ T toAcc(T x) { return x; }
template <typename T> __device__ __forceinline__ T fromAcc(typename Acc<T>::type x) { return x; }
template <> __device__ __forceinline__ __half fromAcc<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 fromAcc<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

// Integers wrap (computed unsigned); floats are IEEE with no contraction across ranks.
template <typename A> __device__ __forceinline__ A combine(A a, A b, uint32_t op) {
  switch (op) {
    case GC_OP_PROD: return a * b;
    case GC_OP_MIN: return b < a ? b : a;
    case GC_OP_MAX: return a < b ? b : a;
    default: return a + b;  // SUM, AVG
  }
}
template <> __device__ __forceinline__ int32_t combine<int32_t>(int32_t a, int32_t b, uint32_t op) {
  switch (op) {
    case GC_OP_PROD: return (int32_t)((uint32_t)a * (uint32_t)b);
    case GC_OP_MIN: return b < a ? b : a;
    case GC_OP_MAX: return a < b ? b : a;
    default: return (int32_t)((uint32_t)a + (uint32_t)b);
  }
}
template <> __device__ __forceinline__ int64_t combine<int64_t>(int64_t a, int64_t b, uint32_t op) {
  switch (op) {
    case GC_OP_PROD: return (int64_t)((uint64_t)a * (uint64_t)b);
    case GC_OP_MIN: return b < a ? b : a;
    case GC_OP_MAX: return a < b ? b : a;
    default: return (int64_t)((uint64_t)a + (uint64_t)b);
  }
}
// 8-bit integers wrap in their own width (as the host backend's Reducer); MIN/MAX compare signed / unsigned.
template <> __device__ __forceinline__ int8_t combine<int8_t>(int8_t a, int8_t b, uint32_t op) {
  switch (op) {
    case GC_OP_PROD: return (int8_t)(uint8_t)((uint32_t)a * (uint32_t)b);
    case GC_OP_MIN: return b < a ? b : a;
    case GC_OP_MAX: return a < b ? b : a;
    default: return (int8_t)(uint8_t)((uint32_t)a + (uint32_t)b);
  }
}
template <> __device__ __forceinline__ uint8_t combine<uint8_t>(uint8_t a, uint8_t b, uint32_t op) {
  switch (op) {
    case GC_OP_PROD: return (uint8_t)((uint32_t)a * (uint32_t)b);
    case GC_OP_MIN: return b < a ? b : a;
    case GC_OP_MAX: return a < b ? b : a;
    default: return (uint8_t)((uint32_t)a + (uint32_t)b);
  }
}
// AVG: one division by nranks in the accumulation type (integers truncate toward zero).
template <typename A> __device__ __forceinline__ A finish(A a, uint32_t op, uint32_t n) {
  return op == GC_OP_AVG ? static_cast<A>(a / static_cast<int>(n)) : a;
}
__device__ __forceinline__ float finish(float a, uint32_t op, uint32_t n) {
  return op == GC_OP_AVG ? __fdiv_rn(a, (float)n) : a;
}
__device__ __forceinline__ double finish(double a, uint32_t op, uint32_t n) {
  return op == GC_OP_AVG ? __ddiv_rn(a, (double)n) : a;
}

// A word of W bytes (8 or 16) viewed as W/sizeof(T) accumulators; reduced element-wise.
template <typename T, int W> struct Lanes {
  static constexpr int E = W / (int)sizeof(T);
  using A = typename Acc<T>::type;
  A v[E];
  __device__ __forceinline__ static uint64_t word(const U16& u, int j) {
    constexpr int perWord = 8 / (int)sizeof(T);
    uint64_t w = j < perWord ? u.lo : u.hi;
    return w >> (8 * sizeof(T) * (j % perWord));
  }
  __device__ __forceinline__ void load(const U16& u) {
#pragma unroll
    for (int j = 0; j < E; ++j) v[j] = toAcc(fromBits<T>(word(u, j)));
  }
  __device__ __forceinline__ void add(const U16& u, uint32_t op) {
#pragma unroll
    for (int j = 0; j < E; ++j) v[j] = combine<A>(v[j], toAcc(fromBits<T>(word(u, j))), op);
  }
  __device__ __forceinline__ U16 store(uint32_t op, uint32_t n) const {
    constexpr int perWord = 8 / (int)sizeof(T);
    constexpr uint64_t mask = sizeof(T) == 8 ? ~0ull : ((1ull << (8 * sizeof(T))) - 1);
    U16 u{0, 0};
#pragma unroll
    for (int j = 0; j < E; ++j) {
      uint64_t b = (toBits(fromAcc<T>(finish(v[j], op, n))) & mask) << (8 * sizeof(T) * (j % perWord));
      if (j < perWord) u.lo |= b; else u.hi |= b;
    }
    return u;
  }
};

// ------------------------------------------------------------------ LL slots (LLBuffer)

// Slots [2 halves][GC_MAX_RANKS src][GC_LL_SLOTS] in each receiver's workspace. A slot holds 8 data bytes
// and the epoch that wrote them, stored together by one 16-byte store, so a reader that sees the flag
// sees the data: no fence, no separate notification.
struct LLBuffer {
  static constexpr uint64_t kSrcBytes = (uint64_t)GC_LL_SLOTS * 16u;  // one source's slots of one half
  const Ctx& c;
  uint64_t epoch;
  uint32_t half;
  // This rank's slots of this half ([src][slot]), computed once: the polls then do no address loads.
  const char* inbox;
  __device__ explicit LLBuffer(const Ctx& ctx)
      : c(ctx), epoch(ctx.epoch), half(ctx.half()),
        inbox(ctx.own() + GC_WS_LL_OFFSET + (uint64_t)ctx.half() * GC_MAX_RANKS * kSrcBytes) {}

  __device__ char* slot(uint32_t owner, uint32_t src, uint32_t s) const {
    return c.ws(owner) + GC_WS_LL_OFFSET + ((uint64_t)(half * GC_MAX_RANKS + src) * GC_LL_SLOTS + s) * 16u;
  }
  __device__ __forceinline__ void send(uint32_t peer, uint32_t s, uint64_t v) const { st16(slot(peer, c.rank, s), v, epoch); }
  // To every rank including this one (the own copy keeps recvReduce uniform).
  __device__ __forceinline__ void bcast(uint32_t s, uint64_t v) const {
    for (uint32_t p = 0; p < c.n; ++p) send(p, s, v);
  }
  __device__ __forceinline__ bool recv(uint32_t src, uint32_t s, uint64_t& v) const {
    const char* p = inbox + src * kSrcBytes + (uint64_t)s * 16u;
    Spinner sp;
    uint64_t f;
    for (;;) {
      ld16(p, v, f);
      if (f == epoch) return true;
      if (!sp.keepWaiting(c, src, epoch, f)) return false;
    }
  }
  // Slot s from every rank, reduced in rank order 0..n-1 (all ranks get the same bits). Polls all
  // pending sources each round so arrival order does not serialize the latency.
  template <typename T>
  __device__ __forceinline__ bool recvReduce(uint32_t s, uint32_t op, uint64_t& out) const {
    uint64_t d[GC_MAX_RANKS];
    const uint32_t n = c.n;
    const char* at = inbox + (uint64_t)s * 16u;
    uint32_t pending = (1u << n) - 1;  // n <= GC_MAX_RANKS = 16
    Spinner sp;
    uint32_t firstMissing = 0;
    uint64_t lastFlag = 0;
    while (pending) {
#pragma unroll
      for (uint32_t r = 0; r < GC_MAX_RANKS; ++r) {
        if (pending & (1u << r)) {
          uint64_t v, f;
          ld16(at + r * kSrcBytes, v, f);
          if (f == epoch) {
            d[r] = v;
            pending &= ~(1u << r);
          } else {
            firstMissing = r;
            lastFlag = f;
          }
        }
      }
      if (pending && !sp.keepWaiting(c, firstMissing, epoch, lastFlag)) return false;
    }
    Lanes<T, 8> acc;
    acc.load(U16{d[0], 0});
#pragma unroll
    for (uint32_t r = 1; r < GC_MAX_RANKS; ++r)
      if (r < n) acc.add(U16{d[r], 0}, op);
    out = acc.store(op, n).lo;
    return true;
  }
};

// ------------------------------------------------------------------ sentinel units

// Raw 16-byte units; region [2 halves][2 phases][GC_MAX_RANKS src][GC_SENT_PEER_BYTES] plus one escape
// word per unit. Full bandwidth (no flag bytes); the receiver restores the sentinel after reading.
struct Sentinel {
  const Ctx& c;
  uint32_t half;
  __device__ explicit Sentinel(const Ctx& ctx) : c(ctx), half(ctx.half()) {}
  static constexpr uint64_t kWord = ((uint64_t)GC_SENTINEL_WORD << 32) | GC_SENTINEL_WORD;

  __device__ uint64_t unitIndex(uint32_t phase, uint32_t src, uint64_t i) const {
    return ((uint64_t)((half * 2 + phase) * GC_MAX_RANKS + src) * GC_SENT_PEER_BYTES) / 16u + i;
  }
  __device__ void send(uint32_t peer, uint32_t phase, uint64_t i, U16 u) const {
    uint64_t k = unitIndex(phase, c.rank, i);
    if (u.lo == kWord && u.hi == kWord) st64(c.ws(peer) + GC_WS_ESC_OFFSET + 8u * k, c.epoch);  // escape
    else st16(c.ws(peer) + GC_WS_SENT_OFFSET + 16u * k, u.lo, u.hi);
  }
  // Waits for unit i from src, returns it, and restores the sentinel for the next use of this half.
  __device__ bool recv(uint32_t src, uint32_t phase, uint64_t i, U16& u) const {
    uint64_t k = unitIndex(phase, src, i);
    char* p = c.own() + GC_WS_SENT_OFFSET + 16u * k;
    const char* esc = c.own() + GC_WS_ESC_OFFSET + 8u * k;
    Spinner sp;
    for (;;) {
      ld16(p, u.lo, u.hi);
      if (u.lo != kWord || u.hi != kWord) break;
      uint64_t e = ld64(esc);
      if (e == c.epoch) break;  // the payload was the sentinel pattern itself
      if (!sp.keepWaiting(c, src, c.epoch, e)) return false;
    }
    st16(p, kWord, kWord);
    return true;
  }
};

// ------------------------------------------------------------------ LL128-atomic lines

template <typename A> __device__ __forceinline__ void atomicAddAcc(A* p, A v) { atomicAdd(p, v); }
template <> __device__ __forceinline__ void atomicAddAcc<int64_t>(int64_t* p, int64_t v) {
  atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
}

// Line = {u32 counter, u32 pad, 120 B data}. RS lines: [half][GC_LL128_MAX_LINES/2] (owner-local index),
// zero when unused; AG lines: [half][GC_LL128_MAX_LINES] with the 8-byte header holding the epoch.
struct LL128 {
  const Ctx& c;
  uint32_t half;
  __device__ explicit LL128(const Ctx& ctx) : c(ctx), half(ctx.half()) {}
  __device__ char* rsLine(uint32_t owner, uint64_t local) const {
    return c.ws(owner) + GC_WS_LL128_OFFSET + ((uint64_t)half * GC_LL128_LINES_PER_HALF + local) * GC_LL128_LINE_BYTES;
  }
  __device__ char* agLine(uint32_t owner, uint64_t line) const {
    return c.ws(owner) + GC_WS_LL128_OFFSET +
           ((uint64_t)half * GC_LL128_LINES_PER_HALF + GC_LL128_MAX_LINES / 2 + line) * GC_LL128_LINE_BYTES;
  }
  // Warp-collective: lane j adds its value into data word j (hardware atomics, over NVLink when the
  // owner is remote), then one lane bumps the counter after a fence, so counter == n means all data.
  template <typename A> __device__ void add(char* line, int lane, bool active, A v) const {
    if (active) atomicAddAcc(reinterpret_cast<A*>(line + 8) + lane, v);
    __syncwarp();
    if (lane == 0) {
      __threadfence_system();
      atomicAdd(reinterpret_cast<unsigned int*>(line), 1u);
    }
  }
  // Warp-collective: wait until counter == n (lane 0 polls), then all lanes may read.
  __device__ bool waitFull(const char* line, int lane, uint32_t peerHint) const {
    bool ok = true;
    if (lane == 0) {
      Spinner sp;
      uint32_t v;
      while ((v = ldAcquire32(line)) < c.n)
        if (!sp.keepWaiting(c, peerHint, c.n, v)) { ok = false; break; }
    }
    return __shfl_sync(0xffffffffu, ok, 0);
  }
  // Warp-collective: AG line publish (data stores, fence, epoch in the header).
  template <typename A> __device__ void put(char* line, int lane, bool active, A v) const {
    if (active) reinterpret_cast<volatile A*>(line + 8)[lane] = v;
    __syncwarp();
    if (lane == 0) stRelease64(line, c.epoch);
    __syncwarp();
  }
  __device__ bool waitFlag(const char* line, int lane, uint32_t src) const {
    bool ok = true;
    if (lane == 0) ok = waitAtLeast(c, line, c.epoch, src);
    ok = __shfl_sync(0xffffffffu, ok, 0);
    return ok;
  }
};

// ------------------------------------------------------------------ pipe channels (credits)

// One channel per (src, dst, block, half): 16 KB chunk in dst's workspace, a flag in dst's control
// words, an ack (credit) in src's. Block-collective functions; thread 0 polls, __syncthreads publishes.
struct Pipe {
  const Ctx& c;
  __device__ explicit Pipe(const Ctx& ctx) : c(ctx) {}
  static __device__ uint64_t flagValue(uint64_t epoch, uint32_t round) { return (epoch << 24) | (round + 1u); }
  __device__ uint64_t word(uint32_t who, uint32_t half) const {
    return 8ull * (((uint64_t)who * GC_MAX_BLOCKS + blockIdx.x) * 2u + half);
  }
  __device__ char* chunk(uint32_t owner, uint32_t src, uint32_t half) const {
    return c.ws(owner) + GC_WS_PIPE_OFFSET +
           (((uint64_t)src * GC_MAX_BLOCKS + blockIdx.x) * 2u + half) * GC_PIPE_CHUNK_BYTES;
  }
  // Wait until dst has consumed what we last sent on this half (its ack reached our last flag).
  __device__ bool acquireCredit(uint32_t dst, uint32_t half, bool& ok) const {
    __shared__ int sOk;
    if (threadIdx.x == 0) {
      uint64_t last = ld64(c.own() + GC_WS_PIPE_SENT + word(dst, half));
      sOk = waitAtLeast(c, c.own() + GC_WS_PIPE_ACK + word(dst, half), last, dst);
    }
    __syncthreads();
    ok = sOk;
    __syncthreads();
    return ok;
  }
  __device__ void publish(uint32_t dst, uint32_t half, uint64_t flag) const {
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence_system();
      st64(c.ws(dst) + GC_WS_PIPE_FLAG + word(c.rank, half), flag);
      st64(c.own() + GC_WS_PIPE_SENT + word(dst, half), flag);
    }
  }
  __device__ bool waitData(uint32_t src, uint32_t half, uint64_t flag) const {
    __shared__ int sOk;
    if (threadIdx.x == 0) sOk = waitAtLeast(c, c.own() + GC_WS_PIPE_FLAG + word(src, half), flag, src);
    __syncthreads();
    bool ok = sOk;
    __syncthreads();
    return ok;
  }
  __device__ void ack(uint32_t src, uint32_t half, uint64_t flag) const {
    __syncthreads();
    if (threadIdx.x == 0) st64(c.ws(src) + GC_WS_PIPE_ACK + word(c.rank, half), flag);
  }
};

// ------------------------------------------------------------------ flag barrier

// Block-collective barrier among the same block index of all ranks; values only grow (epoch-based).
__device__ __forceinline__ bool flagBarrier(const Ctx& c, uint64_t value) {
  __shared__ int sOk;
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence_system();
    sOk = 1;
  }
  __syncthreads();
  uint32_t p = threadIdx.x;
  bool ok = true;
  if (p < c.n) {
    st64(c.ws(p) + GC_WS_BARRIER + 8ull * (blockIdx.x * GC_MAX_RANKS + c.rank), value);
    ok = waitAtLeast(c, c.own() + GC_WS_BARRIER + 8ull * (blockIdx.x * GC_MAX_RANKS + p), value, p);
    if (!ok) sOk = 0;
  }
  __syncthreads();
  ok = sOk;
  __syncthreads();
  return ok;
}

}  // namespace gc
