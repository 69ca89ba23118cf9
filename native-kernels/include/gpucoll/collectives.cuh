// gpucoll collectives, each a short recipe over the primitives of gpucoll/primitives.cuh; the kernels
// that run them are instantiated from the kernel table (src/gpucoll_kernels.cu for the shipped fatbin,
// test/gpucoll_bench.cu for the benchmark one). Launch contract: gpucoll/kernel_abi.h.
#pragma once

#include "gpucoll/kernel_abi.h"
#include "gpucoll/primitives.cuh"

namespace gc {

constexpr uint32_t kBadNranks = 1, kBadRank = 2, kBadEpoch = 3, kBadGeometry = 4, kBadPeers = 5,
                   kBadDtype = 6, kBadOp = 7;

template <typename T> struct DtypeOf;
template <> struct DtypeOf<float> { static constexpr uint32_t value = GC_DT_FLOAT32; };
template <> struct DtypeOf<double> { static constexpr uint32_t value = GC_DT_FLOAT64; };
template <> struct DtypeOf<__half> { static constexpr uint32_t value = GC_DT_FLOAT16; };
template <> struct DtypeOf<__nv_bfloat16> { static constexpr uint32_t value = GC_DT_BFLOAT16; };
template <> struct DtypeOf<int32_t> { static constexpr uint32_t value = GC_DT_INT32; };
template <> struct DtypeOf<int64_t> { static constexpr uint32_t value = GC_DT_INT64; };
template <> struct DtypeOf<int8_t> { static constexpr uint32_t value = GC_DT_INT8; };
template <> struct DtypeOf<uint8_t> { static constexpr uint32_t value = GC_DT_UINT8; };

__device__ __forceinline__ uint64_t tid() { return (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ uint64_t nthreads() { return (uint64_t)gridDim.x * blockDim.x; }
__device__ __forceinline__ uint64_t ceilDiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }
__device__ __forceinline__ uint32_t min32(uint64_t a, uint32_t b) { return a < b ? (uint32_t)a : b; }

// Argument checks shared by every kernel; the first failing block records GC_ERR_BAD_ARGS. The epoch is
// not checked here: reading it would wait for the epoch word's load before the first data load is
// issued. Epochs are >= 1 by construction; kernels whose flags shift the epoch check its range.
// dtype == GC_DT_COUNT means "any known type" (data movement).
__device__ bool validate(const Ctx& c, uint32_t dtype, bool reduction) {
  const GcArgs& a = *c.a;
  uint32_t bad = 0;
  if (a.nranks == 0 || a.nranks > GC_MAX_RANKS) bad = kBadNranks;
  else if (a.rank >= a.nranks) bad = kBadRank;
  else if (blockDim.x != GC_BLOCK_THREADS || gridDim.x > GC_MAX_BLOCKS) bad = kBadGeometry;
  else if (dtype == GC_DT_COUNT ? gc_dtype_size(a.dtype) == 0 : a.dtype != dtype) bad = kBadDtype;
  else if (reduction && a.op > GC_OP_AVG) bad = kBadOp;
  else
#pragma unroll
    for (uint32_t r = 0; r < GC_MAX_RANKS; ++r)
      if (r < a.nranks && a.peers[r] == 0) bad = kBadPeers;
  if (bad && threadIdx.x == 0) c.recordError(GC_ERR_BAD_ARGS, GC_NO_PEER, 0, 0, bad);
  return bad == 0;
}
__device__ bool withinCapacity(const Ctx& c, uint64_t bytes, uint64_t capacity) {
  if (bytes <= capacity) return true;
  if (threadIdx.x == 0) c.recordError(GC_ERR_CAPACITY, GC_NO_PEER, capacity, bytes, bytes);
  return false;
}

// Grid-stride copy in 16-byte units (one rank: every collective is a copy).
__device__ void copyBytes(char* dst, const char* src, uint64_t bytes) {
  if (dst == src) return;
  for (uint64_t u = tid(); u * 16 < bytes; u += nthreads()) {
    uint32_t nb = min32(bytes - u * 16, 16);
    storeBytes16(dst + u * 16, loadBytes16(src + u * 16, nb), nb);
  }
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

// Kernels whose flags are (epoch << 24) | round need epoch < 2^40.
__device__ bool epochFitsShiftedFlags(const Ctx& c) {
  if ((c.epoch >> 40) == 0) return true;
  if (threadIdx.x == 0) c.recordError(GC_ERR_BAD_ARGS, GC_NO_PEER, 0, c.epoch, kBadEpoch);
  return false;
}

__device__ bool prologue(const Ctx& c, uint32_t dtype, bool reduction) {
  if (!validate(c, dtype, reduction)) return false;
  announce(c);
  return true;
}

// ------------------------------------------------------------------ allReduce

// One-shot: bcast my slots to every rank, recvReduce every slot from all ranks. No barrier, no
// arrival wait (it receives from every peer). OP is the compile-time op (GcArgs.op, dispatched once).
template <typename T, uint32_t OP> __device__ void allReduceLL(const GcArgs& a, uint64_t epoch) {
  Ctx c(a, GC_KERNEL_ID(GC_COLL_ALLREDUCE, GC_PROTO_LL), epoch);
  const uint64_t bytes = a.count * sizeof(T);
  if (!validate(c, DtypeOf<T>::value, true) || !withinCapacity(c, bytes, GC_LL_MAX_BYTES)) return;
  const char* in = reinterpret_cast<const char*>(a.send);
  char* out = reinterpret_cast<char*>(a.recv);
  if (c.n == 1) return copyBytes(out, in, bytes);
  LLBuffer ll(c);
  const uint64_t slots = ceilDiv(bytes, 8);
  // Sends first, arrival word after: the first use of the epoch (loaded at launch) comes after the
  // input load has been issued, so the two loads overlap.
  for (uint64_t s = tid(); s < slots; s += nthreads()) ll.bcast(s, loadBytes8(in + 8 * s, min32(bytes - 8 * s, 8)));
  announce(c);
  if (bytes == 0) return finishArrivals(c);
  for (uint64_t s = tid(); s < slots; s += nthreads()) {
    uint64_t v;
    if (!ll.recvReduce<T>(s, OP, v)) return;
    storeBytes8(out + 8 * s, v, min32(bytes - 8 * s, 8));
  }
}

// Two-shot: reduce-scatter then all-gather of 16-byte units over sentinel-prefilled, double-buffered
// regions. Owner o reduces units [o*P, o*P+P) in rank order and sends the result to every rank.
template <typename T> __device__ void allReduceSentinel(const GcArgs& a, uint64_t epoch) {
  Ctx c(a, GC_KERNEL_ID(GC_COLL_ALLREDUCE, GC_PROTO_SENTINEL), epoch);
  const uint64_t bytes = a.count * sizeof(T);
  if (!prologue(c, DtypeOf<T>::value, true) || !withinCapacity(c, bytes, GC_SENT_MAX_BYTES)) return;
  const char* in = reinterpret_cast<const char*>(a.send);
  char* out = reinterpret_cast<char*>(a.recv);
  if (c.n == 1) return copyBytes(out, in, bytes);
  Sentinel sent(c);
  const uint64_t units = ceilDiv(bytes, 16), per = ceilDiv(units, c.n);
  for (uint64_t u = tid(); u < units; u += nthreads())  // reduce-scatter: my unit u to its owner
    sent.send(u / per, 0, u % per, loadBytes16(in + 16 * u, min32(bytes - 16 * u, 16)));
  const uint64_t first = c.rank * per, mine = units > first ? (units - first < per ? units - first : per) : 0;
  for (uint64_t i = tid(); i < mine; i += nthreads()) {
    Lanes<T, 16> acc;
    for (uint32_t r = 0; r < c.n; ++r) {
      U16 x;
      if (!sent.recv(r, 0, i, x)) return;
      if (r == 0) acc.load(x); else acc.add(x, a.op);
    }
    U16 y = acc.store(a.op, c.n);
    for (uint32_t p = 0; p < c.n; ++p)
      if (p != c.rank) sent.send(p, 1, i, y);
    storeBytes16(out + 16 * (first + i), y, min32(bytes - 16 * (first + i), 16));
  }
  for (uint64_t u = tid(); u < units; u += nthreads()) {  // all-gather: everyone else's units
    const uint32_t owner = static_cast<uint32_t>(u / per);
    if (owner == c.rank) continue;
    U16 x;
    if (!sent.recv(owner, 1, u % per, x)) return;
    storeBytes16(out + 16 * u, x, min32(bytes - 16 * u, 16));
  }
  if (units == 0 || (c.n - 1) * per >= units) finishArrivals(c);  // some rank owned no unit
}

template <typename A> __device__ __forceinline__ A loadVolatile(const char* p) { return *reinterpret_cast<const volatile A*>(p); }

// LL128-atomic: a warp per 128-byte line. Reduce-scatter by hardware atomics into the owner's line
// (owner = line % n) plus a counter; the owner waits for counter == n, clears the line for the next
// use of this parity, and publishes the sum to every rank's all-gather line (epoch in the header).
template <typename T> __device__ void allReduceLL128(const GcArgs& a, uint64_t epoch) {
  using A = typename Acc<T>::type;
  Ctx c(a, GC_KERNEL_ID(GC_COLL_ALLREDUCE, GC_PROTO_LL128), epoch);
  if (!prologue(c, DtypeOf<T>::value, true)) return;
  if (a.op != GC_OP_SUM && a.op != GC_OP_AVG) {
    if (threadIdx.x == 0) c.recordError(GC_ERR_BAD_ARGS, GC_NO_PEER, 0, a.op, kBadOp);
    return;
  }
  const uint32_t epl = GC_LL128_ELEMS_PER_LINE(DtypeOf<T>::value);
  const uint64_t lines = ceilDiv(a.count, epl);
  if (!withinCapacity(c, lines, GC_LL128_MAX_LINES)) return;
  const T* in = reinterpret_cast<const T*>(a.send);
  T* out = reinterpret_cast<T*>(a.recv);
  if (c.n == 1) return copyBytes(reinterpret_cast<char*>(out), reinterpret_cast<const char*>(in), a.count * sizeof(T));
  LL128 ll(c);
  const int lane = threadIdx.x & 31;
  const uint64_t warp = tid() / 32, warps = nthreads() / 32;
  for (uint64_t l = warp; l < lines; l += warps) {
    const uint64_t i = l * epl + lane;
    const bool active = lane < (int)epl && i < a.count;
    ll.add<A>(ll.rsLine(l % c.n, l / c.n), lane, active, active ? toAcc(in[i]) : A(0));
  }
  for (uint64_t k = warp; c.rank + k * c.n < lines; k += warps) {  // my lines: rank + k*n
    char* line = ll.rsLine(c.rank, k);
    if (!ll.waitFull(line, lane, GC_NO_PEER)) return;
    const bool active = lane < (int)epl;
    A v = active ? loadVolatile<A>(line + 8 + lane * sizeof(A)) : A(0);
    if (active) reinterpret_cast<volatile A*>(line + 8)[lane] = A(0);
    __syncwarp();
    if (lane == 0) st32(line, 0u);
    for (uint32_t p = 0; p < c.n; ++p) ll.put<A>(ll.agLine(p, c.rank + k * c.n), lane, active, v);
  }
  for (uint64_t l = warp; l < lines; l += warps) {
    const char* line = ll.agLine(c.rank, l);
    if (!ll.waitFlag(line, lane, static_cast<uint32_t>(l % c.n))) return;
    const uint64_t i = l * epl + lane;
    if (lane < (int)epl && i < a.count) out[i] = fromAcc<T>(finish(loadVolatile<A>(line + 8 + lane * sizeof(A)), a.op, c.n));
  }
  if (lines < c.n) finishArrivals(c);  // some rank owned no line
}

// ------------------------------------------------------------------ LL data movement / reduce-scatter

// Every peer's bytes through LL slots; the own part is a local copy. Arrival word after the sends
// (see allReduceLL).
__device__ bool llExchange(const Ctx& c, const Layout& L) {
  const char* in = reinterpret_cast<const char*>(c.a->send);
  char* out = reinterpret_cast<char*>(c.a->recv);
  LLBuffer ll(c);
  for (uint32_t j = 0; j < c.n; ++j) {
    const uint32_t p = (c.rank + j) % c.n;
    const uint64_t nb = L.sendBytes(p), off = L.sendOff(p);
    if (p == c.rank) { copyBytes(out + L.recvOff(p), in + off, nb); continue; }
    for (uint64_t s = tid(); s * 8 < nb; s += nthreads()) ll.send(p, s, loadBytes8(in + off + 8 * s, min32(nb - 8 * s, 8)));
  }
  announce(c);
  for (uint32_t j = 1; j < c.n; ++j) {
    const uint32_t p = (c.rank + c.n - j) % c.n;
    const uint64_t nb = L.recvBytes(p), off = L.recvOff(p);
    for (uint64_t s = tid(); s * 8 < nb; s += nthreads()) {
      uint64_t v;
      if (!ll.recv(p, s, v)) return false;
      storeBytes8(out + off + 8 * s, v, min32(nb - 8 * s, 8));
    }
  }
  return true;
}

__device__ void movementLL(const GcArgs& a, uint32_t coll, uint64_t epoch) {
  Ctx c(a, GC_KERNEL_ID(coll, GC_PROTO_LL), epoch);
  if (!validate(c, GC_DT_COUNT, false)) return;
  Layout L(a, coll);
  if (!L.validOffsets()) {
    if (threadIdx.x == 0) c.recordError(GC_ERR_BAD_ARGS, GC_NO_PEER, 0, 0, kBadGeometry);
    return;
  }
  if (coll == GC_COLL_BROADCAST && a.root >= a.nranks) {
    if (threadIdx.x == 0) c.recordError(GC_ERR_BAD_ARGS, GC_NO_PEER, 0, a.root, kBadRank);
    return;
  }
  if (!withinCapacity(c, L.maxPeerBytes(), GC_LL_MAX_BYTES)) return;
  if (llExchange(c, L) && !L.receivesFromAll()) finishArrivals(c);
}

// Segment p of my input to rank p; my segment reduced over ranks 0..n-1.
template <typename T> __device__ void reduceScatterLL(const GcArgs& a, uint64_t epoch) {
  Ctx c(a, GC_KERNEL_ID(GC_COLL_REDUCESCATTER, GC_PROTO_LL), epoch);
  const uint64_t bytes = a.count * sizeof(T);
  if (!validate(c, DtypeOf<T>::value, true) || !withinCapacity(c, bytes, GC_LL_MAX_BYTES)) return;
  const char* in = reinterpret_cast<const char*>(a.send);
  char* out = reinterpret_cast<char*>(a.recv);
  if (c.n == 1) return copyBytes(out, in, bytes);
  LLBuffer ll(c);
  const uint64_t slots = ceilDiv(bytes, 8);
  for (uint32_t j = 0; j < c.n; ++j) {
    const uint32_t p = (c.rank + j) % c.n;
    for (uint64_t s = tid(); s < slots; s += nthreads()) ll.send(p, s, loadBytes8(in + p * bytes + 8 * s, min32(bytes - 8 * s, 8)));
  }
  announce(c);
  if (bytes == 0) return finishArrivals(c);
  for (uint64_t s = tid(); s < slots; s += nthreads()) {
    uint64_t v;
    if (!ll.recvReduce<T>(s, a.op, v)) return;
    storeBytes8(out + 8 * s, v, min32(bytes - 8 * s, 8));
  }
}

// ------------------------------------------------------------------ pipe (any size, credits)

// Chunk k*B + b of the pair's bytes, one block per channel. Returns false on error.
__device__ bool pipeSendChunk(const Pipe& pipe, uint32_t dst, uint32_t half, uint64_t flag, const char* src, uint64_t nb) {
  bool ok;
  if (!pipe.acquireCredit(dst, half, ok)) return false;
  char* chunk = pipe.chunk(dst, pipe.c.rank, half);
  for (uint64_t u = threadIdx.x; u * 16 < nb; u += blockDim.x) {
    U16 x = loadBytes16(src + 16 * u, min32(nb - 16 * u, 16));
    *reinterpret_cast<uint4*>(chunk + 16 * u) = make_uint4((uint32_t)x.lo, (uint32_t)(x.lo >> 32), (uint32_t)x.hi, (uint32_t)(x.hi >> 32));
  }
  pipe.publish(dst, half, flag);
  return true;
}

// Sends then receives, round by round, for every pair whose bytes reach this block's chunk.
__device__ bool pipeExchange(const Ctx& c, const Layout& L, uint32_t& round) {
  const char* in = reinterpret_cast<const char*>(c.a->send);
  char* out = reinterpret_cast<char*>(c.a->recv);
  Pipe pipe(c);
  const uint64_t maxBytes = L.maxPeerBytes();
  for (uint64_t k = 0;; ++k, ++round) {
    const uint64_t off = (k * gridDim.x + blockIdx.x) * GC_PIPE_CHUNK_BYTES;
    if (off >= maxBytes) break;
    const uint32_t half = round & 1;
    const uint64_t flag = Pipe::flagValue(c.epoch, round);
    for (uint32_t j = 0; j < c.n; ++j) {
      const uint32_t p = (c.rank + j) % c.n;
      const uint64_t nb = L.sendBytes(p);
      if (off >= nb) continue;
      const uint64_t len = nb - off < GC_PIPE_CHUNK_BYTES ? nb - off : GC_PIPE_CHUNK_BYTES;
      if (p == c.rank) {
        char* dst = out + L.recvOff(p) + off;
        const char* src = in + L.sendOff(p) + off;
        if (dst != src)
          for (uint64_t u = threadIdx.x; u * 16 < len; u += blockDim.x)
            storeBytes16(dst + 16 * u, loadBytes16(src + 16 * u, min32(len - 16 * u, 16)), min32(len - 16 * u, 16));
        continue;
      }
      if (!pipeSendChunk(pipe, p, half, flag, in + L.sendOff(p) + off, len)) return false;
    }
    for (uint32_t j = 1; j < c.n; ++j) {
      const uint32_t p = (c.rank + c.n - j) % c.n;
      const uint64_t nb = L.recvBytes(p);
      if (off >= nb) continue;
      const uint64_t len = nb - off < GC_PIPE_CHUNK_BYTES ? nb - off : GC_PIPE_CHUNK_BYTES;
      if (!pipe.waitData(p, half, flag)) return false;
      const char* chunk = pipe.chunk(c.rank, p, half);
      for (uint64_t u = threadIdx.x; u * 16 < len; u += blockDim.x)
        storeBytes16(out + L.recvOff(p) + off + 16 * u, loadWs16(chunk + 16 * u), min32(len - 16 * u, 16));
      pipe.ack(p, half, flag);
    }
  }
  return true;
}

__device__ void movementPipe(const GcArgs& a, uint32_t coll, uint64_t epoch) {
  Ctx c(a, GC_KERNEL_ID(coll, GC_PROTO_PIPE), epoch);
  if (!prologue(c, GC_DT_COUNT, false) || !epochFitsShiftedFlags(c)) return;
  Layout L(a, coll);
  if (!L.validOffsets() || (coll == GC_COLL_BROADCAST && a.root >= a.nranks)) {
    if (threadIdx.x == 0) c.recordError(GC_ERR_BAD_ARGS, GC_NO_PEER, 0, 0, kBadGeometry);
    return;
  }
  uint32_t round = 0;
  if (pipeExchange(c, L, round) && c.n > 1 && !L.receivesFromAll()) finishArrivals(c);
}

// Reduce-scatter through the pipe: each round sends chunk k of segment p to p, then reduces the same
// chunk of my segment from all ranks in rank order. Segment p of the input starts at p * segStride;
// segMax = total input bytes, so the last segments may be short.
template <typename T>
__device__ bool pipeReduceScatter(const Ctx& c, const char* in, char* out, uint64_t segStride, uint64_t segMax,
                                  uint64_t mySeg, uint32_t& round) {
  Pipe pipe(c);
  auto seg = [&](uint32_t p) -> uint64_t {  // bytes of segment p (the last ones may be short or empty)
    const uint64_t s = p * segStride;
    return s >= segMax ? 0 : (segMax - s < segStride ? segMax - s : segStride);
  };
  for (uint64_t k = 0;; ++k, ++round) {
    const uint64_t off = (k * gridDim.x + blockIdx.x) * GC_PIPE_CHUNK_BYTES;
    if (off >= segStride) break;
    const uint32_t half = round & 1;
    const uint64_t flag = Pipe::flagValue(c.epoch, round);
    for (uint32_t j = 1; j < c.n; ++j) {
      const uint32_t p = (c.rank + j) % c.n;
      const uint64_t nb = seg(p);
      if (off >= nb) continue;
      if (!pipeSendChunk(pipe, p, half, flag, in + p * segStride + off, nb - off < GC_PIPE_CHUNK_BYTES ? nb - off : GC_PIPE_CHUNK_BYTES))
        return false;
    }
    if (off >= mySeg) continue;
    const uint64_t len = mySeg - off < GC_PIPE_CHUNK_BYTES ? mySeg - off : GC_PIPE_CHUNK_BYTES;
    for (uint32_t r = 0; r < c.n; ++r)
      if (r != c.rank && !pipe.waitData(r, half, flag)) return false;
    for (uint64_t u = threadIdx.x; u * 16 < len; u += blockDim.x) {
      const uint32_t nb = min32(len - 16 * u, 16);
      Lanes<T, 16> acc;
      for (uint32_t r = 0; r < c.n; ++r) {
        U16 x = r == c.rank ? loadBytes16(in + c.rank * segStride + off + 16 * u, nb) : loadWs16(pipe.chunk(c.rank, r, half) + 16 * u);
        if (r == 0) acc.load(x); else acc.add(x, c.a->op);
      }
      storeBytes16(out + off + 16 * u, acc.store(c.a->op, c.n), nb);
    }
    __syncthreads();
    for (uint32_t r = 0; r < c.n; ++r)
      if (r != c.rank) pipe.ack(r, half, flag);
  }
  return true;
}

template <typename T> __device__ void reduceScatterPipe(const GcArgs& a, uint64_t epoch) {
  Ctx c(a, GC_KERNEL_ID(GC_COLL_REDUCESCATTER, GC_PROTO_PIPE), epoch);
  if (!prologue(c, DtypeOf<T>::value, true) || !epochFitsShiftedFlags(c)) return;
  const uint64_t bytes = a.count * sizeof(T);
  const char* in = reinterpret_cast<const char*>(a.send);
  char* out = reinterpret_cast<char*>(a.recv);
  if (c.n == 1) return copyBytes(out, in, bytes);
  if (bytes == 0) return finishArrivals(c);
  uint32_t round = 0;
  pipeReduceScatter<T>(c, in, out, bytes, bytes * c.n, bytes, round);
}

// Reduce-scatter into my segment of recv, then all-gather the segments, all through the pipe.
template <typename T> __device__ void allReducePipe(const GcArgs& a, uint64_t epoch) {
  Ctx c(a, GC_KERNEL_ID(GC_COLL_ALLREDUCE, GC_PROTO_PIPE), epoch);
  if (!prologue(c, DtypeOf<T>::value, true) || !epochFitsShiftedFlags(c)) return;
  const uint64_t bytes = a.count * sizeof(T);
  const char* in = reinterpret_cast<const char*>(a.send);
  char* out = reinterpret_cast<char*>(a.recv);
  if (c.n == 1) return copyBytes(out, in, bytes);
  const uint64_t stride = ceilDiv(a.count, c.n) * sizeof(T);
  const uint64_t mine = c.rank * stride >= bytes ? 0 : (bytes - c.rank * stride < stride ? bytes - c.rank * stride : stride);
  uint32_t round = 0;
  if (!pipeReduceScatter<T>(c, in, out + c.rank * stride, stride, bytes, mine, round)) return;
  // All-gather: every rank's segment of recv to every rank. Segment bytes vary only for the last ranks.
  Pipe pipe(c);
  for (uint64_t k = 0;; ++k, ++round) {
    const uint64_t off = (k * gridDim.x + blockIdx.x) * GC_PIPE_CHUNK_BYTES;
    if (off >= stride) break;
    const uint32_t half = round & 1;
    const uint64_t flag = Pipe::flagValue(c.epoch, round);
    if (off < mine)
      for (uint32_t j = 1; j < c.n; ++j) {
        const uint32_t p = (c.rank + j) % c.n;
        if (!pipeSendChunk(pipe, p, half, flag, out + c.rank * stride + off, mine - off < GC_PIPE_CHUNK_BYTES ? mine - off : GC_PIPE_CHUNK_BYTES))
          return;
      }
    for (uint32_t j = 1; j < c.n; ++j) {
      const uint32_t p = (c.rank + c.n - j) % c.n;
      const uint64_t seg = p * stride >= bytes ? 0 : (bytes - p * stride < stride ? bytes - p * stride : stride);
      if (off >= seg) continue;
      const uint64_t len = seg - off < GC_PIPE_CHUNK_BYTES ? seg - off : GC_PIPE_CHUNK_BYTES;
      if (!pipe.waitData(p, half, flag)) return;
      const char* chunk = pipe.chunk(c.rank, p, half);
      for (uint64_t u = threadIdx.x; u * 16 < len; u += blockDim.x)
        storeBytes16(out + p * stride + off + 16 * u, loadWs16(chunk + 16 * u), min32(len - 16 * u, 16));
      pipe.ack(p, half, flag);
    }
  }
  if ((c.n - 1) * stride >= bytes) finishArrivals(c);  // the last rank's segment was empty
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
// for the next launch, kernel_abi.h section 3), let the successor launch, run the body.
template <typename Body> __device__ __forceinline__ void runLaunch(const GcArgs& a, Body body) {
  waitForPredecessor();
  const uint64_t epoch = beginEpoch(a);
  allowSuccessorLaunch();
  body(epoch);
}

// The op is fixed per body: one runtime switch per launch instead of one per element. Only for the
// one-shot LL allReduce, where the reduction sits on the latency path of every small call; the other
// bodies read the op per element (it costs little next to their data movement, and one body per op
// would multiply the fatbin's compile time).
template <typename T, template <typename, uint32_t> class Fn>
__device__ __forceinline__ void withOp(const GcArgs& a, uint64_t epoch) {
  switch (a.op) {
    case GC_OP_PROD: Fn<T, GC_OP_PROD>::run(a, epoch); break;
    case GC_OP_MIN: Fn<T, GC_OP_MIN>::run(a, epoch); break;
    case GC_OP_MAX: Fn<T, GC_OP_MAX>::run(a, epoch); break;
    case GC_OP_AVG: Fn<T, GC_OP_AVG>::run(a, epoch); break;
    default: Fn<T, GC_OP_SUM>::run(a, epoch);  // validate() rejects unknown ops
  }
}
template <typename T, uint32_t OP> struct AllReduceLLOp {
  static __device__ __forceinline__ void run(const GcArgs& a, uint64_t e) { allReduceLL<T, OP>(a, e); }
};

// Body<collective, protocol>::run<T>: what the kernel table's (collective, protocol) kernel runs. The
// kernels themselves come from the table's X-macro lists (kernel_table.h), so a kernel exists exactly
// when the table names it. T is void for the kernels that take every type (data movement, barrier).
template <uint32_t COLL, uint32_t PROTO> struct Body;
template <> struct Body<GC_COLL_ALLREDUCE, GC_PROTO_LL> {
  template <typename T> static __device__ void run(const GcArgs& a, uint64_t e) { withOp<T, AllReduceLLOp>(a, e); }
};
template <> struct Body<GC_COLL_ALLREDUCE, GC_PROTO_SENTINEL> {
  template <typename T> static __device__ void run(const GcArgs& a, uint64_t e) { allReduceSentinel<T>(a, e); }
};
template <> struct Body<GC_COLL_ALLREDUCE, GC_PROTO_LL128> {
  template <typename T> static __device__ void run(const GcArgs& a, uint64_t e) { allReduceLL128<T>(a, e); }
};
template <> struct Body<GC_COLL_ALLREDUCE, GC_PROTO_PIPE> {
  template <typename T> static __device__ void run(const GcArgs& a, uint64_t e) { allReducePipe<T>(a, e); }
};
template <> struct Body<GC_COLL_REDUCESCATTER, GC_PROTO_LL> {
  template <typename T> static __device__ void run(const GcArgs& a, uint64_t e) { reduceScatterLL<T>(a, e); }
};
template <> struct Body<GC_COLL_REDUCESCATTER, GC_PROTO_PIPE> {
  template <typename T> static __device__ void run(const GcArgs& a, uint64_t e) { reduceScatterPipe<T>(a, e); }
};
template <uint32_t COLL> struct Body<COLL, GC_PROTO_LL> {
  template <typename T> static __device__ void run(const GcArgs& a, uint64_t e) { movementLL(a, COLL, e); }
};
template <uint32_t COLL> struct Body<COLL, GC_PROTO_PIPE> {
  template <typename T> static __device__ void run(const GcArgs& a, uint64_t e) { movementPipe(a, COLL, e); }
};
template <> struct Body<GC_COLL_BARRIER, GC_PROTO_FLAG_BARRIER> {
  template <typename T> static __device__ void run(const GcArgs& a, uint64_t e) { barrierKernel(a, e); }
};

}  // namespace gc

// One extern "C" kernel per entry of a kernel-table X-macro list (kernel_table.h).
#define GC_KERNEL extern "C" __global__ void __launch_bounds__(GC_BLOCK_THREADS, 2)
#define GC_DEFINE_TYPED_KERNEL(name, coll, proto, T) \
  GC_KERNEL name(const __grid_constant__ GcArgs a) { \
    gc::runLaunch(a, [&](uint64_t epoch) { gc::Body<coll, proto>::template run<T>(a, epoch); }); \
  }
#define GC_DEFINE_UNTYPED_KERNEL(name, coll, proto) GC_DEFINE_TYPED_KERNEL(name, coll, proto, void)
