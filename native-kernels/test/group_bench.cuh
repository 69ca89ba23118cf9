// gc_bench's grouped-calls rows (gc_bench --group-only, or after the other parts): a batch of `calls`
// allReduces fp32 sum of `bytes` each, as ONE launch of the batch kernel against the same calls as
// separate one-shot launches (programmatic dependent launch, as the Java host launches them), both
// captured by gc_bench's timeGraph (K batches per rank stream, one graph) and replayed; us per batch,
// median. Included by gc_bench.cu after its helpers (Bufs, timeGraph, median).
// Writes $OUT/gpu-group-cpp.json ({"kind":"gpu-group-cpp", rows {ranks, calls, bytes, fused_us,
// separate_us}}). The results of the last replay are checked against the rank-order sum.
#pragma once

#include "batch.cuh"

#include <string>
#include <vector>

namespace {

// One batch per rank and graph step: the batch kernel once, or the calls one by one (timeGraph's
// send/recv/count are the batch's first call; the calls follow at `count` elements each).
Launcher groupLauncher(int calls, uint64_t count, bool fused) {
  return [=](cudaStream_t s, const GcArgs& first) {
    GcArgs a = first;
    std::vector<BatchCall> cs;
    for (int i = 0; i < calls; ++i)
      cs.push_back({(const float*)first.send + i * count, (float*)first.recv + i * count, (uint32_t)count});
    if (fused) {
      const GcBatch b = packBatch(cs, 4, 1);
      launchBatch(gc_allreduce_batch_ll_f32, batchGrid(b), s, a, b, true);
      return;
    }
    for (const BatchCall& x : cs) {
      a.send = (uint64_t)x.send; a.recv = (uint64_t)x.recv; a.count = x.count;
      launchOne(gc_allreduce_ll_f32, GC_GRID_FOR_BYTES(count * 4), GC_BLOCK_THREADS, s, a, true);
    }
  };
}

void groupBench(int reps) {
  std::printf("\n## Grouped allReduces fp32 sum: ONE batch-kernel launch vs the same calls as separate one-shot\n");
  std::printf("## launches (dependent launch), graph replay of 100 batches, us per batch, median of %d\n\n", reps);
  std::printf("| ranks | calls | bytes | fused | separate | separate/fused |\n|---|---|---|---|---|---|\n");
  std::string rows;
  const int shapes[][2] = {{16, 4096}, {16, 256}, {64, 1024}};
  for (int n : {2, 4, 8}) {
    Comm c(n);
    Bufs b(n, 65536);
    std::vector<float> h(16384);
    CK(cudaMemcpy(h.data(), b.send[0], 65536, cudaMemcpyDeviceToHost));
    for (const auto& sh : shapes) {
      const int calls = sh[0];
      const uint64_t count = sh[1] / 4;
      std::vector<double> t[2];
      bool ok = true;
      for (int i = 0; i < reps; ++i)
        for (int v = 0; v < 2; ++v) {
          for (int r = 0; r < n; ++r) CK(cudaMemset(b.recv[r], 0xA7, 65536));
          CK(cudaDeviceSynchronize());
          t[v].push_back(timeGraph(c, b, groupLauncher(calls, count, v == 0), count, GC_DT_FLOAT32, 100));
          std::vector<float> out(calls * count);
          CK(cudaMemcpy(out.data(), b.recv[n - 1], out.size() * 4, cudaMemcpyDeviceToHost));
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
