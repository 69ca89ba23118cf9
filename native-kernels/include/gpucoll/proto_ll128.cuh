// LL128-atomic: a warp per 128-byte line {u32 counter, u32 pad, 120 B of accumulators}. Scatter: every
// rank (the owner too) adds its part into the owner's line with hardware atomics, then bumps the
// counter after a fence; the owner waits for counter == n, reads the sum and clears the line. Gather:
// the owner publishes into every peer's gather line (data, fence, epoch in the 8-byte header).
//   Lines per receiver: [2 halves][GC_LL128_MAX_LINES/2 scatter lines (owner-local index),
//   GC_LL128_MAX_LINES gather lines (global index)] (GC_WS_LL128). Lines hold the accumulation type
//   (fp32 for 16-bit floats), so a line carries GC_LL128_DATA_BYTES / gc_acc_size elements. SUM/AVG
//   only; sums are in arrival order (bit-identical among ranks, not between runs).
#pragma once

#include "gpucoll/primitives.cuh"

namespace gc {

template <typename A> __device__ __forceinline__ void atomicAddAcc(A* p, A v) { atomicAdd(p, v); }
template <> __device__ __forceinline__ void atomicAddAcc<int64_t>(int64_t* p, int64_t v) {
  atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
}
template <typename A> __device__ __forceinline__ A loadVolatile(const char* p) { return *reinterpret_cast<const volatile A*>(p); }

struct ProtoLL128 : WholeCallSteps {
  static constexpr bool kAnnounceAfterSends = false;
  static constexpr bool kShiftsEpoch = false;  // no flag of the form (epoch << 24) | round
  static constexpr bool kGatherSentByReduce = true;  // recvReduceCopySend publishes each line at once
  const Ctx& c;
  const uint32_t half;
  const uint64_t segBytes;  // owners' stride (two-shot), a whole number of lines
  __device__ ProtoLL128(const Ctx& ctx, uint64_t segmentBytes) : c(ctx), half(ctx.half()), segBytes(segmentBytes) {}

  template <typename T> static __host__ __device__ constexpr uint32_t elemsPerLine() { return GC_LL128_DATA_BYTES / sizeof(typename Acc<T>::type); }
  template <typename T> static __host__ __device__ constexpr uint64_t lineBytes() { return elemsPerLine<T>() * sizeof(T); }
  template <typename T> static __device__ uint64_t segmentBytes(uint64_t count, uint32_t n) {
    return ceilDiv(ceilDiv(count, elemsPerLine<T>()), n) * lineBytes<T>();
  }

  template <typename T> __device__ bool fits(uint64_t bytes) const {
    return ceilDiv(bytes / sizeof(T), elemsPerLine<T>()) <= GC_LL128_MAX_LINES;
  }
  static __device__ bool warpHasWork(uint64_t) { return true; }  // lines map to warps round-robin

  __device__ char* scatterLine(uint32_t owner, uint64_t local) const {
    return c.ws(owner) + GC_WS_LL128_OFFSET + ((uint64_t)half * GC_LL128_LINES_PER_HALF + local) * GC_LL128_LINE_BYTES;
  }
  __device__ char* gatherLine(uint32_t owner, uint64_t line) const {
    return c.ws(owner) + GC_WS_LL128_OFFSET +
           ((uint64_t)half * GC_LL128_LINES_PER_HALF + GC_LL128_MAX_LINES / 2 + line) * GC_LL128_LINE_BYTES;
  }
  __device__ static int lane() { return threadIdx.x & 31; }
  __device__ static uint64_t warp() { return tid() / 32; }
  __device__ static uint64_t warps() { return nthreads() / 32; }

  // Two-shot scatter over every line of the call (owner = line / lines per segment), the own lines
  // included: one warp-stride loop, so a small call spreads over the grid.
  template <typename T> __device__ bool scatterSend(const char* src, uint64_t bytes, uint64_t seg, const Step&, uint32_t) const {
    using A = typename Acc<T>::type;
    const T* in = reinterpret_cast<const T*>(src);
    const uint64_t count = bytes / sizeof(T), perSeg = seg / lineBytes<T>();
    for (uint64_t l = warp(); l * elemsPerLine<T>() < count; l += warps()) {
      const uint64_t i = l * elemsPerLine<T>() + lane();
      const bool active = lane() < (int)elemsPerLine<T>() && i < count;
      const uint32_t o = static_cast<uint32_t>(l / perSeg);
      char* line = scatterLine(o, l - o * perSeg);
      if (active) atomicAddAcc(reinterpret_cast<A*>(line + 8) + lane(), toAcc(in[i]));
      __syncwarp();
      if (lane() == 0) {
        __threadfence_system();
        atomicAdd(reinterpret_cast<unsigned int*>(line), 1u);
      }
    }
    return true;
  }
  // Two-shot gather of every other owner's lines.
  template <typename T> __device__ bool gatherRecv(char* dst, uint64_t bytes, uint64_t seg, const Step&, uint32_t) const {
    using A = typename Acc<T>::type;
    T* out = reinterpret_cast<T*>(dst);
    const uint64_t count = bytes / sizeof(T), perSeg = seg / lineBytes<T>();
    for (uint64_t l = warp(); l * elemsPerLine<T>() < count; l += warps()) {
      const uint32_t o = static_cast<uint32_t>(l / perSeg);
      if (o == c.rank) continue;
      const char* line = gatherLine(c.rank, l);
      bool ok = true;
      if (lane() == 0) ok = waitAtLeast(c, line, c.epoch, o);
      if (!__shfl_sync(0xffffffffu, ok, 0)) return false;
      const uint64_t i = l * elemsPerLine<T>() + lane();
      if (lane() < (int)elemsPerLine<T>() && i < count) out[i] = fromAcc<T>(loadVolatile<A>(line + 8 + lane() * sizeof(A)));
    }
    return true;
  }
  // The owner's lines once all n ranks added (own is already in them): dst = finish(sum), lines
  // cleared; recvReduceCopySend also puts each finished line at once into every peer's gather line.
  template <typename T, uint32_t OP>
  __device__ bool recvReduceCopy(const char*, char* dst, uint64_t len, const Step& st, uint32_t) const {
    return reduceLines<T, OP, false>(dst, len, st);
  }
  template <typename T, uint32_t OP>
  __device__ bool recvReduceCopySend(const char*, char* dst, uint64_t len, const Step& st) const {
    return reduceLines<T, OP, true>(dst, len, st);
  }
  template <typename T, uint32_t OP, bool kSend> __device__ bool reduceLines(char* dst, uint64_t len, const Step& st) const {
    using A = typename Acc<T>::type;
    T* out = reinterpret_cast<T*>(dst);
    const uint32_t op = opOf<OP>(c);
    const uint64_t count = len / sizeof(T), first = st.off / lineBytes<T>();
    const uint64_t firstGather = (c.rank * segBytes + st.off) / lineBytes<T>();
    for (uint64_t l = warp(); l * elemsPerLine<T>() < count; l += warps()) {
      char* line = scatterLine(c.rank, first + l);
      bool ok = true;
      if (lane() == 0) {
        Spinner sp;
        uint32_t v;
        while ((v = ldAcquire32(line)) < c.n)
          if (!sp.keepWaiting(c, GC_NO_PEER, c.n, v)) { ok = false; break; }
      }
      if (!__shfl_sync(0xffffffffu, ok, 0)) return false;
      const uint64_t i = l * elemsPerLine<T>() + lane();
      const bool mine = lane() < (int)elemsPerLine<T>();
      const A v = mine ? loadVolatile<A>(line + 8 + lane() * sizeof(A)) : A(0);
      if (mine) reinterpret_cast<volatile A*>(line + 8)[lane()] = A(0);
      __syncwarp();
      if (lane() == 0) st32(line, 0u);
      const T t = fromAcc<T>(finish(v, op, c.n));
      const bool active = mine && i < count;
      if (active) out[i] = t;
      if (kSend) publish<A>(firstGather + l, active, toAcc(t));
    }
    return true;
  }
  // Warp-collective: one gather line (global index) into every peer: data, then the epoch (release).
  template <typename A> __device__ void publish(uint64_t gline, bool active, A v) const {
    for (uint32_t p = 0; p < c.n; ++p) {
      if (p == c.rank) continue;
      char* g = gatherLine(p, gline);
      if (active) reinterpret_cast<volatile A*>(g + 8)[lane()] = v;
      __syncwarp();
      if (lane() == 0) stRelease64(g, c.epoch);
      __syncwarp();
    }
  }
  // Gather (phase kPhaseGather): the owner's finished values into every peer's gather lines.
  template <typename T> __device__ bool copySend(const char* src, uint64_t len, const Step& st, uint32_t) const {
    using A = typename Acc<T>::type;
    const T* in = reinterpret_cast<const T*>(src);
    const uint64_t count = len / sizeof(T), first = (c.rank * segBytes + st.off) / lineBytes<T>();
    for (uint64_t l = warp(); l * elemsPerLine<T>() < count; l += warps()) {
      const uint64_t i = l * elemsPerLine<T>() + lane();
      const bool active = lane() < (int)elemsPerLine<T>() && i < count;
      publish<A>(first + l, active, active ? toAcc(in[i]) : A(0));
    }
    return true;
  }
};

}  // namespace gc
