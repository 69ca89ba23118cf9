/* GENERATED from native-kernels/kernel-table.txt by native-kernels/scripts/KernelTableGen.java; do not edit (the build fails when this file differs from what the table gives).
 *
 * The kernel table in C: limits and capacities, type/op/collective/protocol codes, the kernels that
 * exist (X-macro lists the kernel sources instantiate from), GcArgs and GcErrorRecord with every
 * offset pinned, the workspace regions. The launch contract around it: kernel_abi.h. */
#ifndef GPUCOLL_KERNEL_TABLE_H_
#define GPUCOLL_KERNEL_TABLE_H_

#include <stddef.h>
#include <stdint.h>

/* ---- limits, geometry, capacities ---- */
#define GC_ABI_VERSION 2 /* raised whenever a kernel, GcArgs or the workspace changes incompatibly */
#define GC_MAX_RANKS 16
#define GC_BLOCK_THREADS 512 /* blockDim.x of every kernel */
#define GC_MAX_BLOCKS 32 /* largest gridDim.x */
#define GC_PIPE_BLOCKS 16 /* gridDim.x of every _pipe kernel (per-block channels) */
#define GC_BYTES_PER_BLOCK 4096 /* grid rule "bytes": ceil(bytes / BYTES_PER_BLOCK) ... */
#define GC_MAX_GRID_RULE 16 /* ... clamped to [1, MAX_GRID_RULE]: one LL slot per thread up to 64 KB */
#define GC_DEFAULT_TIMEOUT_NS 10000000000ull /* GcArgs.timeout_ns = 0 means this (10 s) */
#define GC_LL_MAX_BYTES 65536 /* per-peer payload of an _ll kernel */
#define GC_LL_SLOTS 8192 /* 8 data bytes per 16-byte slot */
#define GC_SENT_MAX_BYTES 1048576 /* message bytes of gc_allreduce_sentinel_<t> */
#define GC_SENT_PEER_BYTES 524288 /* per (half, phase, src): the n=2 chunk */
#define GC_SENTINEL_WORD 0xFFF7DEADu /* a NaN payload as fp32; prefill pattern of the sentinel region */
#define GC_LL128_LINE_BYTES 128
#define GC_LL128_DATA_BYTES 120 /* 8-byte header {u32 counter, u32 pad} */
#define GC_LL128_MAX_LINES 16384
#define GC_LL128_LINES_PER_HALF 24576
#define GC_PIPE_CHUNK_BYTES 16384
#define GC_MAX_BATCH_CALLS 64 /* calls one packed (batch) kernel takes: GcBatch stays 1552 B, so with GcArgs the parameter is under the 4 KB every driver accepts */
#define GC_A2AV_SEND_COUNTS 0
#define GC_A2AV_SEND_DISPLS 1
#define GC_A2AV_RECV_COUNTS 2
#define GC_A2AV_RECV_DISPLS 3
#define GC_OK 0
#define GC_ERR_TIMEOUT 1 /* waited timeout_ns; peer = a rank that never started this call, else the peer polled */
#define GC_ERR_ABORTED 2 /* the host set *abort_word */
#define GC_ERR_BAD_ARGS 3 /* rank/nranks/dtype/op/epoch/grid invalid; detail says which */
#define GC_ERR_CAPACITY 4 /* message larger than this kernel's capacity; detail = bytes */
#define GC_ERR_BATCH_MISMATCH 5 /* a batch kernel: rank `peer` recorded a different batch (detail says how) */
#define GC_ERR_NAN 6 /* MAXLOC/MINLOC: rank `peer`'s pair `detail` has a NaN value (the lowest such rank, then pair); nothing written, the group stays usable */
#define GC_NO_PEER 0xFFFFFFFFu
#define GC_WORKSPACE_ALIGN 4096
/* Grid rule "bytes": ceil(bytes / GC_BYTES_PER_BLOCK) clamped to [1, GC_MAX_GRID_RULE]. */
#define GC_GRID_FOR_BYTES(bytes) \
  ((bytes) <= GC_BYTES_PER_BLOCK ? 1u \
   : ((bytes) >= (uint64_t)GC_BYTES_PER_BLOCK * GC_MAX_GRID_RULE ? (unsigned)GC_MAX_GRID_RULE \
      : (unsigned)(((bytes) + GC_BYTES_PER_BLOCK - 1) / GC_BYTES_PER_BLOCK)))

/* ---- element types: codes equal dev.gpucoll.api.DataType ordinals ---- */
#define GC_DT_FLOAT32 0
#define GC_DT_FLOAT64 1
#define GC_DT_FLOAT16 2
#define GC_DT_BFLOAT16 3
#define GC_DT_INT32 4
#define GC_DT_INT64 5
#define GC_DT_INT8 6
#define GC_DT_UINT8 7
#define GC_DT_COUNT 8
/* X(CODE, suffix, cuda_type) for every element type */
#define GC_FOR_EACH_TYPE(X) \
  X(GC_DT_FLOAT32, f32, float) \
  X(GC_DT_FLOAT64, f64, double) \
  X(GC_DT_FLOAT16, f16, __half) \
  X(GC_DT_BFLOAT16, bf16, __nv_bfloat16) \
  X(GC_DT_INT32, i32, int32_t) \
  X(GC_DT_INT64, i64, int64_t) \
  X(GC_DT_INT8, i8, int8_t) \
  X(GC_DT_UINT8, u8, uint8_t)

/* ---- reduction ops: codes equal dev.gpucoll.api.ReduceOp ordinals ---- */
#define GC_OP_SUM 0
#define GC_OP_PROD 1
#define GC_OP_MIN 2
#define GC_OP_MAX 3
#define GC_OP_AVG 4
#define GC_OP_COUNT 5

/* ---- value-index pair types (MAXLOC/MINLOC): codes equal dev.gpucoll.api.PairType ordinals ---- */
#define GC_PT_FLOAT32_INT32 0
#define GC_PT_FLOAT32_INT64 1
#define GC_PT_FLOAT64_INT32 2
#define GC_PT_FLOAT64_INT64 3
#define GC_PT_INT32_INT32 4
#define GC_PT_INT32_INT64 5
#define GC_PT_INT64_INT32 6
#define GC_PT_INT64_INT64 7
#define GC_PT_COUNT 8
/* ---- pair reductions: codes equal dev.gpucoll.api.LocOp ordinals ---- */
#define GC_LOC_MAXLOC 0
#define GC_LOC_MINLOC 1
#define GC_LOC_COUNT 2

/* ---- collectives and protocols; GcErrorRecord.kernel = GC_KERNEL_ID(collective, protocol) ---- */
#define GC_COLL_ALLREDUCE 1
#define GC_COLL_REDUCESCATTER 2
#define GC_COLL_ALLGATHER 3
#define GC_COLL_ALLTOALL 4
#define GC_COLL_ALLTOALLV 5
#define GC_COLL_BROADCAST 6
#define GC_COLL_BARRIER 7
#define GC_PROTO_LL 0 /* 16-byte slots {8 B data, 8 B epoch flag}, one store each */
#define GC_PROTO_SENTINEL 1 /* raw 16-byte units over a sentinel-prefilled region, escape words */
#define GC_PROTO_LL128 2 /* 128-byte lines, hardware-atomic adds, an arrival counter per line */
#define GC_PROTO_PIPE 3 /* 16 KB chunks per block with credits: any size */
#define GC_PROTO_FLAG_BARRIER 5 /* per-block barrier words (the barrier collective) */
#define GC_PROTO_LL_BATCH 6 /* LL packets of a batch of calls, packed into one message at slot-aligned offsets */
#define GC_PROTO_LL_PAIR 7 /* LL packets of value-index pairs (MAXLOC/MINLOC), folded in rank order by one block */
#define GC_KERNEL_ID(coll, proto) ((coll) * 16 + (proto))

/* ---- the kernels; X(name, GC_COLL_*, GC_PROTO_*, cuda_type) per reduction kernel (one per type),
 *      X(name, GC_COLL_*, GC_PROTO_*) per kernel for every type or none; the batch kernels (capacity
 *      "packed", parameters GcArgs and GcBatch) X(name, GC_COLL_*, GC_PROTO_*, cuda_type); the pair kernels
 *      X(name, GC_COLL_*, GC_PROTO_*, GC_PT_*, value cuda_type, index cuda_type) ---- */
/* gpucoll_kernels.fatbin (in the jar) */
#define GC_SHIPPED_REDUCTION_KERNELS(X) \
  X(gc_allreduce_ll_f32, GC_COLL_ALLREDUCE, GC_PROTO_LL, float) \
  X(gc_allreduce_ll_f64, GC_COLL_ALLREDUCE, GC_PROTO_LL, double) \
  X(gc_allreduce_ll_f16, GC_COLL_ALLREDUCE, GC_PROTO_LL, __half) \
  X(gc_allreduce_ll_bf16, GC_COLL_ALLREDUCE, GC_PROTO_LL, __nv_bfloat16) \
  X(gc_allreduce_ll_i32, GC_COLL_ALLREDUCE, GC_PROTO_LL, int32_t) \
  X(gc_allreduce_ll_i64, GC_COLL_ALLREDUCE, GC_PROTO_LL, int64_t) \
  X(gc_allreduce_ll_i8, GC_COLL_ALLREDUCE, GC_PROTO_LL, int8_t) \
  X(gc_allreduce_ll_u8, GC_COLL_ALLREDUCE, GC_PROTO_LL, uint8_t) \
  X(gc_allreduce_sentinel_f32, GC_COLL_ALLREDUCE, GC_PROTO_SENTINEL, float) \
  X(gc_allreduce_sentinel_f64, GC_COLL_ALLREDUCE, GC_PROTO_SENTINEL, double) \
  X(gc_allreduce_sentinel_f16, GC_COLL_ALLREDUCE, GC_PROTO_SENTINEL, __half) \
  X(gc_allreduce_sentinel_bf16, GC_COLL_ALLREDUCE, GC_PROTO_SENTINEL, __nv_bfloat16) \
  X(gc_allreduce_sentinel_i32, GC_COLL_ALLREDUCE, GC_PROTO_SENTINEL, int32_t) \
  X(gc_allreduce_sentinel_i64, GC_COLL_ALLREDUCE, GC_PROTO_SENTINEL, int64_t) \
  X(gc_allreduce_sentinel_i8, GC_COLL_ALLREDUCE, GC_PROTO_SENTINEL, int8_t) \
  X(gc_allreduce_sentinel_u8, GC_COLL_ALLREDUCE, GC_PROTO_SENTINEL, uint8_t) \
  X(gc_allreduce_ll128_f32, GC_COLL_ALLREDUCE, GC_PROTO_LL128, float) \
  X(gc_allreduce_ll128_f64, GC_COLL_ALLREDUCE, GC_PROTO_LL128, double) \
  X(gc_allreduce_ll128_f16, GC_COLL_ALLREDUCE, GC_PROTO_LL128, __half) \
  X(gc_allreduce_ll128_bf16, GC_COLL_ALLREDUCE, GC_PROTO_LL128, __nv_bfloat16) \
  X(gc_allreduce_ll128_i32, GC_COLL_ALLREDUCE, GC_PROTO_LL128, int32_t) \
  X(gc_allreduce_ll128_i64, GC_COLL_ALLREDUCE, GC_PROTO_LL128, int64_t) \
  X(gc_allreduce_pipe_f32, GC_COLL_ALLREDUCE, GC_PROTO_PIPE, float) \
  X(gc_allreduce_pipe_f64, GC_COLL_ALLREDUCE, GC_PROTO_PIPE, double) \
  X(gc_allreduce_pipe_f16, GC_COLL_ALLREDUCE, GC_PROTO_PIPE, __half) \
  X(gc_allreduce_pipe_bf16, GC_COLL_ALLREDUCE, GC_PROTO_PIPE, __nv_bfloat16) \
  X(gc_allreduce_pipe_i32, GC_COLL_ALLREDUCE, GC_PROTO_PIPE, int32_t) \
  X(gc_allreduce_pipe_i64, GC_COLL_ALLREDUCE, GC_PROTO_PIPE, int64_t) \
  X(gc_allreduce_pipe_i8, GC_COLL_ALLREDUCE, GC_PROTO_PIPE, int8_t) \
  X(gc_allreduce_pipe_u8, GC_COLL_ALLREDUCE, GC_PROTO_PIPE, uint8_t) \
  X(gc_reducescatter_ll_f32, GC_COLL_REDUCESCATTER, GC_PROTO_LL, float) \
  X(gc_reducescatter_ll_f64, GC_COLL_REDUCESCATTER, GC_PROTO_LL, double) \
  X(gc_reducescatter_ll_f16, GC_COLL_REDUCESCATTER, GC_PROTO_LL, __half) \
  X(gc_reducescatter_ll_bf16, GC_COLL_REDUCESCATTER, GC_PROTO_LL, __nv_bfloat16) \
  X(gc_reducescatter_ll_i32, GC_COLL_REDUCESCATTER, GC_PROTO_LL, int32_t) \
  X(gc_reducescatter_ll_i64, GC_COLL_REDUCESCATTER, GC_PROTO_LL, int64_t) \
  X(gc_reducescatter_ll_i8, GC_COLL_REDUCESCATTER, GC_PROTO_LL, int8_t) \
  X(gc_reducescatter_ll_u8, GC_COLL_REDUCESCATTER, GC_PROTO_LL, uint8_t) \
  X(gc_reducescatter_pipe_f32, GC_COLL_REDUCESCATTER, GC_PROTO_PIPE, float) \
  X(gc_reducescatter_pipe_f64, GC_COLL_REDUCESCATTER, GC_PROTO_PIPE, double) \
  X(gc_reducescatter_pipe_f16, GC_COLL_REDUCESCATTER, GC_PROTO_PIPE, __half) \
  X(gc_reducescatter_pipe_bf16, GC_COLL_REDUCESCATTER, GC_PROTO_PIPE, __nv_bfloat16) \
  X(gc_reducescatter_pipe_i32, GC_COLL_REDUCESCATTER, GC_PROTO_PIPE, int32_t) \
  X(gc_reducescatter_pipe_i64, GC_COLL_REDUCESCATTER, GC_PROTO_PIPE, int64_t) \
  X(gc_reducescatter_pipe_i8, GC_COLL_REDUCESCATTER, GC_PROTO_PIPE, int8_t) \
  X(gc_reducescatter_pipe_u8, GC_COLL_REDUCESCATTER, GC_PROTO_PIPE, uint8_t)
#define GC_SHIPPED_BATCH_KERNELS(X) \
  X(gc_allreduce_batch_ll_f32, GC_COLL_ALLREDUCE, GC_PROTO_LL_BATCH, float) \
  X(gc_allreduce_batch_ll_f64, GC_COLL_ALLREDUCE, GC_PROTO_LL_BATCH, double) \
  X(gc_allreduce_batch_ll_f16, GC_COLL_ALLREDUCE, GC_PROTO_LL_BATCH, __half) \
  X(gc_allreduce_batch_ll_bf16, GC_COLL_ALLREDUCE, GC_PROTO_LL_BATCH, __nv_bfloat16) \
  X(gc_allreduce_batch_ll_i32, GC_COLL_ALLREDUCE, GC_PROTO_LL_BATCH, int32_t) \
  X(gc_allreduce_batch_ll_i64, GC_COLL_ALLREDUCE, GC_PROTO_LL_BATCH, int64_t) \
  X(gc_allreduce_batch_ll_i8, GC_COLL_ALLREDUCE, GC_PROTO_LL_BATCH, int8_t) \
  X(gc_allreduce_batch_ll_u8, GC_COLL_ALLREDUCE, GC_PROTO_LL_BATCH, uint8_t)
#define GC_SHIPPED_PAIR_KERNELS(X) \
  X(gc_allreduce_pair_ll_f32_i32, GC_COLL_ALLREDUCE, GC_PROTO_LL_PAIR, GC_PT_FLOAT32_INT32, float, int32_t) \
  X(gc_allreduce_pair_ll_f32_i64, GC_COLL_ALLREDUCE, GC_PROTO_LL_PAIR, GC_PT_FLOAT32_INT64, float, int64_t) \
  X(gc_allreduce_pair_ll_f64_i32, GC_COLL_ALLREDUCE, GC_PROTO_LL_PAIR, GC_PT_FLOAT64_INT32, double, int32_t) \
  X(gc_allreduce_pair_ll_f64_i64, GC_COLL_ALLREDUCE, GC_PROTO_LL_PAIR, GC_PT_FLOAT64_INT64, double, int64_t) \
  X(gc_allreduce_pair_ll_i32_i32, GC_COLL_ALLREDUCE, GC_PROTO_LL_PAIR, GC_PT_INT32_INT32, int32_t, int32_t) \
  X(gc_allreduce_pair_ll_i32_i64, GC_COLL_ALLREDUCE, GC_PROTO_LL_PAIR, GC_PT_INT32_INT64, int32_t, int64_t) \
  X(gc_allreduce_pair_ll_i64_i32, GC_COLL_ALLREDUCE, GC_PROTO_LL_PAIR, GC_PT_INT64_INT32, int64_t, int32_t) \
  X(gc_allreduce_pair_ll_i64_i64, GC_COLL_ALLREDUCE, GC_PROTO_LL_PAIR, GC_PT_INT64_INT64, int64_t, int64_t)
#define GC_SHIPPED_UNTYPED_KERNELS(X) \
  X(gc_allgather_ll, GC_COLL_ALLGATHER, GC_PROTO_LL) \
  X(gc_allgather_pipe, GC_COLL_ALLGATHER, GC_PROTO_PIPE) \
  X(gc_alltoall_ll, GC_COLL_ALLTOALL, GC_PROTO_LL) \
  X(gc_alltoall_pipe, GC_COLL_ALLTOALL, GC_PROTO_PIPE) \
  X(gc_alltoallv_ll, GC_COLL_ALLTOALLV, GC_PROTO_LL) \
  X(gc_alltoallv_pipe, GC_COLL_ALLTOALLV, GC_PROTO_PIPE) \
  X(gc_broadcast_ll, GC_COLL_BROADCAST, GC_PROTO_LL) \
  X(gc_broadcast_pipe, GC_COLL_BROADCAST, GC_PROTO_PIPE) \
  X(gc_barrier, GC_COLL_BARRIER, GC_PROTO_FLAG_BARRIER)
/* Whether (collective, protocol) supports op (reductions) -- the table's op lists. */
#define GC_KERNEL_TAKES_OP(coll, proto, op) ( \
  ((coll) == GC_COLL_ALLREDUCE && (proto) == GC_PROTO_LL128) ? ((op) == GC_OP_SUM || (op) == GC_OP_AVG) : \
  (op) < GC_OP_COUNT)

/* ---- GcArgs ---- */
typedef struct GcArgs {
  uint64_t epoch; /* host epoch, or 0 = the next one from the device epoch words (kernel_abi.h section 3) */
  uint64_t send; /* device pointer */
  uint64_t recv; /* device pointer */
  uint64_t count; /* elements (ignored by allToAllv and barrier) */
  uint32_t rank; /* this rank, < nranks */
  uint32_t nranks; /* 1 .. MAX_RANKS */
  uint32_t dtype; /* GC_DT_* (a pairs kernel: GC_PT_*) */
  uint32_t op; /* GC_OP_* (reductions; a pairs kernel: GC_LOC_*) */
  uint32_t root; /* broadcast root */
  uint32_t reserved0; /* 0 */
  uint64_t timeout_ns; /* 0 = DEFAULT_TIMEOUT_NS */
  uint64_t abort_word; /* device-visible address of a u32 (mapped host memory), or 0 */
  uint64_t error_record; /* device-visible address of a GcErrorRecord (mapped host memory); required */
  uint64_t peers[16]; /* workspace base of each rank, mapped in this process */
  int64_t a2av[4][16]; /* allToAllv counts/displacements in elements (rows A2AV_*); else unused */
} GcArgs;
#define GC_ARGS_OFFSET_EPOCH 0
#define GC_ARGS_OFFSET_SEND 8
#define GC_ARGS_OFFSET_RECV 16
#define GC_ARGS_OFFSET_COUNT 24
#define GC_ARGS_OFFSET_RANK 32
#define GC_ARGS_OFFSET_NRANKS 36
#define GC_ARGS_OFFSET_DTYPE 40
#define GC_ARGS_OFFSET_OP 44
#define GC_ARGS_OFFSET_ROOT 48
#define GC_ARGS_OFFSET_RESERVED0 52
#define GC_ARGS_OFFSET_TIMEOUT_NS 56
#define GC_ARGS_OFFSET_ABORT_WORD 64
#define GC_ARGS_OFFSET_ERROR_RECORD 72
#define GC_ARGS_OFFSET_PEERS 80
#define GC_ARGS_OFFSET_A2AV 208
#define GC_ARGS_SIZE 720
/* ---- GcBatch ---- */
typedef struct GcBatch {
  uint32_t calls; /* 1 .. MAX_BATCH_CALLS */
  uint32_t slots; /* first[calls-1] + the last call's slots: the packed message, <= LL_SLOTS */
  uint64_t hash; /* the recorded batch's hash (every call, also those not in this launch); equal on every rank */
  uint64_t send[64];
  uint64_t recv[64];
  uint32_t count[64];
  uint32_t first[64]; /* first slot of each call, ascending */
} GcBatch;
#define GC_BATCH_OFFSET_CALLS 0
#define GC_BATCH_OFFSET_SLOTS 4
#define GC_BATCH_OFFSET_HASH 8
#define GC_BATCH_OFFSET_SEND 16
#define GC_BATCH_OFFSET_RECV 528
#define GC_BATCH_OFFSET_COUNT 1040
#define GC_BATCH_OFFSET_FIRST 1296
#define GC_BATCH_SIZE 1552
/* ---- GcErrorRecord ---- */
typedef struct GcErrorRecord {
  uint32_t code; /* GC_OK or GC_ERR_*; written LAST, after the other fields */
  uint32_t rank; /* rank that recorded the error */
  uint32_t peer; /* peer it waited for, or GC_NO_PEER */
  uint32_t kernel; /* collective id * 16 + protocol id */
  uint64_t epoch; /* epoch of the failed call */
  uint64_t waited; /* flag / counter value it waited for */
  uint64_t observed; /* value it last read */
  uint64_t detail; /* BAD_ARGS: 1 nranks 2 rank/root 3 epoch 4 geometry/counts 5 peers 6 dtype 7 op 8 batch layout; CAPACITY: bytes (lines for LL128); TIMEOUT/ABORTED: the peer polled; BATCH_MISMATCH: 0 the peer's batch signature differs (waited = mine, observed = the peer's), 1 the peer ran another kernel at this epoch; NAN: the pair's number (peer = its rank, observed = its index, waited = pair type << 8 | loc op) */
  uint32_t block; /* blockIdx.x of the recorder */
  uint32_t thread; /* threadIdx.x of the recorder */
} GcErrorRecord;
#define GC_ERR_OFFSET_CODE 0
#define GC_ERR_OFFSET_RANK 4
#define GC_ERR_OFFSET_PEER 8
#define GC_ERR_OFFSET_KERNEL 12
#define GC_ERR_OFFSET_EPOCH 16
#define GC_ERR_OFFSET_WAITED 24
#define GC_ERR_OFFSET_OBSERVED 32
#define GC_ERR_OFFSET_DETAIL 40
#define GC_ERR_OFFSET_BLOCK 48
#define GC_ERR_OFFSET_THREAD 52
#define GC_ERR_SIZE 56

/* ---- workspace regions (bytes from the workspace base) ---- */
#define GC_WS_CTRL_OFFSET 0
#define GC_WS_CTRL_BYTES 32768 /* control words (kernel_abi.h section 4) */
#define GC_WS_LL_OFFSET 32768
#define GC_WS_LL_BYTES 4194304 /* LL slots [2 halves][src][slot] of 16 B */
#define GC_WS_SENT_OFFSET 4227072
#define GC_WS_SENT_BYTES 33554432 /* sentinel data [2 halves][2 phases][src][bytes] */
#define GC_WS_ESC_OFFSET 37781504
#define GC_WS_ESC_BYTES 16777216 /* sentinel escape words, u64 per 16-B unit */
#define GC_WS_LL128_OFFSET 54558720
#define GC_WS_LL128_BYTES 6291456
#define GC_WS_PIPE_OFFSET 60850176
#define GC_WS_PIPE_BYTES 16777216
#define GC_WORKSPACE_BYTES 77627392

#ifdef __cplusplus
#define GC_STATIC_ASSERT(c, m) static_assert(c, m)
#else
#define GC_STATIC_ASSERT(c, m) _Static_assert(c, m)
#endif
GC_STATIC_ASSERT(offsetof(GcArgs, epoch) == GC_ARGS_OFFSET_EPOCH, "GcArgs.epoch");
GC_STATIC_ASSERT(offsetof(GcArgs, send) == GC_ARGS_OFFSET_SEND, "GcArgs.send");
GC_STATIC_ASSERT(offsetof(GcArgs, recv) == GC_ARGS_OFFSET_RECV, "GcArgs.recv");
GC_STATIC_ASSERT(offsetof(GcArgs, count) == GC_ARGS_OFFSET_COUNT, "GcArgs.count");
GC_STATIC_ASSERT(offsetof(GcArgs, rank) == GC_ARGS_OFFSET_RANK, "GcArgs.rank");
GC_STATIC_ASSERT(offsetof(GcArgs, nranks) == GC_ARGS_OFFSET_NRANKS, "GcArgs.nranks");
GC_STATIC_ASSERT(offsetof(GcArgs, dtype) == GC_ARGS_OFFSET_DTYPE, "GcArgs.dtype");
GC_STATIC_ASSERT(offsetof(GcArgs, op) == GC_ARGS_OFFSET_OP, "GcArgs.op");
GC_STATIC_ASSERT(offsetof(GcArgs, root) == GC_ARGS_OFFSET_ROOT, "GcArgs.root");
GC_STATIC_ASSERT(offsetof(GcArgs, reserved0) == GC_ARGS_OFFSET_RESERVED0, "GcArgs.reserved0");
GC_STATIC_ASSERT(offsetof(GcArgs, timeout_ns) == GC_ARGS_OFFSET_TIMEOUT_NS, "GcArgs.timeout_ns");
GC_STATIC_ASSERT(offsetof(GcArgs, abort_word) == GC_ARGS_OFFSET_ABORT_WORD, "GcArgs.abort_word");
GC_STATIC_ASSERT(offsetof(GcArgs, error_record) == GC_ARGS_OFFSET_ERROR_RECORD, "GcArgs.error_record");
GC_STATIC_ASSERT(offsetof(GcArgs, peers) == GC_ARGS_OFFSET_PEERS, "GcArgs.peers");
GC_STATIC_ASSERT(offsetof(GcArgs, a2av) == GC_ARGS_OFFSET_A2AV, "GcArgs.a2av");
GC_STATIC_ASSERT(sizeof(GcArgs) == GC_ARGS_SIZE, "GcArgs size");
GC_STATIC_ASSERT(offsetof(GcBatch, calls) == GC_BATCH_OFFSET_CALLS, "GcBatch.calls");
GC_STATIC_ASSERT(offsetof(GcBatch, slots) == GC_BATCH_OFFSET_SLOTS, "GcBatch.slots");
GC_STATIC_ASSERT(offsetof(GcBatch, hash) == GC_BATCH_OFFSET_HASH, "GcBatch.hash");
GC_STATIC_ASSERT(offsetof(GcBatch, send) == GC_BATCH_OFFSET_SEND, "GcBatch.send");
GC_STATIC_ASSERT(offsetof(GcBatch, recv) == GC_BATCH_OFFSET_RECV, "GcBatch.recv");
GC_STATIC_ASSERT(offsetof(GcBatch, count) == GC_BATCH_OFFSET_COUNT, "GcBatch.count");
GC_STATIC_ASSERT(offsetof(GcBatch, first) == GC_BATCH_OFFSET_FIRST, "GcBatch.first");
GC_STATIC_ASSERT(sizeof(GcBatch) == GC_BATCH_SIZE, "GcBatch size");
GC_STATIC_ASSERT(offsetof(GcErrorRecord, code) == GC_ERR_OFFSET_CODE, "GcErrorRecord.code");
GC_STATIC_ASSERT(offsetof(GcErrorRecord, rank) == GC_ERR_OFFSET_RANK, "GcErrorRecord.rank");
GC_STATIC_ASSERT(offsetof(GcErrorRecord, peer) == GC_ERR_OFFSET_PEER, "GcErrorRecord.peer");
GC_STATIC_ASSERT(offsetof(GcErrorRecord, kernel) == GC_ERR_OFFSET_KERNEL, "GcErrorRecord.kernel");
GC_STATIC_ASSERT(offsetof(GcErrorRecord, epoch) == GC_ERR_OFFSET_EPOCH, "GcErrorRecord.epoch");
GC_STATIC_ASSERT(offsetof(GcErrorRecord, waited) == GC_ERR_OFFSET_WAITED, "GcErrorRecord.waited");
GC_STATIC_ASSERT(offsetof(GcErrorRecord, observed) == GC_ERR_OFFSET_OBSERVED, "GcErrorRecord.observed");
GC_STATIC_ASSERT(offsetof(GcErrorRecord, detail) == GC_ERR_OFFSET_DETAIL, "GcErrorRecord.detail");
GC_STATIC_ASSERT(offsetof(GcErrorRecord, block) == GC_ERR_OFFSET_BLOCK, "GcErrorRecord.block");
GC_STATIC_ASSERT(offsetof(GcErrorRecord, thread) == GC_ERR_OFFSET_THREAD, "GcErrorRecord.thread");
GC_STATIC_ASSERT(sizeof(GcErrorRecord) == GC_ERR_SIZE, "GcErrorRecord size");

#ifdef __CUDACC__
#define GC_HOST_DEVICE __host__ __device__
#else
#define GC_HOST_DEVICE
#endif
/* Element size in bytes of a GC_DT_* code, 0 for an unknown code. */
static inline GC_HOST_DEVICE uint32_t gc_dtype_size(uint32_t dtype) {
  switch (dtype) {
    case GC_DT_FLOAT32: return 4u;
    case GC_DT_FLOAT64: return 8u;
    case GC_DT_FLOAT16: return 2u;
    case GC_DT_BFLOAT16: return 2u;
    case GC_DT_INT32: return 4u;
    case GC_DT_INT64: return 8u;
    case GC_DT_INT8: return 1u;
    case GC_DT_UINT8: return 1u;
    default: return 0u;
  }
}
/* Bytes of the type a reduction accumulates in (16-bit floats in fp32), 0 for an unknown code. */
static inline GC_HOST_DEVICE uint32_t gc_acc_size(uint32_t dtype) {
  switch (dtype) {
    case GC_DT_FLOAT32: return 4u;
    case GC_DT_FLOAT64: return 8u;
    case GC_DT_FLOAT16: return 4u;
    case GC_DT_BFLOAT16: return 4u;
    case GC_DT_INT32: return 4u;
    case GC_DT_INT64: return 8u;
    case GC_DT_INT8: return 1u;
    case GC_DT_UINT8: return 1u;
    default: return 0u;
  }
}
/* LL128 capacity ("lines"): a line holds GC_LL128_DATA_BYTES of accumulators. */
#define GC_LL128_ELEMS_PER_LINE(dtype) (GC_LL128_DATA_BYTES / gc_acc_size(dtype))
#define GC_LL128_MAX_COUNT(dtype) ((uint64_t)GC_LL128_MAX_LINES * GC_LL128_ELEMS_PER_LINE(dtype))
/* Elements per peer that the kernel of (collective, protocol) takes for dtype -- the table's capacity
 * column (bytes per peer, LL128 lines, packed bytes, unbounded); 0 when it has no such kernel or type. */
static inline GC_HOST_DEVICE uint64_t gc_kernel_max_count(uint32_t coll, uint32_t proto, uint32_t dtype) {
  if (gc_dtype_size(dtype) == 0) return 0u;
  switch (GC_KERNEL_ID(coll, proto)) {
    case GC_KERNEL_ID(GC_COLL_ALLREDUCE, GC_PROTO_LL): return (uint64_t)GC_LL_MAX_BYTES / gc_dtype_size(dtype);
    case GC_KERNEL_ID(GC_COLL_ALLREDUCE, GC_PROTO_SENTINEL): return (uint64_t)GC_SENT_MAX_BYTES / gc_dtype_size(dtype);
    case GC_KERNEL_ID(GC_COLL_ALLREDUCE, GC_PROTO_LL128): return (dtype == GC_DT_FLOAT32 || dtype == GC_DT_FLOAT64 || dtype == GC_DT_FLOAT16 || dtype == GC_DT_BFLOAT16 || dtype == GC_DT_INT32 || dtype == GC_DT_INT64) ? GC_LL128_MAX_COUNT(dtype) : 0u;
    case GC_KERNEL_ID(GC_COLL_ALLREDUCE, GC_PROTO_PIPE): return UINT64_MAX;
    case GC_KERNEL_ID(GC_COLL_REDUCESCATTER, GC_PROTO_LL): return (uint64_t)GC_LL_MAX_BYTES / gc_dtype_size(dtype);
    case GC_KERNEL_ID(GC_COLL_REDUCESCATTER, GC_PROTO_PIPE): return UINT64_MAX;
    case GC_KERNEL_ID(GC_COLL_ALLGATHER, GC_PROTO_LL): return (uint64_t)GC_LL_MAX_BYTES / gc_dtype_size(dtype);
    case GC_KERNEL_ID(GC_COLL_ALLGATHER, GC_PROTO_PIPE): return UINT64_MAX;
    case GC_KERNEL_ID(GC_COLL_ALLTOALL, GC_PROTO_LL): return (uint64_t)GC_LL_MAX_BYTES / gc_dtype_size(dtype);
    case GC_KERNEL_ID(GC_COLL_ALLTOALL, GC_PROTO_PIPE): return UINT64_MAX;
    case GC_KERNEL_ID(GC_COLL_ALLTOALLV, GC_PROTO_LL): return (uint64_t)GC_LL_MAX_BYTES / gc_dtype_size(dtype);
    case GC_KERNEL_ID(GC_COLL_ALLTOALLV, GC_PROTO_PIPE): return UINT64_MAX;
    case GC_KERNEL_ID(GC_COLL_BROADCAST, GC_PROTO_LL): return (uint64_t)GC_LL_MAX_BYTES / gc_dtype_size(dtype);
    case GC_KERNEL_ID(GC_COLL_BROADCAST, GC_PROTO_PIPE): return UINT64_MAX;
    case GC_KERNEL_ID(GC_COLL_BARRIER, GC_PROTO_FLAG_BARRIER): return UINT64_MAX;
    case GC_KERNEL_ID(GC_COLL_ALLREDUCE, GC_PROTO_LL_BATCH): return (uint64_t)GC_LL_MAX_BYTES / gc_dtype_size(dtype);
    default: return 0u;
  }
}
/* Bytes of a value-index pair of a GC_PT_* code (the C struct {value; index;}), 0 for an unknown code. */
static inline GC_HOST_DEVICE uint32_t gc_pair_size(uint32_t ptype) {
  switch (ptype) {
    case GC_PT_FLOAT32_INT32: return 8u;
    case GC_PT_FLOAT32_INT64: return 16u;
    case GC_PT_FLOAT64_INT32: return 16u;
    case GC_PT_FLOAT64_INT64: return 16u;
    case GC_PT_INT32_INT32: return 8u;
    case GC_PT_INT32_INT64: return 16u;
    case GC_PT_INT64_INT32: return 16u;
    case GC_PT_INT64_INT64: return 16u;
    default: return 0u;
  }
}
/* Pairs that the pair kernel of (collective, protocol) takes for ptype (its capacity column); 0 when none. */
static inline GC_HOST_DEVICE uint64_t gc_pair_kernel_max_count(uint32_t coll, uint32_t proto, uint32_t ptype) {
  if (gc_pair_size(ptype) == 0) return 0u;
  switch (GC_KERNEL_ID(coll, proto)) {
    case GC_KERNEL_ID(GC_COLL_ALLREDUCE, GC_PROTO_LL_PAIR): return (uint64_t)GC_LL_MAX_BYTES / gc_pair_size(ptype);
    default: return 0u;
  }
}

#endif /* GPUCOLL_KERNEL_TABLE_H_ */
