// Pipe: one channel per (src, dst, block, half): a GC_PIPE_CHUNK_BYTES chunk in dst's workspace, a
// flag in dst's control words, a credit (ack word) in src's. Each step moves one chunk per block and
// peer; rounds alternate the halves, and a sender waits for the receiver's credit of the half it is
// about to reuse, so any size streams through. Verbs are block-collective (thread 0 polls,
// __syncthreads publishes); every rank must launch GC_PIPE_BLOCKS blocks (per-block channels).
//   Flags are (epoch << 24) | (round + 1): epochs below 2^40, at most 2^24 - 1 rounds per call.
#pragma once

#include "gpucoll/primitives.cuh"

namespace gc {

struct ProtoPipe {
  static constexpr bool kAnnounceAfterSends = false;
  static constexpr bool kShiftsEpoch = true;  // flags (epoch << 24) | round: epochs below 2^40
  static constexpr bool kGatherSentByReduce = false;  // the gather has its own rounds (credits)
  const Ctx& c;
  __device__ ProtoPipe(const Ctx& ctx, uint64_t /*segmentBytes*/) : c(ctx) {}

  template <typename T> __device__ bool fits(uint64_t) const { return true; }
  static __device__ bool warpHasWork(uint64_t) { return true; }  // verbs are block-collective
  template <typename T> static __device__ uint64_t segmentBytes(uint64_t count, uint32_t n) { return ceilDiv(count, n) * sizeof(T); }

  // Step k of this block: chunk k * gridDim.x + blockIdx.x; rounds continue across a call's phases.
  __device__ Step first(uint32_t round = 0) const { return Step{(uint64_t)blockIdx.x * GC_PIPE_CHUNK_BYTES, GC_PIPE_CHUNK_BYTES, round}; }
  __device__ Step next(Step s) const { return Step{s.off + (uint64_t)gridDim.x * GC_PIPE_CHUNK_BYTES, GC_PIPE_CHUNK_BYTES, s.round + 1}; }
  __device__ void copy(const Step&, char* dst, const char* src, uint64_t len) const {
    if (dst == src) return;
    for (uint64_t u = threadIdx.x; u * 16 < len; u += blockDim.x)
      storeBytes16(dst + 16 * u, loadBytes16(src + 16 * u, min32(len - 16 * u, 16)), min32(len - 16 * u, 16));
  }

  static __device__ uint64_t flagValue(uint64_t epoch, uint32_t round) { return (epoch << 24) | (round + 1u); }
  __device__ uint64_t word(uint32_t who, uint32_t half) const {
    return 8ull * (((uint64_t)who * GC_MAX_BLOCKS + blockIdx.x) * 2u + half);
  }
  __device__ char* chunk(uint32_t owner, uint32_t src, uint32_t half) const {
    return c.ws(owner) + GC_WS_PIPE_OFFSET + (((uint64_t)src * GC_MAX_BLOCKS + blockIdx.x) * 2u + half) * GC_PIPE_CHUNK_BYTES;
  }
  // Thread 0 waits until *word >= target; the block learns the outcome.
  __device__ bool blockWait(const char* w, uint64_t target, uint32_t peer) const {
    __shared__ int sOk;
    if (threadIdx.x == 0) sOk = waitAtLeast(c, w, target, peer);
    __syncthreads();
    const bool ok = sOk;
    __syncthreads();
    return ok;
  }
  // Thread 0 waits until dst's credit (ack) reaches the last flag this rank sent it on this half.
  __device__ bool blockWaitCredit(uint32_t dst, uint32_t half) const {
    __shared__ int sOk;
    if (threadIdx.x == 0) {
      const uint64_t last = ld64(c.own() + GC_WS_PIPE_SENT + word(dst, half));
      sOk = waitAtLeast(c, c.own() + GC_WS_PIPE_ACK + word(dst, half), last, dst);
    }
    __syncthreads();
    const bool ok = sOk;
    __syncthreads();
    return ok;
  }
  // One chunk to dst on this round's half: its credit (dst consumed what we last sent there), the
  // data, a system fence, the flag.
  __device__ bool sendChunk(uint32_t dst, uint32_t round, const char* src, uint64_t len) const {
    const uint32_t half = round & 1;
    if (!blockWaitCredit(dst, half)) return false;
    char* to = chunk(dst, c.rank, half);
    for (uint64_t u = threadIdx.x; u * 16 < len; u += blockDim.x) {
      const U16 x = loadBytes16(src + 16 * u, min32(len - 16 * u, 16));
      *reinterpret_cast<uint4*>(to + 16 * u) = make_uint4((uint32_t)x.lo, (uint32_t)(x.lo >> 32), (uint32_t)x.hi, (uint32_t)(x.hi >> 32));
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence_system();
      const uint64_t flag = flagValue(c.epoch, round);
      st64(c.ws(dst) + GC_WS_PIPE_FLAG + word(c.rank, half), flag);
      st64(c.own() + GC_WS_PIPE_SENT + word(dst, half), flag);
    }
    return true;
  }
  __device__ bool waitChunk(uint32_t src, uint32_t round) const {
    return blockWait(c.own() + GC_WS_PIPE_FLAG + word(src, round & 1), flagValue(c.epoch, round), src);
  }
  __device__ void ack(uint32_t src, uint32_t round) const {
    if (threadIdx.x == 0) st64(c.ws(src) + GC_WS_PIPE_ACK + word(c.rank, round & 1), flagValue(c.epoch, round));
  }

  template <typename T> __device__ bool send(uint32_t peer, const char* src, uint64_t len, const Step& s, uint32_t) const {
    return peer == c.rank || len == 0 || sendChunk(peer, s.round, src, len);
  }
  template <typename T> __device__ bool copySend(const char* src, uint64_t len, const Step& s, uint32_t) const {
    for (uint32_t j = 1; j < c.n && len; ++j)
      if (!sendChunk((c.rank + j) % c.n, s.round, src, len)) return false;
    return true;
  }
  // Two-shot: this step's chunk of segment o to each owner o; of each other owner's segment from it.
  __device__ uint64_t segLen(uint32_t o, uint64_t bytes, uint64_t seg) const {
    return o * seg >= bytes ? 0 : (bytes - o * seg < seg ? bytes - o * seg : seg);
  }
  template <typename T> __device__ bool scatterSend(const char* src, uint64_t bytes, uint64_t seg, const Step& s, uint32_t phase) const {
    for (uint32_t j = 1; j < c.n; ++j) {
      const uint32_t o = (c.rank + j) % c.n;
      if (!send<T>(o, src + o * seg + s.off, s.len(segLen(o, bytes, seg)), s, phase)) return false;
    }
    return true;
  }
  template <typename T> __device__ bool gatherRecv(char* dst, uint64_t bytes, uint64_t seg, const Step& s, uint32_t phase) const {
    for (uint32_t j = 1; j < c.n; ++j) {
      const uint32_t o = (c.rank + c.n - j) % c.n;
      if (!recv<T>(o, dst + o * seg + s.off, s.len(segLen(o, bytes, seg)), s, phase)) return false;
    }
    return true;
  }
  template <typename T> __device__ bool recv(uint32_t src, char* dst, uint64_t len, const Step& s, uint32_t) const {
    if (len == 0) return true;
    if (!waitChunk(src, s.round)) return false;
    const char* from = chunk(c.rank, src, s.round & 1);
    for (uint64_t u = threadIdx.x; u * 16 < len; u += blockDim.x)
      storeBytes16(dst + 16 * u, loadWs16(from + 16 * u), min32(len - 16 * u, 16));
    __syncthreads();
    ack(src, s.round);
    return true;
  }
  template <typename T, uint32_t OP>
  __device__ bool recvReduceCopy(const char* own, char* dst, uint64_t len, const Step& s, uint32_t) const {
    if (len == 0) return true;
    const uint32_t op = opOf<OP>(c), half = s.round & 1;
    for (uint32_t r = 0; r < c.n; ++r)
      if (r != c.rank && !waitChunk(r, s.round)) return false;
    for (uint64_t u = threadIdx.x; u * 16 < len; u += blockDim.x) {
      const uint32_t nb = min32(len - 16 * u, 16);
      Lanes<T, 16> acc;
      for (uint32_t r = 0; r < c.n; ++r) {
        const U16 x = r == c.rank ? loadBytes16(own + 16 * u, nb) : loadWs16(chunk(c.rank, r, half) + 16 * u);
        if (r == 0) acc.load(x); else acc.add(x, op);
      }
      storeBytes16(dst + 16 * u, acc.store(op, c.n), nb);
    }
    __syncthreads();
    for (uint32_t r = 0; r < c.n; ++r)
      if (r != c.rank) ack(r, s.round);
    return true;
  }
  template <typename T, uint32_t OP>
  __device__ bool recvReduceCopySend(const char* own, char* dst, uint64_t len, const Step& s) const {
    return recvReduceCopy<T, OP>(own, dst, len, s, kPhaseScatter);
  }
};

}  // namespace gc
