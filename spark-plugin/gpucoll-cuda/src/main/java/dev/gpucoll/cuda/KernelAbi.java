package dev.gpucoll.cuda;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.CollectiveTimeoutException;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.ReduceOp;
import java.util.List;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The Java side of native-kernels/include/gpucoll/kernel_abi.h (GC_ABI_VERSION 1): the GcArgs
 * struct the kernels take by value, the workspace layout, and the GcErrorRecord they fill. A unit
 * test parses the header and checks every constant here against its macro.
 */
final class KernelAbi {
  private KernelAbi() {}

  public static final int ABI_VERSION = 1;

  public static final int MAX_RANKS = 16;
  public static final int BLOCK_THREADS = 512;
  public static final int MAX_BLOCKS = 32;
  public static final int PIPE_BLOCKS = 16;
  public static final int BYTES_PER_BLOCK = 4096;
  public static final int MAX_GRID_RULE = 16;
  public static final long DEFAULT_TIMEOUT_NS = 10_000_000_000L;

  public static final long LL_MAX_BYTES = 65536;
  public static final long SENT_MAX_BYTES = 1048576;
  public static final int SENTINEL_WORD = 0xFFF7DEAD;
  public static final long LL128_MAX_LINES = 16384;
  public static final long RAW_PEER_BYTES = 262144;

  // GcArgs
  public static final int ARGS_OFFSET_EPOCH = 0;
  public static final int ARGS_OFFSET_SEND = 8;
  public static final int ARGS_OFFSET_RECV = 16;
  public static final int ARGS_OFFSET_COUNT = 24;
  public static final int ARGS_OFFSET_RANK = 32;
  public static final int ARGS_OFFSET_NRANKS = 36;
  public static final int ARGS_OFFSET_DTYPE = 40;
  public static final int ARGS_OFFSET_OP = 44;
  public static final int ARGS_OFFSET_ROOT = 48;
  public static final int ARGS_OFFSET_RESERVED0 = 52;
  public static final int ARGS_OFFSET_TIMEOUT_NS = 56;
  public static final int ARGS_OFFSET_ABORT_WORD = 64;
  public static final int ARGS_OFFSET_ERROR_RECORD = 72;
  public static final int ARGS_OFFSET_PEERS = 80;
  public static final int ARGS_OFFSET_A2AV = ARGS_OFFSET_PEERS + 8 * MAX_RANKS;
  public static final int ARGS_SIZE = ARGS_OFFSET_A2AV + 4 * 8 * MAX_RANKS;
  public static final int A2AV_SEND_COUNTS = 0;
  public static final int A2AV_SEND_DISPLS = 1;
  public static final int A2AV_RECV_COUNTS = 2;
  public static final int A2AV_RECV_DISPLS = 3;

  // Workspace
  public static final long WS_SENT_OFFSET = 32768L + 2L * MAX_RANKS * (LL_MAX_BYTES / 8) * 16;
  public static final long WS_SENT_BYTES = 2L * 2 * MAX_RANKS * (SENT_MAX_BYTES / 2);
  public static final long WS_ESC_BYTES = WS_SENT_BYTES / 2;
  public static final long WS_LL128_BYTES = 2L * (LL128_MAX_LINES / 2 + LL128_MAX_LINES) * 128;
  public static final long WS_PIPE_BYTES = (long) MAX_RANKS * MAX_BLOCKS * 2 * 16384;
  public static final long WS_RAW_BYTES = MAX_RANKS * RAW_PEER_BYTES;
  public static final long WORKSPACE_BYTES = WS_SENT_OFFSET + WS_SENT_BYTES + WS_ESC_BYTES + WS_LL128_BYTES
      + WS_PIPE_BYTES + WS_RAW_BYTES;
  public static final int WORKSPACE_ALIGN = 4096;

  // GcErrorRecord
  public static final int ERR_OFFSET_CODE = 0;
  public static final int ERR_OFFSET_RANK = 4;
  public static final int ERR_OFFSET_PEER = 8;
  public static final int ERR_OFFSET_KERNEL = 12;
  public static final int ERR_OFFSET_EPOCH = 16;
  public static final int ERR_OFFSET_WAITED = 24;
  public static final int ERR_OFFSET_OBSERVED = 32;
  public static final int ERR_OFFSET_DETAIL = 40;
  public static final int ERR_OFFSET_BLOCK = 48;
  public static final int ERR_OFFSET_THREAD = 52;
  public static final int ERR_SIZE = 56;
  public static final int OK = 0;
  public static final int ERR_TIMEOUT = 1;
  public static final int ERR_ABORTED = 2;
  public static final int ERR_BAD_ARGS = 3;
  public static final int ERR_CAPACITY = 4;
  public static final int NO_PEER = 0xFFFFFFFF;

  /** The control block in mapped host memory: the error record, then the u32 abort word. */
  public static final int CONTROL_ABORT_OFFSET = 64;
  public static final int CONTROL_BYTES = 128;

  public static final String[] COLLECTIVE_NAMES = {"?", "allReduce", "reduceScatter", "allGather", "allToAll",
      "allToAllv", "broadcast", "barrier"};
  public static final String[] VARIANT_NAMES = {"ll", "sentinel", "ll128", "pipe", "barrier2"};

  /** GC_GRID_FOR_BYTES: ceil(bytes / 4 KB) clamped to [1, 16]. */
  public static int gridForBytes(long bytes) {
    if (bytes <= BYTES_PER_BLOCK) {
      return 1;
    }
    if (bytes >= (long) BYTES_PER_BLOCK * MAX_GRID_RULE) {
      return MAX_GRID_RULE;
    }
    return (int) ((bytes + BYTES_PER_BLOCK - 1) / BYTES_PER_BLOCK);
  }

  /** GC_LL128_MAX_COUNT(dtype). */
  public static long ll128MaxCount(DataType t) {
    return LL128_MAX_LINES * (t == DataType.FLOAT64 || t == DataType.INT64 ? 15 : 30);
  }

  /** Kernel-name suffix of a reduction type (every type has reduction kernels). */
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

  /** Whether gc_allreduce_ll128_&lt;t&gt; exists: hardware atomics have no 8-bit accumulation type. */
  public static boolean hasLl128(DataType t) {
    return t != DataType.INT8 && t != DataType.UINT8;
  }

  /** One kernel call's arguments, before layout. */
  public record Call(int rank, int nranks, long epoch, long send, long recv, long count, DataType type, ReduceOp op,
      int root, long[] peers, long abortWord, long errorRecord, long timeoutNs, long[][] a2av) {}

  /** Lays {@code c} out as GcArgs into {@code args} (little-endian, as the GPU reads it). */
  public static void writeArgs(ByteBuffer args, Call c) {
    writeGroup(args, c.rank(), c.nranks(), c.timeoutNs(), c.abortWord(), c.errorRecord(), c.peers());
    writeCall(args, c.epoch(), c.send(), c.recv(), c.count(), c.type(), c.op(), c.root(), c.a2av());
  }

  /** The fields fixed for a communicator's life; written once. */
  public static void writeGroup(ByteBuffer args, int rank, int nranks, long timeoutNs, long abortWord,
      long errorRecord, long[] peers) {
    ByteBuffer b = args.order(ByteOrder.LITTLE_ENDIAN);
    b.putInt(ARGS_OFFSET_RANK, rank);
    b.putInt(ARGS_OFFSET_NRANKS, nranks);
    b.putInt(ARGS_OFFSET_RESERVED0, 0);
    b.putLong(ARGS_OFFSET_TIMEOUT_NS, timeoutNs);
    b.putLong(ARGS_OFFSET_ABORT_WORD, abortWord);
    b.putLong(ARGS_OFFSET_ERROR_RECORD, errorRecord);
    for (int r = 0; r < MAX_RANKS; r++) {
      b.putLong(ARGS_OFFSET_PEERS + 8 * r, r < nranks ? peers[r] : 0L);
    }
  }

  /**
   * The per-call fields. The allToAllv table is written only when given: the other kernels do not
   * read it, so a stale table there is harmless.
   */
  public static void writeCall(ByteBuffer args, long epoch, long send, long recv, long count, DataType type,
      ReduceOp op, int root, long[][] a2av) {
    ByteBuffer b = args.order(ByteOrder.LITTLE_ENDIAN);
    b.putLong(ARGS_OFFSET_EPOCH, epoch);
    b.putLong(ARGS_OFFSET_SEND, send);
    b.putLong(ARGS_OFFSET_RECV, recv);
    b.putLong(ARGS_OFFSET_COUNT, count);
    b.putInt(ARGS_OFFSET_DTYPE, type.ordinal());
    b.putInt(ARGS_OFFSET_OP, op.ordinal());
    b.putInt(ARGS_OFFSET_ROOT, root);
    if (a2av != null) {
      for (int k = 0; k < 4; k++) {
        for (int r = 0; r < MAX_RANKS; r++) {
          b.putLong(ARGS_OFFSET_A2AV + 8 * (k * MAX_RANKS + r), r < a2av[k].length ? a2av[k][r] : 0L);
        }
      }
    }
  }

  /** Zeroes the workspace and fills the sentinel region with GC_SENTINEL_WORD, on {@code stream}. */
  static void initWorkspace(long base, long stream) {
    CudaNative.memsetAsync(base, 0, WORKSPACE_BYTES, stream);
    CudaNative.memsetD32Async(base + WS_SENT_OFFSET, SENTINEL_WORD, WS_SENT_BYTES / 4, stream);
  }

  private static final VarHandle INTS = MethodHandles.byteBufferViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);

  /**
   * The error code in a control block (GcErrorRecord.code, written last by the kernel): a volatile
   * read, since the GPU writes it while the host polls.
   */
  static int errorCode(ByteBuffer control) {
    return (int) INTS.getVolatile(control, ERR_OFFSET_CODE);
  }

  static void setAbort(ByteBuffer control) {
    INTS.setVolatile(control, CONTROL_ABORT_OFFSET, 1);
  }

  /** The exception for a filled error record, naming peer, epoch and kernel. */
  static CollectiveException toException(ByteBuffer control, int rank, Collective c) {
    ByteBuffer rec = control.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    int code = rec.getInt(ERR_OFFSET_CODE);
    int peer = rec.getInt(ERR_OFFSET_PEER);
    int kernel = rec.getInt(ERR_OFFSET_KERNEL);
    long epoch = rec.getLong(ERR_OFFSET_EPOCH);
    long waited = rec.getLong(ERR_OFFSET_WAITED);
    long observed = rec.getLong(ERR_OFFSET_OBSERVED);
    long detail = rec.getLong(ERR_OFFSET_DETAIL);
    String where = kernelName(kernel) + " at epoch " + epoch + " (block " + rec.getInt(ERR_OFFSET_BLOCK)
        + ", thread " + rec.getInt(ERR_OFFSET_THREAD) + ")";
    Collective coll = c != null ? c : collectiveOf(kernel);
    return switch (code) {
      case ERR_TIMEOUT -> new CollectiveTimeoutException(rank, coll,
          peer == NO_PEER ? List.of() : List.of(peer),
          "timed out waiting for rank " + (peer == NO_PEER ? "?" : Integer.toString(peer)) + " in " + where
              + " (polling rank " + detail + ": wanted flag " + waited + ", last saw " + observed
              + "); the communicator must be closed");
      case ERR_ABORTED -> new CollectiveException(rank, coll, "aborted by the host in " + where + " (polling rank "
          + detail + ")");
      case ERR_BAD_ARGS -> new CollectiveException(rank, coll, "kernel rejected its arguments in " + where
          + ": detail " + detail);
      case ERR_CAPACITY -> new CollectiveException(rank, coll, "message of " + detail + " bytes exceeds the capacity of "
          + where);
      default -> new CollectiveException(rank, coll, "kernel error code " + code + " in " + where);
    };
  }

  /** "allReduce/ll" from a GC_KERNEL_ID. */
  static String kernelName(int id) {
    int coll = id / 16;
    int var = id % 16;
    String cn = coll > 0 && coll < COLLECTIVE_NAMES.length ? COLLECTIVE_NAMES[coll] : "kernel" + id;
    String vn = var < VARIANT_NAMES.length ? VARIANT_NAMES[var] : "v" + var;
    return cn + "/" + vn;
  }

  static Collective collectiveOf(int id) {
    return switch (id / 16) {
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
}
