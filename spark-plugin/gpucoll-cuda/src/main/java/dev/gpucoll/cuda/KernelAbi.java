package dev.gpucoll.cuda;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.CollectiveMismatchException;
import dev.gpucoll.api.CollectiveTimeoutException;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.LocOp;
import dev.gpucoll.api.PairType;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.core.pairs.PairFold;
import java.util.List;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Writing GcArgs (the struct the kernels take by value), initialising the workspace, and reading
 * the GcErrorRecord they fill; every offset and size comes from {@link KernelTable}, generated from
 * the same kernel table as the kernels' header.
 */
final class KernelAbi {
  private KernelAbi() {}

  /** The control block in mapped host memory: the error record, then the u32 abort word. */
  public static final int CONTROL_ABORT_OFFSET = 64;
  public static final int CONTROL_BYTES = 128;

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
    // The kernels check only their own entry of the peer table (a check of all 16 per call cost
    // ~0.3 us on the GPU): a null entry is refused here, once per group.
    for (int r = 0; r < nranks; r++) {
      if (peers[r] == 0L) {
        throw new IllegalStateException("rank " + rank + ": the workspace of rank " + r + " is not mapped (null pointer)");
      }
    }
    ByteBuffer b = args.order(ByteOrder.LITTLE_ENDIAN);
    b.putInt(KernelTable.ARGS_OFFSET_RANK, rank);
    b.putInt(KernelTable.ARGS_OFFSET_NRANKS, nranks);
    b.putInt(KernelTable.ARGS_OFFSET_RESERVED0, 0);
    b.putLong(KernelTable.ARGS_OFFSET_TIMEOUT_NS, timeoutNs);
    b.putLong(KernelTable.ARGS_OFFSET_ABORT_WORD, abortWord);
    b.putLong(KernelTable.ARGS_OFFSET_ERROR_RECORD, errorRecord);
    for (int r = 0; r < KernelTable.MAX_RANKS; r++) {
      b.putLong(KernelTable.ARGS_OFFSET_PEERS + 8 * r, r < nranks ? peers[r] : 0L);
    }
  }

  /**
   * The per-call fields. The allToAllv table is written only when given: the other kernels do not
   * read it, so a stale table there is harmless.
   */
  public static void writeCall(ByteBuffer args, long epoch, long send, long recv, long count, DataType type,
      ReduceOp op, int root, long[][] a2av) {
    writeCall(args, epoch, send, recv, count, type.ordinal(), op.ordinal(), root, a2av);
  }

  /** The per-call fields, type and op as their codes (GC_DT_* and GC_OP_*; a pair kernel's GC_PT_* and GC_LOC_*). */
  static void writeCall(ByteBuffer args, long epoch, long send, long recv, long count, int typeCode, int opCode,
      int root, long[][] a2av) {
    ByteBuffer b = args.order(ByteOrder.LITTLE_ENDIAN);
    b.putLong(KernelTable.ARGS_OFFSET_EPOCH, epoch);
    b.putLong(KernelTable.ARGS_OFFSET_SEND, send);
    b.putLong(KernelTable.ARGS_OFFSET_RECV, recv);
    b.putLong(KernelTable.ARGS_OFFSET_COUNT, count);
    b.putInt(KernelTable.ARGS_OFFSET_DTYPE, typeCode);
    b.putInt(KernelTable.ARGS_OFFSET_OP, opCode);
    b.putInt(KernelTable.ARGS_OFFSET_ROOT, root);
    if (a2av != null) {
      for (int k = 0; k < 4; k++) {
        for (int r = 0; r < KernelTable.MAX_RANKS; r++) {
          b.putLong(KernelTable.ARGS_OFFSET_A2AV + 8 * (k * KernelTable.MAX_RANKS + r), r < a2av[k].length ? a2av[k][r] : 0L);
        }
      }
    }
  }

  /**
   * A batch kernel's GcBatch: {@code n} calls from {@code sends[from..]} etc., packed at consecutive
   * whole slots (call i's payload from slot first[i]; kernel_abi.h section 6), and the recorded
   * batch's hash. Returns the packed slots.
   */
  static int writeBatch(ByteBuffer batch, long hash, long[] sends, long[] recvs, long[] counts, int from, int n,
      DataType type) {
    ByteBuffer b = batch.order(ByteOrder.LITTLE_ENDIAN);
    int slot = 0;
    for (int i = 0; i < n; i++) {
      b.putLong(KernelTable.BATCH_OFFSET_SEND + 8 * i, sends[from + i]);
      b.putLong(KernelTable.BATCH_OFFSET_RECV + 8 * i, recvs[from + i]);
      b.putInt(KernelTable.BATCH_OFFSET_COUNT + 4 * i, (int) counts[from + i]);
      b.putInt(KernelTable.BATCH_OFFSET_FIRST + 4 * i, slot);
      slot += (int) slotsOf(counts[from + i], type);
    }
    b.putInt(KernelTable.BATCH_OFFSET_CALLS, n);
    b.putInt(KernelTable.BATCH_OFFSET_SLOTS, slot);
    b.putLong(KernelTable.BATCH_OFFSET_HASH, hash);
    return slot;
  }

  /** LL slots (8 payload bytes each) a call of {@code count} elements takes in a packed message. */
  static long slotsOf(long count, DataType type) {
    return (count * type.byteSize() + 7) / 8;
  }

  /** Zeroes the workspace and fills the sentinel region with GC_SENTINEL_WORD, on {@code stream}. */
  static void initWorkspace(long base, long stream) {
    CudaNative.memsetAsync(base, 0, KernelTable.WORKSPACE_BYTES, stream);
    CudaNative.memsetD32Async(base + KernelTable.WS_SENT_OFFSET, KernelTable.SENTINEL_WORD, KernelTable.WS_SENT_BYTES / 4, stream);
  }

  private static final VarHandle INTS = MethodHandles.byteBufferViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);

  /**
   * The error code in a control block (GcErrorRecord.code, written last by the kernel): a volatile
   * read, since the GPU writes it while the host polls.
   */
  static int errorCode(ByteBuffer control) {
    return (int) INTS.getVolatile(control, KernelTable.ERR_OFFSET_CODE);
  }

  /** The epoch of the call that filled the error record. */
  static long errorEpoch(ByteBuffer control) {
    return control.duplicate().order(ByteOrder.LITTLE_ENDIAN).getLong(KernelTable.ERR_OFFSET_EPOCH);
  }

  static void setAbort(ByteBuffer control) {
    INTS.setVolatile(control, CONTROL_ABORT_OFFSET, 1);
  }

  /** The exception for a filled error record, naming peer, epoch and kernel. */
  static CollectiveException toException(ByteBuffer control, int rank, Collective c) {
    ByteBuffer rec = control.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    int code = rec.getInt(KernelTable.ERR_OFFSET_CODE);
    int peer = rec.getInt(KernelTable.ERR_OFFSET_PEER);
    int kernel = rec.getInt(KernelTable.ERR_OFFSET_KERNEL);
    long epoch = rec.getLong(KernelTable.ERR_OFFSET_EPOCH);
    long waited = rec.getLong(KernelTable.ERR_OFFSET_WAITED);
    long observed = rec.getLong(KernelTable.ERR_OFFSET_OBSERVED);
    long detail = rec.getLong(KernelTable.ERR_OFFSET_DETAIL);
    String where = kernelName(kernel) + " at epoch " + epoch + " (block " + rec.getInt(KernelTable.ERR_OFFSET_BLOCK)
        + ", thread " + rec.getInt(KernelTable.ERR_OFFSET_THREAD) + ")";
    Collective coll = c != null ? c : collectiveOf(kernel);
    return switch (code) {
      case KernelTable.ERR_TIMEOUT -> new CollectiveTimeoutException(rank, coll,
          peer == KernelTable.NO_PEER ? List.of() : List.of(peer),
          "timed out waiting for rank " + (peer == KernelTable.NO_PEER ? "?" : Integer.toString(peer)) + " in " + where
              + " (polling rank " + detail + ": wanted flag " + waited + ", last saw " + observed
              + "); the communicator must be closed");
      case KernelTable.ERR_ABORTED -> new CollectiveException(rank, coll, "aborted by the host in " + where + " (polling rank "
          + detail + ")");
      case KernelTable.ERR_BAD_ARGS -> new CollectiveException(rank, coll, "kernel rejected its arguments in " + where
          + ": detail " + detail);
      case KernelTable.ERR_CAPACITY -> new CollectiveException(rank, coll, "message of " + detail + " bytes exceeds the capacity of "
          + where);
      case KernelTable.ERR_NAN -> new CollectiveException(rank, collectiveOf(kernel), nanRefusal(waited, peer, detail, observed));
      case KernelTable.ERR_BATCH_MISMATCH -> new CollectiveMismatchException(rank, coll, "ranks recorded different batches in"
          + " group(): " + (detail == 1
              ? "rank " + peer + " ran another call where rank " + rank + " ran allReduces fused into one launch"
                  + " (its batch has other calls, counts, types or ops here, or it called outside a group)"
              : "rank " + peer + "'s batch differs from rank " + rank + "'s (the number of calls, a count, the type"
                  + " or the op of the allReduces fused into one launch, or another call of the batch)")
          + "; calls of a group must be the same on every rank and independent of each other (no call's buffers"
          + " overlapping another's), in " + where + "; the communicator must be closed");
      default -> new CollectiveException(rank, coll, "kernel error code " + code + " in " + where);
    };
  }

  /**
   * A pair kernel's NaN refusal in the host fold's words ({@link PairFold#nanMessage}): {@code code}
   * = pair type << 8 | loc op, rank {@code holder}'s pair {@code pair} with index {@code index}.
   */
  static String nanRefusal(long code, int holder, long pair, long index) {
    int type = (int) (code >>> 8);
    int op = (int) (code & 0xFF);
    if (type >= PairType.values().length || op >= LocOp.values().length) {
      return "a pair kernel refused a NaN value of rank " + holder + "'s pair " + pair + " (pair type code " + type
          + ", op code " + op + ")";
    }
    return PairFold.nanMessage(LocOp.values()[op], PairType.values()[type], holder, pair, index);
  }

  /** "allReduce/ll" from a GcErrorRecord.kernel value. */
  static String kernelName(int id) {
    KernelTable.Kernel k = KernelTable.ofKernelId(id);
    return k != null ? k.toString() : "kernel " + id;
  }

  static Collective collectiveOf(int id) {
    return KernelTable.collectiveOfId(id / 16);
  }
}
