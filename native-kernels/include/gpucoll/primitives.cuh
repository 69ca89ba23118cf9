// Device primitives shared by every protocol: system-scope memory operations, the call context with
// its error record, bounded spinning (%globaltimer deadline, host abort word), arrival words, device
// epochs, programmatic dependent launch, and the element types' reduction rules. The protocols
// (proto_ll.cuh, proto_sentinel.cuh, proto_ll128.cuh, proto_pipe.cuh) build on these; every data move
// is a push into the RECEIVER's workspace (kernel_abi.h section 4) and receivers poll only their own
// memory.
//
// Why no barrier between calls: see kernel_abi.h section 3. Invariant: when a rank's kernel at epoch e
// completes, every peer has started epoch e. A collective that receives from every peer gets that for
// free; the others (broadcast, sparse allToAllv, tiny two-shot calls) wait for the peers' arrival
// words before they exit (finishArrivals). So a rank about to write a peer's half at epoch e
// (completed e-1 => the peer started e-1 => it finished e-2, the last user of this half) never waits
// on anything at the start of a call.
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

// LL packets: one 16-byte volatile store / load of four 32-bit words (the L1 is bypassed, so a peer's
// store is seen as soon as it lands).
__device__ __forceinline__ void stVolatile4(void* p, uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(a), "r"(b), "r"(c), "r"(d) : "memory");
}
__device__ __forceinline__ uint4 ldVolatile4(const void* p) {
  uint4 v;
  asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p) : "memory");
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
    return !due() || check(c, peer, waited, observed);
  }
  // keepWaiting in two parts, for a wait that works out whom it waits for only when asked: due() is
  // true once every 64 polls, and only then is check() called.
  __device__ __forceinline__ bool due() { return (++polls & 63) == 0; }
  __device__ __forceinline__ bool check(const Ctx& c, uint32_t peer, uint64_t waited, uint64_t observed) {
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
// `early` (the body's early load, runLaunch) is issued right after the epoch word's load, before its
// value is needed: the two loads are in flight together.
constexpr int kEpochBarrier = 1;  // __syncthreads uses barrier 0
template <typename Early> __device__ __forceinline__ uint64_t beginEpoch(const GcArgs& a, Early early, uint64_t& word) {
  uint64_t* w = epochWords(a);
  if (w == nullptr) {  // bad arguments: validate() reports them
    word = early();
    return a.epoch;
  }
  const uint64_t last = ld64(w + blockIdx.x);
  word = early();
  const uint64_t next = last + 1;
  const uint64_t epoch = a.epoch > next ? a.epoch : next;
  if (!inLastWarp()) {
    asm volatile("barrier.arrive %0, %1;" ::"n"(kEpochBarrier), "r"(blockDim.x) : "memory");
  } else {
    asm volatile("barrier.sync %0, %1;" ::"n"(kEpochBarrier), "r"(blockDim.x) : "memory");
    storeEpochWords(w, epoch);
  }
  return epoch;
}
__device__ __forceinline__ uint64_t beginEpoch(const GcArgs& a) {
  uint64_t none;
  return beginEpoch(a, [] { return uint64_t{0}; }, none);
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

// The grid-stride index of this thread and the thread count of the grid.
__device__ __forceinline__ uint64_t tid() { return (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ uint64_t nthreads() { return (uint64_t)gridDim.x * blockDim.x; }
__device__ __forceinline__ uint64_t ceilDiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }
__device__ __forceinline__ uint32_t min32(uint64_t a, uint32_t b) { return a < b ? (uint32_t)a : b; }

// loadBytes8/storeBytes8 for the i-th 8-byte word of a call whose buffers and length are all 8-byte multiples
// (`whole`, decided once per call): then one plain access, without the per-word size and alignment tests.
__device__ __forceinline__ bool whole8(const void* a, const void* b, uint64_t len) {
  return ((reinterpret_cast<uintptr_t>(a) | reinterpret_cast<uintptr_t>(b) | len) & 7) == 0;
}
__device__ __forceinline__ uint64_t loadWord8(const char* base, uint64_t i, uint64_t len, bool whole) {
  return whole ? reinterpret_cast<const uint64_t*>(base)[i] : loadBytes8(base + 8 * i, min32(len - 8 * i, 8));
}
__device__ __forceinline__ void storeWord8(char* base, uint64_t i, uint64_t v, uint64_t len, bool whole) {
  if (whole) reinterpret_cast<uint64_t*>(base)[i] = v;
  else storeBytes8(base + 8 * i, v, min32(len - 8 * i, 8));
}

// A reduction's op: a compile-time GC_OP_* (the body is compiled per op), or kRuntimeOp = GcArgs.op.
constexpr uint32_t kRuntimeOp = 0xFFu;
template <uint32_t OP> __device__ __forceinline__ uint32_t opOf(const Ctx& c) { return OP == kRuntimeOp ? c.a->op : OP; }

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

// ------------------------------------------------------------------ the protocols' common verb set

// Every protocol (proto_*.cuh) is a struct offering the same verbs, so each collective is written once
// (collectives.cuh) over a protocol parameter P:
//   P(ctx, segmentBytes)                         set up for this call (segmentBytes: two-shot owners' stride)
//   Step first() / next(Step)                    the steps of a call: one step for the grid-stride
//                                                protocols, one chunk per block per step for the pipe
//   send<T>(peer, src, len, step, phase)         push len bytes of src to peer (a no-op to self, except
//                                                where the protocol takes the own part through its inbox)
//   copySend<T>(src, len, step, phase)           the same bytes to every peer
//   recv<T>(src, dst, len, step, phase)          wait for src's bytes, copy them to dst
//   recvReduceCopy<T, OP>(own, dst, len, step, phase)   dst = op over ranks 0..n-1 of what each sent
//                                                here (own: this rank's part), in rank order
//   scatterSend<T>(src, bytes, seg, step, phase) two-shot: segment o of src to owner o (the
//                                                protocol spreads every owner's part over the grid)
//   recvReduceCopySend<T, OP>(own, dst, len, step)  two-shot owner: recvReduceCopy, and where the
//                                                protocol can (kGatherSentByReduce), each result at
//                                                once to every peer's gather region
//   gatherRecv<T>(dst, bytes, seg, step, phase)  two-shot: every other owner's segment into dst
//   copy(step, dst, src, len)                    a local copy spread like the step's data
// len is this step's share (Step::len of the peer's total); step.off its offset within the segment;
// phase kPhaseScatter / kPhaseGather selects the region of a two-phase protocol. Slots, flags, epochs and
// credits stay inside the protocol; a verb returns false after recording an error (timeout, abort).
struct Step {
  uint64_t off, span;  // this step's offset in the segment and its largest share
  uint32_t round;      // pipe: the channel round (flag value, buffer half)
  __device__ uint64_t len(uint64_t total) const { return off >= total ? 0 : (total - off < span ? total - off : span); }
};
constexpr uint32_t kPhaseScatter = 0, kPhaseGather = 1;
// Grid-stride copy in 16-byte units (one rank: every collective is a copy; and the own part of data movement).
__device__ void copyBytes(char* dst, const char* src, uint64_t bytes) {
  if (dst == src) return;
  for (uint64_t u = tid(); u * 16 < bytes; u += nthreads()) {
    uint32_t nb = min32(bytes - u * 16, 16);
    storeBytes16(dst + u * 16, loadBytes16(src + u * 16, nb), nb);
  }
}

// One step covering the whole call: the grid-stride protocols (LL, sentinel, LL128).
struct WholeCallSteps {
  __device__ Step first(uint32_t round = 0) const { return Step{0, ~0ull, round}; }
  __device__ Step next(Step s) const { return Step{~0ull, ~0ull, s.round + 1}; }
  __device__ void copy(const Step&, char* dst, const char* src, uint64_t len) const { copyBytes(dst, src, len); }
};

}  // namespace gc
