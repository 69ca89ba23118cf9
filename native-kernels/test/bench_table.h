/* GENERATED from native-kernels/kernel-table.txt by native-kernels/scripts/KernelTableGen.java; do not edit (the build fails when this file differs from what the table gives).
 *
 * The kernel table's benchmark section (after its "bench" line) in C: what only the test programs
 * build (gc_test, gc_bench, gpucoll_bench.fatbin), never the shipped fatbin, the Java class or a
 * product workspace. Its regions follow the product workspace: a test program allocates
 * GC_BENCH_WORKSPACE_BYTES per rank, the product GC_WORKSPACE_BYTES. */
#ifndef GPUCOLL_BENCH_TABLE_H_
#define GPUCOLL_BENCH_TABLE_H_

#include "gpucoll/kernel_abi.h"

/* ---- benchmark constants ---- */
#define GC_RAW_PEER_BYTES 262144 /* per-source staging of the two-barrier kernels (comparison and floor) */

/* ---- benchmark protocols (ids apart from the product's: GcErrorRecord.kernel names one kernel) ---- */
#define GC_PROTO_TWO_BARRIER 4 /* raw stores between two flag barriers (comparison only) */

/* ---- benchmark kernels: gpucoll_bench.fatbin (test programs only); lists as kernel_table.h's ---- */
#define GC_BENCH_REDUCTION_KERNELS(X) \
  X(gc_allreduce_barrier2_f32, GC_COLL_ALLREDUCE, GC_PROTO_TWO_BARRIER, float) \
  X(gc_allreduce_barrier2_f64, GC_COLL_ALLREDUCE, GC_PROTO_TWO_BARRIER, double) \
  X(gc_allreduce_barrier2_f16, GC_COLL_ALLREDUCE, GC_PROTO_TWO_BARRIER, __half) \
  X(gc_allreduce_barrier2_bf16, GC_COLL_ALLREDUCE, GC_PROTO_TWO_BARRIER, __nv_bfloat16) \
  X(gc_allreduce_barrier2_i32, GC_COLL_ALLREDUCE, GC_PROTO_TWO_BARRIER, int32_t) \
  X(gc_allreduce_barrier2_i64, GC_COLL_ALLREDUCE, GC_PROTO_TWO_BARRIER, int64_t) \
  X(gc_allreduce_barrier2_i8, GC_COLL_ALLREDUCE, GC_PROTO_TWO_BARRIER, int8_t) \
  X(gc_allreduce_barrier2_u8, GC_COLL_ALLREDUCE, GC_PROTO_TWO_BARRIER, uint8_t)
#define GC_BENCH_BATCH_KERNELS(X)
#define GC_BENCH_PAIR_KERNELS(X)
#define GC_BENCH_UNTYPED_KERNELS(X)

/* ---- benchmark workspace regions, after the product's GC_WORKSPACE_BYTES ---- */
#define GC_WS_RAW_OFFSET 77627392
#define GC_WS_RAW_BYTES 4194304 /* two-barrier staging [src][RAW_PEER_BYTES] */
#define GC_BENCH_WORKSPACE_BYTES 81821696

/* Elements per peer that the kernel of (collective, protocol) takes for dtype in the benchmark build:
 * a benchmark kernel's capacity, else the product's gc_kernel_max_count. */
static inline GC_HOST_DEVICE uint64_t gc_bench_kernel_max_count(uint32_t coll, uint32_t proto, uint32_t dtype) {
  if (gc_dtype_size(dtype) == 0) return 0u;
  switch (GC_KERNEL_ID(coll, proto)) {
    case GC_KERNEL_ID(GC_COLL_ALLREDUCE, GC_PROTO_TWO_BARRIER): return UINT64_MAX;
    default: return gc_kernel_max_count(coll, proto, dtype);
  }
}

#endif /* GPUCOLL_BENCH_TABLE_H_ */
