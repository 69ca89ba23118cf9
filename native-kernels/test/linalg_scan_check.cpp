// Runs the walk of gc_linalg_first_nonfinite_f64 (gc_linalg::NonFiniteScan in gpucoll/linalg.cuh) on
// the CPU, every lane of every warp of a launch in turn, for the JVM test that holds it to
// gpucoll-linalg's host scan (NonFiniteScanNativeTest). Besides each case's answer it checks what the
// walk reads: every element it must read exactly once, nothing else (not above the diagonal with
// lower, not a row past the part's rows in a column), and every 16-byte load aligned.
//   linalg_scan_check < cases
// A case is one line: m n mb nb rsrc csrc nprow npcol prow pcol lld offset lower warps count, then
// count triples "i j kind" (kind n: NaN, i: Inf at global (i, j); every other element is 1). offset
// doubles before the part shift its columns off the 16-byte grid. Prints "nan inf" per case (the
// positions j * m + i, 18446744073709551615 for none); exit 1 naming the case and the first wrong
// read, 2 on a line that does not parse.
#include "gpucoll/linalg.cuh"

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct RecordingLoads {
  const double* a;
  long long size;  // lld * cols
  std::vector<int>* reads;
  std::string* fault;

  bool note(const double* p) const {
    long long at = p - a;
    if (at < 0 || at >= size) {
      if (fault->empty()) *fault = "read at offset " + std::to_string(at) + ", outside the part's columns";
      return false;
    }
    (*reads)[at]++;
    return true;
  }
  void pair(const double* p, double& x, double& y) const {
    if (((uintptr_t)p & 15) != 0 && fault->empty()) {
      *fault = "16-byte load at offset " + std::to_string(p - a) + " is not 16-byte aligned";
    }
    x = note(p) ? p[0] : 0.0;
    y = note(p + 1) ? p[1] : 0.0;
  }
  double one(const double* p) const { return note(p) ? *p : 0.0; }
};

int fail(long line, const std::string& why) {
  std::fprintf(stderr, "linalg_scan_check: case line %ld: %s\n", line, why.c_str());
  return 1;
}

}  // namespace

int main() {
  std::string text;
  long line = 0;
  while (std::getline(std::cin, text)) {
    line++;
    std::istringstream in(text);
    long long m, n, lld, offset, warps;
    int mb, nb, rsrc, csrc, nprow, npcol, prow, pcol, lower, count;
    if (!(in >> m >> n >> mb >> nb >> rsrc >> csrc >> nprow >> npcol >> prow >> pcol >> lld >> offset >> lower >>
          warps >> count) ||
        mb < 1 || nb < 1 || nprow < 1 || npcol < 1 || warps < 1 || offset < 0 || count < 0) {
      std::fprintf(stderr, "linalg_scan_check: line %ld does not parse: %s\n", line, text.c_str());
      return 2;
    }
    gc_linalg::Dealt d{mb, prow, rsrc, nprow, nb, pcol, csrc, npcol};
    const int rows = (int)gc_linalg::local_count_below(m, mb, prow, rsrc, nprow);
    const int cols = (int)gc_linalg::local_count_below(n, nb, pcol, csrc, npcol);
    if (lld < rows || lld < 1) return fail(line, "lld " + std::to_string(lld) + " below the part's rows");
    // The part after offset doubles, every slot past its rows a NaN that no read may touch.
    const long long size = lld * cols;
    std::vector<double> storage((size_t)(offset + size + 2) + 1, std::numeric_limits<double>::quiet_NaN());
    double* base = storage.data();
    if (((uintptr_t)base & 15) != 0) base++;  // offset alone decides the alignment
    double* a = base + offset;
    for (long long lj = 0; lj < cols; lj++) {
      for (long long li = 0; li < rows; li++) a[li + lj * lld] = 1.0;
    }
    for (int k = 0; k < count; k++) {
      long long i, j;
      char kind;
      if (!(in >> i >> j >> kind) || (kind != 'n' && kind != 'i') || i < 0 || i >= m || j < 0 || j >= n) {
        std::fprintf(stderr, "linalg_scan_check: line %ld: placement %d does not parse\n", line, k);
        return 2;
      }
      long long li = 0, lj = 0;
      while (li < rows && d.row(li) != i) li++;
      while (lj < cols && d.col(lj) != j) lj++;
      if (li < rows && lj < cols) {  // else another process holds it
        a[li + lj * lld] = kind == 'n' ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
      }
    }
    std::vector<int> reads((size_t)size, 0);
    std::string fault;
    const RecordingLoads loads{a, size, &reads, &fault};
    const gc_linalg::NonFiniteScan scan{a, lld, rows, cols, d, m, lower};
    unsigned long long nan = ~0ull, inf = ~0ull;
    for (long long w = 0; w < warps; w++) {
      for (int lane = 0; lane < gc_linalg::NonFiniteScan::kLanes; lane++) {
        unsigned long long lane_nan = ~0ull, lane_inf = ~0ull;
        scan.walk(w, warps, lane, loads, lane_nan, lane_inf);
        nan = lane_nan < nan ? lane_nan : nan;
        inf = lane_inf < inf ? lane_inf : inf;
      }
    }
    if (!fault.empty()) return fail(line, fault);
    for (long long lj = 0; lj < cols; lj++) {
      for (long long li = 0; li < lld; li++) {
        const bool must = li < rows && (!lower || d.row(li) >= d.col(lj));
        const int got = reads[(size_t)(li + lj * lld)];
        if (got != (must ? 1 : 0)) {
          return fail(line, "local (" + std::to_string(li) + ", " + std::to_string(lj) + ") read " + std::to_string(got) +
                                " times, " + (must ? "once" : "never") + " wanted");
        }
      }
    }
    std::printf("%llu %llu\n", nan, inf);
  }
  return 0;
}
