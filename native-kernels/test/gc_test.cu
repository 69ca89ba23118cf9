// GPU test program for the gpucoll kernels (run on a GPU machine; not part of CI).
// Ranks are streams of this one process on one GPU. For every collective x variant x type x op x size:
// fresh random inputs, poisoned outputs, every rank's output compared bit-for-bit with the other ranks
// and with a host emulation of the kernel's fixed reduction order, and (floats) with a float64
// reference within a rounding bound. Then 1000 back-to-back mixed calls (epoch parity reuse), a planted
// missing rank (must end in the timeout record), the host abort word, and a capacity error.
//   usage: gc_test [--quick]
#include "../src/gpucoll_kernels.cu"
#include "harness.cuh"

#include <chrono>
#include <cmath>
#include <functional>
#include <thread>

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

const char* kDtName[] = {"f32", "f64", "f16", "bf16", "i32", "i64", "i8", "u8"};
const char* kOpName[] = {"sum", "prod", "min", "max", "avg"};
enum Variant { kLL, kSentinel, kLL128, kPipe, kBarrier2, kVariants };
const char* kVarName[] = {"ll", "sentinel", "ll128", "pipe", "barrier2"};

Kernel kAllReduce[kVariants][6] = {
    {gc_allreduce_ll_f32, gc_allreduce_ll_f64, gc_allreduce_ll_f16, gc_allreduce_ll_bf16, gc_allreduce_ll_i32, gc_allreduce_ll_i64},
    {gc_allreduce_sentinel_f32, gc_allreduce_sentinel_f64, gc_allreduce_sentinel_f16, gc_allreduce_sentinel_bf16, gc_allreduce_sentinel_i32, gc_allreduce_sentinel_i64},
    {gc_allreduce_ll128_f32, gc_allreduce_ll128_f64, gc_allreduce_ll128_f16, gc_allreduce_ll128_bf16, gc_allreduce_ll128_i32, gc_allreduce_ll128_i64},
    {gc_allreduce_pipe_f32, gc_allreduce_pipe_f64, gc_allreduce_pipe_f16, gc_allreduce_pipe_bf16, gc_allreduce_pipe_i32, gc_allreduce_pipe_i64},
    {gc_allreduce_barrier2_f32, gc_allreduce_barrier2_f64, gc_allreduce_barrier2_f16, gc_allreduce_barrier2_bf16, gc_allreduce_barrier2_i32, gc_allreduce_barrier2_i64},
};
Kernel kReduceScatter[2][6] = {
    {gc_reducescatter_ll_f32, gc_reducescatter_ll_f64, gc_reducescatter_ll_f16, gc_reducescatter_ll_bf16, gc_reducescatter_ll_i32, gc_reducescatter_ll_i64},
    {gc_reducescatter_pipe_f32, gc_reducescatter_pipe_f64, gc_reducescatter_pipe_f16, gc_reducescatter_pipe_bf16, gc_reducescatter_pipe_i32, gc_reducescatter_pipe_i64},
};

// ---- host model of the element types (same order, same precision as the kernels)
double toDouble(int dt, const uint8_t* p) {
  switch (dt) {
    case GC_DT_FLOAT32: { float f; std::memcpy(&f, p, 4); return f; }
    case GC_DT_FLOAT64: { double d; std::memcpy(&d, p, 8); return d; }
    case GC_DT_FLOAT16: { __half h; std::memcpy(&h, p, 2); return __half2float(h); }
    case GC_DT_BFLOAT16: { __nv_bfloat16 h; std::memcpy(&h, p, 2); return __bfloat162float(h); }
    case GC_DT_INT32: { int32_t i; std::memcpy(&i, p, 4); return i; }
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
  if (dt == GC_DT_INT32 || dt == GC_DT_INT64) return true;  // ints are checked exactly by emulation
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
  std::snprintf(buf, sizeof buf, "%s/%s n=%d %s %s count=%llu%s", coll, var, n, kDtName[dt], op >= 0 ? kOpName[op] : "-",
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
      if (exactOrder || dt == GC_DT_INT32 || dt == GC_DT_INT64) ok = ok && std::memcmp(got, want.data(), esz) == 0;
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

void testMove(Comm& c, Buffers& b, int m, int v, int dt, uint64_t count, int root = 0) {
  const int n = c.n;
  const uint32_t esz = gc_dtype_size(dt);
  std::string what = describe(kMoveName[m], v == 0 ? "ll" : "pipe", n, dt, -1, count);
  if (m == kBroadcast) what += " root=" + std::to_string(root);
  // allToAllv: random per-pair counts in [0, 2*count], packed with gaps.
  std::vector<std::vector<int64_t>> sc(n, std::vector<int64_t>(n)), sd = sc, rc = sc, rd = sc;
  size_t inBytes = 0, outBytes = 0;
  if (m == kAllToAllv) {
    for (int s = 0; s < n; ++s)
      for (int d = 0; d < n; ++d) sc[s][d] = rc[d][s] = (int64_t)(rng.next() % (2 * count + 1));
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
  b.poison(outBytes);
  uint64_t perPeer = m == kAllToAllv ? 0 : count * esz;
  if (m == kAllToAllv)
    for (int s = 0; s < n; ++s) for (int d = 0; d < n; ++d) perPeer = std::max<uint64_t>(perPeer, sc[s][d] * esz);
  c.launch(kMove[m][v], v == 1 ? GC_PIPE_BLOCKS : GC_GRID_FOR_BYTES(perPeer), [&](GcArgs& a, int r) {
    a.send = (uint64_t)b.send[r];
    a.recv = (uint64_t)b.recv[r];
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
  b.fetch(outBytes);
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

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::string(argv[1]) == "--quick";
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  int driver = 0, runtime = 0;
  CK(cudaDriverGetVersion(&driver));
  CK(cudaRuntimeGetVersion(&runtime));
  std::printf("gc_test on %s (sm_%d%d, %d SMs), driver %d, runtime %d\n", prop.name, prop.major, prop.minor,
              prop.multiProcessorCount, driver, runtime);
  auto start = std::chrono::steady_clock::now();
  testBackToBack(8, 1000);
  testBackToBack(3, 1000);
  testMissingRank(4, gc_allreduce_ll_f32, 1, "allReduce/ll");
  testMissingRank(3, gc_allreduce_sentinel_f32, 1, "allReduce/sentinel");
  testMissingRank(5, gc_allgather_pipe, GC_PIPE_BLOCKS, "allGather/pipe");
  testAbort(3);
  testCapacity(3);
  std::printf("robustness checks: %ld passed, %ld failed\n", tally.pass, tally.fail);
  std::fflush(stdout);
  const int rankCounts[] = {2, 3, 4, 5, 8};
  for (int n : rankCounts) {
    Comm c(n);
    Buffers b(n, 72u << 20);
    const auto t0 = std::chrono::steady_clock::now();
    const long before = tally.pass + tally.fail;
    for (int dt = 0; dt < 6; ++dt) {
      const uint32_t esz = gc_dtype_size(dt);
      std::vector<uint64_t> counts = {1, 3, 1021, 4096 / esz, 65536 / esz, (1u << 20) / esz};
      if (quick) counts = {1, 1021, 65536 / esz};
      for (uint64_t count : counts) {
        const uint64_t bytes = count * esz;
        for (int v = 0; v < kVariants; ++v) {
          if (v == kLL && bytes > GC_LL_MAX_BYTES) continue;
          if (v == kSentinel && bytes > GC_SENT_MAX_BYTES) continue;
          if (v == kLL128 && count > GC_LL128_MAX_COUNT(dt)) continue;
          for (int op = 0; op < 5; ++op) {
            if (v == kLL128 && op != GC_OP_SUM && op != GC_OP_AVG) continue;
            if (bytes >= (1u << 20) && op != GC_OP_SUM && op != GC_OP_MAX) continue;  // 1 MB: two ops
            testAllReduce(c, b, v, dt, op, count, /*inPlace=*/count == 1021 && op == GC_OP_SUM);
          }
        }
        for (int v = 0; v < 2; ++v) {
          if (v == 0 && bytes > GC_LL_MAX_BYTES) continue;
          for (int op = 0; op < 5; ++op) {
            if (bytes >= (1u << 20) && op != GC_OP_SUM) continue;
            testReduceScatter(c, b, v, dt, op, count);
          }
        }
      }
    }
    for (int m = 0; m < 4; ++m)
      for (int v = 0; v < 2; ++v)
        for (int dt : {GC_DT_FLOAT32, GC_DT_INT8}) {
          const uint32_t esz = gc_dtype_size(dt);
          std::vector<uint64_t> counts = {1, 3, 1021, 4096 / esz, 65536 / esz, (1u << 20) / esz};
          if (v == 1 && dt == GC_DT_FLOAT32 && (n == 2 || n == 8)) counts.push_back((64u << 20) / esz / (m == kBroadcast ? 1 : n));
          if (quick) counts = {1, 1021};
          for (uint64_t count : counts) {
            const uint64_t peerBytes = count * esz * (m == kAllToAllv ? 2 : 1);
            if (v == 0 && peerBytes > GC_LL_MAX_BYTES) continue;
            testMove(c, b, m, v, dt, count, m == kBroadcast ? (int)(count % n) : 0);
          }
        }
    testSentinelPayload(c, b);
    std::printf("n=%d: %ld checks in %.1f s (failures so far: %ld)\n", n, tally.pass + tally.fail - before,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), tally.fail);
    std::fflush(stdout);
  }
  for (const std::string& f : tally.firstFailures) std::printf("  failure: %s\n", f.c_str());
  std::printf("\ngc_test: %ld passed, %ld failed, %.1f s\n", tally.pass, tally.fail,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return tally.fail == 0 ? 0 : 1;
}
