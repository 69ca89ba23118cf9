// Benchmark across GPUs (a program that prints tables; not a test): one process per GPU, the
// workspaces shared through CUDA IPC handles, NCCL (libnccl.so.2, loaded at run time) in the same run.
//   1. allReduce fp32 / bf16, 8 B - 16 MB: ours (the kernel the planner would pick, launched with
//      programmatic dependent launch) and NCCL, each as K launches captured once into a CUDA graph and
//      replayed (us per collective), and eager (K launches, events around them). Results checked.
//   2. allReduce fp32 through the LL128-atomic kernel across GPUs.
//   3. allGather through the LL kernel at 16-64 KB per peer (the 64 KB-per-peer question) and the pipe.
//   4. The floor across GPUs: minimal LL kernel, K=1000 collectives in one launch, against ours.
// Writes $OUT/gpu-2x.json ({"kind":"gpu-2x", date, commit from $GC_DATE / $GC_COMMIT, rows}).
//   usage: gc_bench2 [ngpus]        (default: every visible GPU, at most GC_MAX_RANKS)
#include "kernels.h"  // every kernel (all_kernels.cu)

#include <cuda_runtime.h>
#include <dlfcn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#define CK(x)                                                                                           \
  do {                                                                                                  \
    cudaError_t e_ = (x);                                                                               \
    if (e_ != cudaSuccess) {                                                                            \
      std::fprintf(stderr, "rank %d: CUDA error %s at %s:%d: %s\n", gRank, cudaGetErrorString(e_), __FILE__, __LINE__, #x); \
      std::exit(2);                                                                                     \
    }                                                                                                   \
  } while (0)

namespace {

int gRank = -1;
using Kernel = void (*)(const GcArgs);

// ---- NCCL through dlopen: the few entry points used, declared after nccl.h's C ABI.
struct NcclUniqueId { char internal[128]; };
using NcclComm = void*;
enum { kNcclFloat32 = 7, kNcclBfloat16 = 9, kNcclSum = 0 };
struct Nccl {
  int (*getVersion)(int*);
  int (*getUniqueId)(NcclUniqueId*);
  int (*commInitRank)(NcclComm*, int, NcclUniqueId, int);
  int (*allReduce)(const void*, void*, size_t, int, int, NcclComm, cudaStream_t);
  int (*allGather)(const void*, void*, size_t, int, NcclComm, cudaStream_t);
  const char* (*errorString)(int);
  bool load() {
    void* h = dlopen("libnccl.so.2", RTLD_NOW);
    if (!h) { std::fprintf(stderr, "libnccl.so.2: %s\n", dlerror()); return false; }
    getVersion = (int (*)(int*))dlsym(h, "ncclGetVersion");
    getUniqueId = (int (*)(NcclUniqueId*))dlsym(h, "ncclGetUniqueId");
    commInitRank = (int (*)(NcclComm*, int, NcclUniqueId, int))dlsym(h, "ncclCommInitRank");
    allReduce = (int (*)(const void*, void*, size_t, int, int, NcclComm, cudaStream_t))dlsym(h, "ncclAllReduce");
    allGather = (int (*)(const void*, void*, size_t, int, NcclComm, cudaStream_t))dlsym(h, "ncclAllGather");
    errorString = (const char* (*)(int))dlsym(h, "ncclGetErrorString");
    return getVersion && getUniqueId && commInitRank && allReduce && allGather && errorString;
  }
};
Nccl nccl;
#define NK(x)                                                                                   \
  do {                                                                                          \
    int r_ = (x);                                                                               \
    if (r_ != 0) {                                                                              \
      std::fprintf(stderr, "rank %d: NCCL error %s at %s:%d\n", gRank, nccl.errorString(r_), __FILE__, __LINE__); \
      std::exit(3);                                                                             \
    }                                                                                           \
  } while (0)

// ---- files in a directory shared by the rank processes: write once, others poll (bounded).
void writeFile(const std::string& path, const void* p, size_t n) {
  const std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f || std::fwrite(p, 1, n, f) != n) { std::fprintf(stderr, "cannot write %s\n", tmp.c_str()); std::exit(4); }
  std::fclose(f);
  std::rename(tmp.c_str(), path.c_str());
}
void readFile(const std::string& path, void* p, size_t n) {
  for (int i = 0; i < 60000; ++i) {
    if (FILE* f = std::fopen(path.c_str(), "rb")) {
      const size_t got = std::fread(p, 1, n, f);
      std::fclose(f);
      if (got == n) return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::fprintf(stderr, "rank %d: %s did not appear within 60 s\n", gRank, path.c_str());
  std::exit(4);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Rank {
  int rank, n;
  std::string dir;
  char* ws = nullptr;
  uint64_t peers[GC_MAX_RANKS] = {};
  GcErrorRecord* errHost = nullptr;
  GcErrorRecord* errDev = nullptr;
  cudaStream_t s;
  NcclComm comm;
  float* one;            // NCCL host barrier buffer
  char *send, *recv;     // user buffers
  uint64_t epoch = 1;    // host epoch counter, kept equal to the device epoch words (see replays)
  static constexpr size_t kBufBytes = 64u << 20;

  void init() {
    CK(cudaSetDevice(rank));
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaMalloc(&ws, GC_BENCH_WORKSPACE_BYTES));  // the product layout, then the benchmark regions
    CK(cudaMemset(ws, 0, GC_BENCH_WORKSPACE_BYTES));
    std::vector<uint32_t> pattern(1u << 20, GC_SENTINEL_WORD);
    for (uint64_t off = 0; off < GC_WS_SENT_BYTES; off += pattern.size() * 4)
      CK(cudaMemcpy(ws + GC_WS_SENT_OFFSET + off, pattern.data(), pattern.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaDeviceSynchronize());
    cudaIpcMemHandle_t h;
    CK(cudaIpcGetMemHandle(&h, ws));
    writeFile(dir + "/ws." + std::to_string(rank), &h, sizeof h);
    if (rank == 0) {
      NcclUniqueId id;
      NK(nccl.getUniqueId(&id));
      writeFile(dir + "/nccl.id", &id, sizeof id);
    }
    for (int p = 0; p < n; ++p) {
      if (p == rank) { peers[p] = (uint64_t)ws; continue; }
      cudaIpcMemHandle_t ph;
      readFile(dir + "/ws." + std::to_string(p), &ph, sizeof ph);
      void* ptr;
      CK(cudaIpcOpenMemHandle(&ptr, ph, cudaIpcMemLazyEnablePeerAccess));
      peers[p] = (uint64_t)ptr;
    }
    NcclUniqueId id;
    readFile(dir + "/nccl.id", &id, sizeof id);
    NK(nccl.commInitRank(&comm, n, id, rank));
    CK(cudaHostAlloc(&errHost, sizeof(GcErrorRecord), cudaHostAllocMapped));
    std::memset(errHost, 0, sizeof(GcErrorRecord));
    CK(cudaHostGetDevicePointer((void**)&errDev, errHost, 0));
    CK(cudaMalloc(&one, 4));
    CK(cudaMalloc(&send, kBufBytes));
    CK(cudaMalloc(&recv, kBufBytes));
    barrier();  // every workspace initialised before any launch
  }
  // All ranks here before any continues (NCCL allReduce of one float, then stream sync).
  void barrier() {
    NK(nccl.allReduce(one, one, 1, kNcclFloat32, kNcclSum, comm, s));
    CK(cudaStreamSynchronize(s));
  }
  GcArgs args(uint64_t count, uint32_t dtype) const {
    GcArgs a;
    std::memset(&a, 0, sizeof a);
    a.epoch = epoch;
    a.send = (uint64_t)send;
    a.recv = (uint64_t)recv;
    a.count = count;
    a.rank = rank;
    a.nranks = n;
    a.dtype = dtype;
    a.op = GC_OP_SUM;
    a.timeout_ns = 5000000000ull;
    a.error_record = (uint64_t)errDev;
    for (int p = 0; p < n; ++p) a.peers[p] = peers[p];
    return a;
  }
  void launch(Kernel k, unsigned grid, unsigned threads, const GcArgs& a, bool pdl) {
    if (!pdl) {
      k<<<grid, threads, 0, s>>>(a);
    } else {
      cudaLaunchConfig_t cfg = {};
      cfg.gridDim = dim3(grid);
      cfg.blockDim = dim3(threads);
      cfg.stream = s;
      cudaLaunchAttribute at[1];
      at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
      at[0].val.programmaticStreamSerializationAllowed = 1;
      cfg.attrs = at;
      cfg.numAttrs = 1;
      CK(cudaLaunchKernelEx(&cfg, k, a));
    }
    CK(cudaGetLastError());
    ++epoch;
  }
  bool checkErrors(const char* what) {
    if (errHost->code == GC_OK) return true;
    std::printf("rank %d: ERROR in %s: code %u peer %d epoch %llu waited %llu observed %llu\n", rank, what, errHost->code,
                (int)errHost->peer, (unsigned long long)errHost->epoch, (unsigned long long)errHost->waited,
                (unsigned long long)errHost->observed);
    std::memset(errHost, 0, sizeof(GcErrorRecord));
    return false;
  }
};

// Times `issue` (which enqueues K collectives on r.s): graph = captured once, replayed `replays` times
// (first replay warms up); eager = issued directly. us per collective, median over replays.
template <typename Issue> double timeGraph(Rank& r, int K, int replays, Issue issue, uint64_t epochsPerIssue) {
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(r.s, cudaStreamCaptureModeThreadLocal));
  const uint64_t e0 = r.epoch;
  issue();
  CK(cudaStreamEndCapture(r.s, &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  r.epoch = e0;  // capture launched nothing; every replay advances the device epoch words by K
  cudaEvent_t t0, t1;
  CK(cudaEventCreate(&t0));
  CK(cudaEventCreate(&t1));
  std::vector<double> us;
  for (int i = 0; i < replays; ++i) {
    r.barrier();
    CK(cudaEventRecord(t0, r.s));
    CK(cudaGraphLaunch(ge, r.s));
    CK(cudaEventRecord(t1, r.s));
    CK(cudaStreamSynchronize(r.s));
    r.epoch += epochsPerIssue;
    float ms;
    CK(cudaEventElapsedTime(&ms, t0, t1));
    if (i > 0) us.push_back(ms * 1000.0 / K);
  }
  CK(cudaGraphExecDestroy(ge));
  CK(cudaGraphDestroy(g));
  CK(cudaEventDestroy(t0));
  CK(cudaEventDestroy(t1));
  return median(us);
}
template <typename Issue> double timeEager(Rank& r, int K, int reps, Issue issue) {
  cudaEvent_t t0, t1;
  CK(cudaEventCreate(&t0));
  CK(cudaEventCreate(&t1));
  std::vector<double> us;
  for (int i = 0; i < reps; ++i) {
    r.barrier();
    CK(cudaEventRecord(t0, r.s));
    issue();
    CK(cudaEventRecord(t1, r.s));
    CK(cudaStreamSynchronize(r.s));
    float ms;
    CK(cudaEventElapsedTime(&ms, t0, t1));
    if (i > 0) us.push_back(ms * 1000.0 / K);
  }
  CK(cudaEventDestroy(t0));
  CK(cudaEventDestroy(t1));
  return median(us);
}

// Inputs: small integers, so fp32 and bf16 sums are exact: rank r, element i -> (i % 13) + r.
__global__ void fillInputs(char* p, uint64_t count, uint32_t dtype, int rank) {
  for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < count; i += (uint64_t)gridDim.x * blockDim.x) {
    const float v = (float)(i % 13 + rank);
    if (dtype == GC_DT_FLOAT32) reinterpret_cast<float*>(p)[i] = v;
    else reinterpret_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(v);
  }
}
__global__ void countWrongSum(const char* p, uint64_t count, uint32_t dtype, int n, unsigned long long* wrong) {
  unsigned long long bad = 0;
  for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < count; i += (uint64_t)gridDim.x * blockDim.x) {
    const float want = (float)(n * (i % 13) + n * (n - 1) / 2);
    const float got = dtype == GC_DT_FLOAT32 ? reinterpret_cast<const float*>(p)[i] : __bfloat162float(reinterpret_cast<const __nv_bfloat16*>(p)[i]);
    if (got != want) ++bad;
  }
  if (bad) atomicAdd(wrong, bad);
}
// The allReduce kernel for a size: the first of ll, sentinel, pipe whose kernel-table capacity takes
// it (the host's default route with its size limits at their table values).
struct Choice { Kernel k; unsigned grid; const char* name; };
Choice pickAllReduce(uint64_t bytes, uint32_t dtype) {
  const bool f32 = dtype == GC_DT_FLOAT32;
  if (bytes <= GC_LL_MAX_BYTES) return {f32 ? gc_allreduce_ll_f32 : gc_allreduce_ll_bf16, GC_GRID_FOR_BYTES(bytes), "gpu-ll-oneshot"};
  if (bytes <= GC_SENT_MAX_BYTES) return {f32 ? gc_allreduce_sentinel_f32 : gc_allreduce_sentinel_bf16, GC_GRID_FOR_BYTES(bytes), "gpu-sentinel-twoshot"};
  return {f32 ? gc_allreduce_pipe_f32 : gc_allreduce_pipe_bf16, GC_PIPE_BLOCKS, "gpu-pipe"};
}

int runRank(int rank, int n, const std::string& dir) {
  gRank = rank;
  if (!nccl.load()) return 1;
  Rank r{rank, n, dir};
  r.init();
  int ncclVersion = 0;
  nccl.getVersion(&ncclVersion);
  unsigned long long* wrong;
  CK(cudaMalloc(&wrong, 8));
  const bool lead = rank == 0;
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, rank));
  int driver = 0;
  CK(cudaDriverGetVersion(&driver));
  if (lead) std::printf("gc_bench2: %d processes, one GPU each (%s, %d SMs), driver API %d, NCCL %d\n", n, prop.name, prop.multiProcessorCount, driver, ncclVersion);
  std::string rows;
  const int K = 200, reps = 6;

  if (lead) {
    std::printf("\n## allReduce SUM across %d GPUs, us per collective (graph: K=%d launches captured once, replayed %d times, median; eager: K launches)\n\n", n, K, reps - 1);
    std::printf("| dtype | bytes | our path | ours graph (PDL) | ours graph (plain) | NCCL graph | NCCL/ours graph | ours eager | NCCL eager | wrong |\n|---|---|---|---|---|---|---|---|---|---|\n");
  }
  for (uint32_t dtype : {GC_DT_FLOAT32, GC_DT_BFLOAT16}) {
    const uint32_t esz = gc_dtype_size(dtype);
    for (uint64_t bytes : {8ull, 64ull, 512ull, 2048ull, 8192ull, 32768ull, 131072ull, 1ull << 20, 16ull << 20}) {
      const uint64_t count = bytes / esz;
      if (count == 0) continue;
      fillInputs<<<64, 256, 0, r.s>>>(r.send, count, dtype, rank);
      CK(cudaMemsetAsync(r.recv, 0xA7, bytes, r.s));
      CK(cudaMemsetAsync(wrong, 0, 8, r.s));
      const Choice ch = pickAllReduce(bytes, dtype);
      const int k = bytes >= (1u << 20) ? 20 : K;
      auto ours = [&](bool pdl) {
        return [&r, &ch, count, dtype, k, pdl]() {
          for (int i = 0; i < k; ++i) r.launch(ch.k, ch.grid, GC_BLOCK_THREADS, r.args(count, dtype), pdl);
        };
      };
      const double og = timeGraph(r, k, reps, ours(true), k);
      countWrongSum<<<64, 256, 0, r.s>>>(r.recv, count, dtype, n, wrong);
      const double op = timeGraph(r, k, reps, ours(false), k);
      const double oe = timeEager(r, k, reps, ours(true));
      r.checkErrors(ch.name);
      auto ncclIssue = [&]() {
        for (int i = 0; i < k; ++i)
          NK(nccl.allReduce(r.send, r.recv, count, dtype == GC_DT_FLOAT32 ? kNcclFloat32 : kNcclBfloat16, kNcclSum, r.comm, r.s));
      };
      const double ng = timeGraph(r, k, reps, ncclIssue, 0);
      const double ne = timeEager(r, k, reps, ncclIssue);
      unsigned long long w = 0;
      CK(cudaMemcpy(&w, wrong, 8, cudaMemcpyDeviceToHost));
      if (lead) {
        std::printf("| %s | %llu | %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %llu |\n", dtype == GC_DT_FLOAT32 ? "fp32" : "bf16",
                    (unsigned long long)bytes, ch.name, og, op, ng, ng / og, oe, ne, w);
        std::fflush(stdout);
        char row[400];
        std::snprintf(row, sizeof row,
                      "%s{\"collective\":\"allReduce\",\"dtype\":\"%s\",\"bytes\":%llu,\"path\":\"%s\",\"ours_graph_us\":%.3f,"
                      "\"ours_graph_plain_us\":%.3f,\"nccl_graph_us\":%.3f,\"ours_eager_us\":%.3f,\"nccl_eager_us\":%.3f,\"wrong\":%llu}",
                      rows.empty() ? "" : ",", dtype == GC_DT_FLOAT32 ? "fp32" : "bf16", (unsigned long long)bytes, ch.name, og, op,
                      ng, oe, ne, w);
        rows += row;
      }
    }
  }

  // LL128-atomic across GPUs, fp32 SUM, graph replay with PDL.
  if (lead) std::printf("\n## allReduce fp32 SUM through gpu-ll128-atomic across %d GPUs (graph, PDL), us per collective\n\n| bytes | ll128 | ll one-shot | sentinel two-shot |\n|---|---|---|---|\n", n);
  for (uint64_t bytes : {8ull, 512ull, 8192ull, 65536ull, 262144ull, 1ull << 20}) {
    const uint64_t count = bytes / 4;
    fillInputs<<<64, 256, 0, r.s>>>(r.send, count, GC_DT_FLOAT32, rank);
    double t[3] = {0, 0, 0};
    Kernel ks[3] = {gc_allreduce_ll128_f32, gc_allreduce_ll_f32, gc_allreduce_sentinel_f32};
    for (int v = 0; v < 3; ++v) {
      if (v == 1 && bytes > GC_LL_MAX_BYTES) continue;
      t[v] = timeGraph(r, K, reps, [&]() {
        for (int i = 0; i < K; ++i) r.launch(ks[v], GC_GRID_FOR_BYTES(bytes), GC_BLOCK_THREADS, r.args(count, GC_DT_FLOAT32), true);
      }, K);
    }
    CK(cudaMemsetAsync(wrong, 0, 8, r.s));
    r.launch(gc_allreduce_ll128_f32, GC_GRID_FOR_BYTES(bytes), GC_BLOCK_THREADS, r.args(count, GC_DT_FLOAT32), false);
    countWrongSum<<<64, 256, 0, r.s>>>(r.recv, count, GC_DT_FLOAT32, n, wrong);
    unsigned long long w = 0;
    CK(cudaMemcpy(&w, wrong, 8, cudaMemcpyDeviceToHost));
    r.checkErrors("ll128");
    if (lead) std::printf("| %llu | %.2f | %.2f | %.2f |%s\n", (unsigned long long)bytes, t[0], t[1], t[2], w ? " WRONG" : "");
    std::fflush(stdout);
  }

  // allGather through LL per peer size (the 64 KB-per-peer question), the pipe, and NCCL.
  if (lead) std::printf("\n## allGather across %d GPUs, bytes per peer, us per collective (graph, PDL)\n\n| bytes per peer | ll | ll grid | pipe | NCCL |\n|---|---|---|---|---|\n", n);
  for (uint64_t per : {4096ull, 16384ull, 32768ull, 49152ull, 61440ull, 65536ull}) {
    const unsigned grid = GC_GRID_FOR_BYTES(per);
    auto llIssue = [&]() { for (int i = 0; i < K; ++i) r.launch(gc_allgather_ll, grid, GC_BLOCK_THREADS, r.args(per, GC_DT_UINT8), true); };
    auto pipeIssue = [&]() { for (int i = 0; i < K; ++i) r.launch(gc_allgather_pipe, GC_PIPE_BLOCKS, GC_BLOCK_THREADS, r.args(per, GC_DT_UINT8), true); };
    auto ncclIssue = [&]() { for (int i = 0; i < K; ++i) NK(nccl.allGather(r.send, r.recv, per / 4, kNcclFloat32, r.comm, r.s)); };
    const double a = timeGraph(r, K, reps, llIssue, K), b = timeGraph(r, K, reps, pipeIssue, K), c = timeGraph(r, K, reps, ncclIssue, 0);
    r.checkErrors("allGather");
    if (lead) std::printf("| %llu | %.2f | %u | %.2f | %.2f |\n", (unsigned long long)per, a, grid, b, c);
    std::fflush(stdout);
    if (lead) {
      char row[300];
      std::snprintf(row, sizeof row, ",{\"collective\":\"allGather\",\"dtype\":\"uint8\",\"bytes\":%llu,\"path\":\"gpu-ll\",\"ours_graph_us\":%.3f,\"pipe_graph_us\":%.3f,\"nccl_graph_us\":%.3f}",
                    (unsigned long long)(per * n), a, b, c);
      rows += row;
    }
  }

  // The floor across GPUs: K=1000 collectives inside one launch, minimal LL kernel against ours.
  if (lead) std::printf("\n## allReduce fp32 SUM in-loop across %d GPUs (K=1000 in one launch), us per collective\n\n| bytes | ours | naive LL | ours/naive |\n|---|---|---|---|\n", n);
  for (uint64_t bytes : {8ull, 1024ull, 8192ull, 32768ull, 65536ull}) {
    const uint64_t count = bytes / 4;
    const int KL = 1000;
    auto oursLoop = [&]() {
      GcArgs a = r.args(count, GC_DT_FLOAT32);
      gc_allreduce_ll_f32_loop<<<GC_GRID_FOR_BYTES(bytes), GC_BLOCK_THREADS, 0, r.s>>>(a, KL);
      r.epoch += KL;
    };
    auto floorLoop = [&]() {
      GcArgs a = r.args(count, GC_DT_FLOAT32);
      gc_floor_ll_loop<<<floorGrid(count), kFloorThreads, 0, r.s>>>(a, KL);
      r.epoch += KL;
    };
    const double o = timeEager(r, KL, reps, oursLoop), f = timeEager(r, KL, reps, floorLoop);
    r.checkErrors("in-loop");
    if (lead) std::printf("| %llu | %.2f | %.2f | %.2f |\n", (unsigned long long)bytes, o, f, o / f);
    std::fflush(stdout);
  }

  if (lead) {
    const char* outDir = std::getenv("OUT");
    const char* commit = std::getenv("GC_COMMIT");
    const char* date = std::getenv("GC_DATE");
    const std::string path = std::string(outDir ? outDir : ".") + "/gpu-2x.json";
    if (FILE* f = std::fopen(path.c_str(), "w")) {
      std::fprintf(f, "{\"kind\":\"gpu-2x\",\"date\":\"%s\",\"commit\":\"%s\",\"machine\":\"%d x %s, one process per GPU, driver API %d, NCCL %d\",\"rows\":[%s]}\n",
                   date ? date : "", commit ? commit : "", n, prop.name, driver, ncclVersion, rows.c_str());
      std::fclose(f);
      std::printf("\nwrote %s\n", path.c_str());
    }
  }
  r.barrier();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int n = argc > 1 ? std::atoi(argv[1]) : 0;
  if (n == 0) {  // count GPUs in a child, so the parent never initialises CUDA before fork
    int fds[2];
    if (pipe(fds) != 0) return 5;
    if (fork() == 0) {
      int c = 0;
      if (cudaGetDeviceCount(&c) != cudaSuccess) c = 0;
      if (write(fds[1], &c, sizeof c) != sizeof c) _exit(1);
      _exit(0);
    }
    if (read(fds[0], &n, sizeof n) != sizeof n) n = 0;
    wait(nullptr);
  }
  if (n < 2 || n > GC_MAX_RANKS) {
    std::fprintf(stderr, "gc_bench2 needs 2..%d GPUs (found or asked: %d)\n", GC_MAX_RANKS, n);
    return 1;
  }
  char tmpl[] = "/tmp/gc_bench2.XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  std::vector<pid_t> kids;
  for (int r = 0; r < n; ++r) {
    pid_t p = fork();
    if (p == 0) _exit(runRank(r, n, dir));
    kids.push_back(p);
  }
  int rc = 0;
  for (pid_t p : kids) {
    int st = 0;
    waitpid(p, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) rc = 1;
  }
  return rc;
}
