// Benchmark (a program that prints tables; not a test): ranks as streams of one process on one GPU.
//  1. The floor: ours (gc_allreduce_ll_f32's body: the small path at <= 4 KB, the recipe above)
//     against the floor -- the faster of the minimal LL kernel of floor.cuh (nothing but the protocol)
//     and, at <= 4 KB, the same with every source polled in each pass (gc_study_a_floor) -- and a
//     minimal two-barrier kernel, K collectives inside ONE launch (no launch gaps), allReduce fp32 sum,
//     8 B - 64 KB; writes $OUT/gpu-inloop.json ({"kind":"gpu-inloop", date, commit from $GC_DATE /
//     $GC_COMMIT, rows {ranks, bytes, ours_us, floor_us, floor_ll_us, floor_poll_all_us, two_barrier_us}}).
//  2. Before / after: every kernel variant of a reference fatbin (an older build) against the same
//     kernel of this build's fatbin, loaded by name (cuModuleLoadData), same ranks, interleaved in the
//     same run. Timed device-side: each rank's stream gets K back-to-back launches captured once into
//     a CUDA graph (one fork, one join), replayed; time / K; median of repetitions. Grids from the
//     kernel table's rules (kernel_table.h).
//  3. Host cost per launch of the same kernel: <<<>>> and cuLaunchKernel on this build's fatbin.
//  --floor-study: instead, the floor with one piece of our per-call work added at a time (floor.cuh),
//     in-kernel loops as in 1, so the cost of each piece is measured rather than guessed; per size,
//     ours against the best floor (the fastest loop without safety work) of the same run.
//  4. Grouped calls: one batch-kernel launch against the same calls launched one by one (group_bench.cuh).
//   usage: gc_bench [--floor-only | --floor-study | --group-only] [--fatbin PATH] [--before PATH]
//          (defaults: gpucoll_kernels.fatbin; no --before: part 2 is skipped)
#include "kernels.h"  // every kernel (all_kernels.cu)
#include "harness.cuh"

#include <cuda.h>
#include <cudaTypedefs.h>

#include <algorithm>
#include <chrono>
#include <functional>

namespace {

struct Bufs {
  std::vector<float*> send, recv;
  Bufs(int n, size_t bytes) : send(n), recv(n) {
    std::vector<float> h(bytes / 4);
    for (size_t i = 0; i < h.size(); ++i) h[i] = (float)((i * 2654435761u) % 1000) / 1000.f - 0.5f;
    for (int r = 0; r < n; ++r) {
      CK(cudaMalloc(&send[r], bytes));
      CK(cudaMalloc(&recv[r], bytes));
      CK(cudaMemcpy(send[r], h.data(), bytes, cudaMemcpyHostToDevice));
    }
    CK(cudaDeviceSynchronize());
  }
  ~Bufs() {
    for (size_t r = 0; r < send.size(); ++r) { cudaFree(send[r]); cudaFree(recv[r]); }
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Driver entry points through the runtime (no -lcuda at link time).
struct Driver {
  PFN_cuModuleLoadData_v2000 loadData = nullptr;
  PFN_cuModuleGetFunction_v2000 getFunction = nullptr;
  PFN_cuLaunchKernel_v4000 launchKernel = nullptr;
  Driver() {
    cudaDriverEntryPointQueryResult q;
    CK(cudaGetDriverEntryPointByVersion("cuModuleLoadData", (void**)&loadData, 12000, cudaEnableDefault, &q));
    CK(cudaGetDriverEntryPointByVersion("cuModuleGetFunction", (void**)&getFunction, 12000, cudaEnableDefault, &q));
    CK(cudaGetDriverEntryPointByVersion("cuLaunchKernel", (void**)&launchKernel, 12000, cudaEnableDefault, &q));
  }
  CUmodule load(const char* path) const {
    std::vector<char> image;
    if (FILE* f = std::fopen(path, "rb")) {
      std::fseek(f, 0, SEEK_END);
      image.resize(std::ftell(f));
      std::fseek(f, 0, SEEK_SET);
      if (std::fread(image.data(), 1, image.size(), f) != image.size()) image.clear();
      std::fclose(f);
    }
    CUmodule m = nullptr;
    if (image.empty() || loadData(&m, image.data()) != CUDA_SUCCESS) return nullptr;
    return m;
  }
  CUfunction get(CUmodule m, const char* name) const {
    CUfunction f = nullptr;
    if (m == nullptr || getFunction(&f, m, name) != CUDA_SUCCESS) return nullptr;
    return f;
  }
};

// One launch of rank r with its filled-in arguments on its stream.
using Launcher = std::function<void(cudaStream_t, const GcArgs&)>;

// One graph: every rank's stream runs K launches back to back; returns us per collective.
double timeGraph(Comm& c, Bufs& b, const Launcher& launch, uint64_t count, uint32_t dtype, int K) {
  cudaStream_t s0 = c.streams[0];
  cudaEvent_t fork, t0, t1;
  CK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  CK(cudaEventCreate(&t0));
  CK(cudaEventCreate(&t1));
  CK(cudaStreamBeginCapture(s0, cudaStreamCaptureModeThreadLocal));
  CK(cudaEventRecord(fork, s0));
  for (int r = 1; r < c.n; ++r) CK(cudaStreamWaitEvent(c.streams[r], fork, 0));
  for (int i = 0; i < K; ++i) {
    for (int r = 0; r < c.n; ++r) {
      GcArgs a = c.args(r);
      a.send = (uint64_t)b.send[r];
      a.recv = (uint64_t)b.recv[r];
      a.count = count;
      a.dtype = dtype;
      a.op = GC_OP_SUM;
      launch(c.streams[r], a);
    }
    CK(cudaGetLastError());
    ++c.epoch;
  }
  std::vector<cudaEvent_t> joins(c.n);
  for (int r = 1; r < c.n; ++r) {
    CK(cudaEventCreateWithFlags(&joins[r], cudaEventDisableTiming));
    CK(cudaEventRecord(joins[r], c.streams[r]));
    CK(cudaStreamWaitEvent(s0, joins[r], 0));
  }
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CK(cudaStreamEndCapture(s0, &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  CK(cudaGraphUpload(ge, s0));
  CK(cudaStreamSynchronize(s0));
  CK(cudaEventRecord(t0, s0));
  CK(cudaGraphLaunch(ge, s0));
  CK(cudaEventRecord(t1, s0));
  CK(cudaStreamSynchronize(s0));
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, t0, t1));
  std::string e = c.errors();
  if (!e.empty()) { std::printf("ERROR in timed run: %s\n", e.c_str()); c.clearErrors(); }
  CK(cudaGraphExecDestroy(ge));
  CK(cudaGraphDestroy(g));
  for (int r = 1; r < c.n; ++r) CK(cudaEventDestroy(joins[r]));
  CK(cudaEventDestroy(fork)); CK(cudaEventDestroy(t0)); CK(cudaEventDestroy(t1));
  return ms * 1000.0 / K;
}

// K collectives inside one launch per rank; returns us per collective.
double timeLoop(Comm& c, Bufs& b, void (*k)(const GcArgs, int), unsigned grid, unsigned threads, uint64_t count, int K) {
  cudaEvent_t fork, t0, t1;
  CK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  CK(cudaEventCreate(&t0));
  CK(cudaEventCreate(&t1));
  CK(cudaEventRecord(t0, c.streams[0]));
  CK(cudaEventRecord(fork, c.streams[0]));
  for (int r = 1; r < c.n; ++r) CK(cudaStreamWaitEvent(c.streams[r], fork, 0));
  for (int r = 0; r < c.n; ++r) {
    GcArgs a = c.args(r);
    a.send = (uint64_t)b.send[r]; a.recv = (uint64_t)b.recv[r]; a.count = count; a.dtype = GC_DT_FLOAT32; a.op = GC_OP_SUM;
    k<<<grid, threads, 0, c.streams[r]>>>(a, K);
  }
  CK(cudaGetLastError());
  c.epoch += K;
  for (int r = 1; r < c.n; ++r) {
    cudaEvent_t j;
    CK(cudaEventCreateWithFlags(&j, cudaEventDisableTiming));
    CK(cudaEventRecord(j, c.streams[r]));
    CK(cudaStreamWaitEvent(c.streams[0], j, 0));
    CK(cudaEventDestroy(j));
  }
  CK(cudaEventRecord(t1, c.streams[0]));
  c.sync();
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, t0, t1));
  std::string e = c.errors();
  if (!e.empty()) { std::printf("ERROR in loop run: %s\n", e.c_str()); c.clearErrors(); }
  return ms * 1000.0 / K;
}

// Rank 0's output against the host sum of the ranks' (identical) inputs, in rank order.
bool checkSum(Bufs& b, int n, uint64_t count, const char* what, uint64_t bytes) {
  std::vector<float> in(count), out(count);
  CK(cudaMemcpy(in.data(), b.send[0], count * 4, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(out.data(), b.recv[0], count * 4, cudaMemcpyDeviceToHost));
  for (uint64_t e = 0; e < count; ++e) {
    float want = in[e];
    for (int r = 1; r < n; ++r) want += in[e];
    if (out[e] != want) {
      std::printf("CHECK FAILED %s n=%d bytes=%llu elem %llu: %g, want %g\n", what, n, (unsigned long long)bytes,
                  (unsigned long long)e, out[e], want);
      return false;
    }
  }
  return true;
}

// A kernel of the table for part 2: name, collective, protocol, message sizes (bytes per rank).
struct Variant {
  const char* name;
  uint32_t coll, proto;
  std::vector<uint64_t> sizes;
};

// The floor study: every study loop of kernels.h's GC_STUDY_LIST next to the floor and ours, per ranks
// and size; us per collective (in-kernel loop, K = 2000, median), and the ratio to the floor.
int runFloorStudy(int reps) {
  struct Loop {
    const char* name;
    void (*k)(const GcArgs, int);
    unsigned threads;
    bool simple;  // no safety work (no bounded wait, argument check or arrival word): a floor candidate
  };
  constexpr uint32_t kSafety = study::kSpin | study::kValidate | study::kAnnounce | study::kCheckRanks | study::kCheckPeers;
  std::vector<Loop> loops = {{"floor", gc_floor_ll_loop, kFloorThreads, true},
                             };
#define GC_STUDY_ROW(name, threads, minBlocks, flags) loops.push_back({#name, name, threads, ((flags) & kSafety) == 0});
  GC_STUDY_LIST(GC_STUDY_ROW)
#undef GC_STUDY_ROW
#define GC_STUDY_ALL_ROW(name, minBlocks, flags) loops.push_back({#name, name, GC_BLOCK_THREADS, ((flags) & kSafety) == 0});
  GC_STUDY_ALL_LIST(GC_STUDY_ALL_ROW)
#undef GC_STUDY_ALL_ROW
  loops.push_back({"ours (gc_allreduce_ll_f32's small path)", gc_allreduce_ll_small_f32_loop, GC_BLOCK_THREADS, false});
  const std::vector<uint64_t> sizes = {8, 64, 512, 1024, 4096};
  std::string rows;
  for (int n : {2, 4, 8}) {
    Comm c(n);
    Bufs b(n, 1 << 16);
    std::printf("\n## floor study, %d ranks: us per allReduce (fp32 sum), K=2000 in one launch, median of %d (x floor)\n\n| loop |", n, reps);
    for (uint64_t bytes : sizes) std::printf(" %llu B |", (unsigned long long)bytes);
    std::printf("\n|---|");
    for (size_t i = 0; i < sizes.size(); ++i) std::printf("---|");
    std::printf("\n");
    std::vector<std::vector<double>> med(loops.size(), std::vector<double>(sizes.size()));
    for (size_t z = 0; z < sizes.size(); ++z) {
      const uint64_t bytes = sizes[z], count = bytes / 4;
      std::vector<std::vector<double>> t(loops.size());
      for (int i = 0; i < reps + 1; ++i)  // interleaved; round 0 warms up and checks every sum
        for (size_t v = 0; v < loops.size(); ++v) {
          const bool wide = loops[v].threads == GC_BLOCK_THREADS;
          if (i == 0) {
            for (int r = 0; r < n; ++r) CK(cudaMemset(b.recv[r], 0xA7, bytes));
            CK(cudaDeviceSynchronize());
          }
          const double x = timeLoop(c, b, loops[v].k, wide ? GC_GRID_FOR_BYTES(bytes) : floorGrid(count), loops[v].threads, count, 2000);
          if (i == 0) checkSum(b, n, count, loops[v].name, bytes);
          else t[v].push_back(x);
        }
      for (size_t v = 0; v < loops.size(); ++v) med[v][z] = median(t[v]);
    }
    // The floor of each size: the fastest simple loop (no safety work) of this run.
    std::vector<size_t> best(sizes.size(), 0);
    for (size_t z = 0; z < sizes.size(); ++z)
      for (size_t v = 0; v < loops.size(); ++v)
        if (loops[v].simple && med[v][z] < med[best[z]][z]) best[z] = v;
    for (size_t v = 0; v < loops.size(); ++v) {
      std::printf("| %s |", loops[v].name);
      for (size_t z = 0; z < sizes.size(); ++z) {
        std::printf(" %.3f (%.2f) |", med[v][z], med[v][z] / med[0][z]);
        char row[300];
        std::snprintf(row, sizeof row, "%s{\"loop\":\"%s\",\"ranks\":%d,\"bytes\":%llu,\"us\":%.3f,\"floor_us\":%.3f,\"best_floor_us\":%.3f,\"best_floor\":\"%s\"}",
                      rows.empty() ? "" : ",", loops[v].name, n, (unsigned long long)sizes[z], med[v][z], med[0][z],
                      med[best[z]][z], loops[best[z]].name);
        rows += row;
      }
      std::printf("\n");
    }
    const size_t ours = loops.size() - 1;
    std::printf("\n%d ranks, ours against the best floor of each size (the fastest simple loop above):\n\n| bytes | ours us | best floor us | which | ours / best |\n|---|---|---|---|---|\n", n);
    for (size_t z = 0; z < sizes.size(); ++z)
      std::printf("| %llu | %.3f | %.3f | %s | %.2f |\n", (unsigned long long)sizes[z], med[ours][z], med[best[z]][z],
                  loops[best[z]].name, med[ours][z] / med[best[z]][z]);
    std::fflush(stdout);
  }
  const char* outDir = std::getenv("OUT");
  std::string path = std::string(outDir ? outDir : ".") + "/gpu-floor-study.json";
  if (FILE* f = std::fopen(path.c_str(), "w")) {
    std::fprintf(f, "{\"kind\":\"gpu-floor-study\",\"date\":\"%s\",\"commit\":\"%s\",\"rows\":[%s]}\n",
                 std::getenv("GC_DATE") ? std::getenv("GC_DATE") : "", std::getenv("GC_COMMIT") ? std::getenv("GC_COMMIT") : "", rows.c_str());
    std::fclose(f);
    std::printf("\nwrote %s\n", path.c_str());
  }
  return 0;
}

}  // namespace

#include "group_bench.cuh"  // part 4; uses median()

int main(int argc, char** argv) {
  bool floorOnly = false, floorStudy = false, groupOnly = false;
  const char* fatbinPath = "gpucoll_kernels.fatbin";
  const char* beforePath = nullptr;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--floor-only") floorOnly = true;
    else if (a == "--floor-study") floorStudy = true;
    else if (a == "--group-only") groupOnly = true;
    else if (a == "--fatbin" && i + 1 < argc) fatbinPath = argv[++i];
    else if (a == "--before" && i + 1 < argc) beforePath = argv[++i];
    else { std::fprintf(stderr, "usage: gc_bench [--floor-only | --floor-study | --group-only] [--fatbin PATH] [--before PATH]\n"); return 2; }
  }
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  int driver = 0;
  CK(cudaDriverGetVersion(&driver));
  std::printf("gc_bench on %s (%d SMs), driver API %d\n", prop.name, prop.multiProcessorCount, driver);
  const int reps = 7;
  if (floorStudy) return runFloorStudy(reps);
  if (groupOnly) {
    groupBench(5);
    return 0;
  }

  // ---- 1. the floor
  std::printf("\n## allReduce fp32 sum against the floor (minimal LL kernel) and a minimal two-barrier kernel,\n");
  std::printf("## us per collective, K=2000 collectives inside one launch, median of %d; ratio = ours / floor\n\n", reps);
  std::printf("## floor = the faster of the minimal LL kernel (floor.cuh floorLL) and, at <= 4 KB, the same with every source polled in each pass and the own part from the input (gc_study_a_floor)\n\n");
  std::printf("| ranks | bytes | ours | floor | ours/floor | floorLL | a_floor |\n|---|---|---|---|---|---|---|\n");
  std::string rows;
  for (int n : {2, 4, 8}) {
    Comm c(n);
    Bufs b(n, 1 << 16);
    for (uint64_t bytes : {8ull, 64ull, 512ull, 1024ull, 4096ull, 16384ull, 65536ull}) {
      const uint64_t count = bytes / 4;
      const unsigned og = GC_GRID_FOR_BYTES(bytes), fg = floorGrid(count);
      std::vector<double> t[4];
      const char* names[4] = {"ours in-loop", "floor in-loop", "two-barrier in-loop", "floor poll-all in-loop"};
      const int variants = bytes <= GC_BYTES_PER_BLOCK ? 4 : 3;  // gc_study_a_floor: one block, one packet per thread
      for (int i = 0; i < reps + 1; ++i) {  // round 0 warms up and checks every variant's sum
        for (int v = 0; v < variants; ++v) {
          if (i == 0) {
            for (int r = 0; r < n; ++r) CK(cudaMemset(b.recv[r], 0xA7, bytes));
            CK(cudaDeviceSynchronize());
          }
          const double x = v == 0 ? timeLoop(c, b, bytes <= GC_BYTES_PER_BLOCK ? gc_allreduce_ll_small_f32_loop : gc_allreduce_ll_f32_loop,
                                             og, GC_BLOCK_THREADS, count, 2000)
                         : v == 1 ? timeLoop(c, b, gc_floor_ll_loop, fg, kFloorThreads, count, 2000)
                         : v == 2 ? timeLoop(c, b, gc_floor_two_barrier_loop, fg, kFloorThreads, count, 2000)
                                  : timeLoop(c, b, gc_study_a_floor, 1, GC_BLOCK_THREADS, count, 2000);
          if (i > 0) t[v].push_back(x);
          if (i == 0) checkSum(b, n, count, names[v], bytes);
        }
      }
      const double m0 = median(t[0]), m1 = median(t[1]), m2 = median(t[2]), m3 = variants > 3 ? median(t[3]) : 0;
      const double fl = m3 > 0 && m3 < m1 ? m3 : m1;  // the floor: the faster minimal kernel
      std::printf("| %d | %llu | %.3f | %.3f | %.2f | %.3f | %.3f |\n", n, (unsigned long long)bytes, m0, fl, m0 / fl, m1, m3);
      std::fflush(stdout);
      char row[300];
      std::snprintf(row, sizeof row, "%s{\"ranks\":%d,\"bytes\":%llu,\"ours_us\":%.3f,\"floor_us\":%.3f,\"floor_ll_us\":%.3f,\"floor_poll_all_us\":%.3f,\"two_barrier_us\":%.3f}",
                    rows.empty() ? "" : ",", n, (unsigned long long)bytes, m0, fl, m1, m3, m2);
      rows += row;
    }
  }
  {
    const char* outDir = std::getenv("OUT");
    const char* commit = std::getenv("GC_COMMIT");
    const char* date = std::getenv("GC_DATE");
    std::string path = std::string(outDir ? outDir : ".") + "/gpu-inloop.json";
    if (FILE* f = std::fopen(path.c_str(), "w")) {
      std::fprintf(f, "{\"kind\":\"gpu-inloop\",\"date\":\"%s\",\"commit\":\"%s\",\"machine\":\"%s, %d SMs, driver API %d; ranks as streams of one process\",\"rows\":[%s]}\n",
                   date ? date : "", commit ? commit : "", prop.name, prop.multiProcessorCount, driver, rows.c_str());
      std::fclose(f);
      std::printf("\nwrote %s\n", path.c_str());
    }
  }
  if (floorOnly) return 0;

  Driver drv;
  CUmodule after = drv.load(fatbinPath);
  if (after == nullptr) std::printf("\nERROR: could not load %s\n", fatbinPath);

  // ---- 2. before / after
  if (beforePath != nullptr && after != nullptr) {
    CUmodule before = drv.load(beforePath);
    if (before == nullptr) std::printf("\nERROR: could not load %s\n", beforePath);
    const std::vector<uint64_t> small = {8, 1024, 4096, 16384, 65536};
    const std::vector<Variant> variants = {
        {"gc_allreduce_ll_f32", GC_COLL_ALLREDUCE, GC_PROTO_LL, small},
        {"gc_allreduce_sentinel_f32", GC_COLL_ALLREDUCE, GC_PROTO_SENTINEL, {1024, 16384, 65536, 262144, 1u << 20}},
        {"gc_allreduce_ll128_f32", GC_COLL_ALLREDUCE, GC_PROTO_LL128, {1024, 16384, 65536, 262144, 1u << 20}},
        {"gc_allreduce_pipe_f32", GC_COLL_ALLREDUCE, GC_PROTO_PIPE, {65536, 1u << 20, 4u << 20, 16u << 20}},
        {"gc_reducescatter_ll_f32", GC_COLL_REDUCESCATTER, GC_PROTO_LL, {1024, 16384, 65536}},
        {"gc_reducescatter_pipe_f32", GC_COLL_REDUCESCATTER, GC_PROTO_PIPE, {65536, 1u << 20}},
        {"gc_allgather_ll", GC_COLL_ALLGATHER, GC_PROTO_LL, {1024, 16384, 65536}},
        {"gc_allgather_pipe", GC_COLL_ALLGATHER, GC_PROTO_PIPE, {65536, 1u << 20}},
        {"gc_broadcast_ll", GC_COLL_BROADCAST, GC_PROTO_LL, {1024, 65536}},
        {"gc_alltoall_ll", GC_COLL_ALLTOALL, GC_PROTO_LL, {1024, 16384}},
    };
    std::printf("\n## before (%s) / after (%s): us per collective, graph replay of K launches, median of %d,\n", beforePath, fatbinPath, reps);
    std::printf("## the two interleaved in the same run; bytes = per-rank message (per peer for movement)\n\n");
    std::printf("| kernel | ranks | bytes | before | after | after/before |\n|---|---|---|---|---|---|\n");
    std::string ba;
    double worst = 0;
    const char* worstAt = "";
    static char worstBuf[200];
    for (int n : {2, 4, 8}) {
      Comm cb(n), ca(n);  // separate workspaces: the two builds' slot formats differ
      Bufs b(n, (size_t)(16u << 20) * (size_t)n);
      for (const Variant& v : variants) {
        CUfunction fb = drv.get(before, v.name), fa = drv.get(after, v.name);
        if (fb == nullptr || fa == nullptr) { std::printf("| %s | %d | - | missing in %s | | |\n", v.name, n, fb ? "after" : "before"); continue; }
        for (uint64_t bytes : v.sizes) {
          const uint64_t count = bytes / 4;
          const unsigned grid = v.proto == GC_PROTO_PIPE ? GC_PIPE_BLOCKS : GC_GRID_FOR_BYTES(bytes);
          const uint32_t dtype = GC_DT_FLOAT32;
          const int K = bytes <= 65536 ? 200 : bytes <= (1u << 20) ? 50 : 10;
          auto launcher = [&](CUfunction f) {
            return Launcher([&drv, f, grid](cudaStream_t s, const GcArgs& a) {
              GcArgs copy = a;
              void* params[] = {&copy};
              drv.launchKernel(f, grid, 1, 1, GC_BLOCK_THREADS, 1, 1, 0, (CUstream)s, params, nullptr);
            });
          };
          std::vector<double> tb, ta;
          for (int i = 0; i < reps + 1; ++i) {
            const double xb = timeGraph(cb, b, launcher(fb), count, dtype, K);
            const double xa = timeGraph(ca, b, launcher(fa), count, dtype, K);
            if (i > 0) { tb.push_back(xb); ta.push_back(xa); }
          }
          const double mb = median(tb), ma = median(ta);
          std::printf("| %s | %d | %llu | %.3f | %.3f | %.3f |\n", v.name, n, (unsigned long long)bytes, mb, ma, ma / mb);
          std::fflush(stdout);
          if (ma / mb > worst) {
            worst = ma / mb;
            std::snprintf(worstBuf, sizeof worstBuf, "%s n=%d %llu B", v.name, n, (unsigned long long)bytes);
            worstAt = worstBuf;
          }
          char row[300];
          std::snprintf(row, sizeof row, "%s{\"kernel\":\"%s\",\"ranks\":%d,\"bytes\":%llu,\"before_us\":%.3f,\"after_us\":%.3f}",
                        ba.empty() ? "" : ",", v.name, n, (unsigned long long)bytes, mb, ma);
          ba += row;
        }
      }
    }
    std::printf("\nslowest after/before: %.3f (%s)\n", worst, worstAt);
    const char* outDir = std::getenv("OUT");
    std::string path = std::string(outDir ? outDir : ".") + "/gpu-before-after.json";
    if (FILE* f = std::fopen(path.c_str(), "w")) {
      std::fprintf(f, "{\"kind\":\"gpu-before-after\",\"before\":\"%s\",\"after\":\"%s\",\"rows\":[%s]}\n", beforePath, fatbinPath, ba.c_str());
      std::fclose(f);
      std::printf("wrote %s\n", path.c_str());
    }
  }

  // ---- 3. host cost per launch: the same kernel (gc_allreduce_ll_f32, one rank: a 4-byte copy)
  std::printf("\n## Host cost per launch of gc_allreduce_ll_f32 (nranks=1, 4 bytes), 20000 launches, median of %d\n\n", reps);
  {
    Comm c(1);
    Bufs b(1, 4096);
    GcArgs a = c.args(0);
    a.send = (uint64_t)b.send[0]; a.recv = (uint64_t)b.recv[0]; a.count = 1; a.dtype = GC_DT_FLOAT32; a.op = GC_OP_SUM;
    const int N = 20000;
    std::vector<double> rt, dl;
    CUfunction fn = drv.get(after, "gc_allreduce_ll_f32");
    for (int rep = 0; rep < reps + 1; ++rep) {
      CK(cudaDeviceSynchronize());
      auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < N; ++i) {
        a.epoch = c.epoch++;
        gc_allreduce_ll_f32<<<1, GC_BLOCK_THREADS, 0, c.streams[0]>>>(a);
      }
      auto t1 = std::chrono::steady_clock::now();
      CK(cudaStreamSynchronize(c.streams[0]));
      if (rep > 0) rt.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / N);
      if (fn) {
        auto t2 = std::chrono::steady_clock::now();
        for (int i = 0; i < N; ++i) {
          a.epoch = c.epoch++;
          void* params[] = {&a};
          drv.launchKernel(fn, 1, 1, 1, GC_BLOCK_THREADS, 1, 1, 0, (CUstream)c.streams[0], params, nullptr);
        }
        auto t3 = std::chrono::steady_clock::now();
        CK(cudaStreamSynchronize(c.streams[0]));
        if (rep > 0) dl.push_back(std::chrono::duration<double, std::micro>(t3 - t2).count() / N);
      }
    }
    std::string e = c.errors();
    std::printf("| launch path | host us per launch |\n|---|---|\n");
    std::printf("| C++ <<<>>> (cudaLaunchKernel, kernel linked in) | %.3f |\n", median(rt));
    if (fn) std::printf("| C++ cuLaunchKernel (kernel from %s via cuModuleLoadData) | %.3f |\n", fatbinPath, median(dl));
    else std::printf("| C++ cuLaunchKernel | fatbin %s not loaded |\n", fatbinPath);
    if (!e.empty()) std::printf("ERROR: %s\n", e.c_str());
  }
  groupBench(reps);
  return 0;
}
