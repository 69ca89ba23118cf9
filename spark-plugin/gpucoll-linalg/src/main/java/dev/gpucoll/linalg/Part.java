package dev.gpucoll.linalg;

/**
 * One process's local array as the schedules see it: the descriptor, the process, and the address
 * of local element (0, 0) in a kernel set's memory (column-major, LLD).
 */
record Part(Descriptor desc, int prow, int pcol, long address) {
  int rows() {
    return desc.numrocRows(prow);
  }

  int cols() {
    return desc.numrocCols(pcol);
  }

  /** The address of local element (li, lj). */
  long at(long li, long lj) {
    return address + 8 * (li + lj * desc.lld());
  }

  /** Doubles of the local array (LLD × local columns). */
  int doubles() {
    return desc.lld() * cols();
  }
}
