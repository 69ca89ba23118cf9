// Sentinel: raw 16-byte units (no flag bytes: full bandwidth) over a region prefilled with
// GC_SENTINEL_WORD; the receiver polls a unit until it differs from the sentinel, then restores the
// sentinel for the next use of this half. A payload unit that IS the sentinel pattern is sent as an
// escape word (= the epoch) instead, so every payload comes out exact.
//   Region per receiver: [2 halves][2 phases][GC_MAX_RANKS src][GC_SENT_PEER_BYTES] + one escape word
//   per unit (GC_WS_SENT, GC_WS_ESC). Two phases (two-shot: scatter, gather); at most
//   GC_SENT_MAX_BYTES per call.
#pragma once

#include "gpucoll/primitives.cuh"

namespace gc {

struct ProtoSentinel : WholeCallSteps {
  static constexpr bool kAnnounceAfterSends = false;
  static constexpr bool kShiftsEpoch = false;  // no flag of the form (epoch << 24) | round
  static constexpr bool kGatherSentByReduce = true;  // recvReduceCopySend sends each result at once
  static constexpr uint64_t kWord = ((uint64_t)GC_SENTINEL_WORD << 32) | GC_SENTINEL_WORD;
  const Ctx& c;
  const uint32_t half;
  __device__ ProtoSentinel(const Ctx& ctx, uint64_t /*segmentBytes*/) : c(ctx), half(ctx.half()) {}

  template <typename T> __device__ bool fits(uint64_t bytes) const { return bytes <= GC_SENT_MAX_BYTES; }
  // Whether this warp holds a unit of a `bytes` call (one 16-byte unit per thread and loop).
  static __device__ bool warpHasWork(uint64_t bytes) { return (tid() & ~31ull) * 16 < bytes; }
  // Two-shot owners' stride: whole 16-byte units, so every unit has one owner.
  template <typename T> static __device__ uint64_t segmentBytes(uint64_t count, uint32_t n) {
    return ceilDiv(ceilDiv(count * sizeof(T), 16), n) * 16;
  }

  __device__ uint64_t unitIndex(uint32_t phase, uint32_t src, uint64_t i) const {
    return ((uint64_t)((half * 2 + phase) * GC_MAX_RANKS + src) * GC_SENT_PEER_BYTES) / 16u + i;
  }
  __device__ void put(uint32_t peer, uint32_t phase, uint64_t i, U16 u) const {
    const uint64_t k = unitIndex(phase, c.rank, i);
    if (u.lo == kWord && u.hi == kWord) st64(c.ws(peer) + GC_WS_ESC_OFFSET + 8u * k, c.epoch);  // escape
    else st16(c.ws(peer) + GC_WS_SENT_OFFSET + 16u * k, u.lo, u.hi);
  }
  // Waits for unit i from src, returns it, and restores the sentinel.
  __device__ bool take(uint32_t src, uint32_t phase, uint64_t i, U16& u) const {
    const uint64_t k = unitIndex(phase, src, i);
    char* p = c.own() + GC_WS_SENT_OFFSET + 16u * k;
    const char* esc = c.own() + GC_WS_ESC_OFFSET + 8u * k;
    Spinner sp;
    for (;;) {
      ld16(p, u.lo, u.hi);
      if (u.lo != kWord || u.hi != kWord) break;
      const uint64_t e = ld64(esc);
      if (e == c.epoch) break;  // the payload was the sentinel pattern itself
      if (!sp.keepWaiting(c, src, c.epoch, e)) return false;
    }
    st16(p, kWord, kWord);
    return true;
  }

  template <typename T> __device__ bool send(uint32_t peer, const char* src, uint64_t len, const Step& st, uint32_t phase) const {
    if (peer == c.rank) return true;
    for (uint64_t u = tid(); u * 16 < len; u += nthreads())
      put(peer, phase, st.off / 16 + u, loadBytes16(src + 16 * u, min32(len - 16 * u, 16)));
    return true;
  }
  template <typename T> __device__ bool copySend(const char* src, uint64_t len, const Step& st, uint32_t phase) const {
    for (uint64_t u = tid(); u * 16 < len; u += nthreads()) {
      const U16 x = loadBytes16(src + 16 * u, min32(len - 16 * u, 16));
      for (uint32_t p = 0; p < c.n; ++p)
        if (p != c.rank) put(p, phase, st.off / 16 + u, x);
    }
    return true;
  }
  // Two-shot: segment o of [src, src+bytes) to owner o (owners' stride seg), one grid-stride loop over
  // every unit so a small call spreads over the grid; the own segment stays (recvReduceCopy reads it).
  template <typename T> __device__ bool scatterSend(const char* src, uint64_t bytes, uint64_t seg, const Step&, uint32_t phase) const {
    const uint64_t per = seg / 16;
    for (uint64_t u = tid(); u * 16 < bytes; u += nthreads()) {
      const uint32_t o = static_cast<uint32_t>(u / per);
      if (o != c.rank) put(o, phase, u - o * per, loadBytes16(src + 16 * u, min32(bytes - 16 * u, 16)));
    }
    return true;
  }
  // Two-shot: every other owner's segment of [dst, dst+bytes), one loop over every unit.
  template <typename T> __device__ bool gatherRecv(char* dst, uint64_t bytes, uint64_t seg, const Step&, uint32_t phase) const {
    const uint64_t per = seg / 16;
    for (uint64_t u = tid(); u * 16 < bytes; u += nthreads()) {
      const uint32_t o = static_cast<uint32_t>(u / per);
      if (o == c.rank) continue;
      U16 x;
      if (!take(o, phase, u - o * per, x)) return false;
      storeBytes16(dst + 16 * u, x, min32(bytes - 16 * u, 16));
    }
    return true;
  }
  template <typename T> __device__ bool recv(uint32_t src, char* dst, uint64_t len, const Step& st, uint32_t phase) const {
    for (uint64_t u = tid(); u * 16 < len; u += nthreads()) {
      U16 x;
      if (!take(src, phase, st.off / 16 + u, x)) return false;
      storeBytes16(dst + 16 * u, x, min32(len - 16 * u, 16));
    }
    return true;
  }
  template <typename T, uint32_t OP>
  __device__ bool recvReduceCopy(const char* own, char* dst, uint64_t len, const Step& st, uint32_t phase) const {
    return reduceUnits<T, OP, false>(own, dst, len, st, phase);
  }
  // Two-shot owner: each reduced unit to dst and at once to every peer's gather region.
  template <typename T, uint32_t OP>
  __device__ bool recvReduceCopySend(const char* own, char* dst, uint64_t len, const Step& st) const {
    return reduceUnits<T, OP, true>(own, dst, len, st, kPhaseScatter);
  }
  template <typename T, uint32_t OP, bool kSend>
  __device__ bool reduceUnits(const char* own, char* dst, uint64_t len, const Step& st, uint32_t phase) const {
    const uint32_t op = opOf<OP>(c);
    for (uint64_t u = tid(); u * 16 < len; u += nthreads()) {
      const uint32_t nb = min32(len - 16 * u, 16);
      Lanes<T, 16> acc;
      for (uint32_t r = 0; r < c.n; ++r) {
        U16 x;
        if (r == c.rank) x = loadBytes16(own + 16 * u, nb);
        else if (!take(r, phase, st.off / 16 + u, x)) return false;
        if (r == 0) acc.load(x); else acc.add(x, op);
      }
      const U16 y = acc.store(op, c.n);
      if (kSend)
        for (uint32_t p = 0; p < c.n; ++p)
          if (p != c.rank) put(p, kPhaseGather, st.off / 16 + u, y);
      storeBytes16(dst + 16 * u, y, nb);
    }
    return true;
  }
};

}  // namespace gc
