/*
 * gpucoll kernel launch ABI: the contract between the CUDA kernels in gpucoll_kernels.fatbin and any
 * host that launches them (the Java backend through cuLaunchKernel, the C++ test harness through <<<>>>).
 * Plain C, fixed-width fields; every offset is pinned by a static_assert and a GC_*_OFFSET_* macro.
 *
 * ---------------------------------------------------------------------------------------------------
 * 1. Kernels
 * ---------------------------------------------------------------------------------------------------
 * Every kernel is extern "C" and takes exactly one parameter: a GcArgs struct passed BY VALUE
 * (cuLaunchKernel: kernelParams = { &args }, sharedMem = 0). WHICH kernels exist, the types and ops
 * each takes, its capacity and its grid rule are the kernel table (native-kernels/kernel-table.txt,
 * generated into kernel_table.h and the Java class KernelTable); the names follow
 *   gc_<collective>_<protocol>_<t>   reductions (allreduce, reducescatter), one kernel per type,
 *                                    <t> = f32 f64 f16 bf16 i32 i64 i8 u8; GcArgs.op selects the op
 *   gc_<collective>_<protocol>       data movement (allgather, alltoall, alltoallv, broadcast), one
 *                                    kernel for every type (bytes = count * gc_dtype_size(dtype))
 *   gc_barrier                       every rank enters before any leaves (flag barrier)
 *   gc_allreduce_pair_ll_<v>_<i>     MAXLOC / MINLOC of value-index pairs, one kernel per pair type
 *                                    (<v>_<i> = f32_i32 ... i64_i64; section 7)
 * Protocols: ll (one-shot over 16-byte LL slots), sentinel (two-shot over sentinel-prefilled units),
 * ll128 (two-shot over 128-byte lines with atomic adds; SUM/AVG, no 8-bit types), pipe (credit
 * pipeline, any size). The test programs' comparison kernels (the table's "bench" section,
 * test/bench_table.h) are no part of this contract. The host checks type, op and capacity against the table before it launches;
 * a kernel keeps only a cheap guard that records GC_ERR_BAD_ARGS / GC_ERR_CAPACITY.
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
 *     the table's grid rule per kernel: "fixed" (_pipe: GC_PIPE_BLOCKS) and "same-bytes":
 *       EVERY rank must use the same gridDim.x for the call (per-block channels).
 *     "bytes" (_ll, _sentinel, _ll128): correct with any grid; GC_GRID_FOR_BYTES(bytes)
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
 *   Epoch parity (epoch & 1) selects the half of every double-buffered region; LL128 lines and
 *   barrier words carry the full 64-bit epoch, LL packets its low 32 bits with the lowest bit set
 *   (proto_ll.cuh), so no slot ever needs resetting.
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
 *         GC_WS_BARRIER  + 8*(block*GC_MAX_RANKS + src)  gc_barrier flags (written by src)
 *         GC_WS_PIPE_FLAG+ 8*((src*GC_MAX_BLOCKS + block)*2 + half)  pipe chunk flags (written by src)
 *         GC_WS_PIPE_ACK + 8*((dst*GC_MAX_BLOCKS + block)*2 + half)  pipe credits (written by dst)
 *         GC_WS_PIPE_SENT+ 8*((dst*GC_MAX_BLOCKS + block)*2 + half)  last flag this rank sent (own state)
 *         GC_WS_ERR_CLAIM                                 highest epoch whose error was recorded (own)
 *         GC_WS_EPOCH    + 8*block                        last epoch this rank ran (own; section 3)
 *         GC_WS_BATCH_SIG+ 16*(half*GC_MAX_RANKS + src)    batch kernels: src's batch signature packet
 *                                                         {u32 lo, u32 flag, u32 hi, u32 flag} (written by src,
 *                                                         flag as an LL packet's; section 6)
 *     GC_WS_LL_OFFSET:    LL packets [2 halves][GC_MAX_RANKS src][GC_LL_SLOTS] of 16 B {u32 data, u32 flag, u32 data, u32 flag}
 *     GC_WS_SENT_OFFSET:  sentinel data [2 halves][2 phases][GC_MAX_RANKS src][GC_SENT_PEER_BYTES]
 *     GC_WS_ESC_OFFSET:   sentinel escape words, u64 per 16-B unit of the sentinel region, same index
 *     GC_WS_LL128_OFFSET: LL128 lines [2 halves][GC_LL128_LINES_PER_HALF] of 128 B:
 *                         RS lines first (GC_LL128_MAX_LINES/2, owner-local index), then AG lines
 *                         (GC_LL128_MAX_LINES); line = {u32 counter, u32 pad, 120 B data}
 *     GC_WS_PIPE_OFFSET:  pipe chunks [GC_MAX_RANKS src][GC_MAX_BLOCKS][2 halves][GC_PIPE_CHUNK_BYTES]
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
 *   epoch). After any error but GC_ERR_NAN (section 7) the workspace state is undefined: close the communicator.
 *
 * ---------------------------------------------------------------------------------------------------
 * 6. Batch kernels (capacity "packed": gc_allreduce_batch_ll_<t>)
 * ---------------------------------------------------------------------------------------------------
 *   Two parameters, GcArgs then GcBatch, both by value (kernelParams = { &args, &batch }). One launch
 *   runs GcBatch.calls one-shot allReduces of GcArgs.dtype and GcArgs.op as ONE packed LL message:
 *   call i's packets at slots first[i].. of the inbox, so the calls together take at most GC_LL_SLOTS
 *   slots (64 KB of payload per peer: 16 calls of 4 KB fit). Results are bit-identical to the same
 *   calls launched one by one. GcArgs.send/recv/count are not read.
 *   Every rank of a launch must have recorded the same batch. The last warp of block 0 (which moves
 *   no data in these kernels) stores this launch's signature -- a hash of GcBatch.hash, calls,
 *   count[], dtype and op -- into every peer's GC_WS_BATCH_SIG packet, fences, stores the arrival
 *   words, then awaits every peer's packet of this epoch: a different signature, or a peer that
 *   arrived at this epoch without one (it runs another kernel), records GC_ERR_BATCH_MISMATCH naming
 *   the lowest such peer (detail 0 / 1), on every rank whose batch kernel sees it. The kernel ends only
 *   after every peer's signature came, so no rank completes a mismatched batch.
 *
 * ---------------------------------------------------------------------------------------------------
 * 7. Pair kernels (MAXLOC / MINLOC: gc_allreduce_pair_ll_<v>_<i>)
 * ---------------------------------------------------------------------------------------------------
 *   GcArgs.dtype = the pair type (GC_PT_*, = dev.gpucoll.api.PairType), GcArgs.op = GC_LOC_MAXLOC or
 *   GC_LOC_MINLOC, count = pairs per rank, at most gc_pair_kernel_max_count (GC_LL_MAX_BYTES of pairs);
 *   gridDim.x = 1. A pair is the C struct {value; index;} (8 or 16 bytes). recv pair i = the pair with
 *   the largest (smallest) value among every rank's pair i, the lowest index among equal values
 *   (-0.0 == +0.0), whichever rank holds it; its bytes as sent. send == recv is allowed.
 *   A NaN value refuses the call on every rank alike: each records GC_ERR_NAN naming the lowest rank
 *   holding one and that rank's lowest such pair (peer = rank, detail = pair, observed = its index,
 *   waited = pair type << 8 | op) and writes nothing. The protocol still completes on every rank, so
 *   unlike the other errors this one leaves the workspace and the epochs in step: the group stays
 *   usable, and the host raises the record when it next waits for the stream.
 */
#ifndef GPUCOLL_KERNEL_ABI_H_
#define GPUCOLL_KERNEL_ABI_H_

#include "kernel_table.h"

/* ---- control words inside GC_WS_CTRL (bytes from the workspace base; section 4) ---- */
#define GC_WS_ARRIVED 0u
#define GC_WS_BARRIER 256u
#define GC_WS_PIPE_FLAG (GC_WS_BARRIER + 8u * GC_MAX_BLOCKS * GC_MAX_RANKS)          /* 4352 */
#define GC_WS_PIPE_ACK (GC_WS_PIPE_FLAG + 8u * GC_MAX_RANKS * GC_MAX_BLOCKS * 2u)    /* 12544 */
#define GC_WS_PIPE_SENT (GC_WS_PIPE_ACK + 8u * GC_MAX_RANKS * GC_MAX_BLOCKS * 2u)    /* 20736 */
#define GC_WS_ERR_CLAIM (GC_WS_PIPE_SENT + 8u * GC_MAX_RANKS * GC_MAX_BLOCKS * 2u)   /* 28928 */
#define GC_WS_EPOCH (GC_WS_ERR_CLAIM + 256u)                                          /* 29184 */
#define GC_WS_BATCH_SIG (GC_WS_EPOCH + 8u * GC_MAX_BLOCKS)                            /* 29440 */

GC_STATIC_ASSERT(GC_WS_ERR_CLAIM + 8 <= GC_WS_CTRL_BYTES, "control words fit");
GC_STATIC_ASSERT(GC_WS_EPOCH + 8 * GC_MAX_BLOCKS <= GC_WS_CTRL_BYTES, "epoch words fit");
GC_STATIC_ASSERT(GC_WS_BATCH_SIG % 16 == 0 && GC_WS_BATCH_SIG + 16 * 2 * GC_MAX_RANKS <= GC_WS_CTRL_BYTES,
                 "batch signature packets fit");
GC_STATIC_ASSERT(GC_WS_LL_BYTES == 2ull * GC_MAX_RANKS * GC_LL_SLOTS * 16u, "LL slots");
GC_STATIC_ASSERT(GC_WS_SENT_OFFSET % 4096 == 0 && GC_WS_LL128_OFFSET % 4096 == 0 &&
                 GC_WS_PIPE_OFFSET % 4096 == 0, "regions aligned");

#endif /* GPUCOLL_KERNEL_ABI_H_ */
