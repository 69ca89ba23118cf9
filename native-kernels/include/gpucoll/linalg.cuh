// The device kernel set of gpucoll-linalg's distributed factorizations (dev.gpucoll.linalg.DeviceKernels
// launches them by name from the shipped fatbin): what cuBLAS and cuSOLVER do not offer on a
// block-cyclic local array. Every matrix is one process's ScaLAPACK local array: fp64, column-major,
// leading dimension lda; a launch covers it with a 2D grid-stride loop, so any grid is correct.
#pragma once
#include <stdint.h>

namespace gc_linalg {

// ScaLAPACK's INDXL2G (0-based): the global index of local index l of process p, blocks of nb dealt
// round-robin over np processes from process src.
__device__ __forceinline__ long long local_to_global(long long l, int nb, int p, int src, int np) {
  return (l / nb) * (long long)np * nb + (long long)((p - src + np) % np) * nb + l % nb;
}

// splitmix64: the element's value depends on its global position and the seed alone, so every grid
// shape and block size deals the same matrix.
__device__ __forceinline__ double uniform(uint64_t seed, uint64_t i, uint64_t j) {
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
  __device__ long long row(long long li) const { return local_to_global(li, mb, prow, rsrc, nprow); }
  __device__ long long col(long long lj) const { return local_to_global(lj, nb, pcol, csrc, npcol); }
};

}  // namespace gc_linalg

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
// only elements with global row >= global column are read (Cholesky reads the lower triangle).
extern "C" __global__ void gc_linalg_first_nonfinite_f64(const double* __restrict__ a, long long lda, int rows,
                                                         int cols, gc_linalg::Dealt d, long long m, int lower,
                                                         unsigned long long* first) {
  for (int lj = blockIdx.y * blockDim.y + threadIdx.y; lj < cols; lj += gridDim.y * blockDim.y) {
    long long j = d.col(lj);
    for (int li = blockIdx.x * blockDim.x + threadIdx.x; li < rows; li += gridDim.x * blockDim.x) {
      double v = a[li + (long long)lj * lda];
      if (isfinite(v)) continue;
      long long i = d.row(li);
      if (lower && i < j) continue;
      atomicMin(&first[isnan(v) ? 0 : 1], (unsigned long long)(j * m + i));
    }
  }
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
