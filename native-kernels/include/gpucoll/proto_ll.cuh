// LL: 16-byte packets {u32 data, u32 flag, u32 data, u32 flag}, each written by ONE volatile store and
// read by one volatile load; flag = the low 32 bits of the epoch with the lowest bit set, so a reader
// that sees both flags equal to this call's flag has the packet's 8 data bytes (each 8-byte half is
// written as a unit, and each half carries its own flag). No fence, no notification, no reset: epoch
// parity selects one of two halves (so the flag's lowest bit carries nothing), a slot's stale flag is
// an older epoch of the same parity, and the zeroed workspace never holds a flag (flags are odd).
//   Inbox per receiver: [2 halves][GC_MAX_RANKS src][GC_LL_SLOTS] packets (GC_WS_LL region).
//   One phase only (one-shot collectives); at most GC_LL_MAX_BYTES per source and call.
// A stale packet is taken for fresh only if it was written exactly a multiple of 2^32 epochs ago.
#pragma once

#include "gpucoll/primitives.cuh"

namespace gc {

struct ProtoLL : WholeCallSteps {
  static constexpr bool kAnnounceAfterSends = true;  // the epoch load overlaps the first input load
  static constexpr bool kShiftsEpoch = false;  // no flag of the form (epoch << 24) | round
  static constexpr uint64_t kSrcBytes = (uint64_t)GC_LL_SLOTS * 16u;
  const Ctx& c;
  const uint32_t flag;
  const uint64_t halfOff;  // this call's half of every inbox
  const char* inbox;       // own inbox of this half, [src][slot]

  __device__ ProtoLL(const Ctx& ctx, uint64_t /*segmentBytes*/)
      : c(ctx), flag(static_cast<uint32_t>(ctx.epoch) | 1u), halfOff((uint64_t)ctx.half() * GC_MAX_RANKS * kSrcBytes),
        inbox(ctx.own() + GC_WS_LL_OFFSET + (uint64_t)ctx.half() * GC_MAX_RANKS * kSrcBytes) {}

  template <typename T> __device__ bool fits(uint64_t perPeerBytes) const { return perPeerBytes <= GC_LL_MAX_BYTES; }
  // Whether this warp holds a slot of a call moving `bytes` per peer (one 8-byte slot per thread).
  static __device__ bool warpHasWork(uint64_t bytes) { return (tid() & ~31ull) * 8 < bytes; }

  __device__ __forceinline__ char* slotAt(uint32_t peer, uint64_t s) const {
    return c.ws(peer) + GC_WS_LL_OFFSET + halfOff + c.rank * kSrcBytes + s * 16u;
  }
  __device__ __forceinline__ void put(uint32_t peer, uint64_t s, uint64_t v) const {
    stVolatile4(slotAt(peer, s), static_cast<uint32_t>(v), flag, static_cast<uint32_t>(v >> 32), flag);
  }
  // One poll of a packet: true (and the data) once both flags are this call's.
  __device__ __forceinline__ bool ready(const char* p, uint64_t& v, uint32_t& seen) const {
    const uint4 u = ldVolatile4(p);
    v = (uint64_t)u.x | ((uint64_t)u.z << 32);
    seen = u.y != flag ? u.y : u.w;
    return u.y == flag && u.w == flag;
  }

  // Waits for src's packet at slot s of this call; a packet already there costs one load.
  __device__ __forceinline__ bool awaitSlot(uint32_t src, uint64_t s, uint64_t& v) const {
    const char* at = inbox + src * kSrcBytes + s * 16u;
    Spinner sp;
    uint32_t seen;
    while (!ready(at, v, seen))
      if (!sp.keepWaiting(c, src, flag, seen)) return false;
    return true;
  }

  template <typename T> __device__ bool send(uint32_t peer, const char* src, uint64_t len, const Step& st, uint32_t) const {
    if (peer == c.rank) return true;  // the own part is read from the input
    for (uint64_t s = tid(); s * 8 < len; s += nthreads()) put(peer, st.off / 8 + s, loadBytes8(src + 8 * s, min32(len - 8 * s, 8)));
    return true;
  }
  template <typename T> __device__ bool copySend(const char* src, uint64_t len, const Step& st, uint32_t) const {
    const bool whole = whole8(src, src, len);
    for (uint64_t s = tid(); s * 8 < len; s += nthreads()) putAll(st.off / 8 + s, loadWord8(src, s, len, whole));
    return true;
  }
  // Packet s to every peer.
  __device__ __forceinline__ void putAll(uint64_t s, uint64_t v) const {
    for (uint32_t p = 0; p < c.n; ++p)
      if (p != c.rank) put(p, s, v);
  }
  template <typename T> __device__ bool recv(uint32_t src, char* dst, uint64_t len, const Step& st, uint32_t) const {
    for (uint64_t s = tid(); s * 8 < len; s += nthreads()) {
      const char* p = inbox + src * kSrcBytes + (st.off / 8 + s) * 16u;
      Spinner sp;
      uint64_t v;
      uint32_t seen;
      while (!ready(p, v, seen))
        if (!sp.keepWaiting(c, src, flag, seen)) return false;
      storeBytes8(dst + 8 * s, v, min32(len - 8 * s, 8));
    }
    return true;
  }
  // Packet s from every rank reduced with the own part in rank order 0..n-1 (every rank gets the same
  // bits), each source's packet awaited in that order with one accumulator: the wait stays in
  // registers (holding every source's packet, as a poll of all sources together must, spills under
  // the 64-register cap that two blocks per SM impose, and measured slower).
  template <typename T, uint32_t OP>
  __device__ bool recvReduceCopy(const char* own, char* dst, uint64_t len, const Step& st, uint32_t) const {
    const bool whole = whole8(own, dst, len);
    for (uint64_t s = tid(); s * 8 < len; s += nthreads()) {
      uint64_t v;
      if (!reduceSlot<T, OP>(st.off / 8 + s, loadWord8(own, s, len, whole), v)) return false;
      storeWord8(dst, s, v, len, whole);
    }
    return true;
  }
  // Packet s from every rank reduced with the own 8 bytes `mine`, in rank order, into `out`.
  template <typename T, uint32_t OP>
  __device__ __forceinline__ bool reduceSlot(uint64_t s, uint64_t mine, uint64_t& out) const {
    const uint32_t n = c.n, op = opOf<OP>(c);
    const char* at = inbox + s * 16u;
    Lanes<T, 8> acc;
    for (uint32_t r = 0; r < n; ++r) {
      uint64_t v = mine;
      if (r != c.rank) {
        Spinner sp;
        uint32_t seen;
        while (!ready(at + r * kSrcBytes, v, seen))
          if (!sp.keepWaiting(c, r, flag, seen)) return false;
      }
      if (r == 0) acc.load(U16{v, 0}); else acc.add(U16{v, 0}, op);
    }
    out = acc.store(op, n).lo;
    return true;
  }

  // Packet s of every source, the group size N known at compile time: each pass loads every source's
  // packet (the own slot too: a branch per source would stall each load before the next is issued),
  // then tests them, so a pass costs one round trip however many sources are late (reduceSlot waits
  // for each in turn). Which source is late is worked out only when the bound is checked (every 64
  // passes). A packet already seen is loaded again unchanged (its half is not written again before
  // this rank's next call). The same rank-order reduction with the own 8 bytes `mine` follows, so the
  // bits equal reduceSlot's. Small calls only (allReduceSmall): the N packets stay in registers.
  template <typename T, uint32_t OP, uint32_t N>
  __device__ __forceinline__ bool reduceSlotAll(uint64_t s, uint64_t mine, uint64_t& out) const {
    const char* at = inbox + s * 16u;
    uint4 u[N];
    Spinner sp;
    for (;;) {
#pragma unroll
      for (uint32_t r = 0; r < N; ++r) u[r] = ldVolatile4(at + r * kSrcBytes);
      bool late = false;
#pragma unroll
      for (uint32_t r = 0; r < N; ++r) late |= r != c.rank && (u[r].y != flag || u[r].w != flag);
      if (!late) break;
      if (sp.due()) {
        uint32_t peer = 0, seen = 0;
#pragma unroll
        for (uint32_t r = N; r-- > 0;) {
          if (r != c.rank && (u[r].y != flag || u[r].w != flag)) peer = r, seen = u[r].y != flag ? u[r].y : u[r].w;
        }
        if (!sp.check(c, peer, flag, seen)) return false;
      }
    }
    const uint32_t op = opOf<OP>(c);
    Lanes<T, 8> acc;
#pragma unroll
    for (uint32_t r = 0; r < N; ++r) {
      const U16 v{r == c.rank ? mine : (uint64_t)u[r].x | ((uint64_t)u[r].z << 32), 0};
      if (r == 0) acc.load(v); else acc.add(v, op);
    }
    out = acc.store(op, N).lo;
    return true;
  }

  // Packet-level forms of copySend and recvReduceCopy, for a packed message (several calls' payloads
  // in one inbox: collectives.cuh allReduceBatch), whose recipe maps each slot to its call's buffers:
  // slot s's packet, nb <= 8 bytes of src / own / dst; the same stores, polls and rank-order
  // reduction as the verbs above, so a packed call's bits equal its own one-shot call's.
  template <typename T> __device__ __forceinline__ void copySendSlot(const char* src, uint32_t nb, uint64_t s) const {
    putAll(s, loadBytes8(src, nb));
  }
  template <typename T, uint32_t OP>
  __device__ __forceinline__ bool recvReduceCopySlot(const char* own, char* dst, uint32_t nb, uint64_t s) const {
    uint64_t v;
    if (!reduceSlot<T, OP>(s, loadBytes8(own, nb), v)) return false;
    storeBytes8(dst, v, nb);
    return true;
  }
};

}  // namespace gc
