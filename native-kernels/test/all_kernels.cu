// The test programs' kernels, compiled once and linked into gc_test and gc_bench: the shipped
// fatbin's kernels and the benchmark fatbin's.
#include "../src/gpucoll_kernels.cu"
#include "gpucoll_bench.cu"
