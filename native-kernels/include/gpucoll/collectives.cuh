// gpucoll collectives, each a short recipe over the primitives of gpucoll/primitives.cuh; the kernels
// that run them are instantiated from the kernel table (src/gpucoll_kernels.cu for the shipped fatbin,
// test/gpucoll_bench.cu for the benchmark one). Launch contract: gpucoll/kernel_abi.h.
#pragma once

#include "gpucoll/kernel_abi.h"
#include "gpucoll/primitives.cuh"
#include "gpucoll/proto_ll.cuh"
#include "gpucoll/proto_ll128.cuh"
#include "gpucoll/proto_pipe.cuh"
#include "gpucoll/proto_sentinel.cuh"

namespace gc {

constexpr uint32_t kBadNranks = 1, kBadRank = 2, kBadEpoch = 3, kBadGeometry = 4, kBadPeers = 5,
                   kBadDtype = 6, kBadOp = 7, kBadBatch = 8;

template <typename T> struct DtypeOf;
template <> struct DtypeOf<float> { static constexpr uint32_t value = GC_DT_FLOAT32; };
template <> struct DtypeOf<double> { static constexpr uint32_t value = GC_DT_FLOAT64; };
template <> struct DtypeOf<__half> { static constexpr uint32_t value = GC_DT_FLOAT16; };
template <> struct DtypeOf<__nv_bfloat16> { static constexpr uint32_t value = GC_DT_BFLOAT16; };
template <> struct DtypeOf<int32_t> { static constexpr uint32_t value = GC_DT_INT32; };
template <> struct DtypeOf<int64_t> { static constexpr uint32_t value = GC_DT_INT64; };
template <> struct DtypeOf<int8_t> { static constexpr uint32_t value = GC_DT_INT8; };
template <> struct DtypeOf<uint8_t> { static constexpr uint32_t value = GC_DT_UINT8; };


// Argument checks shared by every kernel; the first failing block records GC_ERR_BAD_ARGS. Of the
// peer table only the own entry is checked: the host writes the table once per group and refuses a
// null entry there (KernelAbi.writeGroup); checking all 16 entries here cost ~0.3 us per call (one
// parameter load each, on the path to the first data store; measured by gc_bench --floor-study).
// The epoch is not checked here: reading it would wait for the epoch word's load before the first
// data load is issued. Epochs are >= 1 by construction; kernels whose flags shift the epoch check
// its range. dtype == GC_DT_COUNT means "any known type" (data movement).
__device__ __forceinline__ bool validate(const Ctx& c, uint32_t dtype, bool reduction) {
  // Every field loaded at once and one branch: a chain of tests, each waiting for its load, sat on
  // the path to the first store. The detail code is worked out only on the error path.
  const GcArgs& a = *c.a;
  const uint32_t n = a.nranks, rank = a.rank, dt = a.dtype, op = a.op;
  const uint64_t own = a.peers[rank < GC_MAX_RANKS ? rank : 0];
  const bool nOk = n - 1u < GC_MAX_RANKS, rankOk = rank < n;
  const bool geometryOk = blockDim.x == GC_BLOCK_THREADS && gridDim.x <= GC_MAX_BLOCKS;
  const bool typeOk = dtype == GC_DT_COUNT ? gc_dtype_size(dt) != 0 : dt == dtype;
  const bool opOk = !reduction || op <= GC_OP_AVG;
  if (__builtin_expect(nOk & rankOk & geometryOk & typeOk & opOk & (own != 0), 1)) return true;
  if (threadIdx.x == 0) {
    const uint32_t bad = !nOk ? kBadNranks : !rankOk ? kBadRank : !geometryOk ? kBadGeometry
                       : !typeOk ? kBadDtype : !opOk ? kBadOp : kBadPeers;
    c.recordError(GC_ERR_BAD_ARGS, GC_NO_PEER, 0, 0, bad);
  }
  return false;
}

// Which bytes go to / come from each peer, for the data-movement collectives.
struct Layout {
  const GcArgs& a;
  uint32_t coll;
  uint64_t esz, bytes;
  __device__ Layout(const GcArgs& args, uint32_t collective)
      : a(args), coll(collective), esz(gc_dtype_size(args.dtype)), bytes(args.count * esz) {}
  __device__ uint64_t sendOff(uint32_t p) const {
    return coll == GC_COLL_ALLTOALL ? p * bytes
         : coll == GC_COLL_ALLTOALLV ? (uint64_t)a.a2av[GC_A2AV_SEND_DISPLS][p] * esz : 0;
  }
  __device__ uint64_t recvOff(uint32_t p) const {
    return coll == GC_COLL_ALLTOALLV ? (uint64_t)a.a2av[GC_A2AV_RECV_DISPLS][p] * esz
         : coll == GC_COLL_BROADCAST ? 0 : p * bytes;
  }
  __device__ uint64_t sendBytes(uint32_t p) const {
    return coll == GC_COLL_ALLTOALLV ? (uint64_t)a.a2av[GC_A2AV_SEND_COUNTS][p] * esz
         : coll == GC_COLL_BROADCAST ? (a.rank == a.root ? bytes : 0) : bytes;
  }
  __device__ uint64_t recvBytes(uint32_t p) const {
    return coll == GC_COLL_ALLTOALLV ? (uint64_t)a.a2av[GC_A2AV_RECV_COUNTS][p] * esz
         : coll == GC_COLL_BROADCAST ? (p == a.root ? bytes : 0) : bytes;
  }
  __device__ uint64_t maxPeerBytes() const {
    uint64_t m = 0;
    for (uint32_t p = 0; p < a.nranks; ++p) {
      uint64_t s = sendBytes(p), r = recvBytes(p);
      m = s > m ? s : m;
      m = r > m ? r : m;
    }
    return m;
  }
  // Whether every peer sends this rank at least one byte (then no arrival wait is needed).
  __device__ bool receivesFromAll() const {
    for (uint32_t p = 0; p < a.nranks; ++p)
      if (p != a.rank && recvBytes(p) == 0) return false;
    return true;
  }
  __device__ bool validOffsets() const {
    if (coll != GC_COLL_ALLTOALLV) return true;
    for (uint32_t p = 0; p < a.nranks; ++p)
      for (int k = 0; k < 4; ++k)
        if (a.a2av[k][p] < 0) return false;
    return a.a2av[GC_A2AV_SEND_COUNTS][a.rank] == a.a2av[GC_A2AV_RECV_COUNTS][a.rank];
  }
};

// Kernels whose flags are (epoch << 24) | round need epoch < 2^40. Only those check: reading the epoch
// before the first data load would wait for the epoch word's load (see validate).
__device__ bool epochFitsShiftedFlags(const Ctx& c) {
  if ((c.epoch >> 40) == 0) return true;
  if (threadIdx.x == 0) c.recordError(GC_ERR_BAD_ARGS, GC_NO_PEER, 0, c.epoch, kBadEpoch);
  return false;
}

// Warps that hold no unit of the call and keep no books (block 0's first warp records argument errors,
// its last warp the arrival words) leave at once: in a small call most of the 512 threads are idle,
// and their argument checks would take issue slots from the warps that move the data.
template <class P> __device__ __forceinline__ bool idleWarp(uint64_t bytes) {
  return !P::warpHasWork(bytes) && !(blockIdx.x == 0 && (threadIdx.x < 32 || inLastWarp()));
}

__device__ bool prologue(const Ctx& c, uint32_t dtype, bool reduction) {
  if (!validate(c, dtype, reduction)) return false;
  announce(c);
  return true;
}

// ------------------------------------------------------------------ the collectives, once each

// Protocol ids of the protocol structs (GcErrorRecord.kernel).
template <class P> struct ProtoId;
template <> struct ProtoId<ProtoLL> { static constexpr uint32_t value = GC_PROTO_LL; };
template <> struct ProtoId<ProtoSentinel> { static constexpr uint32_t value = GC_PROTO_SENTINEL; };
template <> struct ProtoId<ProtoLL128> { static constexpr uint32_t value = GC_PROTO_LL128; };
template <> struct ProtoId<ProtoPipe> { static constexpr uint32_t value = GC_PROTO_PIPE; };

// The protocol's capacity (the host checked the call against the kernel table; this is the cheap
// guard that records an error instead of overrunning a region). detail = the call's bytes.
template <class P, typename T> __device__ bool capacityOk(const Ctx& c, const P& p, uint64_t bytes) {
  if (p.template fits<T>(bytes)) return true;
  if (threadIdx.x == 0) c.recordError(GC_ERR_CAPACITY, GC_NO_PEER, 0, bytes, bytes);
  return false;
}
// Arguments every reduction checks: rank/geometry/type, the op against the table's list, capacity.
template <class P, typename T> __device__ __forceinline__ bool reductionArgsOk(const Ctx& c, const P& p, uint64_t bytes) {
  const bool takesOp = GC_KERNEL_TAKES_OP(c.kernel / 16, ProtoId<P>::value, c.a->op), fits = p.template fits<T>(bytes);
  if (!validate(c, DtypeOf<T>::value, true)) return false;
  if (__builtin_expect(takesOp && fits, 1)) return true;
  if (!takesOp) {
    if (threadIdx.x == 0) c.recordError(GC_ERR_BAD_ARGS, GC_NO_PEER, 0, c.a->op, kBadOp);
    return false;
  }
  return capacityOk<P, T>(c, p, bytes);
}

// One-shot allReduce: my bytes to every peer, then every peer's bytes reduced with mine in rank
// order. No arrival wait: it receives from every peer. The arrival word is still written (after the
// sends, off the path to the first store): a timeout names the rank that never started from it, and
// a batch kernel on a peer tells from it that this rank ran a plain call (kernel_abi.h section 6).
// (Protocol LL.)
template <class P, typename T, uint32_t OP> __device__ void allReduceOneShot(const GcArgs& a, uint64_t epoch) {
  Ctx c(a, GC_KERNEL_ID(GC_COLL_ALLREDUCE, ProtoId<P>::value), epoch);
  const uint64_t bytes = a.count * sizeof(T);
  if (idleWarp<P>(bytes)) return;
  P p(c, 0);
  if (!reductionArgsOk<P, T>(c, p, bytes)) return;
  if (!P::kAnnounceAfterSends) announce(c);
  const char* in = reinterpret_cast<const char*>(a.send);
  char* out = reinterpret_cast<char*>(a.recv);
  if (c.n == 1) return copyBytes(out, in, bytes);
  for (Step s = p.first(); s.off < bytes; s = p.next(s)) {
    if (!p.template copySend<T>(in + s.off, s.len(bytes), s, kPhaseScatter)) return;
    if (P::kAnnounceAfterSends && s.off == 0) announce(c);
    if (!p.template recvReduceCopy<T, OP>(in + s.off, out + s.off, s.len(bytes), s, kPhaseScatter)) return;
  }
  if (bytes == 0) {  // nothing heard from the peers
    if (P::kAnnounceAfterSends) announce(c);
    finishArrivals(c);
  }
}

// The size rule of the one-shot allReduce, in one place: a call of one block and at most
// GC_BYTES_PER_BLOCK bytes (one packet per thread) in a group of 2, 4 or 8 ranks takes allReduceSmall
// with that group size compiled in (0: the protocol's recipe). A call whose type, op or block size is
// not what the kernel takes goes to the recipe too, whose validate() reports it: the small path
// tests only the rest (smallArgsOk), and these tests are uniform branches on the parameters.
template <typename T> __device__ __forceinline__ uint32_t smallRanks(const GcArgs& a) {
  const bool small = gridDim.x == 1 && a.count < (1ull << 40) && a.count * sizeof(T) - 1u < GC_BYTES_PER_BLOCK;
  const bool taken = blockDim.x == GC_BLOCK_THREADS && a.dtype == DtypeOf<T>::value && a.op <= GC_OP_AVG;
  const uint32_t n = a.nranks;
  return small && taken && (n == 2 || n == 4 || n == 8) ? n : 0;
}
// This thread's input word of a small call (0 for any other call or thread): the early load.
template <typename T> __device__ __forceinline__ uint64_t smallInputWord(const GcArgs& a) {
  const uint64_t bytes = a.count * sizeof(T), s = threadIdx.x;
  if (smallRanks<T>(a) == 0 || s * 8 >= bytes) return 0;
  const char* in = reinterpret_cast<const char*>(a.send);
  return loadWord8(in, s, bytes, whole8(in, reinterpret_cast<const void*>(a.recv), bytes));
}

// The small path's own argument test: this rank and its workspace. The rest of validate() was decided
// by smallRanks (group size, type, op, geometry); the other entries of the peer table by the host,
// once per group (KernelAbi.writeGroup).
template <uint32_t N> __device__ __forceinline__ bool smallArgsOk(const Ctx& c) {
  const uint32_t rank = c.rank;
  if (__builtin_expect(rank < N && c.a->peers[rank < N ? rank : 0] != 0, 1)) return true;
  if (threadIdx.x == 0) c.recordError(GC_ERR_BAD_ARGS, GC_NO_PEER, 0, 0, rank < N ? kBadPeers : kBadRank);
  return false;
}

// One-shot allReduce of a small call, N ranks known at compile time: one block, one packet per thread,
// this thread's input word `mine` loaded before the epoch (smallInputWord). The packets, flags and
// rank-order reduction of allReduceOneShot over ProtoLL (so the same bits, and a peer may run either),
// with nothing else on the path to the first store and to the result: one argument test, the peers
// unrolled, every source polled in each pass. The arrival word comes from the last warp, beside the
// data warps.
template <typename T, uint32_t OP, uint32_t N> __device__ void allReduceSmall(const GcArgs& a, uint64_t epoch, uint64_t mine) {
  const uint64_t bytes = a.count * sizeof(T), s = threadIdx.x;
  const bool data = s * 8 < bytes;
  if (!data && !inLastWarp()) return;
  const Ctx c(a, GC_KERNEL_ID(GC_COLL_ALLREDUCE, GC_PROTO_LL), epoch);
  if (!smallArgsOk<N>(c)) return;
  const ProtoLL p(c, 0);
  if (data) {
#pragma unroll
    for (uint32_t j = 1; j < N; ++j) p.put((c.rank + j) % N, s, mine);
  }
  announce(c);
  uint64_t v;
  if (!data || !p.template reduceSlotAll<T, OP, N>(s, mine, v)) return;
  char* out = reinterpret_cast<char*>(a.recv);
  storeWord8(out, s, v, bytes, whole8(reinterpret_cast<const void*>(a.send), out, bytes));
}

// The small path's bodies: N = 2, 4, 8, each with SUM compiled in (the sum of gradients and counts,
// the call that small-message latency is about) and with the op read at run time (the other ops: a
// uniform branch per element; a body per op and group size would add a third to the fatbin).
template <typename T, uint32_t N> __device__ __forceinline__ void allReduceSmallOp(const GcArgs& a, uint64_t epoch, uint64_t mine) {
  if (a.op == GC_OP_SUM) allReduceSmall<T, GC_OP_SUM, N>(a, epoch, mine);
  else allReduceSmall<T, kRuntimeOp, N>(a, epoch, mine);
}

// ------------------------------------------------------------------ batch: several one-shot allReduces, one launch

// The calls of a GcBatch packed into one LL message: call i's payload at slots first[i] .. (whole
// slots, so a call's bytes sit exactly as in its own one-shot call). The spare warp (the last of
// block 0) moves no data: it carries the batch's signature (kernel_abi.h section 6).
struct PackedCalls {
  const GcBatch& b;
  uint32_t esz;
  __device__ PackedCalls(const GcBatch& batch, uint32_t elemBytes) : b(batch), esz(elemBytes) {}
  __device__ uint64_t bytesOf(uint32_t i) const { return (uint64_t)b.count[i] * esz; }
  __device__ uint64_t slotsOf(uint32_t i) const { return ceilDiv(bytesOf(i), 8); }
  // The call holding slot g: the last i with first[i] <= g (binary search over <= 64 entries).
  __device__ uint32_t callOf(uint32_t g) const {
    uint32_t lo = 0, hi = b.calls;
    while (hi - lo > 1) {
      const uint32_t mid = (lo + hi) / 2;
      if (b.first[mid] <= g) lo = mid; else hi = mid;
    }
    return lo;
  }
  // The data threads: every thread of the grid but the spare warp, numbered without it.
  static __device__ bool spareWarp() { return blockIdx.x == 0 && inLastWarp(); }
  static __device__ uint64_t dataThread() { return tid() - (blockIdx.x > 0 ? 32u : 0u); }
  static __device__ uint64_t dataThreads() { return nthreads() - 32u; }
  // Slot g's place: its call i, offset in the call's buffers, bytes (0 for a slot between calls).
  __device__ uint32_t locate(uint32_t g, uint32_t& i) const {
    i = callOf(g);
    const uint64_t j = g - b.first[i];
    return j < slotsOf(i) ? min32(bytesOf(i) - 8 * j, 8) : 0;
  }
};

// The signature every rank of a batch launch must share: the recorded batch's hash and this launch's
// own layout (calls, counts, type, op). Computed by the 32 lanes of the spare warp.
__device__ __forceinline__ uint64_t mix64(uint64_t x) {
  x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ull; x ^= x >> 27; x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
__device__ uint64_t batchSignature(const GcArgs& a, const GcBatch& b) {
  uint64_t h = 0;
  for (uint32_t i = threadIdx.x & 31; i < b.calls; i += 32) h ^= mix64(((uint64_t)i << 32 | b.count[i]) + 0x9e3779b97f4a7c15ull);
  for (int d = 16; d > 0; d /= 2) h ^= __shfl_xor_sync(0xffffffffu, h, d);
  return mix64(h ^ mix64(b.hash) ^ ((uint64_t)b.calls << 40 | (uint64_t)a.dtype << 8 | a.op));
}

// The spare warp: signature packet to every peer, fence, arrival words (so a peer that sees this
// epoch's arrival sees the packet too); then every peer's packet of this epoch compared with mine.
// The lowest peer whose batch differs, or that arrived at this epoch without a packet (it runs
// another kernel), is recorded as GC_ERR_BATCH_MISMATCH. Waiting for every peer's packet also gives
// the no-barrier invariant (every peer started this epoch) without finishArrivals.
__device__ void checkBatchSignatures(const Ctx& c, uint32_t flag, uint64_t sig) {
  const uint32_t p = threadIdx.x & 31;
  const uint64_t at = GC_WS_BATCH_SIG + 16ull * (c.half() * GC_MAX_RANKS + c.rank);
  const bool peer = p < c.n && p != c.rank;
  if (peer) stVolatile4(c.ws(p) + at, (uint32_t)sig, flag, (uint32_t)(sig >> 32), flag);
  __threadfence_system();
  if (peer) st64(c.ws(p) + GC_WS_ARRIVED + 8u * c.rank, c.epoch);
  uint32_t verdict = 0;  // 0 same, 1 signature differs, 2 another kernel, 3 gave up (recorded)
  uint64_t theirs = 0;
  if (peer) {
    const char* mine = c.own() + GC_WS_BATCH_SIG + 16ull * (c.half() * GC_MAX_RANKS + p);
    Spinner sp;
    for (bool arrived = false;;) {
      const uint4 u = ldVolatile4(mine);
      if (u.y == flag && u.w == flag) {
        theirs = (uint64_t)u.x | ((uint64_t)u.z << 32);
        verdict = theirs == sig ? 0 : 1;
        break;
      }
      if (arrived) { verdict = 2; break; }  // arrived before this load, yet no packet: not a batch kernel
      arrived = ldAcquire64(c.own() + GC_WS_ARRIVED + 8u * p) >= c.epoch;
      if (!arrived && !sp.keepWaiting(c, p, flag, u.y)) { verdict = 3; break; }
    }
  }
  const uint32_t differ = __ballot_sync(0xffffffffu, verdict == 1 || verdict == 2);
  if (differ != 0 && p == (uint32_t)(__ffs(differ) - 1))
    c.recordError(GC_ERR_BATCH_MISMATCH, p, sig, theirs, verdict == 2 ? 1 : 0);
}

// Batch allReduce (kernel_abi.h section 6): the one-shot recipe over the packed message, every slot of
// every call spread over all data threads at once (not call after call on the same threads).
template <typename T, uint32_t OP> __device__ void allReduceBatch(const GcArgs& a, const GcBatch& b, uint64_t epoch) {
  Ctx c(a, GC_KERNEL_ID(GC_COLL_ALLREDUCE, GC_PROTO_LL_BATCH), epoch);
  if (!validate(c, DtypeOf<T>::value, true)) return;
  if (b.calls == 0 || b.calls > GC_MAX_BATCH_CALLS || b.slots > GC_LL_SLOTS) {
    if (threadIdx.x == 0) c.recordError(GC_ERR_BAD_ARGS, GC_NO_PEER, 0, b.calls, kBadBatch);
    return;
  }
  ProtoLL p(c, 0);
  const PackedCalls m(b, sizeof(T));
  if (PackedCalls::spareWarp()) {
    if (c.n > 1) checkBatchSignatures(c, p.flag, batchSignature(a, b));
    return;
  }
  uint32_t i;
  for (uint64_t g = PackedCalls::dataThread(); g < b.slots; g += PackedCalls::dataThreads()) {
    const uint32_t nb = m.locate((uint32_t)g, i);
    const char* in = reinterpret_cast<const char*>(b.send[i]) + 8 * (g - b.first[i]);
    if (nb == 0) continue;
    if (c.n == 1) storeBytes8(reinterpret_cast<char*>(b.recv[i]) + 8 * (g - b.first[i]), loadBytes8(in, nb), nb);
    else p.template copySendSlot<T>(in, nb, g);
  }
  if (c.n == 1) return;
  for (uint64_t g = PackedCalls::dataThread(); g < b.slots; g += PackedCalls::dataThreads()) {
    const uint32_t nb = m.locate((uint32_t)g, i);
    const uint64_t off = 8 * (g - b.first[i]);
    if (nb != 0 && !p.template recvReduceCopySlot<T, OP>(reinterpret_cast<const char*>(b.send[i]) + off,
                                                          reinterpret_cast<char*>(b.recv[i]) + off, nb, g))
      return;
  }
}

// ------------------------------------------------------------------ MAXLOC / MINLOC (kernel_abi.h section 7)

// A value-index pair, the C struct {V value; I index;}: two slots of the wider type's width, so one
// LL packet (8 bytes) or two (16). The winner's bytes go out as they came in, padding included.
template <typename V, typename I> struct PairOf {
  static constexpr uint32_t kIndexAt = sizeof(V) > sizeof(I) ? sizeof(V) : sizeof(I);
  static constexpr uint32_t kBytes = 2 * kIndexAt, kSlots = kBytes / 8;
  static __device__ V value(const U16& u) { return fromBits<V>(u.lo); }
  static __device__ I index(const U16& u) { return fromBits<I>(kIndexAt == 4 ? u.lo >> 32 : u.hi); }
  static __device__ bool nan(const U16& u) { const V v = value(u); return v != v; }
  // A larger (MAXLOC) or smaller (MINLOC) value, or an equal one (-0.0 == +0.0) with a lower index.
  static __device__ bool beats(const U16& x, const U16& best, uint32_t op) {
    const V a = value(x), b = value(best);
    return (op == GC_LOC_MAXLOC ? a > b : a < b) || (a == b && index(x) < index(best));
  }
};

// Rank r's pair i: the own one from the input, a peer's from its packets (awaited).
template <class Pr> __device__ __forceinline__ bool loadPair(const ProtoLL& p, uint32_t r, uint64_t i, const char* in, U16& x) {
  if (r == p.c.rank) {
    x = loadBytes16(in + i * Pr::kBytes, Pr::kBytes);
    return true;
  }
  x.hi = 0;
  return p.awaitSlot(r, i * Pr::kSlots, x.lo) && (Pr::kSlots == 1 || p.awaitSlot(r, i * Pr::kSlots + 1, x.hi));
}

// validate()'s checks (GcArgs.dtype is the pair type), one block, the pair reduction, the capacity.
template <class Pr> __device__ bool pairArgsOk(const Ctx& c, uint32_t ptype) {
  if (!validate(c, ptype, false)) return false;
  const uint32_t bad = gridDim.x != 1 ? kBadGeometry : c.a->op >= GC_LOC_COUNT ? kBadOp : 0;
  const bool fits = c.a->count <= gc_pair_kernel_max_count(GC_COLL_ALLREDUCE, GC_PROTO_LL_PAIR, ptype);
  if (__builtin_expect(bad == 0 && fits, 1)) return true;
  if (threadIdx.x == 0) {
    if (bad != 0) c.recordError(GC_ERR_BAD_ARGS, GC_NO_PEER, 0, c.a->op, bad);
    else c.recordError(GC_ERR_CAPACITY, GC_NO_PEER, 0, c.a->count * Pr::kBytes, c.a->count * Pr::kBytes);
  }
  return false;
}

// MAXLOC / MINLOC: the one-shot LL recipe over pairs, in ONE block. A pivot search moves a few pairs,
// and one block lets its threads agree through shared memory on the lowest (rank, pair) holding a
// NaN before anything is written: every rank records the same one and, as the host fold, leaves recv
// untouched. Pass 1 awaits every packet (so the kernel ends only after every peer started this
// epoch) and looks for NaN; pass 2 re-reads the packets, present by then, and folds in rank order.
template <typename V, typename I, uint32_t PT> __device__ void allReducePairs(const GcArgs& a, uint64_t epoch) {
  using Pr = PairOf<V, I>;
  Ctx c(a, GC_KERNEL_ID(GC_COLL_ALLREDUCE, GC_PROTO_LL_PAIR), epoch);
  if (!pairArgsOk<Pr>(c, PT)) return;
  const ProtoLL p(c, 0);
  const char* in = reinterpret_cast<const char*>(a.send);
  char* out = reinterpret_cast<char*>(a.recv);
  p.template copySend<uint8_t>(in, a.count * Pr::kBytes, p.first(), kPhaseScatter);
  announce(c);
  if (a.count == 0) return finishArrivals(c);
  __shared__ uint32_t sFirstNan;  // rank << 20 | pair (count <= GC_LL_SLOTS)
  if (threadIdx.x == 0) sFirstNan = ~0u;
  __syncthreads();
  bool ok = true;
  U16 x;
  for (uint64_t i = threadIdx.x; ok && i < a.count; i += blockDim.x)
    for (uint32_t r = 0; ok && r < c.n; ++r)
      if ((ok = loadPair<Pr>(p, r, i, in, x)) && Pr::nan(x)) atomicMin(&sFirstNan, r << 20 | (uint32_t)i);
  if (__syncthreads_or(!ok)) return;  // a wait gave up (recorded)
  if (sFirstNan != ~0u) {
    const uint32_t r = sFirstNan >> 20, i = sFirstNan & 0xFFFFFu;
    if (threadIdx.x == 0 && loadPair<Pr>(p, r, i, in, x))
      c.recordError(GC_ERR_NAN, r, (uint64_t)PT << 8 | a.op, (uint64_t)(int64_t)Pr::index(x), i);
    return;
  }
  for (uint64_t i = threadIdx.x; i < a.count; i += blockDim.x) {
    U16 best;
    loadPair<Pr>(p, 0, i, in, best);
    for (uint32_t r = 1; r < c.n; ++r)
      if (loadPair<Pr>(p, r, i, in, x) && Pr::beats(x, best, a.op)) best = x;
    storeBytes16(out + i * Pr::kBytes, best, Pr::kBytes);
  }
}

// Two-shot allReduce: reduce-scatter (owner o reduces segment o in rank order), then all-gather of
// the owners' results. (Protocols sentinel, LL128, pipe.)
template <class P, typename T, uint32_t OP> __device__ void allReduceTwoShot(const GcArgs& a, uint64_t epoch) {
  Ctx c(a, GC_KERNEL_ID(GC_COLL_ALLREDUCE, ProtoId<P>::value), epoch);
  const uint64_t bytes = a.count * sizeof(T);
  if (idleWarp<P>(bytes)) return;
  const uint64_t seg = a.nranks > 0 && a.nranks <= GC_MAX_RANKS ? P::template segmentBytes<T>(a.count, a.nranks) : 0;
  P p(c, seg);
  if (!reductionArgsOk<P, T>(c, p, bytes) || (P::kShiftsEpoch && !epochFitsShiftedFlags(c))) return;
  announce(c);
  const char* in = reinterpret_cast<const char*>(a.send);
  char* out = reinterpret_cast<char*>(a.recv);
  if (c.n == 1) return copyBytes(out, in, bytes);
  const uint64_t mine = c.rank * seg >= bytes ? 0 : (bytes - c.rank * seg < seg ? bytes - c.rank * seg : seg);
  Step s = p.first();
  for (; s.off < seg; s = p.next(s)) {
    if (!p.template scatterSend<T>(in, bytes, seg, s, kPhaseScatter)) return;
    if (!p.template recvReduceCopySend<T, OP>(in + c.rank * seg + s.off, out + c.rank * seg + s.off, s.len(mine), s))
      return;
  }
  for (Step t = p.first(s.round); t.off < seg; t = p.next(t)) {
    if (!P::kGatherSentByReduce && !p.template copySend<T>(out + c.rank * seg + t.off, t.len(mine), t, kPhaseGather)) return;
    if (!p.template gatherRecv<T>(out, bytes, seg, t, kPhaseGather)) return;
  }
  if ((c.n - 1) * seg >= bytes) finishArrivals(c);  // some rank owned nothing: it did not hear from all
}

// Reduce-scatter: segment o of my input to rank o; my segment reduced over ranks 0..n-1.
template <class P, typename T, uint32_t OP> __device__ void reduceScatter(const GcArgs& a, uint64_t epoch) {
  Ctx c(a, GC_KERNEL_ID(GC_COLL_REDUCESCATTER, ProtoId<P>::value), epoch);
  const uint64_t seg = a.count * sizeof(T);
  if (idleWarp<P>(seg)) return;
  P p(c, seg);
  if (!reductionArgsOk<P, T>(c, p, seg) || (P::kShiftsEpoch && !epochFitsShiftedFlags(c))) return;
  if (!P::kAnnounceAfterSends) announce(c);
  const char* in = reinterpret_cast<const char*>(a.send);
  char* out = reinterpret_cast<char*>(a.recv);
  if (c.n == 1) return copyBytes(out, in, seg);
  for (Step s = p.first(); s.off < seg; s = p.next(s)) {
    for (uint32_t j = 1; j < c.n; ++j) {
      const uint32_t o = (c.rank + j) % c.n;
      if (!p.template send<T>(o, in + o * seg + s.off, s.len(seg), s, kPhaseScatter)) return;
    }
    if (P::kAnnounceAfterSends && s.off == 0) announce(c);
    if (!p.template recvReduceCopy<T, OP>(in + c.rank * seg + s.off, out + s.off, s.len(seg), s, kPhaseScatter)) return;
  }
  if (seg == 0) {  // nothing heard from the peers
    if (P::kAnnounceAfterSends) announce(c);
    finishArrivals(c);
  }
}

// Data movement (allGather, allToAll, allToAllv, broadcast): every peer's bytes as Layout says; the
// own part is a local copy.
template <class P> __device__ void movement(const GcArgs& a, uint32_t coll, uint64_t epoch) {
  Ctx c(a, GC_KERNEL_ID(coll, ProtoId<P>::value), epoch);
  // allToAllv's per-peer sizes are known only after its offsets are read; the others move count
  // elements per peer, at most 8 bytes each (an upper bound needs no type lookup).
  if (coll != GC_COLL_ALLTOALLV && a.count < (1ull << 40) && idleWarp<P>(a.count * 8)) return;
  if (!validate(c, GC_DT_COUNT, false) || (P::kShiftsEpoch && !epochFitsShiftedFlags(c))) return;
  Layout L(a, coll);
  if (!L.validOffsets()) {
    if (threadIdx.x == 0) c.recordError(GC_ERR_BAD_ARGS, GC_NO_PEER, 0, 0, kBadGeometry);
    return;
  }
  if (coll == GC_COLL_BROADCAST && a.root >= a.nranks) {
    if (threadIdx.x == 0) c.recordError(GC_ERR_BAD_ARGS, GC_NO_PEER, 0, a.root, kBadRank);
    return;
  }
  P p(c, 0);
  const uint64_t maxBytes = L.maxPeerBytes();
  if (!capacityOk<P, uint8_t>(c, p, maxBytes)) return;
  if (!P::kAnnounceAfterSends) announce(c);
  const char* in = reinterpret_cast<const char*>(a.send);
  char* out = reinterpret_cast<char*>(a.recv);
  bool announced = !P::kAnnounceAfterSends;
  for (Step s = p.first(); s.off < maxBytes; s = p.next(s)) {
    for (uint32_t j = 0; j < c.n; ++j) {
      const uint32_t q = (c.rank + j) % c.n;
      const uint64_t len = s.len(L.sendBytes(q));
      if (q == c.rank) p.copy(s, out + L.recvOff(q) + s.off, in + L.sendOff(q) + s.off, len);
      else if (!p.template send<uint8_t>(q, in + L.sendOff(q) + s.off, len, s, kPhaseScatter)) return;
    }
    if (!announced) { announce(c); announced = true; }
    for (uint32_t j = 1; j < c.n; ++j) {
      const uint32_t q = (c.rank + c.n - j) % c.n;
      if (!p.template recv<uint8_t>(q, out + L.recvOff(q) + s.off, s.len(L.recvBytes(q)), s, kPhaseScatter)) return;
    }
  }
  if (!announced) announce(c);
  if (c.n > 1 && !L.receivesFromAll()) finishArrivals(c);
}

// ------------------------------------------------------------------ barrier

__device__ void barrierKernel(const GcArgs& a, uint64_t epoch) {
  Ctx c(a, GC_KERNEL_ID(GC_COLL_BARRIER, GC_PROTO_FLAG_BARRIER), epoch);
  if (!prologue(c, GC_DT_COUNT, false) || !epochFitsShiftedFlags(c) || c.n == 1) return;
  flagBarrier(c, (c.epoch << 24) + 1);
}

}  // namespace gc

// ------------------------------------------------------------------ instantiation

namespace gc {

// Every kernel: wait for the predecessor (dependent launch), take this launch's epoch (and record it
// for the next launch, kernel_abi.h section 3) with the body's early load issued beside the epoch
// word's (data that needs no epoch: its latency then overlaps the epoch word's instead of following
// it), let the successor launch, run the body with the early word.
template <typename Early, typename Body> __device__ __forceinline__ void runLaunch(const GcArgs& a, Early early, Body body) {
  waitForPredecessor();
  uint64_t word;
  const uint64_t epoch = beginEpoch(a, early, word);
  allowSuccessorLaunch();
  body(epoch, word);
}
template <typename Body> __device__ __forceinline__ void runLaunch(const GcArgs& a, Body body) {
  runLaunch(a, [] { return uint64_t{0}; }, [&](uint64_t epoch, uint64_t) { body(epoch); });
}

// The small path if the size rule takes the call (true), else nothing (false).
template <typename T> __device__ __forceinline__ bool allReduceIfSmall(const GcArgs& a, uint64_t epoch, uint64_t mine) {
  switch (smallRanks<T>(a)) {
    case 2: allReduceSmallOp<T, 2>(a, epoch, mine); return true;
    case 4: allReduceSmallOp<T, 4>(a, epoch, mine); return true;
    case 8: allReduceSmallOp<T, 8>(a, epoch, mine); return true;
    default: return false;
  }
}
// The one-shot allReduce: the small path, else the recipe with the op fixed per body (one runtime
// switch per launch instead of one per element). Only for the one-shot allReduce, where the reduction
// sits on the latency path of every small call; the other bodies read the op per element (it costs
// little next to their data movement, and one body per op would multiply the fatbin's compile time).
template <class P, typename T> __device__ __forceinline__ void allReduceOneShotOp(const GcArgs& a, uint64_t epoch, uint64_t mine) {
  if (allReduceIfSmall<T>(a, epoch, mine)) return;
  switch (a.op) {
    case GC_OP_PROD: return allReduceOneShot<P, T, GC_OP_PROD>(a, epoch);
    case GC_OP_MIN: return allReduceOneShot<P, T, GC_OP_MIN>(a, epoch);
    case GC_OP_MAX: return allReduceOneShot<P, T, GC_OP_MAX>(a, epoch);
    case GC_OP_AVG: return allReduceOneShot<P, T, GC_OP_AVG>(a, epoch);
    default: return allReduceOneShot<P, T, GC_OP_SUM>(a, epoch);  // validate() rejects unknown ops
  }
}

template <typename T> __device__ __forceinline__ void allReduceBatchOp(const GcArgs& a, const GcBatch& b, uint64_t epoch) {
  switch (a.op) {
    case GC_OP_PROD: return allReduceBatch<T, GC_OP_PROD>(a, b, epoch);
    case GC_OP_MIN: return allReduceBatch<T, GC_OP_MIN>(a, b, epoch);
    case GC_OP_MAX: return allReduceBatch<T, GC_OP_MAX>(a, b, epoch);
    case GC_OP_AVG: return allReduceBatch<T, GC_OP_AVG>(a, b, epoch);
    default: return allReduceBatch<T, GC_OP_SUM>(a, b, epoch);  // validate() rejects unknown ops
  }
}

// Body<collective, protocol>::run<T>: what the kernel table's (collective, protocol) kernel runs. The
// kernels themselves come from the table's X-macro lists (kernel_table.h), so a kernel exists exactly
// when the table names it. T is void for the kernels that take every type (data movement, barrier).
// early<T>(a) is the word a body loads before the epoch (runLaunch); most load none.
template <uint32_t COLL, uint32_t PROTO> struct Body;
struct NoEarlyLoad {
  template <typename T> static __device__ uint64_t early(const GcArgs&) { return 0; }
};
template <> struct Body<GC_COLL_ALLREDUCE, GC_PROTO_LL> {
  template <typename T> static __device__ uint64_t early(const GcArgs& a) { return smallInputWord<T>(a); }
  template <typename T> static __device__ void run(const GcArgs& a, uint64_t e, uint64_t w) { allReduceOneShotOp<ProtoLL, T>(a, e, w); }
};
template <> struct Body<GC_COLL_ALLREDUCE, GC_PROTO_SENTINEL> : NoEarlyLoad {
  template <typename T> static __device__ void run(const GcArgs& a, uint64_t e, uint64_t) { allReduceTwoShot<ProtoSentinel, T, kRuntimeOp>(a, e); }
};
template <> struct Body<GC_COLL_ALLREDUCE, GC_PROTO_LL128> : NoEarlyLoad {
  template <typename T> static __device__ void run(const GcArgs& a, uint64_t e, uint64_t) { allReduceTwoShot<ProtoLL128, T, kRuntimeOp>(a, e); }
};
template <> struct Body<GC_COLL_ALLREDUCE, GC_PROTO_PIPE> : NoEarlyLoad {
  template <typename T> static __device__ void run(const GcArgs& a, uint64_t e, uint64_t) { allReduceTwoShot<ProtoPipe, T, kRuntimeOp>(a, e); }
};
template <> struct Body<GC_COLL_REDUCESCATTER, GC_PROTO_LL> : NoEarlyLoad {
  template <typename T> static __device__ void run(const GcArgs& a, uint64_t e, uint64_t) { reduceScatter<ProtoLL, T, kRuntimeOp>(a, e); }
};
template <> struct Body<GC_COLL_REDUCESCATTER, GC_PROTO_PIPE> : NoEarlyLoad {
  template <typename T> static __device__ void run(const GcArgs& a, uint64_t e, uint64_t) { reduceScatter<ProtoPipe, T, kRuntimeOp>(a, e); }
};
template <uint32_t COLL> struct Body<COLL, GC_PROTO_LL> : NoEarlyLoad {
  template <typename T> static __device__ void run(const GcArgs& a, uint64_t e, uint64_t) { movement<ProtoLL>(a, COLL, e); }
};
template <uint32_t COLL> struct Body<COLL, GC_PROTO_PIPE> : NoEarlyLoad {
  template <typename T> static __device__ void run(const GcArgs& a, uint64_t e, uint64_t) { movement<ProtoPipe>(a, COLL, e); }
};
template <> struct Body<GC_COLL_BARRIER, GC_PROTO_FLAG_BARRIER> : NoEarlyLoad {
  template <typename T> static __device__ void run(const GcArgs& a, uint64_t e, uint64_t) { barrierKernel(a, e); }
};

}  // namespace gc

// One extern "C" kernel per entry of a kernel-table X-macro list (kernel_table.h).
#define GC_KERNEL extern "C" __global__ void __launch_bounds__(GC_BLOCK_THREADS, 2)
#define GC_DEFINE_TYPED_KERNEL(name, coll, proto, T) \
  GC_KERNEL name(const __grid_constant__ GcArgs a) { \
    using B = gc::Body<coll, proto>; \
    gc::runLaunch(a, [&] { return B::template early<T>(a); }, [&](uint64_t epoch, uint64_t w) { B::template run<T>(a, epoch, w); }); \
  }
#define GC_DEFINE_UNTYPED_KERNEL(name, coll, proto) GC_DEFINE_TYPED_KERNEL(name, coll, proto, void)
// The pair kernels (MAXLOC / MINLOC, kernel_abi.h section 7): the pair type's code, value and index types.
#define GC_DEFINE_PAIR_KERNEL(name, coll, proto, PT, V, I) \
  GC_KERNEL name(const __grid_constant__ GcArgs a) { \
    gc::runLaunch(a, [&](uint64_t epoch) { gc::allReducePairs<V, I, PT>(a, epoch); }); \
  }
// The batch kernels (capacity "packed"): GcArgs and GcBatch (kernel_abi.h section 6).
#define GC_DEFINE_BATCH_KERNEL(name, coll, proto, T) \
  GC_KERNEL name(const __grid_constant__ GcArgs a, const __grid_constant__ GcBatch b) { \
    gc::runLaunch(a, [&](uint64_t epoch) { gc::allReduceBatchOp<T>(a, b, epoch); }); \
  }
