// The shipped fatbin: every kernel the kernel table marks "shipped" (kernel_table.h), each running its
// collective's recipe from gpucoll/collectives.cuh.
#include "gpucoll/collectives.cuh"

GC_SHIPPED_REDUCTION_KERNELS(GC_DEFINE_TYPED_KERNEL)
GC_SHIPPED_UNTYPED_KERNELS(GC_DEFINE_UNTYPED_KERNEL)
GC_SHIPPED_BATCH_KERNELS(GC_DEFINE_BATCH_KERNEL)
GC_SHIPPED_PAIR_KERNELS(GC_DEFINE_PAIR_KERNEL)
