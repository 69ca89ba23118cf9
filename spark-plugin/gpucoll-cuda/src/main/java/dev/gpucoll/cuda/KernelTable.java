// GENERATED from native-kernels/kernel-table.txt by native-kernels/scripts/KernelTableGen.java; do not edit (the build fails when this file differs from what the table gives).
package dev.gpucoll.cuda;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.LocOp;
import dev.gpucoll.api.PairType;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.core.Algorithm;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;

/**
 * The kernel table (native-kernels/kernel-table.txt) in Java: which kernels exist in the shipped fatbin,
 * the types, ops and sizes each takes, the grid each is launched with, the {@link Algorithm} each
 * runs, and the byte layout of GcArgs, GcErrorRecord and the workspace. The kernels include the same
 * table as include/gpucoll/kernel_table.h, so the two cannot disagree. The table's benchmark section
 * (kernels of the test programs only) is not here.
 *
 * <p>Lookups:
 * <ul>
 *   <li>{@link #kernel(Collective, Protocol)} or {@link #kernel(Collective, Algorithm)}: the
 *       {@link Kernel} for a collective on a protocol, or {@code null} when the table has none;
 *   <li>{@link Kernel#name(DataType)}: the kernel function's name for an element type ({@code null}
 *       when that kernel does not take the type);
 *   <li>{@link Kernel#capacityElements(DataType)}: the largest count (elements; per peer for data
 *       movement) the kernel takes;
 *   <li>{@link Kernel#grid(long)}: gridDim.x for a call of that many per-peer bytes
 *       (blockDim.x is always {@link #BLOCK_THREADS});
 *   <li>{@link #ofKernelId(int)}: the kernel a GcErrorRecord names.
 * </ul>
 */
public final class KernelTable {
  private KernelTable() {}

  // ---- limits, geometry, capacities
  /** raised whenever a kernel, GcArgs or the workspace changes incompatibly. */
  public static final int ABI_VERSION = 2;
  public static final int MAX_RANKS = 16;
  /** blockDim.x of every kernel. */
  public static final int BLOCK_THREADS = 512;
  /** largest gridDim.x. */
  public static final int MAX_BLOCKS = 32;
  /** gridDim.x of every _pipe kernel (per-block channels). */
  public static final int PIPE_BLOCKS = 16;
  /** grid rule "bytes": ceil(bytes / BYTES_PER_BLOCK) .... */
  public static final int BYTES_PER_BLOCK = 4096;
  /** ... clamped to [1, MAX_GRID_RULE]: one LL slot per thread up to 64 KB. */
  public static final int MAX_GRID_RULE = 16;
  /** GcArgs.timeout_ns = 0 means this (10 s). */
  public static final long DEFAULT_TIMEOUT_NS = 10000000000L;
  /** per-peer payload of an _ll kernel. */
  public static final int LL_MAX_BYTES = 65536;
  /** 8 data bytes per 16-byte slot. */
  public static final int LL_SLOTS = 8192;
  /** message bytes of gc_allreduce_sentinel_&lt;t&gt;. */
  public static final int SENT_MAX_BYTES = 1048576;
  /** per (half, phase, src): the n=2 chunk. */
  public static final int SENT_PEER_BYTES = 524288;
  /** a NaN payload as fp32; prefill pattern of the sentinel region. */
  public static final int SENTINEL_WORD = 0xFFF7DEAD;
  public static final int LL128_LINE_BYTES = 128;
  /** 8-byte header {u32 counter, u32 pad}. */
  public static final int LL128_DATA_BYTES = 120;
  public static final int LL128_MAX_LINES = 16384;
  public static final int LL128_LINES_PER_HALF = 24576;
  public static final int PIPE_CHUNK_BYTES = 16384;
  /** calls one packed (batch) kernel takes: GcBatch stays 1552 B, so with GcArgs the parameter is under the 4 KB every driver accepts. */
  public static final int MAX_BATCH_CALLS = 64;
  public static final int A2AV_SEND_COUNTS = 0;
  public static final int A2AV_SEND_DISPLS = 1;
  public static final int A2AV_RECV_COUNTS = 2;
  public static final int A2AV_RECV_DISPLS = 3;
  public static final int OK = 0;
  /** waited timeout_ns; peer = a rank that never started this call, else the peer polled. */
  public static final int ERR_TIMEOUT = 1;
  /** the host set *abort_word. */
  public static final int ERR_ABORTED = 2;
  /** rank/nranks/dtype/op/epoch/grid invalid; detail says which. */
  public static final int ERR_BAD_ARGS = 3;
  /** message larger than this kernel's capacity; detail = bytes. */
  public static final int ERR_CAPACITY = 4;
  /** a batch kernel: rank `peer` recorded a different batch (detail says how). */
  public static final int ERR_BATCH_MISMATCH = 5;
  /** MAXLOC/MINLOC: rank `peer`'s pair `detail` has a NaN value (the lowest such rank, then pair); nothing written, the group stays usable. */
  public static final int ERR_NAN = 6;
  public static final int NO_PEER = 0xFFFFFFFF;
  public static final int WORKSPACE_ALIGN = 4096;

  // ---- GcArgs (byte offsets, little-endian)
  /** u64: host epoch, or 0 = the next one from the device epoch words (kernel_abi.h section 3). */
  public static final int ARGS_OFFSET_EPOCH = 0;
  /** u64: device pointer. */
  public static final int ARGS_OFFSET_SEND = 8;
  /** u64: device pointer. */
  public static final int ARGS_OFFSET_RECV = 16;
  /** u64: elements (ignored by allToAllv and barrier). */
  public static final int ARGS_OFFSET_COUNT = 24;
  /** u32: this rank, &lt; nranks. */
  public static final int ARGS_OFFSET_RANK = 32;
  /** u32: 1 .. MAX_RANKS. */
  public static final int ARGS_OFFSET_NRANKS = 36;
  /** u32: GC_DT_* (a pairs kernel: GC_PT_*). */
  public static final int ARGS_OFFSET_DTYPE = 40;
  /** u32: GC_OP_* (reductions; a pairs kernel: GC_LOC_*). */
  public static final int ARGS_OFFSET_OP = 44;
  /** u32: broadcast root. */
  public static final int ARGS_OFFSET_ROOT = 48;
  /** u32: 0. */
  public static final int ARGS_OFFSET_RESERVED0 = 52;
  /** u64: 0 = DEFAULT_TIMEOUT_NS. */
  public static final int ARGS_OFFSET_TIMEOUT_NS = 56;
  /** u64: device-visible address of a u32 (mapped host memory), or 0. */
  public static final int ARGS_OFFSET_ABORT_WORD = 64;
  /** u64: device-visible address of a GcErrorRecord (mapped host memory); required. */
  public static final int ARGS_OFFSET_ERROR_RECORD = 72;
  /** u64[16]: workspace base of each rank, mapped in this process. */
  public static final int ARGS_OFFSET_PEERS = 80;
  /** i64[4, 16]: allToAllv counts/displacements in elements (rows A2AV_*); else unused. */
  public static final int ARGS_OFFSET_A2AV = 208;
  public static final int ARGS_SIZE = 720;

  // ---- GcBatch (byte offsets, little-endian)
  /** u32: 1 .. MAX_BATCH_CALLS. */
  public static final int BATCH_OFFSET_CALLS = 0;
  /** u32: first[calls-1] + the last call's slots: the packed message, &lt;= LL_SLOTS. */
  public static final int BATCH_OFFSET_SLOTS = 4;
  /** u64: the recorded batch's hash (every call, also those not in this launch); equal on every rank. */
  public static final int BATCH_OFFSET_HASH = 8;
  /** u64[64]. */
  public static final int BATCH_OFFSET_SEND = 16;
  /** u64[64]. */
  public static final int BATCH_OFFSET_RECV = 528;
  /** u32[64]. */
  public static final int BATCH_OFFSET_COUNT = 1040;
  /** u32[64]: first slot of each call, ascending. */
  public static final int BATCH_OFFSET_FIRST = 1296;
  public static final int BATCH_SIZE = 1552;

  // ---- GcErrorRecord (byte offsets, little-endian)
  /** u32: GC_OK or GC_ERR_*; written LAST, after the other fields. */
  public static final int ERR_OFFSET_CODE = 0;
  /** u32: rank that recorded the error. */
  public static final int ERR_OFFSET_RANK = 4;
  /** u32: peer it waited for, or GC_NO_PEER. */
  public static final int ERR_OFFSET_PEER = 8;
  /** u32: collective id * 16 + protocol id. */
  public static final int ERR_OFFSET_KERNEL = 12;
  /** u64: epoch of the failed call. */
  public static final int ERR_OFFSET_EPOCH = 16;
  /** u64: flag / counter value it waited for. */
  public static final int ERR_OFFSET_WAITED = 24;
  /** u64: value it last read. */
  public static final int ERR_OFFSET_OBSERVED = 32;
  /** u64: BAD_ARGS: 1 nranks 2 rank/root 3 epoch 4 geometry/counts 5 peers 6 dtype 7 op 8 batch layout; CAPACITY: bytes (lines for LL128); TIMEOUT/ABORTED: the peer polled; BATCH_MISMATCH: 0 the peer's batch signature differs (waited = mine, observed = the peer's), 1 the peer ran another kernel at this epoch; NAN: the pair's number (peer = its rank, observed = its index, waited = pair type &lt;&lt; 8 | loc op). */
  public static final int ERR_OFFSET_DETAIL = 40;
  /** u32: blockIdx.x of the recorder. */
  public static final int ERR_OFFSET_BLOCK = 48;
  /** u32: threadIdx.x of the recorder. */
  public static final int ERR_OFFSET_THREAD = 52;
  public static final int ERR_SIZE = 56;

  // ---- workspace regions (bytes from the workspace base)
  /** control words (kernel_abi.h section 4). */
  public static final long WS_CTRL_OFFSET = 0L;
  public static final long WS_CTRL_BYTES = 32768L;
  /** LL slots [2 halves][src][slot] of 16 B. */
  public static final long WS_LL_OFFSET = 32768L;
  public static final long WS_LL_BYTES = 4194304L;
  /** sentinel data [2 halves][2 phases][src][bytes]. */
  public static final long WS_SENT_OFFSET = 4227072L;
  public static final long WS_SENT_BYTES = 33554432L;
  /** sentinel escape words, u64 per 16-B unit. */
  public static final long WS_ESC_OFFSET = 37781504L;
  public static final long WS_ESC_BYTES = 16777216L;
  public static final long WS_LL128_OFFSET = 54558720L;
  public static final long WS_LL128_BYTES = 6291456L;
  public static final long WS_PIPE_OFFSET = 60850176L;
  public static final long WS_PIPE_BYTES = 16777216L;
  /** Bytes of one rank's workspace. */
  public static final long WORKSPACE_BYTES = 77627392L;

  /** The protocols a kernel moves data with; {@link #id()} is the C GC_PROTO_* code. */
  public enum Protocol {
    /** 16-byte slots {8 B data, 8 B epoch flag}, one store each. */
    LL(0, "ll"),
    /** raw 16-byte units over a sentinel-prefilled region, escape words. */
    SENTINEL(1, "sentinel"),
    /** 128-byte lines, hardware-atomic adds, an arrival counter per line. */
    LL128(2, "ll128"),
    /** 16 KB chunks per block with credits: any size. */
    PIPE(3, "pipe"),
    /** per-block barrier words (the barrier collective). */
    FLAG_BARRIER(5, ""),
    /** LL packets of a batch of calls, packed into one message at slot-aligned offsets. */
    LL_BATCH(6, "batch_ll"),
    /** LL packets of value-index pairs (MAXLOC/MINLOC), folded in rank order by one block. */
    LL_PAIR(7, "pair_ll");

    private final int id;
    private final String abiName;

    Protocol(int id, String abiName) {
      this.id = id;
      this.abiName = abiName;
    }

    /** GC_PROTO_* code (GcErrorRecord.kernel = collective id * 16 + this). */
    public int id() {
      return id;
    }

    /** The protocol's part of a kernel name ("ll" in gc_allreduce_ll_f32); empty when kernels of it are named after the collective alone. */
    public String abiName() {
      return abiName;
    }
  }

  /** How a kernel's gridDim.x is chosen. */
  public enum GridRule {
    /** {@link #gridForBytes} of the per-peer bytes; any grid is correct, ranks may differ. */
    BYTES,
    /** {@link #gridForBytes} of the per-peer bytes, and every rank must launch the same grid. */
    SAME_BYTES,
    /** A fixed grid, the same on every rank (per-block channels). */
    FIXED,
    /** One block. */
    ONE
  }

  /** One kernel of the table: a collective on a protocol, for a set of types and ops. */
  public static final class Kernel {
    private final Collective collective;
    private final Protocol protocol;
    private final Algorithm algorithm;
    private final String[] names;
    private final long[] capacity;
    private final boolean[] ops;
    private final GridRule gridRule;
    private final int fixedGrid;
    private final boolean packed;
    /** A pair kernel's names, capacities and pair reductions by PairType / LocOp ordinal; null for the others. */
    private final String[] pairNames;
    private final long[] pairCapacity;
    private final boolean[] locOps;

    Kernel(Collective collective, Protocol protocol, Algorithm algorithm, String[] names,
        long[] capacity, boolean[] ops, GridRule gridRule, int fixedGrid, boolean packed, String[] pairNames,
        long[] pairCapacity, boolean[] locOps) {
      this.collective = collective;
      this.protocol = protocol;
      this.algorithm = algorithm;
      this.names = names;
      this.capacity = capacity;
      this.ops = ops;
      this.gridRule = gridRule;
      this.fixedGrid = fixedGrid;
      this.packed = packed;
      this.pairNames = pairNames;
      this.pairCapacity = pairCapacity;
      this.locOps = locOps;
    }

    public Collective collective() {
      return collective;
    }

    public Protocol protocol() {
      return protocol;
    }

    /** The path a call on this kernel reports. */
    public Algorithm algorithm() {
      return algorithm;
    }

    /**
     * A batch kernel: it takes GcBatch (up to {@link #MAX_BATCH_CALLS} calls) beside GcArgs, and
     * {@link #capacityElements} bounds the calls' slot-aligned payloads together.
     */
    public boolean packed() {
      return packed;
    }

    /** A pair kernel: MAXLOC / MINLOC of value-index pairs, one kernel per {@link PairType} (no DataType). */
    public boolean pairs() {
      return pairNames != null;
    }

    /** The kernel function for pairs of {@code t}, or {@code null} when this is no pair kernel. */
    public String name(PairType t) {
      return pairNames == null ? null : pairNames[t.ordinal()];
    }

    /** The largest count of {@code t} pairs this kernel takes; 0 when this is no pair kernel. */
    public long capacityPairs(PairType t) {
      return pairCapacity == null ? 0 : pairCapacity[t.ordinal()];
    }

    /** Whether the kernel reduces pairs with {@code op}. */
    public boolean supports(LocOp op) {
      return locOps != null && locOps[op.ordinal()];
    }

    /** GcErrorRecord.kernel of this kernel. */
    public int id() {
      return kernelId(collective, protocol);
    }

    /** The kernel function for elements of {@code t}, or {@code null} when this kernel does not take {@code t}. */
    public String name(DataType t) {
      return names[t.ordinal()];
    }

    public boolean supports(DataType t) {
      return names[t.ordinal()] != null;
    }

    /** Whether the kernel reduces with {@code op} (false for every op when it does not reduce). */
    public boolean supports(ReduceOp op) {
      return ops[op.ordinal()];
    }

    /**
     * The largest count of {@code t} elements this kernel takes (per peer for data movement);
     * {@link Long#MAX_VALUE} when unbounded, 0 when it does not take {@code t}.
     */
    public long capacityElements(DataType t) {
      return capacity[t.ordinal()];
    }

    public GridRule gridRule() {
      return gridRule;
    }

    /** Whether every rank of a call must launch the same gridDim.x. */
    public boolean sameGridOnEveryRank() {
      return gridRule == GridRule.SAME_BYTES || gridRule == GridRule.FIXED;
    }

    /** gridDim.x for a call moving {@code perPeerBytes} to or from each peer. */
    public int grid(long perPeerBytes) {
      return switch (gridRule) {
        case BYTES, SAME_BYTES -> gridForBytes(perPeerBytes);
        case FIXED -> fixedGrid;
        case ONE -> 1;
      };
    }

    @Override
    public String toString() {
      return collective.apiName() + "/" + protocol.name().toLowerCase(java.util.Locale.ROOT);
    }
  }

  /** How a kernel's capacity is given: bytes per peer (a constant), LL128 lines, or none. */
  private enum Capacity { BYTES, LINES, UNBOUNDED }

  private static final Set<DataType> ALL_TYPES = EnumSet.allOf(DataType.class);
  private static final Set<LocOp> ALL_LOC_OPS = EnumSet.allOf(LocOp.class);
  private static final Set<ReduceOp> ALL_OPS = EnumSet.allOf(ReduceOp.class);
  private static final Set<ReduceOp> NO_OPS = EnumSet.noneOf(ReduceOp.class);

  // collective, protocol, algorithm, name (the type suffix follows for reductions), types,
  // ops, capacity (with its bytes), grid rule (with its fixed grid)
  private static final List<Kernel> KERNELS = List.of(
      kernel(Collective.ALL_REDUCE, Protocol.LL, Algorithm.GPU_LL_ONESHOT, "gc_allreduce_ll", true, ALL_TYPES, ALL_OPS, Capacity.BYTES, LL_MAX_BYTES, GridRule.BYTES, 0, false),
      kernel(Collective.ALL_REDUCE, Protocol.SENTINEL, Algorithm.GPU_SENTINEL_TWOSHOT, "gc_allreduce_sentinel", true, ALL_TYPES, ALL_OPS, Capacity.BYTES, SENT_MAX_BYTES, GridRule.BYTES, 0, false),
      kernel(Collective.ALL_REDUCE, Protocol.LL128, Algorithm.GPU_LL128_ATOMIC, "gc_allreduce_ll128", true, EnumSet.of(DataType.FLOAT32, DataType.FLOAT64, DataType.FLOAT16, DataType.BFLOAT16, DataType.INT32, DataType.INT64), EnumSet.of(ReduceOp.SUM, ReduceOp.AVG), Capacity.LINES, 0, GridRule.BYTES, 0, false),
      kernel(Collective.ALL_REDUCE, Protocol.PIPE, Algorithm.GPU_PIPE, "gc_allreduce_pipe", true, ALL_TYPES, ALL_OPS, Capacity.UNBOUNDED, 0, GridRule.FIXED, PIPE_BLOCKS, false),
      kernel(Collective.REDUCE_SCATTER, Protocol.LL, Algorithm.GPU_LL, "gc_reducescatter_ll", true, ALL_TYPES, ALL_OPS, Capacity.BYTES, LL_MAX_BYTES, GridRule.BYTES, 0, false),
      kernel(Collective.REDUCE_SCATTER, Protocol.PIPE, Algorithm.GPU_PIPE, "gc_reducescatter_pipe", true, ALL_TYPES, ALL_OPS, Capacity.UNBOUNDED, 0, GridRule.FIXED, PIPE_BLOCKS, false),
      kernel(Collective.ALL_GATHER, Protocol.LL, Algorithm.GPU_LL, "gc_allgather_ll", false, ALL_TYPES, NO_OPS, Capacity.BYTES, LL_MAX_BYTES, GridRule.BYTES, 0, false),
      kernel(Collective.ALL_GATHER, Protocol.PIPE, Algorithm.GPU_PIPE, "gc_allgather_pipe", false, ALL_TYPES, NO_OPS, Capacity.UNBOUNDED, 0, GridRule.FIXED, PIPE_BLOCKS, false),
      kernel(Collective.ALL_TO_ALL, Protocol.LL, Algorithm.GPU_LL, "gc_alltoall_ll", false, ALL_TYPES, NO_OPS, Capacity.BYTES, LL_MAX_BYTES, GridRule.BYTES, 0, false),
      kernel(Collective.ALL_TO_ALL, Protocol.PIPE, Algorithm.GPU_PIPE, "gc_alltoall_pipe", false, ALL_TYPES, NO_OPS, Capacity.UNBOUNDED, 0, GridRule.FIXED, PIPE_BLOCKS, false),
      kernel(Collective.ALL_TO_ALLV, Protocol.LL, Algorithm.GPU_LL, "gc_alltoallv_ll", false, ALL_TYPES, NO_OPS, Capacity.BYTES, LL_MAX_BYTES, GridRule.BYTES, 0, false),
      kernel(Collective.ALL_TO_ALLV, Protocol.PIPE, Algorithm.GPU_PIPE, "gc_alltoallv_pipe", false, ALL_TYPES, NO_OPS, Capacity.UNBOUNDED, 0, GridRule.FIXED, PIPE_BLOCKS, false),
      kernel(Collective.BROADCAST, Protocol.LL, Algorithm.GPU_LL, "gc_broadcast_ll", false, ALL_TYPES, NO_OPS, Capacity.BYTES, LL_MAX_BYTES, GridRule.BYTES, 0, false),
      kernel(Collective.BROADCAST, Protocol.PIPE, Algorithm.GPU_PIPE, "gc_broadcast_pipe", false, ALL_TYPES, NO_OPS, Capacity.UNBOUNDED, 0, GridRule.FIXED, PIPE_BLOCKS, false),
      kernel(Collective.BARRIER, Protocol.FLAG_BARRIER, Algorithm.GPU_BARRIER, "gc_barrier", false, ALL_TYPES, NO_OPS, Capacity.UNBOUNDED, 0, GridRule.ONE, 0, false),
      kernel(Collective.ALL_REDUCE, Protocol.LL_BATCH, Algorithm.GPU_LL_ONESHOT, "gc_allreduce_batch_ll", true, ALL_TYPES, ALL_OPS, Capacity.BYTES, LL_MAX_BYTES, GridRule.BYTES, 0, true),
      pairKernel(Collective.ALL_REDUCE, Protocol.LL_PAIR, Algorithm.GPU_LL_ONESHOT, "gc_allreduce_pair_ll", ALL_LOC_OPS, LL_MAX_BYTES, GridRule.ONE, 0));

  /** One row of the table, its names and capacities per element type (0 and no name for a type it does not take). */
  private static Kernel kernel(Collective c, Protocol p, Algorithm a, String name, boolean perType,
      Set<DataType> types, Set<ReduceOp> ops, Capacity capacity, long capacityBytes, GridRule rule, int fixedGrid,
      boolean packed) {
    String[] names = new String[DataType.values().length];
    long[] elements = new long[names.length];
    for (DataType t : types) {
      names[t.ordinal()] = perType ? name + "_" + typeSuffix(t) : name;
      elements[t.ordinal()] = switch (capacity) {
        case BYTES -> capacityBytes / t.byteSize();
        case LINES -> (long) LL128_MAX_LINES * (LL128_DATA_BYTES / accumulationBytes(t));
        case UNBOUNDED -> Long.MAX_VALUE;
      };
    }
    boolean[] takes = new boolean[ReduceOp.values().length];
    ops.forEach(op -> takes[op.ordinal()] = true);
    return new Kernel(c, p, a, names, elements, takes, rule, fixedGrid, packed, null, null, null);
  }

  /** A pair kernel's row: one kernel per pair type, up to {@code capacityBytes} of pairs. */
  private static Kernel pairKernel(Collective c, Protocol p, Algorithm a, String name, Set<LocOp> ops,
      long capacityBytes, GridRule rule, int fixedGrid) {
    String[] names = new String[PairType.values().length];
    long[] pairs = new long[names.length];
    for (PairType t : PairType.values()) {
      names[t.ordinal()] = name + "_" + pairSuffix(t);
      pairs[t.ordinal()] = capacityBytes / t.byteSize();
    }
    boolean[] takes = new boolean[LocOp.values().length];
    ops.forEach(op -> takes[op.ordinal()] = true);
    return new Kernel(c, p, a, new String[DataType.values().length], new long[DataType.values().length],
        new boolean[ReduceOp.values().length], rule, fixedGrid, false, names, pairs, takes);
  }

  private static final Kernel[][] BY_COLLECTIVE = new Kernel[Collective.values().length][Protocol.values().length];

  static {
    for (Kernel k : KERNELS) {
      BY_COLLECTIVE[k.collective().ordinal()][k.protocol().ordinal()] = k;
    }
    // The C codes are the API ordinals: a reordered enum must fail here, not launch the wrong type.
    requireCode(DataType.FLOAT32.ordinal(), 0, "DataType.FLOAT32");
    requireCode(DataType.FLOAT64.ordinal(), 1, "DataType.FLOAT64");
    requireCode(DataType.FLOAT16.ordinal(), 2, "DataType.FLOAT16");
    requireCode(DataType.BFLOAT16.ordinal(), 3, "DataType.BFLOAT16");
    requireCode(DataType.INT32.ordinal(), 4, "DataType.INT32");
    requireCode(DataType.INT64.ordinal(), 5, "DataType.INT64");
    requireCode(DataType.INT8.ordinal(), 6, "DataType.INT8");
    requireCode(DataType.UINT8.ordinal(), 7, "DataType.UINT8");
    requireCode(ReduceOp.SUM.ordinal(), 0, "ReduceOp.SUM");
    requireCode(ReduceOp.PROD.ordinal(), 1, "ReduceOp.PROD");
    requireCode(ReduceOp.MIN.ordinal(), 2, "ReduceOp.MIN");
    requireCode(ReduceOp.MAX.ordinal(), 3, "ReduceOp.MAX");
    requireCode(ReduceOp.AVG.ordinal(), 4, "ReduceOp.AVG");
    requireCode(PairType.FLOAT32_INT32.ordinal(), 0, "PairType.FLOAT32_INT32");
    requireCode(PairType.FLOAT32_INT64.ordinal(), 1, "PairType.FLOAT32_INT64");
    requireCode(PairType.FLOAT64_INT32.ordinal(), 2, "PairType.FLOAT64_INT32");
    requireCode(PairType.FLOAT64_INT64.ordinal(), 3, "PairType.FLOAT64_INT64");
    requireCode(PairType.INT32_INT32.ordinal(), 4, "PairType.INT32_INT32");
    requireCode(PairType.INT32_INT64.ordinal(), 5, "PairType.INT32_INT64");
    requireCode(PairType.INT64_INT32.ordinal(), 6, "PairType.INT64_INT32");
    requireCode(PairType.INT64_INT64.ordinal(), 7, "PairType.INT64_INT64");
    requireCode(LocOp.MAXLOC.ordinal(), 0, "LocOp.MAXLOC");
    requireCode(LocOp.MINLOC.ordinal(), 1, "LocOp.MINLOC");
    requireCode(DataType.values().length, 8, "DataType count");
    requireCode(PairType.values().length, 8, "PairType count");
    requireCode(LocOp.values().length, 2, "LocOp count");
    requireCode(ReduceOp.values().length, 5, "ReduceOp count");
  }

  private static void requireCode(int java, int c, String what) {
    if (java != c) {
      throw new IllegalStateException(what + " is " + java + " in Java but " + c + " in the kernel table");
    }
  }

  /** Every kernel of the shipped fatbin, in table order. */
  public static List<Kernel> kernels() {
    return KERNELS;
  }

  /** The kernel for {@code c} on {@code p}, or {@code null} when the table has none. */
  public static Kernel kernel(Collective c, Protocol p) {
    return BY_COLLECTIVE[c.ordinal()][p.ordinal()];
  }

  /** The kernel for {@code c} that runs {@code a} call by call (no batch or pair kernel), or {@code null} when none does (NCCL, host paths). */
  public static Kernel kernel(Collective c, Algorithm a) {
    for (Kernel k : BY_COLLECTIVE[c.ordinal()]) {
      if (k != null && k.algorithm() == a && !k.packed() && !k.pairs()) {
        return k;
      }
    }
    return null;
  }

  /** GcErrorRecord.kernel of {@code c} on {@code p}. */
  public static int kernelId(Collective c, Protocol p) {
    return collectiveId(c) * 16 + p.id();
  }

  /** The kernel a GcErrorRecord.kernel value names, or {@code null}. */
  public static Kernel ofKernelId(int id) {
    for (Kernel k : KERNELS) {
      if (k.id() == id) {
        return k;
      }
    }
    return null;
  }

  /** The C GC_COLL_* code of {@code c}. */
  public static int collectiveId(Collective c) {
    return switch (c) {
      case ALL_REDUCE -> 1;
      case REDUCE_SCATTER -> 2;
      case ALL_GATHER -> 3;
      case ALL_TO_ALL -> 4;
      case ALL_TO_ALLV -> 5;
      case BROADCAST -> 6;
      case BARRIER -> 7;
    };
  }

  /** The collective of a GC_COLL_* code, or {@code null}. */
  public static Collective collectiveOfId(int id) {
    return switch (id) {
      case 1 -> Collective.ALL_REDUCE;
      case 2 -> Collective.REDUCE_SCATTER;
      case 3 -> Collective.ALL_GATHER;
      case 4 -> Collective.ALL_TO_ALL;
      case 5 -> Collective.ALL_TO_ALLV;
      case 6 -> Collective.BROADCAST;
      case 7 -> Collective.BARRIER;
      default -> null;
    };
  }

  /** Grid rule "bytes": ceil(bytes / BYTES_PER_BLOCK) clamped to [1, MAX_GRID_RULE]. */
  public static int gridForBytes(long bytes) {
    if (bytes <= BYTES_PER_BLOCK) {
      return 1;
    }
    if (bytes >= (long) BYTES_PER_BLOCK * MAX_GRID_RULE) {
      return MAX_GRID_RULE;
    }
    return (int) ((bytes + BYTES_PER_BLOCK - 1) / BYTES_PER_BLOCK);
  }

  /** The kernel-name suffix of an element type ("f32"). */
  public static String typeSuffix(DataType t) {
    return switch (t) {
      case FLOAT32 -> "f32";
      case FLOAT64 -> "f64";
      case FLOAT16 -> "f16";
      case BFLOAT16 -> "bf16";
      case INT32 -> "i32";
      case INT64 -> "i64";
      case INT8 -> "i8";
      case UINT8 -> "u8";
    };
  }

  /** The kernel-name suffix of a pair type ("f64_i32"). */
  public static String pairSuffix(PairType t) {
    return switch (t) {
      case FLOAT32_INT32 -> "f32_i32";
      case FLOAT32_INT64 -> "f32_i64";
      case FLOAT64_INT32 -> "f64_i32";
      case FLOAT64_INT64 -> "f64_i64";
      case INT32_INT32 -> "i32_i32";
      case INT32_INT64 -> "i32_i64";
      case INT64_INT32 -> "i64_i32";
      case INT64_INT64 -> "i64_i64";
    };
  }

  /** Bytes of the type a reduction of {@code t} accumulates in (16-bit floats: fp32). */
  public static int accumulationBytes(DataType t) {
    return switch (t) {
      case FLOAT32 -> 4;
      case FLOAT64 -> 8;
      case FLOAT16 -> 4;
      case BFLOAT16 -> 4;
      case INT32 -> 4;
      case INT64 -> 8;
      case INT8 -> 1;
      case UINT8 -> 1;
    };
  }
}
