// The device kernel set of gpucoll-linalg's distributed factorizations (dev.gpucoll.linalg.DeviceKernels
// launches them by name from the shipped fatbin): what cuBLAS and cuSOLVER do not offer on a
// block-cyclic local array. Every matrix is one process's ScaLAPACK local array: fp64, column-major,
// leading dimension lda; a launch covers it with a grid-stride loop, so any grid is correct (the
// non-finite scan's of 32 threads or more).
#pragma once
#include <math.h>
#include <stdint.h>

// The index arithmetic and the non-finite scan's walk are also compiled by a plain C++ compiler, for
// the scan's host check (native-kernels/test/linalg_scan_check.cpp); the kernels are CUDA only.
#ifdef __CUDACC__
#define GC_LINALG_HD __host__ __device__ __forceinline__
#define GC_LINALG_UNROLL _Pragma("unroll")
#else
#define GC_LINALG_HD inline
#define GC_LINALG_UNROLL
#endif

namespace gc_linalg {

// ScaLAPACK's INDXL2G (0-based): the global index of local index l of process p, blocks of nb dealt
// round-robin over np processes from process src. Global indices are below the matrix's M or N, ints
// (the descriptor's), and so is every step here: 32-bit division, a fraction of 64-bit's cost.
GC_LINALG_HD int local_to_global(int l, int nb, int p, int src, int np) {
  return (l / nb) * np * nb + (p - src + np) % np * nb + l % nb;
}

// ScaLAPACK's NUMROC (0-based) of a global index g: how many of process p's local indices lie below
// g, which is the local index where its part of [g, ...) starts.
GC_LINALG_HD int local_count_below(int g, int nb, int p, int src, int np) {
  int blocks = g / nb;
  int count = blocks / np * nb;
  int extra = blocks % np;
  int dist = (p - src + np) % np;
  if (dist < extra) {
    count += nb;
  } else if (dist == extra) {
    count += g % nb;
  }
  return count;
}

// splitmix64: the element's value depends on its global position and the seed alone, so every grid
// shape and block size deals the same matrix.
GC_LINALG_HD double uniform(uint64_t seed, uint64_t i, uint64_t j) {
  uint64_t z = seed + 0x9E3779B97F4A7C15ull * (i * 0x100000001B3ull + j + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return (double)(z >> 11) * (1.0 / 9007199254740992.0) - 0.5;  // [-0.5, 0.5)
}

// The row and column maps of one process's part, as the descriptor gives them.
struct Dealt {
  int mb, prow, rsrc, nprow;
  int nb, pcol, csrc, npcol;
  GC_LINALG_HD int row(int li) const { return local_to_global(li, mb, prow, rsrc, nprow); }
  GC_LINALG_HD int col(int lj) const { return local_to_global(lj, nb, pcol, csrc, npcol); }
  // The first local row whose global row is i or more (the local row map increases).
  GC_LINALG_HD int first_row_from(int i) const { return local_count_below(i, mb, prow, rsrc, nprow); }
};

// The walk of gc_linalg_first_nonfinite_f64, written once for the kernel and its host check. Read
// per local column: rows [lo, rows), lo = 0, or with lower the first local row at or below the
// diagonal (global row >= global column); nothing else. Each column is cut into tiles of
// kTileRows rows on its 16-byte grid: pair p of a column holds local rows 2p - s and 2p - s + 1, s = 1
// where the column starts at an odd 8-byte word (lda and the part's address decide), so that a pair
// both of whose rows are read is one aligned 16-byte load and any other row to read is read alone.
// Warp w of W takes tiles w, w + W, ... (a column's tiles one after another, then the next
// column's), and its lane l pairs l, l + 32, ... of the tile, kPairsPerLane of them, all loaded
// before any is tested; a tile wholly above lo or below the part is skipped without a read, and a
// tile wholly inside [lo, rows) is read without a test per pair.
// Loads: pair(p, x, y) reads p[0] and p[1] from a 16-byte aligned p, one(p) reads *p.
struct NonFiniteScan {
  static constexpr int kLanes = 32;
  static constexpr int kPairsPerLane = 4;
  static constexpr int kTileRows = 2 * kLanes * kPairsPerLane;

  const double* a;
  long long lda;
  int rows, cols;
  Dealt d;
  long long m;  // the matrix's rows: a position is j * m + i
  int lower;

  // The first NaN and the first Inf this lane reads, as positions (~0: none), into nan and inf.
  template <class Loads>
  GC_LINALG_HD void walk(long long warp, long long warps, int lane, const Loads& loads, unsigned long long& nan,
                         unsigned long long& inf) const {
    const long long tiles_per_column = (rows / 2 + 1 + kTileRows / 2 - 1) / (kTileRows / 2);  // (rows + 2) / 2 pairs at most
    long long lj = warp / tiles_per_column;
    long long tile = warp % tiles_per_column;
    const long long column_step = warps / tiles_per_column;
    const long long tile_step = warps % tiles_per_column;
    long long at_column = -1;
    int j = 0, lo = 0, s = 0;
    const double* column = a;
    while (lj < cols) {
      if (lj != at_column) {
        at_column = lj;
        column = a + lj * lda;
        j = d.col((int)lj);
        lo = lower ? d.first_row_from(j) : 0;
        lo = lo < rows ? lo : rows;
        s = (int)(((uintptr_t)column >> 3) & 1);
      }
      const long long first = tile * kTileRows - s;
      if (first + kTileRows > lo && first < rows) {
        double x[kPairsPerLane], y[kPairsPerLane];
        if (first >= lo && first + kTileRows <= rows) {  // the tile whole: most tiles, no test a pair
          const double* at = column + first + 2 * lane;
          GC_LINALG_UNROLL
          for (int u = 0; u < kPairsPerLane; u++) loads.pair(at + 2 * kLanes * u, x[u], y[u]);
        } else {
          GC_LINALG_UNROLL
          for (int u = 0; u < kPairsPerLane; u++) {
            const long long r = first + 2 * (lane + kLanes * u);
            const bool read_x = r >= lo && r < rows;
            const bool read_y = r + 1 >= lo && r + 1 < rows;
            if (read_x && read_y) {
              loads.pair(column + r, x[u], y[u]);
            } else {
              x[u] = read_x ? loads.one(column + r) : 0.0;
              y[u] = read_y ? loads.one(column + r + 1) : 0.0;
            }
          }
        }
        bool finite = true;
        GC_LINALG_UNROLL
        for (int u = 0; u < kPairsPerLane; u++) finite = finite & isfinite(x[u]) & isfinite(y[u]);
        if (!finite) {
          GC_LINALG_UNROLL
          for (int u = 0; u < kPairsPerLane; u++) {
            const long long r = first + 2 * (lane + kLanes * u);
            note(x[u], j, r, nan, inf);
            note(y[u], j, r + 1, nan, inf);
          }
        }
      }
      tile += tile_step;
      lj += column_step;
      if (tile >= tiles_per_column) {
        tile -= tiles_per_column;
        lj++;
      }
    }
  }

  GC_LINALG_HD void note(double v, int j, long long li, unsigned long long& nan, unsigned long long& inf) const {
    if (isfinite(v)) return;
    const unsigned long long position = (unsigned long long)(j * m + d.row((int)li));
    if (isnan(v)) {
      if (position < nan) nan = position;
    } else if (position < inf) {
      inf = position;
    }
  }
};

}  // namespace gc_linalg

#ifdef __CUDACC__
// buf[i * ldbuf + j] = a[rows[i] + (c0 + j) * lda] for j < ncols: the listed rows, packed row after
// row (a row of several column ranges takes one launch per range, ldbuf the whole row), so that the
// rows bound for one peer of an allToAllv lie together.
extern "C" __global__ void gc_linalg_gather_rows_f64(const double* __restrict__ a, long long lda,
                                                     const int* __restrict__ rows, int nrows, int c0, int ncols,
                                                     double* __restrict__ buf, long long ldbuf) {
  for (int j = blockIdx.y * blockDim.y + threadIdx.y; j < ncols; j += gridDim.y * blockDim.y)
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < nrows; i += gridDim.x * blockDim.x)
      buf[i * ldbuf + j] = a[rows[i] + (long long)(c0 + j) * lda];
}

// The inverse: a[rows[i] + (c0 + j) * lda] = buf[i * ldbuf + j].
extern "C" __global__ void gc_linalg_scatter_rows_f64(double* __restrict__ a, long long lda,
                                                      const int* __restrict__ rows, int nrows, int c0, int ncols,
                                                      const double* __restrict__ buf, long long ldbuf) {
  for (int j = blockIdx.y * blockDim.y + threadIdx.y; j < ncols; j += gridDim.y * blockDim.y)
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < nrows; i += gridDim.x * blockDim.x)
      a[rows[i] + (long long)(c0 + j) * lda] = buf[i * ldbuf + j];
}

// The first NaN and the first Inf of a part in the whole matrix's column-major order (global
// j * m + i), each an atomicMin into first[0] and first[1] (the caller sets both to ~0 first); lower:
// only elements with global row >= global column are read (Cholesky reads the lower triangle). The
// walk is NonFiniteScan's; a launch needs 32 threads or more (the threads past the last whole warp
// idle), and a few blocks per multiprocessor reach the card's read speed.
namespace gc_linalg {
struct DeviceLoads {
  __device__ __forceinline__ void pair(const double* p, double& x, double& y) const {
    const double2 v = __ldg(reinterpret_cast<const double2*>(p));
    x = v.x;
    y = v.y;
  }
  __device__ __forceinline__ double one(const double* p) const { return __ldg(p); }
};
}  // namespace gc_linalg

extern "C" __global__ void gc_linalg_first_nonfinite_f64(const double* __restrict__ a, long long lda, int rows,
                                                         int cols, gc_linalg::Dealt d, long long m, int lower,
                                                         unsigned long long* first) {
  const long long block_threads = (long long)blockDim.x * blockDim.y;
  const long long thread = ((long long)blockIdx.y * gridDim.x + blockIdx.x) * block_threads +
                           (long long)threadIdx.y * blockDim.x + threadIdx.x;
  const long long warps = (long long)gridDim.x * gridDim.y * block_threads / gc_linalg::NonFiniteScan::kLanes;
  const long long warp = thread / gc_linalg::NonFiniteScan::kLanes;
  if (warp >= warps) return;
  unsigned long long nan = ~0ull, inf = ~0ull;
  const gc_linalg::NonFiniteScan scan{a, lda, rows, cols, d, m, lower};
  scan.walk(warp, warps, (int)(thread % gc_linalg::NonFiniteScan::kLanes), gc_linalg::DeviceLoads{}, nan, inf);
  if (nan != ~0ull) atomicMin(&first[0], nan);
  if (inf != ~0ull) atomicMin(&first[1], inf);
}

// Fills a part with the seeded matrix of its global positions: uniform in [-0.5, 0.5); spd != 0 makes it
// symmetric (element (i, j) from (max, min)) with n added to the diagonal, so positive definite.
extern "C" __global__ void gc_linalg_fill_f64(double* __restrict__ a, long long lda, int rows, int cols,
                                              gc_linalg::Dealt d, unsigned long long seed, int spd, long long n) {
  for (int lj = blockIdx.y * blockDim.y + threadIdx.y; lj < cols; lj += gridDim.y * blockDim.y) {
    long long j = d.col(lj);
    for (int li = blockIdx.x * blockDim.x + threadIdx.x; li < rows; li += gridDim.x * blockDim.x) {
      long long i = d.row(li);
      double v = spd ? gc_linalg::uniform(seed, i > j ? i : j, i > j ? j : i) + (i == j ? (double)n : 0.0)
                     : gc_linalg::uniform(seed, i, j);
      a[li + (long long)lj * lda] = v;
    }
  }
}

#endif  // __CUDACC__
