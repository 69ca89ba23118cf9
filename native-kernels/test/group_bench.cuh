// gc_bench's grouped-calls rows (gc_bench --group-only, or after the other parts): a batch of `calls`
// allReduces fp32 sum of `bytes` each, as ONE launch of the batch kernel against the same calls as
// separate one-shot launches (programmatic dependent launch, as the Java host launches them), both
// captured into one CUDA graph per rank stream (K batches) and replayed; us per batch, median.
// Writes $OUT/gpu-group-cpp.json ({"kind":"gpu-group-cpp", rows {ranks, calls, bytes, fused_us,
// separate_us}}). The results of the last replay are checked against the rank-order sum.
#pragma once

#include "batch.cuh"

#include <string>

namespace {

double timeGroupGraph(Comm& c, float* const* send, float* const* recv, int calls, uint64_t count, bool fused, int K) {
  cudaStream_t s0 = c.streams[0];
  cudaEvent_t fork, t0, t1;
  CK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  CK(cudaEventCreate(&t0));
  CK(cudaEventCreate(&t1));
  CK(cudaStreamBeginCapture(s0, cudaStreamCaptureModeThreadLocal));
  CK(cudaEventRecord(fork, s0));
  for (int r = 1; r < c.n; ++r) CK(cudaStreamWaitEvent(c.streams[r], fork, 0));
  for (int k = 0; k < K; ++k) {
    for (int r = 0; r < c.n; ++r) {
      GcArgs a = c.args(r);
      a.epoch = 0;  // the device's next epoch: every replay a fresh one
      a.dtype = GC_DT_FLOAT32;
      a.op = GC_OP_SUM;
      std::vector<BatchCall> cs;
      for (int i = 0; i < calls; ++i) cs.push_back({send[r] + i * count, recv[r] + i * count, (uint32_t)count});
      if (fused) {
        const GcBatch b = packBatch(cs, 4, 1);
        launchBatch(gc_allreduce_batch_ll_f32, batchGrid(b), c.streams[r], a, b, true);
      } else {
        for (const BatchCall& x : cs) {
          a.send = (uint64_t)x.send; a.recv = (uint64_t)x.recv; a.count = x.count;
          launchOne(gc_allreduce_ll_f32, GC_GRID_FOR_BYTES(count * 4), GC_BLOCK_THREADS, c.streams[r], a, true);
        }
      }
    }
    CK(cudaGetLastError());
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
  CK(cudaGraphLaunch(ge, s0));  // warm-up replay
  CK(cudaStreamSynchronize(s0));
  CK(cudaEventRecord(t0, s0));
  CK(cudaGraphLaunch(ge, s0));
  CK(cudaEventRecord(t1, s0));
  CK(cudaStreamSynchronize(s0));
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, t0, t1));
  std::string e = c.errors();
  if (!e.empty()) { std::printf("ERROR in group run: %s\n", e.c_str()); c.clearErrors(); }
  CK(cudaGraphExecDestroy(ge));
  CK(cudaGraphDestroy(g));
  for (int r = 1; r < c.n; ++r) CK(cudaEventDestroy(joins[r]));
  CK(cudaEventDestroy(fork)); CK(cudaEventDestroy(t0)); CK(cudaEventDestroy(t1));
  return ms * 1000.0 / K;
}

void groupBench(int reps) {
  std::printf("\n## Grouped allReduces fp32 sum: ONE batch-kernel launch vs the same calls as separate one-shot\n");
  std::printf("## launches (dependent launch), graph replay of 100 batches, us per batch, median of %d\n\n", reps);
  std::printf("| ranks | calls | bytes | fused | separate | separate/fused |\n|---|---|---|---|---|---|\n");
  std::string rows;
  const int shapes[][2] = {{16, 4096}, {16, 256}, {64, 1024}};
  for (int n : {2, 4, 8}) {
    Comm c(n);
    std::vector<float*> send(n), recv(n);
    std::vector<float> h(16384);
    for (size_t i = 0; i < h.size(); ++i) h[i] = (float)((i * 2654435761u) % 1000) / 1000.f - 0.5f;
    for (int r = 0; r < n; ++r) {
      CK(cudaMalloc(&send[r], 65536));
      CK(cudaMalloc(&recv[r], 65536));
      CK(cudaMemcpy(send[r], h.data(), 65536, cudaMemcpyHostToDevice));
    }
    CK(cudaDeviceSynchronize());
    for (const auto& sh : shapes) {
      const int calls = sh[0];
      const uint64_t count = sh[1] / 4;
      std::vector<double> t[2];
      bool ok = true;
      for (int i = 0; i < reps; ++i)
        for (int v = 0; v < 2; ++v) {
          for (int r = 0; r < n; ++r) CK(cudaMemset(recv[r], 0xA7, 65536));
          CK(cudaDeviceSynchronize());
          t[v].push_back(timeGroupGraph(c, send.data(), recv.data(), calls, count, v == 0, 100));
          std::vector<float> out(calls * count);
          CK(cudaMemcpy(out.data(), recv[n - 1], out.size() * 4, cudaMemcpyDeviceToHost));
          for (size_t e = 0; e < out.size() && ok; ++e) {
            float want = h[e];
            for (int r = 1; r < n; ++r) want += h[e];
            if (out[e] != want) {
              std::printf("CHECK FAILED group %s n=%d calls=%d bytes=%d elem %zu: %g, want %g\n", v == 0 ? "fused" : "separate",
                          n, calls, sh[1], e, out[e], want);
              ok = false;
            }
          }
        }
      const double f = median(t[0]), s = median(t[1]);
      std::printf("| %d | %d | %d | %.3f | %.3f | %.2f |\n", n, calls, sh[1], f, s, s / f);
      std::fflush(stdout);
      char row[200];
      std::snprintf(row, sizeof row, "%s{\"ranks\":%d,\"calls\":%d,\"bytes\":%d,\"fused_us\":%.3f,\"separate_us\":%.3f}",
                    rows.empty() ? "" : ",", n, calls, sh[1], f, s);
      rows += row;
    }
    for (int r = 0; r < n; ++r) { cudaFree(send[r]); cudaFree(recv[r]); }
  }
  const char* outDir = std::getenv("OUT");
  const char* commit = std::getenv("GC_COMMIT");
  const char* date = std::getenv("GC_DATE");
  const std::string path = std::string(outDir ? outDir : ".") + "/gpu-group-cpp.json";
  if (FILE* f = std::fopen(path.c_str(), "w")) {
    std::fprintf(f, "{\"kind\":\"gpu-group-cpp\",\"date\":\"%s\",\"commit\":\"%s\",\"rows\":[%s]}\n", date ? date : "",
                 commit ? commit : "", rows.c_str());
    std::fclose(f);
    std::printf("\nwrote %s\n", path.c_str());
  }
}

}  // namespace
