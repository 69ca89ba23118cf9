package dev.gpucoll.cudf;

import ai.rapids.cudf.BaseDeviceMemoryBuffer;
import ai.rapids.cudf.ColumnVector;
import ai.rapids.cudf.ColumnView;
import ai.rapids.cudf.Cuda;
import ai.rapids.cudf.DType;
import ai.rapids.cudf.DeviceMemoryBuffer;
import ai.rapids.cudf.PartitionedTable;
import ai.rapids.cudf.Table;
import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.GpuCommunicator;
import dev.gpucoll.api.ReduceOp;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Collectives on cuDF device memory: raw buffers, a fixed-width column's data, and the shuffle
 * step of a distributed join ({@link #allToAllv(Table, int)}). Every call is enqueued on the
 * stream cuDF works on (its default stream, or the per-thread default stream when cuDF was built
 * with it), so it is ordered after the cuDF work that produced its input and before the work
 * that reads its output, without a device synchronisation.
 *
 * <p>Needs a GPU communicator (the group chose the GPU backend) and cuDF with its natives on the
 * class path; this module does not bring cuDF (a 337 MB jar): the application does.
 */
public final class CudfCollectives {
  /** CUDA's handle for the calling thread's default stream (cudaStreamPerThread). */
  static final long PER_THREAD_DEFAULT_STREAM = 2;

  private final GpuCommunicator comm;
  private final long stream;

  /** Collectives on the stream cuDF uses by default. */
  public CudfCollectives(GpuCommunicator comm) {
    this(comm, Cuda.isPtdsEnabled() ? PER_THREAD_DEFAULT_STREAM : Cuda.DEFAULT_STREAM.getStream());
  }

  /** Collectives on {@code stream} (a cuDF stream the application passes to its cuDF calls). */
  public CudfCollectives(GpuCommunicator comm, Cuda.Stream stream) {
    this(comm, requireStream(stream).getStream());
  }

  private CudfCollectives(GpuCommunicator comm, long stream) {
    if (comm == null) {
      throw new IllegalArgumentException("communicator is null");
    }
    this.comm = comm;
    this.stream = stream;
  }

  private static Cuda.Stream requireStream(Cuda.Stream s) {
    if (s == null) {
      throw new IllegalArgumentException("stream is null");
    }
    return s;
  }

  /**
   * Waits for this object's stream (bounded by the communicator's timeout) and raises the error of
   * any collective enqueued on it, as {@link GpuCommunicator#synchronize()} does for its own stream.
   * Call it before reading a result on the host: cuDF's own {@code Cuda.Stream.sync()} waits too, but
   * cannot see that a kernel of ours gave up (a peer never came), which leaves its output unwritten.
   */
  public void synchronize() {
    onStream(comm::synchronize);
  }

  /** The cudaStream_t the collectives are enqueued on. */
  public long stream() {
    return stream;
  }

  // ---- raw device buffers ----

  public void allReduce(BaseDeviceMemoryBuffer send, BaseDeviceMemoryBuffer recv, long count,
      DataType type, ReduceOp op) {
    long bytes = bytes(Collective.ALL_REDUCE, count, type);
    onStream(() -> comm.allReduce(device("send", Collective.ALL_REDUCE, send, bytes),
        device("recv", Collective.ALL_REDUCE, recv, bytes), count, type, op));
  }

  /** recv holds size * count elements. */
  public void allGather(BaseDeviceMemoryBuffer send, BaseDeviceMemoryBuffer recv, long count,
      DataType type) {
    long bytes = bytes(Collective.ALL_GATHER, count, type);
    onStream(() -> comm.allGather(device("send", Collective.ALL_GATHER, send, bytes),
        device("recv", Collective.ALL_GATHER, recv, Math.multiplyExact(bytes, comm.size())),
        count, type));
  }

  /** In place: root's buffer is copied into every rank's. */
  public void broadcast(BaseDeviceMemoryBuffer buffer, long count, DataType type, int root) {
    long bytes = bytes(Collective.BROADCAST, count, type);
    onStream(() -> {
      CommBuffer b = device("buffer", Collective.BROADCAST, buffer, bytes);
      comm.broadcast(b, b, count, type, root);
    });
  }

  // ---- columns ----

  /**
   * A new column: element-wise {@code op} over every rank's column (same type and row count); the
   * input column is left as it was. A column refused on any rank fails the call on every rank (the
   * ranks agree first).
   */
  public ColumnVector allReduce(ColumnView column, ReduceOp op) {
    DataType type = agreed(Collective.ALL_REDUCE,
        () -> CudfTypes.reduceType("the column", checkedColumn(Collective.ALL_REDUCE, column)));
    long rows = column.getRowCount();
    // Into a buffer of its own: ColumnVector.copyToColumnVector() shares the input's data buffer
    // (a reference, not a copy), so an in-place reduction would overwrite the caller's column.
    DeviceMemoryBuffer data = allocate(Math.multiplyExact(rows, type.byteSize()));
    try {
      if (rows > 0) {
        allReduce(column.getData(), data, rows, type, op);
      } else {
        onStream(comm::barrier); // every rank still takes part
      }
      return new ColumnVector(column.getType(), rows, Optional.of(0L), data, null, null);
    } catch (RuntimeException | Error e) {
      data.close();
      throw e;
    }
  }

  /**
   * A new column holding every rank's rows, rank 0's first (every rank has the same row count). A
   * column refused on any rank fails the call on every rank (the ranks agree first).
   */
  public ColumnVector allGather(ColumnView column) {
    DType type = agreed(Collective.ALL_GATHER, () -> checkedColumn(Collective.ALL_GATHER, column));
    int width = CudfTypes.requireFixedWidth("the column", type);
    long rows = column.getRowCount();
    long bytes = Math.multiplyExact(rows, width);
    DeviceMemoryBuffer data = allocate(Math.multiplyExact(bytes, comm.size()));
    try {
      if (rows > 0) {
        allGather(column.getData(), data, bytes, DataType.UINT8);
      } else {
        onStream(comm::barrier);
      }
      return new ColumnVector(type, rows * comm.size(), Optional.of(0L), data, null, null);
    } catch (RuntimeException | Error e) {
      data.close();
      throw e;
    }
  }

  // ---- tables ----

  /**
   * The shuffle of a distributed join: each row goes to the rank its key hashes to (cuDF's
   * murmur3 hash partition of column {@code keyColumn}), every column moved with one allToAllv.
   * Returns a new table of the rows this rank received, grouped by source rank.
   *
   * <p>Every column must be fixed-width without a null mask, on every rank; a rank whose table
   * is refused makes every rank fail (the ranks agree first), never a hang.
   */
  public Table allToAllv(Table table, int keyColumn) {
    int size = comm.size();
    agree(Collective.ALL_TO_ALLV, "table allToAllv", tableProblem(table, keyColumn));
    int columns = table.getNumberOfColumns();
    try (PartitionedTable parts = table.onColumns(keyColumn).hashPartition(size)) {
      long[] sendRows = CudfTypes.partitionRows(parts.getPartitions(), parts.getRowCount(), size);
      long[] recvRows = new long[size];
      onStream(() -> comm.allToAll(CommBuffer.of(sendRows), CommBuffer.of(recvRows), 1, DataType.INT64));
      long totalRecv = 0;
      for (long r : recvRows) {
        totalRecv += r;
      }
      long[] sendDispls = CudfTypes.displacements(sendRows);
      long[] recvDispls = CudfTypes.displacements(recvRows);
      List<ColumnVector> received = new ArrayList<>(columns);
      try {
        for (int c = 0; c < columns; c++) {
          ColumnVector part = parts.getColumn(c);
          DType type = part.getType();
          int width = type.getSizeInBytes();
          DeviceMemoryBuffer recv = allocate(Math.multiplyExact(totalRecv, width));
          received.add(new ColumnVector(type, totalRecv, Optional.of(0L), recv, null, null));
          BaseDeviceMemoryBuffer send = part.getData();
          try (DeviceMemoryBuffer empty = send == null ? allocate(1) : null) {
            BaseDeviceMemoryBuffer from = send == null ? empty : send;
            onStream(() -> comm.allToAllv(
                CommBuffer.device(from.getAddress(), from.getLength()),
                CudfTypes.times(sendRows, width), CudfTypes.times(sendDispls, width),
                CommBuffer.device(recv.getAddress(), recv.getLength()),
                CudfTypes.times(recvRows, width), CudfTypes.times(recvDispls, width),
                DataType.UINT8));
          }
        }
        return new Table(received.toArray(new ColumnVector[0]));
      } finally {
        received.forEach(ColumnVector::close); // the table holds its own references
      }
    }
  }

  /** Why this rank's table cannot be shuffled, or null. */
  static String tableProblem(Table table, int keyColumn) {
    if (table == null) {
      return "the table is null";
    }
    int columns = table.getNumberOfColumns();
    if (keyColumn < 0 || keyColumn >= columns) {
      return "key column " + keyColumn + " is not a column of this table of " + columns;
    }
    try {
      for (int c = 0; c < columns; c++) {
        ColumnVector col = table.getColumn(c);
        CudfTypes.requireFixedWidth("column " + c, col.getType());
        CudfTypes.requireNoNullMask("column " + c, col.getValid() != null, col.getNullCount());
      }
    } catch (IllegalArgumentException e) {
      return e.getMessage();
    }
    return null;
  }

  /** Runs this rank's input check, then agrees with every rank on the outcome (see {@link #agree}). */
  private <T> T agreed(Collective collective, java.util.function.Supplier<T> check) {
    T value = null;
    String problem = null;
    try {
      value = check.get();
    } catch (IllegalArgumentException | CollectiveException e) {
      problem = e.getMessage();
    }
    agree(collective, collective.apiName(), problem);
    return value;
  }

  /** Every rank learns which ranks refused their input; all fail together, before any data moves. */
  private void agree(Collective collective, String what, String problem) {
    int size = comm.size();
    int[] mine = {problem == null ? 0 : 1};
    int[] all = new int[size];
    onStream(() -> comm.allGather(CommBuffer.of(mine), CommBuffer.of(all), 1, DataType.INT32));
    List<Integer> refused = new ArrayList<>();
    for (int r = 0; r < size; r++) {
      if (all[r] != 0) {
        refused.add(r);
      }
    }
    if (!refused.isEmpty()) {
      throw new CollectiveException(comm.rank(), collective, what + " refused by rank(s) " + refused
          + (problem == null ? "" : "; here: " + problem));
    }
  }

  private DType checkedColumn(Collective collective, ColumnView column) {
    if (column == null) {
      throw new CollectiveException(comm.rank(), collective, "the column is null");
    }
    DType type = column.getType();
    try {
      CudfTypes.requireFixedWidth("the column", type);
      CudfTypes.requireNoNullMask("the column", column.getValid() != null, column.getNullCount());
    } catch (IllegalArgumentException e) {
      throw new CollectiveException(comm.rank(), collective, e.getMessage());
    }
    return type;
  }

  private long bytes(Collective collective, long count, DataType type) {
    if (type == null) {
      throw new CollectiveException(comm.rank(), collective, "data type is null");
    }
    if (count < 0) {
      throw new CollectiveException(comm.rank(), collective, "count is negative: " + count);
    }
    return Math.multiplyExact(count, type.byteSize());
  }

  private CommBuffer device(String role, Collective collective, BaseDeviceMemoryBuffer b, long needed) {
    if (b == null) {
      throw new CollectiveException(comm.rank(), collective, role + " buffer is null");
    }
    if (b.getLength() < needed) {
      throw new CollectiveException(comm.rank(), collective, role + " buffer holds "
          + b.getLength() + " bytes, the call needs " + needed);
    }
    return CommBuffer.device(b.getAddress(), b.getLength());
  }

  private static DeviceMemoryBuffer allocate(long bytes) {
    return DeviceMemoryBuffer.allocate(Math.max(bytes, 1)); // a 0-byte buffer has no address
  }

  /** Runs {@code call} with the communicator on this object's stream, then restores its stream. */
  private void onStream(Runnable call) {
    long previous = comm.stream();
    comm.setStream(stream);
    try {
      call.run();
    } finally {
      comm.setStream(previous);
    }
  }
}
