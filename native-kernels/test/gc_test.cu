// GPU test program for the gpucoll kernels (run on a GPU machine; not part of CI).
// Ranks are streams of this one process on one GPU. First the robustness checks: graphs replayed 1000
// times, 1000 back-to-back mixed calls (epoch parity reuse), a planted missing rank (must end in the
// timeout record), the host abort word, a capacity error. Then every case of the correctness matrix
// (correctness-matrix.txt, the Java GPU suite's too) whose block names a kernel variant, on that
// variant's kernel: fresh random inputs, poisoned outputs, every rank's output compared bit-for-bit
// with the other ranks and with a host emulation of the kernel's fixed reduction order, and (floats)
// with a float64 reference within a rounding bound. And the batch kernels: packed calls bit-identical
// to the same calls one by one and to the host emulation, mismatched batches failing on every rank, an
// absent rank timing out. And the matrix's MAXLOC/MINLOC lines on the pair kernels (whatever their
// variant: one kernel reduces pairs), byte-exact against a host fold, with NaN refusals on every rank
// and the capacity.
//   usage: gc_test [--quick | --batch] [--matrix FILE] [--list-cases]   (--batch: the batch checks alone)
//   FILE: default $GC_MATRIX, else correctness-matrix.txt beside this binary; --list-cases prints the
//   matrix's expansion and exits without touching a GPU.
#include "kernels.h"  // every kernel, the two-barrier comparison ones too (all_kernels.cu, bench_table.h)
#include "harness.cuh"
#include "correctness_matrix.h"
#include "batch.cuh"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <thread>
#include <unistd.h>

namespace {

struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
};
Rng rng{0x5eed1234abcdull};

using gcm::kOpName;
using gcm::kTypeName;
enum Variant { kLL, kSentinel, kLL128, kPipe, kBarrier2, kVariants };
const char* kVarName[] = {"ll", "sentinel", "ll128", "pipe", "barrier2"};

// Reduction kernels per variant and type (GC_DT_* order); the ll128 kernels have no 8-bit types.
#define GC_TYPED(prefix) {prefix##_f32, prefix##_f64, prefix##_f16, prefix##_bf16, prefix##_i32, prefix##_i64, prefix##_i8, prefix##_u8}
Kernel kAllReduce[kVariants][8] = {
    GC_TYPED(gc_allreduce_ll),
    GC_TYPED(gc_allreduce_sentinel),
    {gc_allreduce_ll128_f32, gc_allreduce_ll128_f64, gc_allreduce_ll128_f16, gc_allreduce_ll128_bf16, gc_allreduce_ll128_i32, gc_allreduce_ll128_i64, nullptr, nullptr},
    GC_TYPED(gc_allreduce_pipe),
    GC_TYPED(gc_allreduce_barrier2),
};
Kernel kReduceScatter[2][8] = {GC_TYPED(gc_reducescatter_ll), GC_TYPED(gc_reducescatter_pipe)};

// ---- host model of the element types (same order, same precision as the kernels)
double toDouble(int dt, const uint8_t* p) {
  switch (dt) {
    case GC_DT_FLOAT32: { float f; std::memcpy(&f, p, 4); return f; }
    case GC_DT_FLOAT64: { double d; std::memcpy(&d, p, 8); return d; }
    case GC_DT_FLOAT16: { __half h; std::memcpy(&h, p, 2); return __half2float(h); }
    case GC_DT_BFLOAT16: { __nv_bfloat16 h; std::memcpy(&h, p, 2); return __bfloat162float(h); }
    case GC_DT_INT32: { int32_t i; std::memcpy(&i, p, 4); return i; }
    case GC_DT_INT8: return (int8_t)*p;
    case GC_DT_UINT8: return *p;
    default: { int64_t i; std::memcpy(&i, p, 8); return (double)i; }
  }
}
void randomElement(int dt, uint8_t* p) {
  uint64_t r = rng.next();
  switch (dt) {
    case GC_DT_FLOAT32: { float f = (float)((int64_t)(r >> 40) - (1ll << 23)) / (float)(1 << 23); std::memcpy(p, &f, 4); break; }
    case GC_DT_FLOAT64: { double d = (double)((int64_t)(r >> 11) - (1ll << 52)) / (double)(1ull << 52); std::memcpy(p, &d, 8); break; }
    case GC_DT_FLOAT16: { __half h = __float2half_rn((float)((int)(r >> 53) - 1024) / 1024.f); std::memcpy(p, &h, 2); break; }
    case GC_DT_BFLOAT16: { __nv_bfloat16 h = __float2bfloat16_rn((float)((int)(r >> 56) - 128) / 128.f); std::memcpy(p, &h, 2); break; }
    case GC_DT_INT32: { uint32_t i = (uint32_t)r; std::memcpy(p, &i, 4); break; }
    case GC_DT_INT64: std::memcpy(p, &r, 8); break;
    default: *p = (uint8_t)r;
  }
}
// Kernel-order emulation: acc = x0; acc = op(acc, x_r) for r = 1..n-1; finish; round once.
template <typename A> A hostCombine(A a, A b, int op) {
  switch (op) {
    case GC_OP_PROD: return a * b;
    case GC_OP_MIN: return b < a ? b : a;
    case GC_OP_MAX: return a < b ? b : a;
    default: return a + b;
  }
}
template <typename I, typename U> I intCombine(I a, I b, int op) {
  switch (op) {
    case GC_OP_PROD: return (I)((U)a * (U)b);
    case GC_OP_MIN: return b < a ? b : a;
    case GC_OP_MAX: return a < b ? b : a;
    default: return (I)((U)a + (U)b);
  }
}
void emulate(int dt, int op, int n, const std::vector<const uint8_t*>& in, uint8_t* out) {
  switch (dt) {
    case GC_DT_FLOAT32: case GC_DT_FLOAT16: case GC_DT_BFLOAT16: {
      float acc = 0;
      for (int r = 0; r < n; ++r) {
        float x = (float)toDouble(dt, in[r]);
        acc = r == 0 ? x : hostCombine<float>(acc, x, op);
      }
      if (op == GC_OP_AVG) acc = acc / (float)n;
      if (dt == GC_DT_FLOAT32) std::memcpy(out, &acc, 4);
      else if (dt == GC_DT_FLOAT16) { __half h = __float2half_rn(acc); std::memcpy(out, &h, 2); }
      else { __nv_bfloat16 h = __float2bfloat16_rn(acc); std::memcpy(out, &h, 2); }
      break;
    }
    case GC_DT_FLOAT64: {
      double acc = 0;
      for (int r = 0; r < n; ++r) { double x = toDouble(dt, in[r]); acc = r == 0 ? x : hostCombine<double>(acc, x, op); }
      if (op == GC_OP_AVG) acc = acc / (double)n;
      std::memcpy(out, &acc, 8);
      break;
    }
    case GC_DT_INT8: {  // wraps in 8 bits; AVG divides the wrapped sum (as the host backend)
      int8_t acc = 0;
      for (int r = 0; r < n; ++r) { int8_t x = (int8_t)*in[r]; acc = r == 0 ? x : intCombine<int8_t, uint8_t>(acc, x, op); }
      if (op == GC_OP_AVG) acc = (int8_t)(acc / n);
      *out = (uint8_t)acc;
      break;
    }
    case GC_DT_UINT8: {
      uint8_t acc = 0;
      for (int r = 0; r < n; ++r) { uint8_t x = *in[r]; acc = r == 0 ? x : intCombine<uint8_t, uint8_t>(acc, x, op); }
      if (op == GC_OP_AVG) acc = (uint8_t)(acc / n);
      *out = acc;
      break;
    }
    case GC_DT_INT32: {
      int32_t acc = 0;
      for (int r = 0; r < n; ++r) { int32_t x; std::memcpy(&x, in[r], 4); acc = r == 0 ? x : intCombine<int32_t, uint32_t>(acc, x, op); }
      if (op == GC_OP_AVG) acc = acc / n;
      std::memcpy(out, &acc, 4);
      break;
    }
    default: {
      int64_t acc = 0;
      for (int r = 0; r < n; ++r) { int64_t x; std::memcpy(&x, in[r], 8); acc = r == 0 ? x : intCombine<int64_t, uint64_t>(acc, x, op); }
      if (op == GC_OP_AVG) acc = acc / n;
      std::memcpy(out, &acc, 8);
    }
  }
}
// |got - float64 reference| within a rounding bound (floats only).
bool closeToReference(int dt, int op, int n, const std::vector<const uint8_t*>& in, const uint8_t* got) {
  if (dt >= GC_DT_INT32) return true;  // ints are checked exactly by emulation
  double ref = 0, mag = 0;
  for (int r = 0; r < n; ++r) {
    double x = toDouble(dt, in[r]);
    ref = r == 0 ? x : hostCombine<double>(ref, x, op);
    mag = op == GC_OP_PROD ? 1 : mag + std::fabs(x);
  }
  if (op == GC_OP_AVG) { ref /= n; mag /= n; }
  if (op == GC_OP_PROD) mag = std::fabs(ref);
  const double epsAcc = dt == GC_DT_FLOAT64 ? 0x1p-53 : 0x1p-24;
  const double epsOut = dt == GC_DT_FLOAT16 ? 0x1p-11 : dt == GC_DT_BFLOAT16 ? 0x1p-8 : epsAcc;
  const double g = toDouble(dt, got);
  const double subnormalStep = dt == GC_DT_FLOAT16 ? 0x1p-24 : 0;  // fp16 results below 2^-14 lose bits
  return std::fabs(g - ref) <= (n + 2) * epsAcc * mag + epsOut * std::fabs(ref) + subnormalStep + 1e-300;
}

// ---- buffers: per-rank device send/recv and host staging, sized for the largest test
struct Buffers {
  int n;
  size_t cap;
  std::vector<uint8_t*> send, recv;
  std::vector<std::vector<uint8_t>> hin, hout;
  Buffers(int ranks, size_t bytes) : n(ranks), cap(bytes), send(ranks), recv(ranks), hin(ranks), hout(ranks) {
    for (int r = 0; r < n; ++r) {
      CK(cudaMalloc(&send[r], cap));
      CK(cudaMalloc(&recv[r], cap));
      hin[r].resize(cap);
      hout[r].resize(cap);
    }
  }
  ~Buffers() {
    for (int r = 0; r < n; ++r) { cudaFree(send[r]); cudaFree(recv[r]); }
  }
  // raw: random bit patterns (data movement does not interpret elements); else random values.
  void randomInputs(int dt, size_t bytes, bool raw = false) {
    const uint32_t esz = gc_dtype_size(dt);
    for (int r = 0; r < n; ++r) {
      if (raw)
        for (size_t i = 0; i < bytes; i += 8) { uint64_t w = rng.next(); std::memcpy(&hin[r][i], &w, std::min<size_t>(8, bytes - i)); }
      else
        for (size_t i = 0; i < bytes; i += esz) randomElement(dt, &hin[r][i]);
      CK(cudaMemcpy(send[r], hin[r].data(), bytes, cudaMemcpyHostToDevice));
    }
    // Pageable uploads and memsets on the legacy stream do not order with the ranks' non-blocking
    // streams: finish them before any kernel starts.
    CK(cudaDeviceSynchronize());
  }
  void poison(size_t bytes) {
    for (int r = 0; r < n; ++r) CK(cudaMemset(recv[r], 0xA7, bytes));
    CK(cudaDeviceSynchronize());
  }
  void fetch(size_t bytes, bool fromSend = false) {
    for (int r = 0; r < n; ++r) CK(cudaMemcpy(hout[r].data(), fromSend ? send[r] : recv[r], bytes, cudaMemcpyDeviceToHost));
  }
};

struct Tally {
  long pass = 0, fail = 0;
  std::vector<std::string> firstFailures;
  void record(bool ok, const std::string& what) {
    if (ok) { ++pass; return; }
    ++fail;
    if (firstFailures.size() < 40) firstFailures.push_back(what);
    std::printf("FAIL %s\n", what.c_str());
    std::fflush(stdout);
    if (fail >= 60) {  // a broken build: stop instead of spending the machine on timeouts
      std::printf("gc_test: too many failures, stopping\n");
      std::exit(1);
    }
  }
};
Tally tally;

bool runAndCheckErrors(Comm& c, const std::string& what) {
  c.sync();
  std::string e = c.errors();
  if (!e.empty()) {
    tally.record(false, what + " error record: " + e);
    c.clearErrors();
    return false;
  }
  return true;
}

std::string describe(const char* coll, const char* var, int n, int dt, int op, uint64_t count, bool inPlace = false) {
  char buf[200];
  std::snprintf(buf, sizeof buf, "%s/%s n=%d %s %s count=%llu%s", coll, var, n, kTypeName[dt], op >= 0 ? kOpName[op] : "-",
                (unsigned long long)count, inPlace ? " in-place" : "");
  return buf;
}

// ---- allReduce
void testAllReduce(Comm& c, Buffers& b, int v, int dt, int op, uint64_t count, bool inPlace) {
  const uint32_t esz = gc_dtype_size(dt);
  const size_t bytes = count * esz;
  const std::string what = describe("allReduce", kVarName[v], c.n, dt, op, count, inPlace);
  b.randomInputs(dt, bytes);
  if (!inPlace) b.poison(bytes);
  const unsigned grid = v == kPipe ? GC_PIPE_BLOCKS : GC_GRID_FOR_BYTES(bytes);
  c.launch(kAllReduce[v][dt], grid, [&](GcArgs& a, int r) {
    a.send = (uint64_t)b.send[r];
    a.recv = (uint64_t)(inPlace ? b.send[r] : b.recv[r]);
    a.count = count;
    a.dtype = dt;
    a.op = op;
  });
  if (!runAndCheckErrors(c, what)) return;
  b.fetch(bytes, inPlace);
  std::vector<uint8_t> want(8);
  std::vector<const uint8_t*> in(c.n);
  const bool exactOrder = v != kLL128;  // atomics: arrival order; check vs float64 and across ranks
  for (uint64_t i = 0; i < count; ++i) {
    for (int r = 0; r < c.n; ++r) in[r] = &b.hin[r][i * esz];
    emulate(dt, op, c.n, in, want.data());
    for (int r = 0; r < c.n; ++r) {
      const uint8_t* got = &b.hout[r][i * esz];
      bool ok = std::memcmp(got, &b.hout[0][i * esz], esz) == 0 && closeToReference(dt, op, c.n, in, got);
      if (exactOrder || dt >= GC_DT_INT32) ok = ok && std::memcmp(got, want.data(), esz) == 0;
      if (!ok) {
        char buf[160];
        std::snprintf(buf, sizeof buf, " rank %d elem %llu got %.9g want %.9g", r, (unsigned long long)i, toDouble(dt, got), toDouble(dt, want.data()));
        tally.record(false, what + buf);
        return;
      }
    }
  }
  tally.record(true, what);
}

// ---- reduceScatter (count = elements each rank receives)
void testReduceScatter(Comm& c, Buffers& b, int v, int dt, int op, uint64_t count) {
  const uint32_t esz = gc_dtype_size(dt);
  const size_t bytes = count * esz;
  const std::string what = describe("reduceScatter", v == 0 ? "ll" : "pipe", c.n, dt, op, count);
  b.randomInputs(dt, bytes * c.n);
  b.poison(bytes);
  c.launch(kReduceScatter[v][dt], v == 1 ? GC_PIPE_BLOCKS : GC_GRID_FOR_BYTES(bytes), [&](GcArgs& a, int r) {
    a.send = (uint64_t)b.send[r];
    a.recv = (uint64_t)b.recv[r];
    a.count = count;
    a.dtype = dt;
    a.op = op;
  });
  if (!runAndCheckErrors(c, what)) return;
  b.fetch(bytes);
  std::vector<uint8_t> want(8);
  std::vector<const uint8_t*> in(c.n);
  for (int r = 0; r < c.n; ++r)
    for (uint64_t i = 0; i < count; ++i) {
      for (int s = 0; s < c.n; ++s) in[s] = &b.hin[s][(r * count + i) * esz];
      emulate(dt, op, c.n, in, want.data());
      const uint8_t* got = &b.hout[r][i * esz];
      if (std::memcmp(got, want.data(), esz) != 0 || !closeToReference(dt, op, c.n, in, got)) {
        char buf[160];
        std::snprintf(buf, sizeof buf, " rank %d elem %llu got %.9g want %.9g", r, (unsigned long long)i, toDouble(dt, got), toDouble(dt, want.data()));
        tally.record(false, what + buf);
        return;
      }
    }
  tally.record(true, what);
}

// ---- data movement: expected bytes computed from the same (peer -> offsets) rules as the API docs
enum Move { kAllGather, kAllToAll, kAllToAllv, kBroadcast };
const char* kMoveName[] = {"allGather", "allToAll", "allToAllv", "broadcast"};
Kernel kMove[4][2] = {{gc_allgather_ll, gc_allgather_pipe}, {gc_alltoall_ll, gc_alltoall_pipe},
                      {gc_alltoallv_ll, gc_alltoallv_pipe}, {gc_broadcast_ll, gc_broadcast_pipe}};

// inPlace: broadcast only (the send buffer is the receive buffer).
void testMove(Comm& c, Buffers& b, int m, int v, int dt, uint64_t count, int root, bool inPlace) {
  const int n = c.n;
  const uint32_t esz = gc_dtype_size(dt);
  std::string what = describe(kMoveName[m], v == 0 ? "ll" : "pipe", n, dt, -1, count, inPlace);
  if (m == kBroadcast) what += " root=" + std::to_string(root);
  // allToAllv: random per-pair counts in [0, count] (the matrix's count is the largest), packed with gaps.
  std::vector<std::vector<int64_t>> sc(n, std::vector<int64_t>(n)), sd = sc, rc = sc, rd = sc;
  size_t inBytes = 0, outBytes = 0;
  if (m == kAllToAllv) {
    for (int s = 0; s < n; ++s)
      for (int d = 0; d < n; ++d) sc[s][d] = rc[d][s] = (int64_t)(rng.next() % (count + 1));
    for (int r = 0; r < n; ++r) {
      int64_t so = 0, ro = 0;
      for (int p = 0; p < n; ++p) {
        sd[r][p] = so; so += sc[r][p] + 1;
        rd[r][p] = ro; ro += rc[r][p] + 2;
      }
      inBytes = std::max(inBytes, (size_t)so * esz);
      outBytes = std::max(outBytes, (size_t)ro * esz);
    }
  } else {
    inBytes = (m == kAllToAll ? n : 1) * count * esz;
    outBytes = (m == kBroadcast ? 1 : n) * count * esz;
  }
  if (inBytes > b.cap || outBytes > b.cap) { std::printf("SKIP %s (buffers)\n", what.c_str()); return; }
  b.randomInputs(dt, inBytes, /*raw=*/true);
  if (!inPlace) b.poison(outBytes);
  uint64_t perPeer = m == kAllToAllv ? 0 : count * esz;
  if (m == kAllToAllv)
    for (int s = 0; s < n; ++s) for (int d = 0; d < n; ++d) perPeer = std::max<uint64_t>(perPeer, sc[s][d] * esz);
  c.launch(kMove[m][v], v == 1 ? GC_PIPE_BLOCKS : GC_GRID_FOR_BYTES(perPeer), [&](GcArgs& a, int r) {
    a.send = (uint64_t)b.send[r];
    a.recv = (uint64_t)(inPlace ? b.send[r] : b.recv[r]);
    a.count = count;
    a.dtype = dt;
    a.root = root;
    for (int p = 0; p < n; ++p) {
      a.a2av[GC_A2AV_SEND_COUNTS][p] = sc[r][p];
      a.a2av[GC_A2AV_SEND_DISPLS][p] = sd[r][p];
      a.a2av[GC_A2AV_RECV_COUNTS][p] = rc[r][p];
      a.a2av[GC_A2AV_RECV_DISPLS][p] = rd[r][p];
    }
  });
  if (!runAndCheckErrors(c, what)) return;
  b.fetch(outBytes, inPlace);
  for (int r = 0; r < n; ++r) {
    std::vector<uint8_t> want(b.hout[r].begin(), b.hout[r].begin() + outBytes);  // gaps keep the poison
    for (int p = 0; p < n; ++p) {
      const size_t cb = count * esz;
      switch (m) {
        case kAllGather: std::memcpy(&want[p * cb], &b.hin[p][0], cb); break;
        case kAllToAll: std::memcpy(&want[p * cb], &b.hin[p][r * cb], cb); break;
        case kAllToAllv: std::memcpy(&want[rd[r][p] * esz], &b.hin[p][sd[p][r] * esz], rc[r][p] * esz); break;
        case kBroadcast: if (p == root) std::memcpy(&want[0], &b.hin[root][0], cb); break;
      }
    }
    // Everything outside the expected ranges must still hold the poison.
    if (m == kAllToAllv)
      for (int p = 0; p < n; ++p)
        for (int g = 0; g < 2; ++g) {
          size_t at = (rd[r][p] + rc[r][p] + g) * esz;
          for (uint32_t k = 0; k < esz; ++k) want[at + k] = 0xA7;
        }
    if (std::memcmp(want.data(), b.hout[r].data(), outBytes) != 0) {
      size_t i = 0;
      while (want[i] == b.hout[r][i]) ++i;
      tally.record(false, what + " rank " + std::to_string(r) + " first wrong byte " + std::to_string(i));
      return;
    }
  }
  tally.record(true, what);
}

// ---- sentinel exactness: units equal to the sentinel pattern must come out exact (escape path)
void testSentinelPayload(Comm& c, Buffers& b) {
  const uint64_t count = 4096;  // int32, 16 KB
  const std::string what = "allReduce/sentinel payload==sentinel pattern n=" + std::to_string(c.n);
  for (int r = 0; r < c.n; ++r) {
    uint32_t* w = reinterpret_cast<uint32_t*>(b.hin[r].data());
    for (uint64_t i = 0; i < count; ++i) w[i] = (i / 4) % 3 == 0 ? GC_SENTINEL_WORD : (uint32_t)rng.next();
    CK(cudaMemcpy(b.send[r], w, count * 4, cudaMemcpyHostToDevice));
  }
  b.poison(count * 4);  // synchronizes the device
  c.launch(kAllReduce[kSentinel][GC_DT_INT32], GC_GRID_FOR_BYTES(count * 4), [&](GcArgs& a, int r) {
    a.send = (uint64_t)b.send[r]; a.recv = (uint64_t)b.recv[r]; a.count = count; a.dtype = GC_DT_INT32; a.op = GC_OP_MAX;
  });
  if (!runAndCheckErrors(c, what)) return;
  b.fetch(count * 4);
  for (int r = 0; r < c.n; ++r)
    for (uint64_t i = 0; i < count; ++i) {
      int32_t want = INT32_MIN;
      for (int s = 0; s < c.n; ++s) want = std::max(want, reinterpret_cast<int32_t*>(b.hin[s].data())[i]);
      if (reinterpret_cast<int32_t*>(b.hout[r].data())[i] != want) { tally.record(false, what + " elem " + std::to_string(i)); return; }
    }
  tally.record(true, what);
}

// ---- 1000 back-to-back mixed calls, no host sync in between: epoch parity reuse across kernel types
void testBackToBack(int n, int calls) {
  Comm c(n);
  const uint64_t count = 1021;  // f32, 4084 bytes: one block for the LL family, several units elsewhere
  const size_t bytes = count * 4, slot = 4096 * n;
  std::vector<uint8_t*> in(n), out(n);
  std::vector<std::vector<uint8_t>> hin(n, std::vector<uint8_t>(slot * calls)), hout = hin;
  for (int r = 0; r < n; ++r) {
    CK(cudaMalloc(&in[r], slot * calls));
    CK(cudaMalloc(&out[r], slot * calls));
    for (size_t i = 0; i < slot * calls; i += 4) randomElement(GC_DT_FLOAT32, &hin[r][i]);
    CK(cudaMemcpy(in[r], hin[r].data(), slot * calls, cudaMemcpyHostToDevice));
    CK(cudaMemset(out[r], 0xA7, slot * calls));
  }
  CK(cudaDeviceSynchronize());
  const int kinds = 9;
  for (int i = 0; i < calls; ++i) {
    const int kind = i % kinds;
    Kernel k = kind < 5 ? kAllReduce[kind][GC_DT_FLOAT32]
             : kind == 5 ? gc_allgather_ll : kind == 6 ? gc_broadcast_ll : kind == 7 ? gc_alltoall_pipe : gc_barrier;
    unsigned grid = kind == kPipe || kind == 7 ? GC_PIPE_BLOCKS : GC_GRID_FOR_BYTES(bytes);
    c.launch(k, grid, [&](GcArgs& a, int r) {
      a.send = (uint64_t)(in[r] + i * slot);
      a.recv = (uint64_t)(out[r] + i * slot);
      a.count = kind == 7 ? count / n : count;
      a.dtype = GC_DT_FLOAT32;
      a.op = GC_OP_SUM;
      a.root = i % n;
    });
  }
  const std::string what = "back-to-back " + std::to_string(calls) + " mixed calls n=" + std::to_string(n);
  if (!runAndCheckErrors(c, what)) return;
  for (int r = 0; r < n; ++r) CK(cudaMemcpy(hout[r].data(), out[r], slot * calls, cudaMemcpyDeviceToHost));
  std::vector<const uint8_t*> src(n);
  uint8_t want[8];
  for (int i = 0; i < calls; ++i) {
    const int kind = i % kinds;
    for (int r = 0; r < n; ++r) {
      const uint8_t* got = &hout[r][i * slot];
      bool ok = true;
      if (kind < 5) {
        for (uint64_t e = 0; e < count && ok; ++e) {
          for (int s = 0; s < n; ++s) src[s] = &hin[s][i * slot + e * 4];
          emulate(GC_DT_FLOAT32, GC_OP_SUM, n, src, want);
          ok = kind == kLL128 ? closeToReference(GC_DT_FLOAT32, GC_OP_SUM, n, src, got + e * 4) && std::memcmp(got + e * 4, &hout[0][i * slot + e * 4], 4) == 0
                              : std::memcmp(got + e * 4, want, 4) == 0;
        }
      } else if (kind == 5) {
        for (int s = 0; s < n && ok; ++s) ok = std::memcmp(got + s * bytes, &hin[s][i * slot], bytes) == 0;
      } else if (kind == 6) {
        ok = std::memcmp(got, &hin[i % n][i * slot], bytes) == 0;
      } else if (kind == 7) {
        const size_t cb = (count / n) * 4;
        for (int s = 0; s < n && ok; ++s) ok = std::memcmp(got + s * cb, &hin[s][i * slot + r * cb], cb) == 0;
      }
      if (!ok) {
        tally.record(false, what + ": call " + std::to_string(i) + " kind " + std::to_string(kind) + " rank " + std::to_string(r));
        return;
      }
    }
  }
  tally.record(true, what);
  for (int r = 0; r < n; ++r) { cudaFree(in[r]); cudaFree(out[r]); }
}

// ---- graphs that replay: K mixed collectives captured ONCE, replayed 1000 times. Inputs are regenerated
// on the device before every replay (a function of rank, index, replay number), outputs poisoned, and a
// checker kernel counts every wrong element on the device, so each replay is checked, not only the last.
struct ReplayPlan {
  enum Kind { kArLL, kArSent, kArPipe, kArLL128, kArLLi8, kRsLL, kAgLL, kBcLL, kA2aPipe, kBarrier, kKinds };
};
__host__ __device__ inline uint32_t replayInput(uint32_t r, uint64_t word, uint32_t k, uint32_t j) {
  uint64_t z = ((uint64_t)r << 48) ^ (word << 16) ^ ((uint64_t)k << 5) ^ j;
  z = (z ^ (z >> 31)) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 29)) * 0xBF58476D1CE4E5B9ull;
  return (uint32_t)(z ^ (z >> 32));
}
struct ReplayBufs {
  uint32_t* send[GC_MAX_RANKS];
  uint32_t* recv[GC_MAX_RANKS];
};
// Every rank's inputs for replay *counter; every output word poisoned.
__global__ void replayGenerate(ReplayBufs b, int n, uint64_t words, const uint32_t* counter) {
  const uint32_t k = *counter;
  for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < words * ReplayPlan::kKinds; i += (uint64_t)gridDim.x * blockDim.x) {
    const uint32_t j = (uint32_t)(i / words);
    for (int r = 0; r < n; ++r) {
      b.send[r][i] = replayInput(r, i % words, k, j);
      b.recv[r][i] = 0xA7A7A7A7u;
    }
  }
}
__device__ uint32_t inputWord(int r, uint64_t w, uint32_t k, uint32_t j) { return replayInput(r, w, k, j); }
// Counts wrong output elements of every collective on every rank; then advances the replay number.
__global__ void replayCheck(ReplayBufs b, int n, uint64_t count, uint64_t words, const uint32_t* counter,
                           unsigned long long* wrong) {
  const uint32_t k = *counter;
  unsigned long long bad = 0;
  for (uint64_t t = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; t < (uint64_t)n * n * count; t += (uint64_t)gridDim.x * blockDim.x) {
    const int r = (int)(t / (n * count));            // the receiving rank
    const uint64_t e = t % (n * count);              // element of the widest output (n * count)
    const uint64_t i = e % count;
    const int p = (int)(e / count);
    for (uint32_t j = 0; j < ReplayPlan::kKinds; ++j) {
      const uint32_t* out = b.recv[r] + j * words;
      uint32_t want = 0;
      bool check = true;
      switch (j) {
        case ReplayPlan::kArLL: case ReplayPlan::kArPipe: case ReplayPlan::kArLL128: case ReplayPlan::kRsLL: {
          if (p != 0) { check = false; break; }
          const uint64_t w = j == ReplayPlan::kRsLL ? r * count + i : i;
          for (int s = 0; s < n; ++s) want += inputWord(s, w, k, j);
          break;
        }
        case ReplayPlan::kArSent: {  // MAX, signed
          if (p != 0) { check = false; break; }
          int32_t m = INT32_MIN;
          for (int s = 0; s < n; ++s) { int32_t x = (int32_t)inputWord(s, i, k, j); m = x > m ? x : m; }
          want = (uint32_t)m;
          break;
        }
        case ReplayPlan::kArLLi8: {  // int8 SUM over count bytes: word i holds bytes 4i..4i+3
          if (p != 0 || 4 * i >= count) { check = false; break; }
          for (int q = 0; q < 4; ++q) {
            uint8_t acc = 0;
            for (int s = 0; s < n; ++s) acc = (uint8_t)(acc + (uint8_t)(inputWord(s, i, k, j) >> (8 * q)));
            // bytes past count keep the poison
            want |= (uint32_t)(4 * i + q < count ? acc : 0xA7) << (8 * q);
          }
          break;
        }
        case ReplayPlan::kAgLL: want = inputWord(p, i, k, j); break;
        case ReplayPlan::kBcLL: if (p != 0) check = false; else want = inputWord(0, i, k, j); break;  // root 0
        case ReplayPlan::kA2aPipe: want = inputWord(p, r * count + i, k, j); break;
        default: check = false;
      }
      if (check && out[e] != want) ++bad;
    }
  }
  if (bad) atomicAdd(wrong, bad);
}
__global__ void replayAdvance(uint32_t* counter) { ++*counter; }

// One graph: generate, the kKinds collectives on every rank's stream (plain or dependent launches),
// check, advance. Returns the JSON row.
std::string testGraphReplay(int n, int replays, bool pdl) {
  Comm c(n);
  const uint64_t count = 1021;                       // int32 elements per rank and collective (4084 B)
  const uint64_t words = ((n * count + 63) / 64) * 64;
  ReplayBufs rb{};
  for (int r = 0; r < n; ++r) {
    CK(cudaMalloc(&rb.send[r], words * 4 * ReplayPlan::kKinds));
    CK(cudaMalloc(&rb.recv[r], words * 4 * ReplayPlan::kKinds));
  }
  uint32_t* counter;
  unsigned long long* wrong;
  CK(cudaMalloc(&counter, 4));
  CK(cudaMalloc(&wrong, 8));
  CK(cudaMemset(counter, 0, 4));
  CK(cudaMemset(wrong, 0, 8));
  CK(cudaDeviceSynchronize());
  struct Call { Kernel k; unsigned grid; uint32_t dtype, op; uint64_t count; };
  const unsigned g = GC_GRID_FOR_BYTES(count * 4);
  const Call calls[ReplayPlan::kKinds] = {
      {gc_allreduce_ll_i32, g, GC_DT_INT32, GC_OP_SUM, count},
      {gc_allreduce_sentinel_i32, g, GC_DT_INT32, GC_OP_MAX, count},
      {gc_allreduce_pipe_i32, GC_PIPE_BLOCKS, GC_DT_INT32, GC_OP_SUM, count},
      {gc_allreduce_ll128_i32, g, GC_DT_INT32, GC_OP_SUM, count},
      {gc_allreduce_ll_i8, g, GC_DT_INT8, GC_OP_SUM, count},
      {gc_reducescatter_ll_i32, g, GC_DT_INT32, GC_OP_SUM, count},
      {gc_allgather_ll, g, GC_DT_INT32, GC_OP_SUM, count},
      {gc_broadcast_ll, g, GC_DT_INT32, GC_OP_SUM, count},
      {gc_alltoall_pipe, GC_PIPE_BLOCKS, GC_DT_INT32, GC_OP_SUM, count},
      {gc_barrier, 1, GC_DT_INT32, GC_OP_SUM, 0},
  };
  cudaStream_t s0 = c.streams[0];
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  std::vector<cudaEvent_t> ev(2 * n);
  for (auto& e : ev) CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  CK(cudaStreamBeginCapture(s0, cudaStreamCaptureModeThreadLocal));
  replayGenerate<<<64, 256, 0, s0>>>(rb, n, words, counter);
  CK(cudaEventRecord(ev[0], s0));
  for (int r = 1; r < n; ++r) CK(cudaStreamWaitEvent(c.streams[r], ev[0], 0));
  for (int j = 0; j < ReplayPlan::kKinds; ++j) {
    const Call& k = calls[j];
    c.launch(k.k, k.grid, [&](GcArgs& a, int r) {
      a.send = (uint64_t)(rb.send[r] + j * words);
      a.recv = (uint64_t)(rb.recv[r] + j * words);
      a.count = k.count;
      a.dtype = k.dtype;
      a.op = k.op;
      a.root = 0;
    }, -1, GC_BLOCK_THREADS, pdl);
  }
  for (int r = 1; r < n; ++r) {
    CK(cudaEventRecord(ev[n + r], c.streams[r]));
    CK(cudaStreamWaitEvent(s0, ev[n + r], 0));
  }
  replayCheck<<<64, 256, 0, s0>>>(rb, n, count, words, counter, wrong);
  replayAdvance<<<1, 1, 0, s0>>>(counter);
  CK(cudaStreamEndCapture(s0, &graph));
  CK(cudaGraphInstantiate(&exec, graph, 0));
  for (int i = 0; i < replays; ++i) CK(cudaGraphLaunch(exec, s0));
  CK(cudaStreamSynchronize(s0));
  c.sync();
  unsigned long long hostWrong = 0;
  uint32_t done = 0;
  CK(cudaMemcpy(&hostWrong, wrong, 8, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(&done, counter, 4, cudaMemcpyDeviceToHost));
  const std::string errs = c.errors();
  char what[200];
  std::snprintf(what, sizeof what, "graph of %d mixed collectives captured once, replayed %d times (%s), n=%d: %llu wrong elements, %u replays checked",
                (int)ReplayPlan::kKinds, replays, pdl ? "dependent launch" : "plain launch", n, hostWrong, done);
  tally.record(hostWrong == 0 && done == (uint32_t)replays && errs.empty(), std::string(what) + (errs.empty() ? "" : " errors: " + errs));
  CK(cudaGraphExecDestroy(exec));
  CK(cudaGraphDestroy(graph));
  for (auto& e : ev) CK(cudaEventDestroy(e));
  for (int r = 0; r < n; ++r) { cudaFree(rb.send[r]); cudaFree(rb.recv[r]); }
  cudaFree(counter);
  cudaFree(wrong);
  char row[200];
  std::snprintf(row, sizeof row, "{\"ranks\":%d,\"gpus\":1,\"collectives\":%d,\"replays\":%d,\"wrong\":%llu,\"replays_checked\":%u,\"dependent_launch\":%s,\"error_records\":%s}",
                n, (int)ReplayPlan::kKinds, replays, hostWrong, done, pdl ? "true" : "false", errs.empty() ? "false" : "true");
  return row;
}

// ---- a rank that never arrives must end in the timeout record naming it; abort word; capacity
void testMissingRank(int n, Kernel k, unsigned grid, const char* name) {
  Comm c(n);
  Buffers b(n, 1 << 20);
  c.timeoutNs = 50'000'000;  // 50 ms
  auto fill = [&](GcArgs& a, int r) {
    a.send = (uint64_t)b.send[r]; a.recv = (uint64_t)b.recv[r]; a.count = 1021; a.dtype = GC_DT_FLOAT32; a.op = GC_OP_SUM;
  };
  c.launch(k, grid, fill);  // one healthy call first
  c.sync();
  const uint64_t epoch = c.epoch;
  auto t0 = std::chrono::steady_clock::now();
  c.launch(k, grid, fill, /*skipRank=*/n - 1);
  c.sync();
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  bool ok = true;
  for (int r = 0; r < n - 1; ++r) {
    const GcErrorRecord& e = c.errHost[r];
    ok = ok && e.code == GC_ERR_TIMEOUT && e.peer == (uint32_t)(n - 1) && e.epoch == epoch && e.rank == (uint32_t)r;
  }
  char buf[160];
  std::snprintf(buf, sizeof buf, "missing rank %d of %d in %s -> timeout record on every other rank (%.1f ms)", n - 1, n, name, ms);
  tally.record(ok, std::string(buf) + (ok ? "" : " got: " + c.errors()));
}

void testAbort(int n) {
  Comm c(n);
  Buffers b(n, 1 << 16);
  c.timeoutNs = 60'000'000'000ull;
  auto t0 = std::chrono::steady_clock::now();
  c.launch(gc_allreduce_ll_f32, 1, [&](GcArgs& a, int r) {
    a.send = (uint64_t)b.send[r]; a.recv = (uint64_t)b.recv[r]; a.count = 64; a.dtype = GC_DT_FLOAT32; a.op = GC_OP_SUM;
  }, /*skipRank=*/0);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  *c.abortHost = 1;
  c.sync();
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  bool ok = ms < 5000;
  for (int r = 1; r < n; ++r) ok = ok && c.errHost[r].code == GC_ERR_ABORTED;
  tally.record(ok, "host abort word stops spinning ranks (" + std::to_string((int)ms) + " ms)" + (ok ? "" : c.errors()));
}

void testCapacity(int n) {
  Comm c(n);
  Buffers b(n, 1 << 18);
  c.launch(gc_allreduce_ll_f32, 16, [&](GcArgs& a, int r) {
    a.send = (uint64_t)b.send[r]; a.recv = (uint64_t)b.recv[r]; a.count = (GC_LL_MAX_BYTES / 4) + 1; a.dtype = GC_DT_FLOAT32; a.op = GC_OP_SUM;
  });
  c.sync();
  bool ok = true;
  for (int r = 0; r < n; ++r) ok = ok && c.errHost[r].code == GC_ERR_CAPACITY && c.errHost[r].detail == GC_LL_MAX_BYTES + 4;
  tally.record(ok, "allReduce/ll over capacity -> GC_ERR_CAPACITY on every rank" + (ok ? std::string() : c.errors()));
}

// ---- the correctness matrix: every case of a block naming a kernel variant, on that variant's kernel

int variantNamed(const std::string& name) {
  for (int v = 0; v < kVariants; ++v)
    if (name == kVarName[v]) return v;
  return -1;
}

// Whether variant v's kernel of collective coll takes the case (the kernel table's capacities; the API
// count is per peer for every collective); the route refuses the rest before any launch, so gc_test
// does not launch them either.
bool withinCapacity(int v, int coll, int dt, uint64_t count) {
  static const uint32_t kProto[kVariants] = {GC_PROTO_LL, GC_PROTO_SENTINEL, GC_PROTO_LL128, GC_PROTO_PIPE, GC_PROTO_TWO_BARRIER};
  static const uint32_t kColl[gcm::kColls] = {GC_COLL_ALLREDUCE, GC_COLL_REDUCESCATTER, GC_COLL_ALLGATHER, GC_COLL_ALLTOALL,
                                              GC_COLL_ALLTOALLV, GC_COLL_BROADCAST, GC_COLL_BARRIER};
  return count <= gc_bench_kernel_max_count(kColl[coll], kProto[v], dt);
}

// Bytes of each rank's buffers: the largest send or receive extent of the group's cases, at least 1 MB.
size_t groupBytes(const gcm::Group& g) {
  size_t cap = 1 << 20;
  for (const gcm::Case& k : g.cases) {
    const size_t n = g.ranks;
    const size_t elems = k.coll == gcm::kAllReduce || k.coll == gcm::kBroadcast ? k.count
                       : k.coll == gcm::kAllToAllv ? n * (k.count + 2)  // testMove's gaps
                       : k.coll == gcm::kBarrier ? 0 : n * k.count;
    cap = std::max(cap, elems * gcm::kTypeBytes[k.type]);
  }
  return cap + 4096;
}

void testBarrier(Comm& c, const char* var) {
  const std::string what = std::string("barrier/") + var + " n=" + std::to_string(c.n);
  c.launch(gc_barrier, 1, [](GcArgs&, int) {});
  if (runAndCheckErrors(c, what)) tally.record(true, what);
}

void runMatrix(const std::vector<gcm::Group>& groups) {
  long autoCases = 0, beyond = 0;
  for (const gcm::Group& g : groups) {
    if (g.variant == "auto") {
      autoCases += (long)g.cases.size();
      continue;
    }
    const int v = variantNamed(g.variant);
    if (v < 0) {
      tally.record(false, "correctness matrix: variant " + g.variant + " names no kernel variant of gc_test");
      continue;
    }
    const int n = g.ranks;
    Comm c(n);
    Buffers b(n, groupBytes(g));
    const auto t0 = std::chrono::steady_clock::now();
    const long before = tally.pass + tally.fail;
    for (const gcm::Case& k : g.cases) {
      if (!withinCapacity(v, k.coll, k.type, k.count)) {
        ++beyond;
        continue;
      }
      const int root = k.root == gcm::kRootLast ? n - 1 : k.root == gcm::kRootMiddle ? n / 2 : (int)(rng.next() % n);
      const bool movementKernel = v == kLL || v == kPipe;
      bool ran = true;
      switch (k.coll) {
        case gcm::kAllReduce:
          ran = kAllReduce[v][k.type] != nullptr && (v != kLL128 || GC_KERNEL_TAKES_OP(GC_COLL_ALLREDUCE, GC_PROTO_LL128, k.op));
          if (ran) testAllReduce(c, b, v, k.type, k.op, k.count, k.inPlace);
          break;
        case gcm::kReduceScatter:
          ran = movementKernel && !k.inPlace;
          if (ran) testReduceScatter(c, b, v == kLL ? 0 : 1, k.type, k.op, k.count);
          break;
        case gcm::kBarrier:
          testBarrier(c, kVarName[v]);
          break;
        default: {
          const int m = k.coll == gcm::kAllGather ? kAllGather : k.coll == gcm::kAllToAll ? kAllToAll
                      : k.coll == gcm::kAllToAllv ? kAllToAllv : kBroadcast;
          ran = movementKernel && (!k.inPlace || m == kBroadcast);
          if (ran) testMove(c, b, m, v == kLL ? 0 : 1, k.type, k.count, m == kBroadcast ? root : 0, k.inPlace);
        }
      }
      if (!ran)
        tally.record(false, describe(gcm::kCollName[k.coll], kVarName[v], n, k.type, gcm::isReduction(k.coll) ? k.op : -1,
                                     k.count, k.inPlace) + ": no such kernel or mode (correctness matrix line?)");
    }
    if (v == kSentinel) testSentinelPayload(c, b);
    std::printf("%s n=%d: %ld checks in %.1f s (failures so far: %ld)\n", kVarName[v], n, tally.pass + tally.fail - before,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), tally.fail);
    std::fflush(stdout);
  }
  std::printf("correctness matrix: %ld auto cases left to the Java suite (the route chooses), %ld beyond a forced"
              " variant's capacity (the route refuses them)\n", autoCases, beyond);
}

// correctness-matrix.txt beside this binary (run-gpu.sh, the GPU bundle put it there).
std::string matrixBesideBinary() {
  char exe[4096];
  const ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  std::string dir = len > 0 ? std::string(exe, (size_t)len) : std::string(".");
  const size_t slash = dir.rfind('/');
  dir = slash == std::string::npos ? "." : dir.substr(0, slash);
  return dir + "/correctness-matrix.txt";
}

// ---- MAXLOC / MINLOC: the pair kernels (kernel_abi.h section 7), checked against a host fold written here
#define GC_PAIR_KERNEL_OF(name, coll, proto, PT, V, I) name,
Kernel kPairKernel[GC_PT_COUNT] = {GC_SHIPPED_PAIR_KERNELS(GC_PAIR_KERNEL_OF)};
#undef GC_PAIR_KERNEL_OF

// A pair of type pt: the value (f32 f64 i32 i64) at byte 0, the index (i32 i64) at byte indexAt.
struct PairLayout {
  bool floating;
  uint32_t valueBytes, indexBytes, indexAt, bytes;
  explicit PairLayout(int pt)
      : floating(pt < GC_PT_INT32_INT32), valueBytes(pt == GC_PT_FLOAT64_INT32 || pt == GC_PT_FLOAT64_INT64 || pt >= GC_PT_INT64_INT32 ? 8 : 4),
        indexBytes(pt % 2 == 1 ? 8 : 4), indexAt(std::max(valueBytes, indexBytes)), bytes(gc_pair_size(pt)) {}
  double floatValue(const uint8_t* p) const {
    if (valueBytes == 4) { float f; std::memcpy(&f, p, 4); return f; }
    double d; std::memcpy(&d, p, 8); return d;
  }
  int64_t intValue(const uint8_t* p) const {
    if (valueBytes == 4) { int32_t i; std::memcpy(&i, p, 4); return i; }
    int64_t i; std::memcpy(&i, p, 8); return i;
  }
  int64_t index(const uint8_t* p) const {
    if (indexBytes == 4) { int32_t i; std::memcpy(&i, p + indexAt, 4); return i; }
    int64_t i; std::memcpy(&i, p + indexAt, 8); return i;
  }
  // -1, 0, 1 as numbers (-0.0 == +0.0).
  int compare(const uint8_t* a, const uint8_t* b) const {
    if (floating) { const double x = floatValue(a), y = floatValue(b); return x < y ? -1 : x > y ? 1 : 0; }
    const int64_t x = intValue(a), y = intValue(b);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  // Values from a small set (ties are common; -0.0 beside +0.0), indices in [-40, 40], random padding.
  void random(uint8_t* p) const {
    for (uint32_t i = 0; i < bytes; ++i) p[i] = (uint8_t)rng.next();
    static const double kFloats[] = {-2.5, -0.0, 0.0, 1.5, 3.0, 3.0, 1e30, -1e-30};
    const int64_t k = (int64_t)(rng.next() % 8);
    if (floating && valueBytes == 4) { const float f = (float)kFloats[k]; std::memcpy(p, &f, 4); }
    else if (floating) std::memcpy(p, &kFloats[k], 8);
    else if (valueBytes == 4) { const int32_t v = (int32_t)k - 4; std::memcpy(p, &v, 4); }
    else { const int64_t v = (k - 4) * (int64_t)1e12; std::memcpy(p, &v, 8); }
    setIndex(p, (int64_t)(rng.next() % 81) - 40);
  }
  void setIndex(uint8_t* p, int64_t index) const {
    if (indexBytes == 4) { const int32_t i = (int32_t)index; std::memcpy(p + indexAt, &i, 4); }
    else std::memcpy(p + indexAt, &index, 8);
  }
  void setNan(uint8_t* p) const {
    if (valueBytes == 4) { const float f = std::nanf(""); std::memcpy(p, &f, 4); }
    else { const double d = std::nan(""); std::memcpy(p, &d, 8); }
  }
};

// Launches the pair kernel of pt on every rank: count pairs of b.send (in place: into b.send).
void launchPairs(Comm& c, Buffers& b, int pt, int op, uint64_t count, bool inPlace) {
  c.launch(kPairKernel[pt], 1, [&](GcArgs& a, int r) {
    a.send = (uint64_t)b.send[r];
    a.recv = (uint64_t)(inPlace ? b.send[r] : b.recv[r]);
    a.count = count;
    a.dtype = pt;
    a.op = op;
  });
}

std::string describePairs(int n, int pt, int op, uint64_t count, bool inPlace) {
  return std::string("allReduce/pair_ll n=") + std::to_string(n) + " " + gcm::kPairTypeName[pt] + " " + gcm::kLocOpName[op]
       + " count=" + std::to_string(count) + (inPlace ? " in-place" : "");
}

// Every rank's recv pair i equals, byte for byte, the pair with the largest (smallest) value among every
// rank's pair i, the lowest index among equal values, the lowest rank among equal pairs.
void testPairs(Comm& c, Buffers& b, int pt, int op, uint64_t count, bool inPlace) {
  const PairLayout L(pt);
  const size_t bytes = count * L.bytes;
  const std::string what = describePairs(c.n, pt, op, count, inPlace);
  for (int r = 0; r < c.n; ++r) {
    for (uint64_t i = 0; i < count; ++i) L.random(&b.hin[r][i * L.bytes]);
    CK(cudaMemcpy(b.send[r], b.hin[r].data(), bytes, cudaMemcpyHostToDevice));
  }
  if (!inPlace) b.poison(bytes);
  CK(cudaDeviceSynchronize());
  launchPairs(c, b, pt, op, count, inPlace);
  if (!runAndCheckErrors(c, what)) return;
  b.fetch(bytes, inPlace);
  for (uint64_t i = 0; i < count; ++i) {
    const uint8_t* best = &b.hin[0][i * L.bytes];
    for (int r = 1; r < c.n; ++r) {
      const uint8_t* x = &b.hin[r][i * L.bytes];
      const int cmp = L.compare(x, best);
      if ((op == GC_LOC_MAXLOC ? cmp > 0 : cmp < 0) || (cmp == 0 && L.index(x) < L.index(best))) best = x;
    }
    for (int r = 0; r < c.n; ++r)
      if (std::memcmp(&b.hout[r][i * L.bytes], best, L.bytes) != 0) {
        tally.record(false, what + " rank " + std::to_string(r) + " pair " + std::to_string(i) + ": index "
                                + std::to_string(L.index(&b.hout[r][i * L.bytes])) + ", want " + std::to_string(L.index(best)));
        return;
      }
  }
  tally.record(true, what);
}

// A NaN value anywhere: every rank records GC_ERR_NAN naming the lowest rank holding one and its lowest
// such pair (with that pair's index, the type and the op), writes nothing, and the next call runs.
void testPairNan(Comm& c, Buffers& b, int pt, int op) {
  const PairLayout L(pt);
  const uint64_t count = 700;  // two pairs per thread of the block
  const uint64_t later = c.n > 2 ? 600 : 650;  // on a later rank (or a later pair of rank 1)
  const std::string what = describePairs(c.n, pt, op, count, false) + " NaN at rank " + std::to_string(c.n - 1)
                         + " pair " + std::to_string(later) + " and rank 1 pair 611";
  for (int r = 0; r < c.n; ++r) {
    for (uint64_t i = 0; i < count; ++i) L.random(&b.hin[r][i * L.bytes]);
    if (r == c.n - 1) L.setNan(&b.hin[r][later * L.bytes]);
    if (r == 1) { L.setNan(&b.hin[r][611 * L.bytes]); L.setIndex(&b.hin[r][611 * L.bytes], -77); }
    CK(cudaMemcpy(b.send[r], b.hin[r].data(), count * L.bytes, cudaMemcpyHostToDevice));
  }
  b.poison(count * L.bytes);
  const uint64_t epoch = c.epoch;
  launchPairs(c, b, pt, op, count, false);
  c.sync();
  bool ok = true;
  for (int r = 0; r < c.n; ++r) {
    const GcErrorRecord& e = c.errHost[r];
    ok = ok && e.code == GC_ERR_NAN && e.rank == (uint32_t)r && e.peer == 1 && e.detail == 611 && (int64_t)e.observed == -77
       && e.waited == ((uint64_t)pt << 8 | (uint64_t)op) && e.epoch == epoch;
  }
  b.fetch(count * L.bytes);
  for (int r = 0; r < c.n; ++r)
    for (uint64_t i = 0; i < count * L.bytes; ++i) ok = ok && b.hout[r][i] == 0xA7;
  tally.record(ok, what + ": GC_ERR_NAN on every rank, recv untouched" + (ok ? "" : " got: " + c.errors()));
  c.clearErrors();
  testPairs(c, b, pt, op, count, false);  // the protocol completed: the group goes on
}

// MAXLOC/MINLOC blocks of the correctness matrix on the pair kernels, and the pair kernel's own checks.
void runPairMatrix(const std::vector<gcm::PairGroup>& groups) {
  for (const gcm::PairGroup& g : groups) {
    Comm c(g.ranks);
    Buffers b(g.ranks, 1 << 20);
    const auto t0 = std::chrono::steady_clock::now();
    const long before = tally.pass + tally.fail;
    for (const gcm::PairCase& k : g.cases) testPairs(c, b, k.type, k.op, k.count, k.inPlace);
    if (g.ranks >= 2) {
      testPairNan(c, b, GC_PT_FLOAT32_INT32, GC_LOC_MAXLOC);
      testPairNan(c, b, GC_PT_FLOAT64_INT64, GC_LOC_MINLOC);
    }
    for (int pt = 0; pt < GC_PT_COUNT; ++pt)  // the capacity: 64 KB of pairs per rank
      testPairs(c, b, pt, (int)(rng.next() % 2), gc_pair_kernel_max_count(GC_COLL_ALLREDUCE, GC_PROTO_LL_PAIR, pt), pt % 2 == 0);
    std::printf("pair_ll n=%d: %ld checks in %.1f s (failures so far: %ld)\n", g.ranks, tally.pass + tally.fail - before,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), tally.fail);
    std::fflush(stdout);
  }
  Comm c(3);
  Buffers b(3, 1 << 20);
  c.launch(kPairKernel[GC_PT_FLOAT64_INT32], 1, [&](GcArgs& a, int r) {
    a.send = (uint64_t)b.send[r]; a.recv = (uint64_t)b.recv[r]; a.dtype = GC_PT_FLOAT64_INT32; a.op = GC_LOC_MAXLOC;
    a.count = gc_pair_kernel_max_count(GC_COLL_ALLREDUCE, GC_PROTO_LL_PAIR, GC_PT_FLOAT64_INT32) + 1;
  });
  c.sync();
  bool ok = true;
  for (int r = 0; r < 3; ++r) ok = ok && c.errHost[r].code == GC_ERR_CAPACITY && c.errHost[r].detail == GC_LL_MAX_BYTES + 16;
  tally.record(ok, "allReduce/pair_ll over capacity -> GC_ERR_CAPACITY on every rank" + (ok ? std::string() : c.errors()));
}

// ---- batch kernels (kernel_abi.h section 6)
BatchKernel kAllReduceBatch[8] = GC_TYPED(gc_allreduce_batch_ll);
constexpr uint64_t kBatchHash = 0x5ba7c4ull;

// Call i's input and outputs: every call at its own 256-byte aligned offset (plus `skew` elements, so
// some calls start off the 8-byte grid), batch results in recv, the separate calls' in recv + 1 MB.
struct BatchShape {
  std::vector<uint32_t> counts;
  std::vector<size_t> offs;
  size_t bytes = 0;
  BatchShape(const std::vector<uint32_t>& c, uint32_t esz, uint32_t skew) : counts(c) {
    for (size_t i = 0; i < c.size(); ++i) {
      offs.push_back(bytes + (i % 3 == 1 ? skew * esz : 0));
      bytes = (offs.back() + c[i] * esz + 255) / 256 * 256;
    }
  }
  std::vector<BatchCall> calls(Buffers& b, int r, uint32_t esz, bool separate, bool inPlace) const {
    std::vector<BatchCall> out;
    for (size_t i = 0; i < counts.size(); ++i) {
      uint8_t* in = b.send[r] + offs[i];
      out.push_back({in, inPlace ? in : b.recv[r] + (separate ? (1u << 20) : 0) + offs[i], counts[i]});
    }
    return out;
  }
};

void testBatch(Comm& c, Buffers& b, int dt, int op, const std::vector<uint32_t>& counts, bool inPlace, bool pdl) {
  const uint32_t esz = gc_dtype_size(dt);
  const BatchShape shape(counts, esz, /*skew=*/1);
  char what[200];
  std::snprintf(what, sizeof what, "allReduce/batch_ll n=%d %s %s %zu calls (%u..%u elements)%s%s", c.n, kTypeName[dt],
                kOpName[op], counts.size(), *std::min_element(counts.begin(), counts.end()),
                *std::max_element(counts.begin(), counts.end()), inPlace ? " in-place" : "", pdl ? " pdl" : "");
  b.randomInputs(dt, shape.bytes);
  b.poison(shape.bytes + (1u << 20) + shape.bytes);
  // The same calls one by one (one-shot LL), then the batch: their results must be the same bits.
  for (size_t i = 0; i < counts.size() && !inPlace; ++i) {
    c.launch(kAllReduce[kLL][dt], GC_GRID_FOR_BYTES((uint64_t)counts[i] * esz), [&](GcArgs& a, int r) {
      a.send = (uint64_t)(b.send[r] + shape.offs[i]);
      a.recv = (uint64_t)(b.recv[r] + (1u << 20) + shape.offs[i]);
      a.count = counts[i]; a.dtype = dt; a.op = op;
    });
  }
  for (int r = 0; r < c.n; ++r) {
    GcArgs a = c.args(r);
    a.dtype = dt;
    a.op = op;
    const GcBatch bt = packBatch(shape.calls(b, r, esz, false, inPlace), esz, kBatchHash);
    launchBatch(kAllReduceBatch[dt], batchGrid(bt), c.streams[r], a, bt, pdl);
  }
  CK(cudaGetLastError());
  ++c.epoch;
  if (!runAndCheckErrors(c, what)) return;
  std::vector<std::vector<uint8_t>> batch(c.n), separate(c.n);
  for (int r = 0; r < c.n; ++r) {
    batch[r].resize(shape.bytes);
    separate[r].resize(shape.bytes);
    CK(cudaMemcpy(batch[r].data(), inPlace ? b.send[r] : b.recv[r], shape.bytes, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(separate[r].data(), b.recv[r] + (1u << 20), shape.bytes, cudaMemcpyDeviceToHost));
  }
  std::vector<uint8_t> want(8);
  std::vector<const uint8_t*> in(c.n);
  for (size_t k = 0; k < counts.size(); ++k)
    for (uint32_t e = 0; e < counts[k]; ++e) {
      const size_t at = shape.offs[k] + (size_t)e * esz;
      for (int r = 0; r < c.n; ++r) in[r] = &b.hin[r][at];
      emulate(dt, op, c.n, in, want.data());
      for (int r = 0; r < c.n; ++r) {
        const bool ok = std::memcmp(&batch[r][at], want.data(), esz) == 0 &&
                        (inPlace || std::memcmp(&batch[r][at], &separate[r][at], esz) == 0);
        if (!ok) {
          char buf[200];
          std::snprintf(buf, sizeof buf, " rank %d call %zu elem %u got %.9g want %.9g separate %.9g", r, k, e,
                        toDouble(dt, &batch[r][at]), toDouble(dt, want.data()), toDouble(dt, &separate[r][at]));
          tally.record(false, what + std::string(buf));
          return;
        }
      }
    }
  tally.record(true, what);
}

// Each rank's batch from `callsOf(r)` (its counts) and `opOf(r)`; rank `plain` (if >= 0) launches the
// plain one-shot kernel instead, rank `absent` nothing. Returns after every stream finished.
template <typename Counts, typename Op>
void launchMismatched(Comm& c, Buffers& b, Counts callsOf, Op opOf, int plain, int absent) {
  for (int r = 0; r < c.n; ++r) {
    if (r == absent) continue;
    GcArgs a = c.args(r);
    a.dtype = GC_DT_FLOAT32;
    a.op = opOf(r);
    const BatchShape shape(callsOf(r), 4, 0);
    if (r == plain) {
      a.send = (uint64_t)b.send[r]; a.recv = (uint64_t)b.recv[r]; a.count = shape.counts[0];
      launchOne(gc_allreduce_ll_f32, 1, GC_BLOCK_THREADS, c.streams[r], a, false);
      continue;
    }
    const GcBatch bt = packBatch(shape.calls(b, r, 4, false, false), 4, kBatchHash);
    launchBatch(kAllReduceBatch[GC_DT_FLOAT32], batchGrid(bt), c.streams[r], a, bt, false);
  }
  CK(cudaGetLastError());
  ++c.epoch;
  c.sync();
}

// Batches that differ must fail on EVERY rank with GC_ERR_BATCH_MISMATCH, each naming a rank whose
// batch differs from its own (the odd rank names rank 0, the others the odd one), well before the timeout.
void testBatchMismatch(int n, const char* how) {
  Comm c(n);
  Buffers b(n, 4u << 20);
  c.timeoutNs = 200'000'000;  // threads waiting for packets the odd rank never sends stop here
  const int odd = n - 1;
  const std::string h = how;
  const std::vector<uint32_t> base(16, 1024);
  std::vector<uint32_t> other = base;
  if (h == "fewer calls") other.pop_back();
  if (h == "a count") other[5] = 1000;
  auto t0 = std::chrono::steady_clock::now();
  launchMismatched(c, b, [&](int r) { return r == odd ? other : base; },
                   [&](int r) { return h == "the op" && r == odd ? GC_OP_MAX : GC_OP_SUM; }, h == "a plain call" ? odd : -1, -1);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  bool ok = true;
  for (int r = 0; r < n; ++r) {
    if (h == "a plain call" && r == odd) continue;  // a kernel without a signature: what it saw is undefined
    const GcErrorRecord& e = c.errHost[r];
    const uint32_t named = r == odd ? 0u : (uint32_t)odd;
    ok = ok && e.code == GC_ERR_BATCH_MISMATCH && e.peer == named && e.rank == (uint32_t)r &&
         e.detail == (h == "a plain call" ? 1u : 0u);
  }
  char buf[200];
  std::snprintf(buf, sizeof buf, "batch mismatch (rank %d: %s), n=%d -> GC_ERR_BATCH_MISMATCH naming it on every rank (%.1f ms)",
                odd, how, n, ms);
  tally.record(ok, std::string(buf) + (ok ? "" : " got: " + c.errors()));
}

void testBatchAbsentRank(int n) {
  Comm c(n);
  Buffers b(n, 4u << 20);
  c.timeoutNs = 50'000'000;
  const std::vector<uint32_t> counts(16, 1024);
  launchMismatched(c, b, [&](int) { return counts; }, [](int) { return GC_OP_SUM; }, -1, -1);  // a healthy batch first
  bool ok = c.errors().empty();
  const uint64_t epoch = c.epoch;
  launchMismatched(c, b, [&](int) { return counts; }, [](int) { return GC_OP_SUM; }, -1, n - 1);
  for (int r = 0; r < n - 1; ++r) {
    const GcErrorRecord& e = c.errHost[r];
    ok = ok && e.code == GC_ERR_TIMEOUT && e.peer == (uint32_t)(n - 1) && e.epoch == epoch;
  }
  tally.record(ok, "batch with rank " + std::to_string(n - 1) + " of " + std::to_string(n) +
                       " absent -> timeout record naming it" + (ok ? "" : " got: " + c.errors()));
}

void testBatchBadLayout() {
  Comm c(2);
  Buffers b(2, 1 << 20);
  const std::vector<uint32_t> counts(2, GC_LL_MAX_BYTES / 4);  // 128 KB of packets: over the inbox
  launchMismatched(c, b, [&](int) { return counts; }, [](int) { return GC_OP_SUM; }, -1, -1);
  bool ok = true;
  for (int r = 0; r < 2; ++r) ok = ok && c.errHost[r].code == GC_ERR_BAD_ARGS && c.errHost[r].detail == 8;
  tally.record(ok, "batch over the LL inbox -> GC_ERR_BAD_ARGS detail 8 on every rank" + (ok ? std::string() : c.errors()));
}

void testBatches(bool quick) {
  for (int n : {2, 3, 4, 8}) {
    Comm c(n);
    Buffers b(n, 4u << 20);
    const long before = tally.pass + tally.fail;
    testBatch(c, b, GC_DT_FLOAT32, GC_OP_SUM, std::vector<uint32_t>(16, 1024), false, false);  // 16 x 4 KB
    testBatch(c, b, GC_DT_FLOAT32, GC_OP_SUM, std::vector<uint32_t>(16, 1024), false, true);
    testBatch(c, b, GC_DT_FLOAT32, GC_OP_AVG, std::vector<uint32_t>(64, 256), false, true);   // 64 x 1 KB
    testBatch(c, b, GC_DT_BFLOAT16, GC_OP_SUM, std::vector<uint32_t>(16, 128), true, false);  // 16 x 256 B in place
    testBatch(c, b, GC_DT_FLOAT32, GC_OP_SUM, {GC_LL_MAX_BYTES / 4}, false, false);           // one call, 64 KB
    for (int dt = 0; dt < GC_DT_COUNT; ++dt)
      for (int op = 0; op < 5; ++op) {
        if (quick && op != GC_OP_SUM && op != GC_OP_MAX) continue;
        const uint32_t esz = gc_dtype_size(dt);
        std::vector<uint32_t> mixed = {1, 3, 1021, 7, 4096 / esz, 2, 333};
        for (int k = 0; k < 20; ++k) mixed.push_back(1 + (uint32_t)(rng.next() % (1500 / esz)));
        testBatch(c, b, dt, op, mixed, false, (dt + op) % 2 == 1);
      }
    std::printf("batch n=%d: %ld checks (failures so far: %ld)\n", n, tally.pass + tally.fail - before, tally.fail);
    std::fflush(stdout);
  }
  for (const char* how : {"fewer calls", "a count", "the op", "a plain call"})
    for (int n : {2, 3}) testBatchMismatch(n, how);
  testBatchMismatch(8, "fewer calls");
  testBatchAbsentRank(4);
  testBatchBadLayout();
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false, listOnly = false, batchOnly = false;
  std::string matrixPath;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") quick = true;
    else if (a == "--list-cases") listOnly = true;
    else if (a == "--batch") batchOnly = true;
    else if (a == "--matrix" && i + 1 < argc) matrixPath = argv[++i];
    else {
      std::fprintf(stderr, "usage: gc_test [--quick | --batch] [--matrix correctness-matrix.txt] [--list-cases]\n");
      return 2;
    }
  }
  if (matrixPath.empty()) matrixPath = std::getenv("GC_MATRIX") ? std::getenv("GC_MATRIX") : matrixBesideBinary();
  std::vector<gcm::Group> groups;
  std::vector<gcm::PairGroup> pairGroups;
  try {
    groups = gcm::expand(gcm::load(matrixPath), quick);
    pairGroups = gcm::pairGroups(gcm::readText(matrixPath), quick);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gc_test: %s\n", e.what());
    return 2;
  }
  if (listOnly) {
    gcm::list(groups, stdout);
    return 0;
  }
  for (int dt = 0; dt < GC_DT_COUNT; ++dt)
    if (gcm::kTypeBytes[dt] != gc_dtype_size(dt) || GC_DT_COUNT != gcm::kTypes) {
      std::fprintf(stderr, "gc_test: correctness_matrix.h's types differ from the kernel table's\n");
      return 2;
    }
  std::printf("correctness matrix %s%s\n", matrixPath.c_str(), quick ? " (--quick)" : "");
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  int driver = 0, runtime = 0;
  CK(cudaDriverGetVersion(&driver));
  CK(cudaRuntimeGetVersion(&runtime));
  std::printf("gc_test on %s (sm_%d%d, %d SMs), driver %d, runtime %d\n", prop.name, prop.major, prop.minor,
              prop.multiProcessorCount, driver, runtime);
  auto start = std::chrono::steady_clock::now();
  if (batchOnly) {
    testBatches(false);
    for (const std::string& f : tally.firstFailures) std::printf("  failure: %s\n", f.c_str());
    std::printf("\ngc_test --batch: %ld passed, %ld failed, %.1f s\n", tally.pass, tally.fail,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    return tally.fail == 0 ? 0 : 1;
  }
  {
    std::string rows;
    for (int n : {2, 4, 8})
      for (bool pdl : {false, true}) rows += (rows.empty() ? "" : ",") + testGraphReplay(n, 1000, pdl);
    const char* outDir = std::getenv("OUT");
    const char* commit = std::getenv("GC_COMMIT");
    const char* date = std::getenv("GC_DATE");
    const std::string path = std::string(outDir ? outDir : ".") + "/gpu-graph-replay.json";
    if (FILE* f = std::fopen(path.c_str(), "w")) {
      std::fprintf(f, "{\"kind\":\"gpu-graph-replay\",\"date\":\"%s\",\"commit\":\"%s\",\"machine\":\"%s, %d SMs, driver API %d; ranks as streams of one process\",\"rows\":[%s]}\n",
                   date ? date : "", commit ? commit : "", prop.name, prop.multiProcessorCount, driver, rows.c_str());
      std::fclose(f);
    }
  }
  testBackToBack(8, 1000);
  testBackToBack(3, 1000);
  testMissingRank(4, gc_allreduce_ll_f32, 1, "allReduce/ll");
  testMissingRank(3, gc_allreduce_sentinel_f32, 1, "allReduce/sentinel");
  testMissingRank(5, gc_allgather_pipe, GC_PIPE_BLOCKS, "allGather/pipe");
  testAbort(3);
  testCapacity(3);
  testBatches(quick);
  std::printf("robustness checks: %ld passed, %ld failed\n", tally.pass, tally.fail);
  std::fflush(stdout);
  runMatrix(groups);
  runPairMatrix(pairGroups);
  for (const std::string& f : tally.firstFailures) std::printf("  failure: %s\n", f.c_str());
  std::printf("\ngc_test: %ld passed, %ld failed, %.1f s\n", tally.pass, tally.fail,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return tally.fail == 0 ? 0 : 1;
}
