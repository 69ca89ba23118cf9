/*
 * gpucoll kernel launch ABI: the contract between the CUDA kernels in gpucoll_kernels.fatbin and any
 * host that launches them (the Java backend through cuLaunchKernel, the C++ test harness through <<<>>>).
 * Plain C, fixed-width fields; every offset is pinned by a static_assert and a GC_*_OFFSET_* macro.
 *
 * ---------------------------------------------------------------------------------------------------
 * 1. Kernels
 * ---------------------------------------------------------------------------------------------------
 * Every kernel is extern "C" and takes exactly one parameter: a GcArgs struct passed BY VALUE
 * (cuLaunchKernel: kernelParams = { &args }, sharedMem = 0). Names:
 *
 *   Reductions, one kernel per type (GcArgs.op selects the op):
 *     gc_allreduce_ll_<t>        one-shot, LL slots, barrier-free           bytes <= GC_LL_MAX_BYTES
 *     gc_allreduce_sentinel_<t>  two-shot RS+AG, sentinel + double buffer   bytes <= GC_SENT_MAX_BYTES
 *     gc_allreduce_ll128_<t>     LL128-atomic RS+AG; op SUM or AVG only      count <= GC_LL128_MAX_COUNT(dtype)
 *     gc_allreduce_pipe_<t>      RS+AG through the credit pipe              any size
 *     gc_allreduce_barrier2_<t>  the SAME movement as _ll but with a flag barrier before and after
 *                                (vLLM-style; for the benchmark comparison)  any size (rounds of GC_RAW_PEER_BYTES)
 *     gc_reducescatter_ll_<t>    LL slots                                   count*size <= GC_LL_MAX_BYTES
 *     gc_reducescatter_pipe_<t>  credit pipe                                any size
 *     <t> = f32 f64 f16 bf16 i32 i64 i8 u8   (GC_DT_FLOAT32 .. GC_DT_UINT8); _ll128 lacks i8 and u8
 *   The op is a runtime field, but each kernel dispatches once to a body compiled for that op.
 *
 *   Data movement, one kernel for all types (bytes = count * gc_dtype_size(dtype); int8/uint8 allowed):
 *     gc_allgather_ll   gc_allgather_pipe      LL: count*size <= GC_LL_MAX_BYTES
 *     gc_alltoall_ll    gc_alltoall_pipe       LL: count*size <= GC_LL_MAX_BYTES (per peer)
 *     gc_alltoallv_ll   gc_alltoallv_pipe      LL: every per-peer byte count <= GC_LL_MAX_BYTES
 *     gc_broadcast_ll   gc_broadcast_pipe      LL: count*size <= GC_LL_MAX_BYTES
 *     gc_barrier                               every rank enters before any leaves
 *
 * Semantics (counts in elements, as the Java Communicator API):
 *   allReduce      recv[i] = op over ranks 0..n-1 (in that order) of send[i], i < count
 *   reduceScatter  recv[i] = op over ranks of send[rank*count + i]; send holds n*count elements
 *   allGather      recv[r*count + i] = send of rank r [i]
 *   allToAll       recv[r*count + i] = send of rank r [rank*count + i]
 *   allToAllv      GcArgs.a2av[GC_A2AV_SEND_COUNTS][r] etc. (elements); send count to r must equal r's recv count
 *   broadcast      recv = send of root (on the root send may equal recv)
 *   send and recv may alias (in place) for allReduce and broadcast only.
 * Reductions: 16-bit floats are accumulated in fp32 and rounded once; integers wrap (two's complement);
 * MIN/MAX use (b < a ? b : a) / (a < b ? b : a); AVG = SUM then one division by nranks (integers truncate
 * toward zero; 8-bit integers wrap in 8 bits, then divide). Fixed order rank 0..n-1 => every rank gets bit-identical results, except the _ll128
 * kernels, whose float sums use hardware atomics in arrival order: all ranks still read the same
 * reduced line (bit-identical among ranks) but the result may differ between runs in the last bits.
 *
 * ---------------------------------------------------------------------------------------------------
 * 2. Launch geometry
 * ---------------------------------------------------------------------------------------------------
 *   blockDim = (GC_BLOCK_THREADS, 1, 1), always; sharedMem = 0.
 *   gridDim.x in [1, GC_MAX_BLOCKS]:
 *     _pipe and _barrier2 kernels: EVERY rank must use the same gridDim.x for the call (per-block
 *       channels). Use GC_PIPE_BLOCKS for _pipe; GC_GRID_FOR_BYTES(bytes) for _barrier2.
 *     _ll, _sentinel, _ll128, gc_barrier: correct with any grid; recommended GC_GRID_FOR_BYTES(bytes)
 *       with bytes = the per-peer payload (allReduce/broadcast: count*size; allGather/reduceScatter/
 *       allToAll: count*size; allToAllv: the largest per-peer count*size this rank sends or receives).
 *   All ranks' kernels of one call must be able to run concurrently (they spin on each other): on one
 *   GPU shared by R ranks of one process, R * gridDim.x blocks of 512 threads must be co-resident.
 *
 * ---------------------------------------------------------------------------------------------------
 * 3. Epochs
 * ---------------------------------------------------------------------------------------------------
 *   The epoch of a launch is max(GcArgs.epoch, E + 1), where E is the last epoch this rank's kernels
 *   ran, kept in device memory (the epoch words GC_WS_EPOCH of the rank's own workspace, set by
 *   every kernel as it starts). So a host may pass its own counter (1 for the first launch, +1 for every
 *   launch of any gc_ kernel on the communicator, identical on all ranks), or 0 = "the next one": a
 *   CUDA graph captured once replays any number of times, every replay a new epoch, and eager launches
 *   after replays stay in step (all ranks run the same sequence, so all compute the same epoch).
 *   The epoch words belong to the communicator rank and its one stream: launches of one rank on
 *   several streams at once are not supported. Epochs stay below 2^40.
 *   Epoch parity (epoch & 1) selects the half of every double-buffered region; flags in LL slots,
 *   LL128 lines and barrier words carry the full 64-bit epoch, so no slot ever needs resetting.
 *   Why no barrier: invariant -- when a rank's kernel at epoch e completes, every peer has started e.
 *   A rank writes half h of a peer's region at epoch e only after its own kernel e-1 completed, so the
 *   peer started e-1, i.e. finished reading half h at e-2. Collectives that receive from every peer
 *   get the invariant for free; the others (broadcast, allToAllv with zero counts, calls too small to
 *   give every rank a part) wait for the peers' arrival words (every kernel stores its epoch into each
 *   peer's GC_WS_ARRIVED slot when it starts) before they exit.
 *   The _pipe kernels use per-channel credits instead (flag/ack words), so any size works.
 *   Programmatic dependent launch (sm_90): every kernel waits for its predecessor on the stream before
 *   it reads anything (griddepcontrol.wait) and lets its successor launch at once, so a host or graph
 *   may launch with the programmatic-stream-serialization attribute to hide the launch gap.
 *
 * ---------------------------------------------------------------------------------------------------
 * 4. Workspace (one per rank, peer-visible: cudaIpc / same-process pointer)
 * ---------------------------------------------------------------------------------------------------
 *   Size GC_WORKSPACE_BYTES, base aligned to 4096 (cudaMalloc gives 256+; use the allocation base).
 *   GcArgs.peers[r] = rank r's workspace base as mapped in THIS process (peers[rank] = own).
 *   Fixed layout (independent of nranks; sized for GC_MAX_RANKS):
 *     [GC_WS_CTRL_OFFSET,  GC_WS_CTRL_BYTES)   control words, u64 each:
 *         GC_WS_ARRIVED  + 8*src                         epoch src last started (written by src)
 *         GC_WS_BARRIER  + 8*(block*GC_MAX_RANKS + src)  barrier2 / gc_barrier flags (written by src)
 *         GC_WS_PIPE_FLAG+ 8*((src*GC_MAX_BLOCKS + block)*2 + half)  pipe chunk flags (written by src)
 *         GC_WS_PIPE_ACK + 8*((dst*GC_MAX_BLOCKS + block)*2 + half)  pipe credits (written by dst)
 *         GC_WS_PIPE_SENT+ 8*((dst*GC_MAX_BLOCKS + block)*2 + half)  last flag this rank sent (own state)
 *         GC_WS_ERR_CLAIM                                 highest epoch whose error was recorded (own)
 *         GC_WS_EPOCH    + 8*block                        last epoch this rank ran (own; section 3)
 *     GC_WS_LL_OFFSET:    LL slots [2 halves][GC_MAX_RANKS src][GC_LL_SLOTS] of 16 B {u64 data, u64 flag}
 *     GC_WS_SENT_OFFSET:  sentinel data [2 halves][2 phases][GC_MAX_RANKS src][GC_SENT_PEER_BYTES]
 *     GC_WS_ESC_OFFSET:   sentinel escape words, u64 per 16-B unit of the sentinel region, same index
 *     GC_WS_LL128_OFFSET: LL128 lines [2 halves][GC_LL128_LINES_PER_HALF] of 128 B:
 *                         RS lines first (GC_LL128_MAX_LINES/2, owner-local index), then AG lines
 *                         (GC_LL128_MAX_LINES); line = {u32 counter, u32 pad, 120 B data}
 *     GC_WS_PIPE_OFFSET:  pipe chunks [GC_MAX_RANKS src][GC_MAX_BLOCKS][2 halves][GC_PIPE_CHUNK_BYTES]
 *     GC_WS_RAW_OFFSET:   barrier2 staging [GC_MAX_RANKS src][GC_RAW_PEER_BYTES]
 *   Initialisation ONCE at allocation, before any rank's first launch (then never again):
 *     everything zero, EXCEPT the sentinel data region [GC_WS_SENT_OFFSET, +GC_WS_SENT_BYTES), which is
 *     filled with the 32-bit pattern GC_SENTINEL_WORD (cuMemsetD32). All ranks must have initialised
 *     their workspace before any rank launches (the host's rendezvous after allocation gives that).
 *
 * ---------------------------------------------------------------------------------------------------
 * 5. Errors, timeout, abort
 * ---------------------------------------------------------------------------------------------------
 *   Every spin loop is bounded by GcArgs.timeout_ns (device %globaltimer; 0 = GC_DEFAULT_TIMEOUT_NS)
 *   and watches the host abort word (*abort_word != 0; a u32 in mapped host memory, may be 0 = none).
 *   On expiry/abort/bad arguments a kernel fills *error_record (GcErrorRecord, mapped host memory,
 *   required) -- the first error of the call wins -- and exits; it never spins forever. The host reads
 *   error_record->code after the stream completes; code != GC_OK => raise (timeout: name rank, peer,
 *   epoch). After any error the workspace state is undefined: close the communicator.
 */
#ifndef GPUCOLL_KERNEL_ABI_H_
#define GPUCOLL_KERNEL_ABI_H_

#include <stddef.h>
#include <stdint.h>

#define GC_ABI_VERSION 1

/* ---- limits and geometry ---- */
#define GC_MAX_RANKS 16
#define GC_BLOCK_THREADS 512
#define GC_MAX_BLOCKS 32
#define GC_PIPE_BLOCKS 16
#define GC_BYTES_PER_BLOCK 4096
#define GC_MAX_GRID_RULE 16
/* Recommended grid: ceil(bytes / 4 KB) clamped to [1, 16]: one LL slot per thread up to 64 KB. */
#define GC_GRID_FOR_BYTES(bytes) \
  ((bytes) <= GC_BYTES_PER_BLOCK ? 1u \
   : ((bytes) >= (uint64_t)GC_BYTES_PER_BLOCK * GC_MAX_GRID_RULE ? (unsigned)GC_MAX_GRID_RULE \
      : (unsigned)(((bytes) + GC_BYTES_PER_BLOCK - 1) / GC_BYTES_PER_BLOCK)))

#define GC_DEFAULT_TIMEOUT_NS 10000000000ULL /* 10 s */

/* ---- data types: codes equal dev.gpucoll.api.DataType ordinals ---- */
#define GC_DT_FLOAT32 0
#define GC_DT_FLOAT64 1
#define GC_DT_FLOAT16 2
#define GC_DT_BFLOAT16 3
#define GC_DT_INT32 4
#define GC_DT_INT64 5
#define GC_DT_INT8 6
#define GC_DT_UINT8 7
#define GC_DT_COUNT 8

/* ---- reduction ops: codes equal dev.gpucoll.api.ReduceOp ordinals ---- */
#define GC_OP_SUM 0
#define GC_OP_PROD 1
#define GC_OP_MIN 2
#define GC_OP_MAX 3
#define GC_OP_AVG 4

/* ---- capacities of the size-limited kernels (host routes larger calls to _pipe / NCCL) ---- */
#define GC_LL_MAX_BYTES 65536u                   /* per-peer payload of an _ll kernel */
#define GC_LL_SLOTS (GC_LL_MAX_BYTES / 8u)       /* 8 data bytes per 16-byte slot */
#define GC_SENT_MAX_BYTES 1048576u               /* allReduce_sentinel message bytes */
#define GC_SENT_PEER_BYTES (GC_SENT_MAX_BYTES / 2u) /* per (half, phase, src): the n=2 chunk */
#define GC_SENTINEL_WORD 0xFFF7DEADu             /* a NaN payload as fp32; prefill pattern */
#define GC_LL128_LINE_BYTES 128u
#define GC_LL128_DATA_BYTES 120u                 /* 8-byte header {u32 counter, u32 pad} */
#define GC_LL128_MAX_LINES 16384u
#define GC_LL128_LINES_PER_HALF (GC_LL128_MAX_LINES / 2u + GC_LL128_MAX_LINES)
/* LL128 lines hold the accumulation type: fp32 for f32/f16/bf16, 8 bytes for f64/i64, i32 for i32. */
#define GC_LL128_ELEMS_PER_LINE(dtype) \
  (((dtype) == GC_DT_FLOAT64 || (dtype) == GC_DT_INT64) ? 15u : 30u)
#define GC_LL128_MAX_COUNT(dtype) ((uint64_t)GC_LL128_MAX_LINES * GC_LL128_ELEMS_PER_LINE(dtype))
#define GC_PIPE_CHUNK_BYTES 16384u
#define GC_RAW_PEER_BYTES 262144u

/* ---- workspace layout (bytes from the workspace base) ---- */
#define GC_WS_ARRIVED 0u
#define GC_WS_BARRIER 256u
#define GC_WS_PIPE_FLAG (GC_WS_BARRIER + 8u * GC_MAX_BLOCKS * GC_MAX_RANKS)          /* 4352 */
#define GC_WS_PIPE_ACK (GC_WS_PIPE_FLAG + 8u * GC_MAX_RANKS * GC_MAX_BLOCKS * 2u)    /* 12544 */
#define GC_WS_PIPE_SENT (GC_WS_PIPE_ACK + 8u * GC_MAX_RANKS * GC_MAX_BLOCKS * 2u)    /* 20736 */
#define GC_WS_ERR_CLAIM (GC_WS_PIPE_SENT + 8u * GC_MAX_RANKS * GC_MAX_BLOCKS * 2u)   /* 28928 */
#define GC_WS_EPOCH (GC_WS_ERR_CLAIM + 256u)                                          /* 29184 */
#define GC_WS_CTRL_OFFSET 0u
#define GC_WS_CTRL_BYTES 32768u
#define GC_WS_LL_OFFSET (GC_WS_CTRL_OFFSET + GC_WS_CTRL_BYTES)
#define GC_WS_LL_BYTES (2ull * GC_MAX_RANKS * GC_LL_SLOTS * 16u)                     /* 4 MiB */
#define GC_WS_SENT_OFFSET (GC_WS_LL_OFFSET + GC_WS_LL_BYTES)
#define GC_WS_SENT_BYTES (2ull * 2u * GC_MAX_RANKS * GC_SENT_PEER_BYTES)              /* 32 MiB */
#define GC_WS_ESC_OFFSET (GC_WS_SENT_OFFSET + GC_WS_SENT_BYTES)
#define GC_WS_ESC_BYTES (GC_WS_SENT_BYTES / 2u)                                       /* 16 MiB */
#define GC_WS_LL128_OFFSET (GC_WS_ESC_OFFSET + GC_WS_ESC_BYTES)
#define GC_WS_LL128_BYTES (2ull * GC_LL128_LINES_PER_HALF * GC_LL128_LINE_BYTES)      /* 6 MiB */
#define GC_WS_PIPE_OFFSET (GC_WS_LL128_OFFSET + GC_WS_LL128_BYTES)
#define GC_WS_PIPE_BYTES (1ull * GC_MAX_RANKS * GC_MAX_BLOCKS * 2u * GC_PIPE_CHUNK_BYTES) /* 16 MiB */
#define GC_WS_RAW_OFFSET (GC_WS_PIPE_OFFSET + GC_WS_PIPE_BYTES)
#define GC_WS_RAW_BYTES (1ull * GC_MAX_RANKS * GC_RAW_PEER_BYTES)                    /* 4 MiB */
#define GC_WORKSPACE_BYTES (GC_WS_RAW_OFFSET + GC_WS_RAW_BYTES)                       /* 78 MiB + 32 KiB */

/* ---- allToAllv count table inside GcArgs (elements) ---- */
#define GC_A2AV_SEND_COUNTS 0
#define GC_A2AV_SEND_DISPLS 1
#define GC_A2AV_RECV_COUNTS 2
#define GC_A2AV_RECV_DISPLS 3

/* ---- the one kernel parameter ---- */
typedef struct GcArgs {
  uint64_t epoch;        /* host epoch, or 0 = the next one from the device epoch words; section 3 */
  uint64_t send;         /* device pointer */
  uint64_t recv;         /* device pointer */
  uint64_t count;        /* elements; see semantics (ignored by allToAllv and barrier) */
  uint32_t rank;         /* this rank, < nranks */
  uint32_t nranks;       /* 1 .. GC_MAX_RANKS */
  uint32_t dtype;        /* GC_DT_* */
  uint32_t op;           /* GC_OP_* (reductions) */
  uint32_t root;         /* broadcast root */
  uint32_t reserved0;    /* 0 */
  uint64_t timeout_ns;   /* 0 = GC_DEFAULT_TIMEOUT_NS */
  uint64_t abort_word;   /* device-visible address of a u32 (mapped host memory), or 0 */
  uint64_t error_record; /* device-visible address of a GcErrorRecord (mapped host memory); required */
  uint64_t peers[GC_MAX_RANKS];         /* workspace base of each rank, mapped in this process */
  int64_t a2av[4][GC_MAX_RANKS];        /* allToAllv counts/displacements in elements; else unused */
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
#define GC_ARGS_OFFSET_A2AV (GC_ARGS_OFFSET_PEERS + 8 * GC_MAX_RANKS)   /* 208 */
#define GC_ARGS_SIZE (GC_ARGS_OFFSET_A2AV + 4 * 8 * GC_MAX_RANKS)         /* 720 */
#define GC_ARGS_ALIGN 8

/* ---- error record (mapped host memory, one per rank, zeroed by the host) ---- */
#define GC_OK 0
#define GC_ERR_TIMEOUT 1  /* waited timeout_ns at `epoch`; `peer` = a rank that never started this call
                             (from the arrival words) or, if all started, the peer polled; `detail` =
                             the peer polled; `waited` / `observed` = flag wanted / last seen */
#define GC_ERR_ABORTED 2  /* the host set *abort_word */
#define GC_ERR_BAD_ARGS 3 /* rank/nranks/dtype/op/epoch/grid invalid; `detail` says which */
#define GC_ERR_CAPACITY 4 /* message larger than this kernel's capacity; `detail` = bytes */

#define GC_NO_PEER 0xFFFFFFFFu

/* Kernel ids in GcErrorRecord.kernel (collective * 16 + variant). */
#define GC_KERNEL_ID(coll, variant) ((coll) * 16 + (variant))
#define GC_COLL_ALLREDUCE 1
#define GC_COLL_REDUCESCATTER 2
#define GC_COLL_ALLGATHER 3
#define GC_COLL_ALLTOALL 4
#define GC_COLL_ALLTOALLV 5
#define GC_COLL_BROADCAST 6
#define GC_COLL_BARRIER 7
#define GC_VAR_LL 0
#define GC_VAR_SENTINEL 1
#define GC_VAR_LL128 2
#define GC_VAR_PIPE 3
#define GC_VAR_BARRIER2 4

typedef struct GcErrorRecord {
  uint32_t code;      /* GC_OK or GC_ERR_*; written LAST, after the other fields */
  uint32_t rank;      /* rank that recorded the error */
  uint32_t peer;      /* peer it waited for, or GC_NO_PEER */
  uint32_t kernel;    /* GC_KERNEL_ID(...) */
  uint64_t epoch;     /* epoch of the failed call (section 3) */
  uint64_t waited;    /* flag / counter value it waited for */
  uint64_t observed;  /* value it last read */
  uint64_t detail;    /* BAD_ARGS: 1 nranks 2 rank/root 3 epoch 4 geometry/counts 5 peers 6 dtype 7 op;
                         CAPACITY: bytes (lines for _ll128); TIMEOUT/ABORTED: the peer polled */
  uint32_t block;     /* blockIdx.x of the recorder */
  uint32_t thread;    /* threadIdx.x of the recorder */
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

#ifdef __cplusplus
#define GC_STATIC_ASSERT(c, m) static_assert(c, m)
#else
#define GC_STATIC_ASSERT(c, m) _Static_assert(c, m)
#endif
GC_STATIC_ASSERT(offsetof(GcArgs, epoch) == GC_ARGS_OFFSET_EPOCH, "epoch");
GC_STATIC_ASSERT(offsetof(GcArgs, send) == GC_ARGS_OFFSET_SEND, "send");
GC_STATIC_ASSERT(offsetof(GcArgs, recv) == GC_ARGS_OFFSET_RECV, "recv");
GC_STATIC_ASSERT(offsetof(GcArgs, count) == GC_ARGS_OFFSET_COUNT, "count");
GC_STATIC_ASSERT(offsetof(GcArgs, rank) == GC_ARGS_OFFSET_RANK, "rank");
GC_STATIC_ASSERT(offsetof(GcArgs, nranks) == GC_ARGS_OFFSET_NRANKS, "nranks");
GC_STATIC_ASSERT(offsetof(GcArgs, dtype) == GC_ARGS_OFFSET_DTYPE, "dtype");
GC_STATIC_ASSERT(offsetof(GcArgs, op) == GC_ARGS_OFFSET_OP, "op");
GC_STATIC_ASSERT(offsetof(GcArgs, root) == GC_ARGS_OFFSET_ROOT, "root");
GC_STATIC_ASSERT(offsetof(GcArgs, reserved0) == GC_ARGS_OFFSET_RESERVED0, "reserved0");
GC_STATIC_ASSERT(offsetof(GcArgs, timeout_ns) == GC_ARGS_OFFSET_TIMEOUT_NS, "timeout_ns");
GC_STATIC_ASSERT(offsetof(GcArgs, abort_word) == GC_ARGS_OFFSET_ABORT_WORD, "abort_word");
GC_STATIC_ASSERT(offsetof(GcArgs, error_record) == GC_ARGS_OFFSET_ERROR_RECORD, "error_record");
GC_STATIC_ASSERT(offsetof(GcArgs, peers) == GC_ARGS_OFFSET_PEERS, "peers");
GC_STATIC_ASSERT(offsetof(GcArgs, a2av) == GC_ARGS_OFFSET_A2AV, "a2av");
GC_STATIC_ASSERT(sizeof(GcArgs) == GC_ARGS_SIZE, "GcArgs size");
GC_STATIC_ASSERT(offsetof(GcErrorRecord, code) == GC_ERR_OFFSET_CODE, "code");
GC_STATIC_ASSERT(offsetof(GcErrorRecord, rank) == GC_ERR_OFFSET_RANK, "rank");
GC_STATIC_ASSERT(offsetof(GcErrorRecord, peer) == GC_ERR_OFFSET_PEER, "peer");
GC_STATIC_ASSERT(offsetof(GcErrorRecord, kernel) == GC_ERR_OFFSET_KERNEL, "kernel");
GC_STATIC_ASSERT(offsetof(GcErrorRecord, epoch) == GC_ERR_OFFSET_EPOCH, "epoch");
GC_STATIC_ASSERT(offsetof(GcErrorRecord, waited) == GC_ERR_OFFSET_WAITED, "waited");
GC_STATIC_ASSERT(offsetof(GcErrorRecord, observed) == GC_ERR_OFFSET_OBSERVED, "observed");
GC_STATIC_ASSERT(offsetof(GcErrorRecord, detail) == GC_ERR_OFFSET_DETAIL, "detail");
GC_STATIC_ASSERT(offsetof(GcErrorRecord, block) == GC_ERR_OFFSET_BLOCK, "block");
GC_STATIC_ASSERT(offsetof(GcErrorRecord, thread) == GC_ERR_OFFSET_THREAD, "thread");
GC_STATIC_ASSERT(sizeof(GcErrorRecord) == GC_ERR_SIZE, "GcErrorRecord size");
GC_STATIC_ASSERT(GC_WS_ERR_CLAIM + 8 <= GC_WS_CTRL_BYTES, "control words fit");
GC_STATIC_ASSERT(GC_WS_EPOCH + 8 * GC_MAX_BLOCKS <= GC_WS_CTRL_BYTES, "epoch words fit");
GC_STATIC_ASSERT(GC_WS_SENT_OFFSET % 4096 == 0 && GC_WS_LL128_OFFSET % 4096 == 0 &&
                 GC_WS_PIPE_OFFSET % 4096 == 0 && GC_WS_RAW_OFFSET % 4096 == 0, "regions aligned");

#ifdef __CUDACC__
#define GC_HOST_DEVICE __host__ __device__
#else
#define GC_HOST_DEVICE
#endif
/* Element size in bytes of a GC_DT_* code, 0 for an unknown code. */
static inline GC_HOST_DEVICE uint32_t gc_dtype_size(uint32_t dtype) {
  return dtype == GC_DT_FLOAT32 || dtype == GC_DT_INT32 ? 4u
       : dtype == GC_DT_FLOAT64 || dtype == GC_DT_INT64 ? 8u
       : dtype == GC_DT_FLOAT16 || dtype == GC_DT_BFLOAT16 ? 2u
       : dtype == GC_DT_INT8 || dtype == GC_DT_UINT8 ? 1u : 0u;
}

#endif /* GPUCOLL_KERNEL_ABI_H_ */
