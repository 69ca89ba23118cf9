// Benchmark (a program that prints tables; not a test): allReduce fp32 sum, ranks as streams of one
// process on one GPU.
//  1. Median latency per size, barrier-free kernels vs the two-barrier (vLLM-style) kernel on the same
//     ranks. Timed device-side: each rank's stream gets K back-to-back launches, captured once into a
//     CUDA graph (one fork at the start, one join at the end -- not per collective), replayed; CUDA
//     events around the replay; time / K. Repeated, median reported.
//  2. The floor: ours against a minimal LL kernel and a minimal two-barrier kernel (nothing but the
//     protocol), K collectives inside ONE launch (no launch gaps) and graph replay, 8 B - 64 KB; writes
//     $OUT/gpu-inloop.json ({"kind":"gpu-inloop", date, commit from $GC_DATE / $GC_COMMIT, rows}).
//  3. Host cost per launch of the same kernel: <<<>>> and cuLaunchKernel on the shipped fatbin.
//   usage: gc_bench [fatbin-path | --floor-only]   (--floor-only: part 2 alone)
#include "../src/gpucoll_kernels.cu"
#include "gpucoll_bench.cu"
#include "harness.cuh"

#include <cuda.h>
#include <cudaTypedefs.h>

#include <algorithm>
#include <chrono>

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

// One graph: every rank's stream runs K launches of `k` back to back; returns us per collective.
double timeGraph(Comm& c, Bufs& b, Kernel k, unsigned grid, uint64_t count, int K, unsigned threads = GC_BLOCK_THREADS) {
  cudaStream_t s0 = c.streams[0];
  cudaEvent_t fork, join, t0, t1;
  CK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  CK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
  CK(cudaEventCreate(&t0));
  CK(cudaEventCreate(&t1));
  CK(cudaStreamBeginCapture(s0, cudaStreamCaptureModeThreadLocal));
  CK(cudaEventRecord(fork, s0));
  for (int r = 1; r < c.n; ++r) CK(cudaStreamWaitEvent(c.streams[r], fork, 0));
  for (int i = 0; i < K; ++i)
    c.launch(k, grid, [&](GcArgs& a, int r) {
      a.send = (uint64_t)b.send[r];
      a.recv = (uint64_t)b.recv[r];
      a.count = count;
      a.dtype = GC_DT_FLOAT32;
      a.op = GC_OP_SUM;
    }, -1, threads);
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
  CK(cudaEventDestroy(fork)); CK(cudaEventDestroy(join)); CK(cudaEventDestroy(t0)); CK(cudaEventDestroy(t1));
  return ms * 1000.0 / K;
}

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

}  // namespace

int main(int argc, char** argv) {
  const bool floorOnly = argc > 1 && std::string(argv[1]) == "--floor-only";
  const char* fatbinPath = argc > 1 && !floorOnly ? argv[1] : "gpucoll_kernels.fatbin";
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  int driver = 0;
  CK(cudaDriverGetVersion(&driver));
  std::printf("gc_bench on %s (%d SMs), driver API %d\n", prop.name, prop.multiProcessorCount, driver);
  const int reps = 5;
  // The floor: ours (gc_allreduce_ll_f32) against the minimal LL kernel and the minimal two-barrier
  // kernel, in-kernel loop of K collectives and graph replay of K launches, same ranks, same run.
  std::printf("\n## allReduce fp32 sum against the floor: minimal LL kernel (naive) and minimal two-barrier kernel,\n");
  std::printf("## us per collective, median of %d; in-loop = K=1000 collectives inside one launch, graph = K=200 launches replayed\n\n", reps);
  std::printf("| ranks | bytes | ours in-loop | naive LL in-loop | ours/naive | two-barrier in-loop | ours graph | naive LL graph | ours/naive graph | two-barrier graph |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
  std::string rows;
  for (int n : {2, 4, 8}) {
    Comm c(n);
    Bufs b(n, 1 << 16);
    for (uint64_t bytes : {8ull, 64ull, 512ull, 1024ull, 4096ull, 16384ull, 65536ull}) {
      const uint64_t count = bytes / 4;
      const unsigned og = GC_GRID_FOR_BYTES(bytes), fg = floorGrid(count);
      std::vector<double> t[6];
      // Round 0 warms up and checks: every variant must compute the sum (rank 0's output against the
      // host in the same order; the output is poisoned before each variant).
      const char* names[6] = {"ours in-loop", "naive LL in-loop", "two-barrier in-loop", "ours graph", "naive LL graph", "two-barrier graph"};
      for (int i = 0; i < reps + 1; ++i) {
        for (int v = 0; v < 6; ++v) {
          if (i == 0) {
            for (int r = 0; r < n; ++r) CK(cudaMemset(b.recv[r], 0xA7, bytes));
            CK(cudaDeviceSynchronize());
          }
          const double x = v == 0 ? timeLoop(c, b, gc_allreduce_ll_f32_loop, og, GC_BLOCK_THREADS, count, 1000)
                         : v == 1 ? timeLoop(c, b, gc_floor_ll_loop, fg, kFloorThreads, count, 1000)
                         : v == 2 ? timeLoop(c, b, gc_floor_two_barrier_loop, fg, kFloorThreads, count, 1000)
                         : v == 3 ? timeGraph(c, b, gc_allreduce_ll_f32, og, count, 200)
                         : v == 4 ? timeGraph(c, b, floorLLKernel, fg, count, 200, kFloorThreads)
                                  : timeGraph(c, b, floorTwoBarrierKernel, fg, count, 200, kFloorThreads);
          if (i > 0) t[v].push_back(x);
          if (i == 0) {
            std::vector<float> in(count), out(count);
            CK(cudaMemcpy(in.data(), b.send[0], bytes, cudaMemcpyDeviceToHost));
            CK(cudaMemcpy(out.data(), b.recv[0], bytes, cudaMemcpyDeviceToHost));
            for (uint64_t e = 0; e < count; ++e) {
              float want = in[e];
              for (int r = 1; r < n; ++r) want += in[e];
              if (out[e] != want) {
                std::printf("CHECK FAILED %s n=%d bytes=%llu elem %llu\n", names[v], n, (unsigned long long)bytes, (unsigned long long)e);
                break;
              }
            }
          }
        }
      }
      double m[6];
      for (int v = 0; v < 6; ++v) m[v] = median(t[v]);
      std::printf("| %d | %llu | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n", n, (unsigned long long)bytes, m[0], m[1],
                  m[0] / m[1], m[2], m[3], m[4], m[3] / m[4], m[5]);
      std::fflush(stdout);
      char row[400];
      std::snprintf(row, sizeof row,
                    "%s{\"ranks\":%d,\"bytes\":%llu,\"ours_us\":%.3f,\"naive_us\":%.3f,\"two_barrier_us\":%.3f,"
                    "\"ours_graph_us\":%.3f,\"naive_graph_us\":%.3f,\"two_barrier_graph_us\":%.3f}",
                    rows.empty() ? "" : ",", n, (unsigned long long)bytes, m[0], m[1], m[2], m[3], m[4], m[5]);
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
  const uint64_t sizes[] = {8, 64, 512, 4096, 16384, 65536, 262144, 1u << 20, 4u << 20, 16u << 20, 64u << 20};

  std::printf("\n## allReduce fp32 sum, us per collective: graph replay of K back-to-back launches per rank, median of %d\n", reps);
  std::printf("(- = size above that kernel's capacity; best = fastest barrier-free kernel; ratio = best / two-barrier)\n\n");
  std::printf("| ranks | bytes | ll | sentinel | ll128 | pipe | two-barrier | best barrier-free | ratio |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|\n");
  const char* names[] = {"ll", "sentinel", "ll128", "pipe"};
  Kernel bfKernels[] = {gc_allreduce_ll_f32, gc_allreduce_sentinel_f32, gc_allreduce_ll128_f32, gc_allreduce_pipe_f32};
  for (int n : {2, 4, 8}) {
    Comm c(n);
    Bufs b(n, 64u << 20);
    for (uint64_t bytes : sizes) {
      const uint64_t count = bytes / 4;
      const int K = bytes <= 65536 ? 200 : bytes <= (1u << 20) ? 50 : bytes <= (16u << 20) ? 10 : 4;
      const bool fits[] = {bytes <= GC_LL_MAX_BYTES, bytes <= GC_SENT_MAX_BYTES, count <= GC_LL128_MAX_COUNT(GC_DT_FLOAT32),
                           bytes >= 65536};
      std::vector<double> t[5];
      for (int i = 0; i < reps + 1; ++i) {  // the first round warms up
        for (int v = 0; v < 4; ++v) {
          if (!fits[v]) continue;
          double x = timeGraph(c, b, bfKernels[v], v == 3 ? GC_PIPE_BLOCKS : GC_GRID_FOR_BYTES(bytes), count, K);
          if (i > 0) t[v].push_back(x);
        }
        double y = timeGraph(c, b, gc_allreduce_barrier2_f32, GC_GRID_FOR_BYTES(bytes), count, K);
        if (i > 0) t[4].push_back(y);
      }
      char cell[4][32];
      int best = -1;
      double bestT = 1e30;
      for (int v = 0; v < 4; ++v) {
        if (!fits[v]) { std::snprintf(cell[v], 32, "-"); continue; }
        double m = median(t[v]);
        std::snprintf(cell[v], 32, "%.2f", m);
        if (m < bestT) { bestT = m; best = v; }
      }
      const double m2 = median(t[4]);
      std::printf("| %d | %llu | %s | %s | %s | %s | %.2f | %s | %.2f |\n", n, (unsigned long long)bytes, cell[0], cell[1], cell[2],
                  cell[3], m2, names[best], bestT / m2);
      std::fflush(stdout);
    }
  }

  // Host cost per launch: the same kernel (gc_allreduce_ll_f32, one rank: a 4-byte copy) 20000 times.
  std::printf("\n## Host cost per launch of gc_allreduce_ll_f32 (nranks=1, 4 bytes), 20000 launches, median of %d\n\n", reps);
  {
    Comm c(1);
    Bufs b(1, 4096);
    GcArgs a = c.args(0);
    a.send = (uint64_t)b.send[0]; a.recv = (uint64_t)b.recv[0]; a.count = 1; a.dtype = GC_DT_FLOAT32; a.op = GC_OP_SUM;
    const int N = 20000;
    std::vector<double> rt, drv;
    CUmodule mod = nullptr;
    CUfunction fn = nullptr;
    std::vector<char> image;
    if (FILE* f = std::fopen(fatbinPath, "rb")) {
      std::fseek(f, 0, SEEK_END);
      image.resize(std::ftell(f));
      std::fseek(f, 0, SEEK_SET);
      if (std::fread(image.data(), 1, image.size(), f) != image.size()) image.clear();
      std::fclose(f);
    }
    // Driver entry points through the runtime (no -lcuda at link time).
    PFN_cuModuleLoadData_v2000 loadData = nullptr;
    PFN_cuModuleGetFunction_v2000 getFunction = nullptr;
    PFN_cuLaunchKernel_v4000 launchKernel = nullptr;
    cudaDriverEntryPointQueryResult q;
    CK(cudaGetDriverEntryPointByVersion("cuModuleLoadData", (void**)&loadData, 12000, cudaEnableDefault, &q));
    CK(cudaGetDriverEntryPointByVersion("cuModuleGetFunction", (void**)&getFunction, 12000, cudaEnableDefault, &q));
    CK(cudaGetDriverEntryPointByVersion("cuLaunchKernel", (void**)&launchKernel, 12000, cudaEnableDefault, &q));
    if (!image.empty() && loadData && getFunction && loadData(&mod, image.data()) == CUDA_SUCCESS)
      getFunction(&fn, mod, "gc_allreduce_ll_f32");
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
          launchKernel(fn, 1, 1, 1, GC_BLOCK_THREADS, 1, 1, 0, (CUstream)c.streams[0], params, nullptr);
        }
        auto t3 = std::chrono::steady_clock::now();
        CK(cudaStreamSynchronize(c.streams[0]));
        if (rep > 0) drv.push_back(std::chrono::duration<double, std::micro>(t3 - t2).count() / N);
      }
    }
    std::string e = c.errors();
    std::printf("| launch path | host us per launch |\n|---|---|\n");
    std::printf("| C++ <<<>>> (cudaLaunchKernel, kernel linked in) | %.3f |\n", median(rt));
    if (fn) std::printf("| C++ cuLaunchKernel (kernel from %s via cuModuleLoadData) | %.3f |\n", fatbinPath, median(drv));
    else std::printf("| C++ cuLaunchKernel | fatbin %s not loaded |\n", fatbinPath);
    if (!e.empty()) std::printf("ERROR: %s\n", e.c_str());
  }
  return 0;
}
