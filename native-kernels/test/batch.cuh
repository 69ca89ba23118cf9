// The batch kernels on the host side of the test programs (gc_test, gc_bench): a GcBatch packed from
// a list of calls as the Java host packs it (each call at the next whole slot), and its launch with
// both parameters (kernel_abi.h section 6).
#pragma once

#include "harness.cuh"

#include <vector>

using BatchKernel = void (*)(const GcArgs, const GcBatch);

struct BatchCall {
  const void* send;
  void* recv;
  uint32_t count;
};

// Calls packed at consecutive slots; `hash` stands for the recorded batch's hash (equal on every rank).
inline GcBatch packBatch(const std::vector<BatchCall>& calls, uint32_t esz, uint64_t hash) {
  GcBatch b;
  std::memset(&b, 0, sizeof b);
  b.calls = (uint32_t)calls.size();
  b.hash = hash;
  uint32_t slot = 0;
  for (size_t i = 0; i < calls.size() && i < GC_MAX_BATCH_CALLS; ++i) {
    b.send[i] = (uint64_t)calls[i].send;
    b.recv[i] = (uint64_t)calls[i].recv;
    b.count[i] = calls[i].count;
    b.first[i] = slot;
    slot += (uint32_t)(((uint64_t)calls[i].count * esz + 7) / 8);
  }
  b.slots = slot;
  return b;
}

// gridDim.x of a batch launch: the grid rule of the packed bytes per peer (as one call of that size).
inline unsigned batchGrid(const GcBatch& b) { return GC_GRID_FOR_BYTES((uint64_t)b.slots * 8); }

inline void launchBatch(BatchKernel k, unsigned grid, cudaStream_t s, const GcArgs& a, const GcBatch& b, bool pdl) {
  launchWith(k, grid, GC_BLOCK_THREADS, s, pdl, a, b);
}
