// The shipped fatbin: every kernel the kernel table marks "shipped" (kernel_table.h), each running its
// collective's recipe from gpucoll/collectives.cuh.
#include "gpucoll/collectives.cuh"

GC_SHIPPED_REDUCTION_KERNELS(GC_DEFINE_TYPED_KERNEL)
GC_SHIPPED_UNTYPED_KERNELS(GC_DEFINE_UNTYPED_KERNEL)
GC_SHIPPED_BATCH_KERNELS(GC_DEFINE_BATCH_KERNEL)
GC_SHIPPED_PAIR_KERNELS(GC_DEFINE_PAIR_KERNEL)

// The linear-algebra helpers of gpucoll-linalg's device kernel set (row interchanges, the non-finite
// scan, the seeded fill): kernels outside the collectives' table, launched by name.
#include "gpucoll/linalg.cuh"
