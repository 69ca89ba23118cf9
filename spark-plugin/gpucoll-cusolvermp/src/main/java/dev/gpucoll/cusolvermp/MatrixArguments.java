package dev.gpucoll.cusolvermp;

import dev.gpucoll.linalg.Descriptor;

/**
 * What cuSOLVERMp is handed for a {@link Descriptor}: cusolverMpCreateMatrixDesc's M_A, N_A, MB_A,
 * NB_A, RSRC_A, CSRC_A (0-based process coordinates there too, so nothing shifts) and LLD_A, and the
 * 1-based IA, JA of the routines (the whole matrix: its element (1, 1), as in ScaLAPACK).
 */
record MatrixArguments(long m, long n, long mb, long nb, int rsrc, int csrc, long lld, long ia, long ja) {
  /** cuSOLVERMp's (and ScaLAPACK's) index of the first row and column of the whole matrix. */
  static final long FIRST = 1;

  static MatrixArguments of(Descriptor d) {
    return new MatrixArguments(d.m(), d.n(), d.mb(), d.nb(), d.rsrc(), d.csrc(), d.lld(), FIRST, FIRST);
  }
}
