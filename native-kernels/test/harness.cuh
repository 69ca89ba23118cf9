// Shared by gc_test and gc_bench: R ranks as R streams of ONE process on one GPU; the peer workspaces
// are plain allocations on that device (same address space, so peers[] are just pointers).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench_table.h"  // the product ABI and the benchmark build's kernels and workspace

#define CK(x)                                                                                   \
  do {                                                                                          \
    cudaError_t e_ = (x);                                                                       \
    if (e_ != cudaSuccess) {                                                                    \
      std::fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorString(e_), __FILE__, __LINE__, #x); \
      std::exit(2);                                                                             \
    }                                                                                           \
  } while (0)

using Kernel = void (*)(const GcArgs);

// pdl: launch with the programmatic-stream-serialization attribute (the kernel may start while its
// predecessor on the stream still runs; the gc_ kernels wait for it before touching memory).
template <typename K, typename... Params>
inline void launchWith(K k, unsigned grid, unsigned threads, cudaStream_t s, bool pdl, const Params&... params) {
  if (!pdl) {
    k<<<grid, threads, 0, s>>>(params...);
    return;
  }
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(grid);
  cfg.blockDim = dim3(threads);
  cfg.stream = s;
  cudaLaunchAttribute at[1];
  at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  at[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = at;
  cfg.numAttrs = 1;
  CK(cudaLaunchKernelEx(&cfg, k, params...));
}
inline void launchOne(Kernel k, unsigned grid, unsigned threads, cudaStream_t s, const GcArgs& a, bool pdl) {
  launchWith(k, grid, threads, s, pdl, a);
}

__global__ void gcFill32(uint32_t* p, uint64_t words, uint32_t v) {
  for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < words; i += (uint64_t)gridDim.x * blockDim.x) p[i] = v;
}

// A communicator of n ranks in this process: workspaces, streams, error records, abort word, epoch.
struct Comm {
  int n = 0;
  std::vector<char*> ws;
  std::vector<cudaStream_t> streams;
  GcErrorRecord* errHost = nullptr;  // n records, mapped host memory
  GcErrorRecord* errDev = nullptr;
  volatile uint32_t* abortHost = nullptr;
  uint32_t* abortDev = nullptr;
  uint64_t epoch = 1;
  uint64_t timeoutNs = 2000000000ull;

  explicit Comm(int ranks) : n(ranks), ws(ranks), streams(ranks) {
    for (int r = 0; r < n; ++r) {
      CK(cudaMalloc(&ws[r], GC_BENCH_WORKSPACE_BYTES));  // the product layout, then the benchmark regions
      CK(cudaMemset(ws[r], 0, GC_BENCH_WORKSPACE_BYTES));
      gcFill32<<<264, 512>>>(reinterpret_cast<uint32_t*>(ws[r] + GC_WS_SENT_OFFSET), GC_WS_SENT_BYTES / 4, GC_SENTINEL_WORD);
      CK(cudaGetLastError());
      CK(cudaStreamCreateWithFlags(&streams[r], cudaStreamNonBlocking));
    }
    CK(cudaHostAlloc(&errHost, sizeof(GcErrorRecord) * n, cudaHostAllocMapped));
    std::memset(errHost, 0, sizeof(GcErrorRecord) * n);
    CK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&errDev), errHost, 0));
    uint32_t* a;
    CK(cudaHostAlloc(&a, 4, cudaHostAllocMapped));
    *a = 0;
    abortHost = a;
    CK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&abortDev), a, 0));
    CK(cudaDeviceSynchronize());
  }
  ~Comm() {
    for (int r = 0; r < n; ++r) {
      cudaFree(ws[r]);
      cudaStreamDestroy(streams[r]);
    }
    cudaFreeHost(errHost);
    cudaFreeHost(const_cast<uint32_t*>(abortHost));
  }
  GcArgs args(int r) const {
    GcArgs a;
    std::memset(&a, 0, sizeof a);
    a.epoch = epoch;
    a.rank = r;
    a.nranks = n;
    a.timeout_ns = timeoutNs;
    a.abort_word = reinterpret_cast<uint64_t>(abortDev);
    a.error_record = reinterpret_cast<uint64_t>(errDev + r);
    for (int p = 0; p < n; ++p) a.peers[p] = reinterpret_cast<uint64_t>(ws[p]);
    return a;
  }
  // Launches kernel k on every rank (or only on ranks in `only`, for the missing-rank test).
  template <typename Fill>
  void launch(Kernel k, unsigned grid, Fill fill, int skipRank = -1, unsigned threads = GC_BLOCK_THREADS, bool pdl = false) {
    for (int r = 0; r < n; ++r) {
      if (r == skipRank) continue;
      GcArgs a = args(r);
      fill(a, r);
      launchOne(k, grid, threads, streams[r], a, pdl);
    }
    CK(cudaGetLastError());
    ++epoch;
  }
  void sync() {
    for (int r = 0; r < n; ++r) CK(cudaStreamSynchronize(streams[r]));
  }
  // "" when no rank recorded an error, else a description naming rank, peer, epoch.
  std::string errors() const {
    std::string s;
    for (int r = 0; r < n; ++r) {
      const GcErrorRecord& e = errHost[r];
      if (e.code == GC_OK) continue;
      char buf[256];
      std::snprintf(buf, sizeof buf, "[rank %u: code %u kernel %u peer %d epoch %llu waited %llu observed %llu detail %llu block %u thread %u] ",
                    e.rank, e.code, e.kernel, e.peer == GC_NO_PEER ? -1 : (int)e.peer, (unsigned long long)e.epoch,
                    (unsigned long long)e.waited, (unsigned long long)e.observed, (unsigned long long)e.detail, e.block, e.thread);
      s += buf;
    }
    return s;
  }
  void clearErrors() { std::memset(errHost, 0, sizeof(GcErrorRecord) * n); }
};
