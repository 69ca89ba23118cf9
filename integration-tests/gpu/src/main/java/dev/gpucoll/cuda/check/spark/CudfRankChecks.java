package dev.gpucoll.cuda.check.spark;

import ai.rapids.cudf.ColumnVector;
import ai.rapids.cudf.ColumnView;
import ai.rapids.cudf.DType;
import ai.rapids.cudf.DeviceMemoryBuffer;
import ai.rapids.cudf.GatherMap;
import ai.rapids.cudf.HostColumnVector;
import ai.rapids.cudf.HostMemoryBuffer;
import ai.rapids.cudf.OutOfBoundsPolicy;
import ai.rapids.cudf.PartitionedTable;
import ai.rapids.cudf.Rmm;
import ai.rapids.cudf.RmmAllocationMode;
import ai.rapids.cudf.Table;
import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.check.Elements;
import dev.gpucoll.check.Reduction;
import dev.gpucoll.check.Reduction.Accumulation;
import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.GpuCommunicator;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.cudf.CudfCollectives;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Properties;
import java.util.SplittableRandom;
import java.util.function.Supplier;

/**
 * One rank's cuDF checks (executor side of {@link CudfGpuCheck}): every {@link CudfCollectives}
 * entry point on {@code DeviceMemoryBuffer}s and fixed-width {@code ColumnVector}s, each output
 * checked against the inputs of every rank regenerated here; the refusals; the shuffle of a hash
 * join; the shuffle's throughput beside a device-to-device copy of the same bytes. Every call runs
 * on cuDF's stream. A wrong element or an error is a "FAIL" line, never an exception.
 */
final class CudfRankChecks {
  /** The column types allReduce maps to an element type (CudfTypes.reduceType). */
  static final DType[] REDUCE_DTYPES = {DType.INT8, DType.UINT8, DType.INT32, DType.INT64, DType.FLOAT32,
      DType.FLOAT64};
  /** Every fixed-width column type allGather moves. */
  static final DType[] FIXED_WIDTH_DTYPES = {DType.INT8, DType.UINT8, DType.INT16, DType.UINT16, DType.INT32,
      DType.UINT32, DType.INT64, DType.UINT64, DType.FLOAT32, DType.FLOAT64, DType.BOOL8, DType.TIMESTAMP_DAYS,
      DType.TIMESTAMP_SECONDS, DType.TIMESTAMP_MILLISECONDS, DType.TIMESTAMP_MICROSECONDS,
      DType.TIMESTAMP_NANOSECONDS, DType.DURATION_DAYS, DType.DURATION_SECONDS, DType.DURATION_MILLISECONDS,
      DType.DURATION_MICROSECONDS, DType.DURATION_NANOSECONDS, DType.create(DType.DTypeEnum.DECIMAL32, -2),
      DType.create(DType.DTypeEnum.DECIMAL64, -4), DType.create(DType.DTypeEnum.DECIMAL128, -6)};
  private static final int MAX_FAIL_LINES = 30;

  private final GpuCommunicator comm;
  private final CudfCollectives cudf;
  private final String stage;
  private final int rank;
  private final int n;
  /** The largest per-rank payload of one call (a forced LL kernel takes 64 KiB). */
  private final long maxBytes;
  private final CaseTally tally;
  private int skipped;
  /** The case that threw, after which this stage runs no more cases. */
  private String broken;
  private long seed;

  CudfRankChecks(GpuCommunicator comm, String stage, long maxBytes) {
    this.comm = comm;
    this.cudf = new CudfCollectives(comm);
    this.stage = stage;
    this.rank = comm.rank();
    this.n = comm.size();
    this.maxBytes = maxBytes;
    this.tally = new CaseTally(stage, "cudf", rank, MAX_FAIL_LINES);
  }

  // ---------------------------------------------------------------- cuDF in this executor

  /** What every cuDF rank needs first; the RMM mode is once per JVM (the two ranks share it). */
  static synchronized String start(int device) {
    ai.rapids.cudf.Cuda.setDevice(device);
    if (!Rmm.isInitialized()) {
      // Stream-ordered allocation (cudaMallocAsync/cudaFreeAsync): freeing a column never
      // synchronises the device, which would deadlock against a peer's spinning kernel when two
      // ranks share this GPU and our kernels are forced.
      Rmm.initialize(RmmAllocationMode.CUDA_ASYNC, null, 4L << 30);
    }
    Properties version = new Properties();
    try (InputStream in = Rmm.class.getClassLoader().getResourceAsStream("cudf-java-version-info.properties")) {
      if (in != null) {
        version.load(in);
      }
    } catch (java.io.IOException e) {
      version.setProperty("version", "unreadable: " + e.getMessage());
    }
    return "cudf=" + version.getProperty("version", "?") + " revision=" + version.getProperty("revision", "?")
        + " cudaRuntime=" + ai.rapids.cudf.Cuda.getRuntimeVersion() + " cudaDriver="
        + ai.rapids.cudf.Cuda.getDriverVersion() + " ptds=" + ai.rapids.cudf.Cuda.isPtdsEnabled()
        + " rmm=CUDA_ASYNC device=" + ai.rapids.cudf.Cuda.getDevice();
  }

  List<String> finish() {
    if (broken != null) {
      tally.fail(skipped + " case(s) not run after '" + broken + "' threw");
    }
    return tally.finish(false);
  }

  boolean failed() {
    return tally.failures() > 0;
  }

  // ---------------------------------------------------------------- raw device buffers

  /** allReduce, allGather and broadcast on DeviceMemoryBuffers, every element type, on cuDF's stream. */
  void buffers() {
    for (DataType t : DataType.values()) {
      for (long count : counts(t.byteSize())) {
        for (ReduceOp op : ReduceOp.values()) {
          run("buffer allReduce " + t + " " + op + " count " + count, () -> bufferAllReduce(cudf, t, op, count));
        }
        run("buffer allGather " + t + " count " + count, () -> bufferAllGather(t, count));
        int root = (int) (count % n);
        run("buffer broadcast " + t + " count " + count + " root " + root, () -> bufferBroadcast(t, count, root));
      }
    }
    // A stream the application owns: the copies and the collective all enqueued on it.
    try (ai.rapids.cudf.Cuda.Stream own = new ai.rapids.cudf.Cuda.Stream(true)) {
      CudfCollectives onOwn = new CudfCollectives(comm, own);
      run("buffer allReduce FLOAT32 SUM on an application stream", () -> {
        if (onOwn.stream() != own.getStream()) {
          return "collectives on stream " + onOwn.stream() + ", the application's is " + own.getStream();
        }
        return bufferAllReduceOn(onOwn, own, DataType.FLOAT32, ReduceOp.SUM, Math.min(maxBytes, 1 << 20) / 4);
      });
    }
  }

  private String bufferAllReduce(CudfCollectives on, DataType t, ReduceOp op, long count) {
    return bufferAllReduceOn(on, null, t, op, count);
  }

  /** {@code stream} null: cuDF's default stream and synchronous copies. */
  private String bufferAllReduceOn(CudfCollectives on, ai.rapids.cudf.Cuda.Stream stream, DataType t, ReduceOp op,
      long count) {
    long s = nextSeed();
    long bytes = count * t.byteSize();
    ByteBuffer[] in = new ByteBuffer[n];
    for (int r = 0; r < n; r++) {
      in[r] = Elements.input(s, r, t, op, count);
    }
    try (DeviceMemoryBuffer send = upload(in[rank], stream); DeviceMemoryBuffer recv = upload(poison(bytes), stream)) {
      on.allReduce(send, recv, count, t, op);
      String bad = Reduction.firstWrong(t, op, in, 0, download(recv, bytes, stream), count, Accumulation.ELEMENT_TYPE);
      if (bad != null) {
        return "element " + bad;
      }
      return sameBytes(in[rank], 0, download(send, bytes, stream), 0, bytes, "the send buffer changed");
    }
  }

  private String bufferAllGather(DataType t, long count) {
    long s = nextSeed();
    long block = count * t.byteSize();
    try (DeviceMemoryBuffer send = upload(Elements.input(s, rank, t, null, count), null);
         DeviceMemoryBuffer recv = upload(poison(block * n), null)) {
      cudf.allGather(send, recv, count, t);
      ByteBuffer out = download(recv, block * n, null);
      for (int r = 0; r < n; r++) {
        String bad = sameBytes(Elements.input(s, r, t, null, count), 0, out, r * block, block, "block of rank " + r);
        if (bad != null) {
          return bad;
        }
      }
      return null;
    }
  }

  private String bufferBroadcast(DataType t, long count, int root) {
    long s = nextSeed();
    long bytes = count * t.byteSize();
    ByteBuffer mine = rank == root ? Elements.input(s, root, t, null, count) : poison(bytes);
    try (DeviceMemoryBuffer buf = upload(mine, null)) {
      cudf.broadcast(buf, count, t, root);
      return sameBytes(Elements.input(s, root, t, null, count), 0, download(buf, bytes, null), 0, bytes,
          "root " + root + "'s data");
    }
  }

  // ---------------------------------------------------------------- fixed-width columns

  /** allReduce over every reducible column type and op; allGather over every fixed-width type. */
  void columns() {
    for (DType dt : REDUCE_DTYPES) {
      DataType t = elementType(dt);
      for (long rows : counts(dt.getSizeInBytes())) {
        for (ReduceOp op : ReduceOp.values()) {
          run("column allReduce " + dt + " " + op + " rows " + rows, () -> columnAllReduce(dt, t, op, rows));
        }
      }
    }
    for (DType dt : FIXED_WIDTH_DTYPES) {
      for (long rows : counts(dt.getSizeInBytes())) {
        run("column allGather " + dt + " rows " + rows, () -> columnAllGather(dt, rows));
      }
    }
    run("column allReduce INT32 SUM rows 0", () -> {
      try (ColumnVector empty = ColumnVector.fromInts(); ColumnVector out = cudf.allReduce(empty, ReduceOp.SUM)) {
        return out.getRowCount() == 0 && out.getType().equals(DType.INT32) ? null
            : "expected an empty INT32 column, got " + out.getRowCount() + " rows of " + out.getType();
      }
    });
    run("column allGather INT64 rows 0", () -> {
      try (ColumnVector empty = ColumnVector.fromLongs(); ColumnVector out = cudf.allGather(empty)) {
        return out.getRowCount() == 0 && out.getType().equals(DType.INT64) ? null
            : "expected an empty INT64 column, got " + out.getRowCount() + " rows of " + out.getType();
      }
    });
  }

  private String columnAllReduce(DType dt, DataType t, ReduceOp op, long rows) {
    long s = nextSeed();
    ByteBuffer[] in = new ByteBuffer[n];
    for (int r = 0; r < n; r++) {
      in[r] = Elements.input(s, r, t, op, rows);
    }
    long bytes = rows * t.byteSize();
    try (ColumnVector col = column(dt, rows, in[rank]); ColumnVector out = cudf.allReduce(col, op)) {
      String shape = shape(out, dt, rows);
      if (shape != null) {
        return shape;
      }
      String bad = Reduction.firstWrong(t, op, in, 0, download(out.getData(), bytes, null), rows,
          Accumulation.ELEMENT_TYPE);
      if (bad != null) {
        return "row " + bad;
      }
      return sameBytes(in[rank], 0, download(col.getData(), bytes, null), 0, bytes, "the input column changed");
    }
  }

  private String columnAllGather(DType dt, long rows) {
    long s = nextSeed();
    int width = dt.getSizeInBytes();
    long block = rows * width;
    try (ColumnVector col = column(dt, rows, movementInput(s, rank, dt, rows)); ColumnVector out = cudf.allGather(col)) {
      String shape = shape(out, dt, rows * n);
      if (shape != null) {
        return shape;
      }
      ByteBuffer got = download(out.getData(), block * n, null);
      for (int r = 0; r < n; r++) {
        String bad = sameBytes(movementInput(s, r, dt, rows), 0, got, r * block, block, "rows of rank " + r);
        if (bad != null) {
          return bad;
        }
      }
      return null;
    }
  }

  /** Any bit pattern for a data move, but canonical booleans (0 or 1) for BOOL8. */
  private static ByteBuffer movementInput(long s, int r, DType dt, long rows) {
    ByteBuffer b = Elements.input(s, r, DataType.UINT8, null, rows * dt.getSizeInBytes());
    if (dt.equals(DType.BOOL8)) {
      for (int i = 0; i < b.capacity(); i++) {
        b.put(i, (byte) (b.get(i) & 1));
      }
    }
    return b;
  }

  private static String shape(ColumnVector out, DType dt, long rows) {
    if (!out.getType().equals(dt)) {
      return "result type " + out.getType() + ", expected " + dt;
    }
    if (out.getRowCount() != rows) {
      return "result has " + out.getRowCount() + " rows, expected " + rows;
    }
    if (out.getNullCount() != 0) {
      return "result has " + out.getNullCount() + " nulls";
    }
    return null;
  }

  // ---------------------------------------------------------------- refusals

  /**
   * Strings, lists, structs and null masks are refused with CudfTypes' errors, on every rank, by
   * every column entry point and by the table shuffle; a rank alone with a bad column makes every
   * rank fail; the group still works afterwards.
   */
  void refusals() {
    String notFixed = ", which is not fixed-width";
    refuseEverywhere("STRING", () -> ColumnVector.fromStrings("a", "bb", "ccc"), "has type STRING" + notFixed);
    refuseEverywhere("LIST", () -> ColumnVector.fromLists(new HostColumnVector.ListType(false,
        new HostColumnVector.BasicType(false, DType.INT32)), Arrays.asList(1, 2), Arrays.asList(3),
        Arrays.asList(4, 5, 6)), "has type LIST" + notFixed);
    refuseEverywhere("STRUCT", () -> {
      try (ColumnVector a = ColumnVector.fromInts(1, 2, 3); ColumnVector b = ColumnVector.fromLongs(4, 5, 6)) {
        return ColumnVector.makeStruct(a, b);
      }
    }, "has type STRUCT" + notFixed);
    refuseEverywhere("INT32 with nulls", () -> ColumnVector.fromBoxedInts(1, null, 3), "has a null mask (1 nulls)");
    run("refusal allReduce INT16 (fixed-width, not reducible)", () -> {
      try (ColumnVector c = ColumnVector.fromShorts((short) 1, (short) 2, (short) 3)) {
        return expectRefused(() -> cudf.allReduce(c, ReduceOp.SUM), allRanks(),
            "the column has type INT16, which collectives cannot reduce");
      }
    });
    run("refusal allToAllv key column out of range", () -> {
      try (ColumnVector k = ColumnVector.fromLongs(1, 2, 3); ColumnVector v = ColumnVector.fromInts(4, 5, 6);
           Table t = new Table(k, v)) {
        return expectRefused(() -> cudf.allToAllv(t, 5), allRanks(), "key column 5 is not a column of this table of 2");
      }
    });
    // Rank 0 alone brings a bad column: every rank fails, and only rank 0 names the reason.
    run("refusal by rank 0 alone: allGather STRING", () -> {
      try (ColumnVector c = rank == 0 ? ColumnVector.fromStrings("x", "y") : ColumnVector.fromInts(1, 2)) {
        return expectRefused(() -> cudf.allGather(c), "[0]", rank == 0 ? "has type STRING" + notFixed : null);
      }
    });
    run("refusal by rank 0 alone: allToAllv with a null mask", () -> {
      try (ColumnVector k = ColumnVector.fromLongs(1, 2, 3);
           ColumnVector v = rank == 0 ? ColumnVector.fromBoxedInts(1, null, 3) : ColumnVector.fromInts(1, 2, 3);
           Table t = new Table(k, v)) {
        return expectRefused(() -> cudf.allToAllv(t, 0), "[0]", rank == 0 ? "column 1 has a null mask (1 nulls)" : null);
      }
    });
    run("after the refusals: column allReduce INT64 SUM", () -> columnAllReduce(DType.INT64, DataType.INT64,
        ReduceOp.SUM, 1000));
  }

  private void refuseEverywhere(String what, Supplier<ColumnVector> make, String because) {
    run("refusal allReduce " + what, () -> {
      try (ColumnVector c = make.get()) {
        return expectRefused(() -> cudf.allReduce(c, ReduceOp.SUM), allRanks(), "the column " + because);
      }
    });
    run("refusal allGather " + what, () -> {
      try (ColumnVector c = make.get()) {
        return expectRefused(() -> cudf.allGather(c), allRanks(), "the column " + because);
      }
    });
    run("refusal allToAllv " + what + " as a payload column", () -> {
      try (ColumnVector c = make.get(); ColumnVector k = ColumnVector.fromLongs(7, 8, 9); Table t = new Table(k, c)) {
        return expectRefused(() -> cudf.allToAllv(t, 0), allRanks(), "column 1 " + because);
      }
    });
    run("refusal allToAllv " + what + " as the key column", () -> {
      try (ColumnVector c = make.get(); ColumnVector v = ColumnVector.fromLongs(7, 8, 9); Table t = new Table(c, v)) {
        return expectRefused(() -> cudf.allToAllv(t, 0), allRanks(), "column 0 " + because);
      }
    });
  }

  private String allRanks() {
    StringBuilder sb = new StringBuilder("[");
    for (int r = 0; r < n; r++) {
      sb.append(r == 0 ? "" : ", ").append(r);
    }
    return sb.append(']').toString();
  }

  /** The call must throw CollectiveException "refused by rank(s) {@code refusers}", with {@code reason} here. */
  private String expectRefused(Runnable call, String refusers, String reason) {
    try {
      call.run();
      return "not refused";
    } catch (CollectiveException e) {
      String m = e.getMessage();
      if (!m.contains("refused by rank(s) " + refusers)) {
        return "refused, but the message does not say 'refused by rank(s) " + refusers + "': " + m;
      }
      if (reason != null && !m.contains(reason)) {
        return "refused, but the message does not say '" + reason + "': " + m;
      }
      if (reason == null && m.contains("; here: ")) {
        return "this rank's column is good, yet the message gives a reason here: " + m;
      }
      return null;
    }
  }

  // ---------------------------------------------------------------- the shuffle of a hash join

  /**
   * Both tables shuffled by key with allToAllv(Table, 0), joined locally with cuDF's inner hash
   * join; the joined rows go to the driver, which compares them with the one-process join.
   */
  void join(long joinSeed, int buildRows, int probeRows, long keys) {
    JoinReference.Share mine = JoinReference.share(joinSeed, rank, buildRows, probeRows, keys);
    String[] result = {null};
    run("hash join: allToAllv(Table, key) of both sides, local inner join", () -> {
      try (ColumnVector bk = ColumnVector.fromLongs(mine.buildKey());
           ColumnVector bv = ColumnVector.fromDoubles(mine.buildValue());
           ColumnVector bid = ColumnVector.fromInts(mine.buildId());
           ColumnVector pk = ColumnVector.fromLongs(mine.probeKey());
           ColumnVector pv = ColumnVector.fromLongs(mine.probeValue());
           Table build = new Table(bk, bv, bid);
           Table probe = new Table(pk, pv);
           Table buildHere = cudf.allToAllv(build, 0);
           Table probeHere = cudf.allToAllv(probe, 0);
           Table buildKeys = new Table(buildHere.getColumn(0));
           Table probeKeys = new Table(probeHere.getColumn(0))) {
        String shape = sameTypes(build, buildHere) + sameTypes(probe, probeHere);
        if (!shape.isEmpty()) {
          return shape;
        }
        GatherMap[] maps = buildKeys.innerJoinGatherMaps(probeKeys, true);
        try (GatherMap left = maps[0]; GatherMap right = maps[1]) {
          cudf.synchronize(); // the shuffles' errors before their rows are read
          int rows = Math.toIntExact(left.getRowCount());
          try (ColumnView lv = left.toColumnView(0, rows); ColumnView rv = right.toColumnView(0, rows);
               Table l = buildHere.gather(lv, OutOfBoundsPolicy.DONT_CHECK);
               Table r = probeHere.gather(rv, OutOfBoundsPolicy.DONT_CHECK);
               HostColumnVector key = l.getColumn(0).copyToHost();
               HostColumnVector value = l.getColumn(1).copyToHost();
               HostColumnVector id = l.getColumn(2).copyToHost();
               HostColumnVector probeValue = r.getColumn(1).copyToHost()) {
            long[] out = new long[rows * JoinReference.ROW_LONGS];
            for (int i = 0; i < rows; i++) {
              out[i * 4] = key.getLong(i);
              out[i * 4 + 1] = Double.doubleToRawLongBits(value.getDouble(i));
              out[i * 4 + 2] = id.getInt(i);
              out[i * 4 + 3] = probeValue.getLong(i);
            }
            result[0] = "JOIN stage=" + stage + " rank=" + rank + " buildRows=" + buildRows + " probeRows=" + probeRows
                + " receivedBuild=" + buildHere.getRowCount() + " receivedProbe=" + probeHere.getRowCount()
                + " joined=" + rows + " data=" + JoinReference.encode(JoinReference.sortRows(out));
          }
        }
        return null;
      }
    });
    if (result[0] != null) {
      tally.add(result[0]);
    }
  }

  private static String sameTypes(Table sent, Table received) {
    if (sent.getNumberOfColumns() != received.getNumberOfColumns()) {
      return "received " + received.getNumberOfColumns() + " columns, sent " + sent.getNumberOfColumns() + "; ";
    }
    for (int c = 0; c < sent.getNumberOfColumns(); c++) {
      if (!sent.getColumn(c).getType().equals(received.getColumn(c).getType())) {
        return "column " + c + " arrived as " + received.getColumn(c).getType() + ", sent as "
            + sent.getColumn(c).getType() + "; ";
      }
    }
    return "";
  }

  // ---------------------------------------------------------------- throughput

  /**
   * The table shuffle (key INT64, INT64, FLOAT64, INT32: 28 B a row) of {@code rows} rows per rank,
   * and a device-to-device copy of the same bytes on the same stream, each started by every rank
   * together; the median of {@code iterations} after one warm-up. One BENCH line per rank.
   */
  void shuffleThroughput(int rows, int iterations, String algorithm) {
    SplittableRandom rnd = new SplittableRandom(77 + rank);
    long[] key = new long[rows];
    long[] a = new long[rows];
    double[] b = new double[rows];
    int[] c = new int[rows];
    for (int i = 0; i < rows; i++) {
      key[i] = rnd.nextLong();
      a[i] = i;
      b[i] = rnd.nextDouble();
      c[i] = rank;
    }
    long bytes = rows * 28L;
    String[] bench = {null};
    run("shuffle throughput, " + rows + " rows per rank", () -> {
      ai.rapids.cudf.Cuda.Stream stream = ai.rapids.cudf.Cuda.DEFAULT_STREAM;
      try (ColumnVector k = ColumnVector.fromLongs(key); ColumnVector va = ColumnVector.fromLongs(a);
           ColumnVector vb = ColumnVector.fromDoubles(b); ColumnVector vc = ColumnVector.fromInts(c);
           Table table = new Table(k, va, vb, vc);
           DeviceMemoryBuffer from = DeviceMemoryBuffer.allocate(bytes);
           DeviceMemoryBuffer to = DeviceMemoryBuffer.allocate(bytes)) {
        double[] shuffle = new double[iterations];
        double[] partition = new double[iterations];
        double[] copy = new double[iterations];
        long received = 0;
        for (int it = -1; it < iterations; it++) {
          together(stream);
          long t0 = System.nanoTime();
          try (Table out = cudf.allToAllv(table, 0)) {
            stream.sync();
            long t1 = System.nanoTime();
            received = out.getRowCount();
            if (it >= 0) {
              shuffle[it] = (t1 - t0) / 1e9;
            }
          }
          together(stream);
          t0 = System.nanoTime();
          try (PartitionedTable p = table.onColumns(0).hashPartition(n)) {
            stream.sync();
            if (it >= 0) {
              partition[it] = (System.nanoTime() - t0) / 1e9;
            }
          }
          together(stream);
          t0 = System.nanoTime();
          to.copyFromDeviceBufferAsync(0, from, 0, bytes, stream);
          stream.sync();
          if (it >= 0) {
            copy[it] = (System.nanoTime() - t0) / 1e9;
          }
        }
        double sh = median(shuffle);
        double pa = median(partition);
        double cp = median(copy);
        bench[0] = String.format(Locale.ROOT, "BENCH {\"kind\":\"cudf-shuffle\",\"stage\":\"%s\",\"algorithm\":\"%s\","
                + "\"rank\":%d,\"ranks\":%d,\"rows\":%d,\"row_bytes\":28,\"bytes\":%d,\"received_rows\":%d,"
                + "\"iterations\":%d,\"shuffle_ms\":%.3f,\"shuffle_rows_per_s\":%.4g,\"shuffle_gb_per_s\":%.3f,"
                + "\"hash_partition_ms\":%.3f,\"copy_ms\":%.3f,\"copy_gb_per_s\":%.3f,\"shuffle_over_copy\":%.4f}",
            stage, algorithm, rank, n, rows, bytes, received, iterations, sh * 1e3, rows / sh, bytes / sh / 1e9,
            pa * 1e3, cp * 1e3, bytes / cp / 1e9, cp / sh);
        return null;
      }
    });
    if (bench[0] != null) {
      tally.add(bench[0]);
    }
  }

  /** Every rank here at once: cuDF's stream drained, then a host rendezvous through the communicator. */
  private void together(ai.rapids.cudf.Cuda.Stream stream) {
    stream.sync();
    int[] one = {1};
    comm.allReduce(CommBuffer.of(one), CommBuffer.of(one), 1, DataType.INT32, ReduceOp.SUM);
    if (one[0] != n) {
      throw new IllegalStateException("rendezvous counted " + one[0] + " ranks, expected " + n);
    }
  }

  private static double median(double[] v) {
    double[] s = v.clone();
    Arrays.sort(s);
    return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  }

  // ---------------------------------------------------------------- helpers

  /** Element counts (or rows) from one up to the per-call cap: one, an odd count, the cap. */
  private long[] counts(int elementSize) {
    long cap = Math.max(1, maxBytes / elementSize);
    return Arrays.stream(new long[] {1, 4099, cap}).map(c -> Math.min(c, cap)).distinct().toArray();
  }

  /**
   * One case. A case that throws stops the rest of this stage: a rank that left a collective early
   * makes its peers wait out the timeout, and every later case would wait again.
   */
  private void run(String what, Supplier<String> check) {
    if (broken != null) {
      skipped++;
      return;
    }
    String bad;
    try {
      bad = check.get();
    } catch (RuntimeException | Error e) {
      bad = "threw " + e.toString().replace('\n', ' ');
      broken = what;
    }
    tally.ran(what, bad);
  }

  private long nextSeed() {
    return ++seed * 7919 + stage.hashCode();
  }

  static DataType elementType(DType dt) {
    return dev.gpucoll.cudf.CudfTypes.reduceType("the column", dt);
  }

  private static ByteBuffer poison(long bytes) {
    ByteBuffer b = ByteBuffer.allocate(Math.toIntExact(bytes)).order(ByteOrder.nativeOrder());
    for (int i = 0; i < b.capacity(); i++) {
      b.put(i, (byte) 0xA5);
    }
    return b;
  }

  /** A device buffer holding {@code host}, copied on {@code stream} (cuDF's default stream when null). */
  private static DeviceMemoryBuffer upload(ByteBuffer host, ai.rapids.cudf.Cuda.Stream stream) {
    long bytes = host.capacity();
    DeviceMemoryBuffer d = stream == null ? DeviceMemoryBuffer.allocate(bytes) : DeviceMemoryBuffer.allocate(bytes, stream);
    try (HostMemoryBuffer h = HostMemoryBuffer.allocate(bytes, false)) {
      h.setBytes(0, host.array(), 0, bytes);
      if (stream == null) {
        d.copyFromHostBuffer(h);
      } else {
        d.copyFromHostBuffer(h, stream); // waits for the copy: h is closed next
      }
      return d;
    } catch (RuntimeException | Error e) {
      d.close();
      throw e;
    }
  }

  /** The first {@code bytes} of {@code d}, copied after the work on {@code stream} (cuDF's default when null). */
  /**
   * A device buffer's first {@code bytes}, once the collectives before it on {@code stream} finished
   * without error: the copy waits for the stream, then the communicator raises what a kernel of ours
   * recorded (a kernel that gave up leaves its output unwritten; cuDF's own sync cannot tell).
   */
  private ByteBuffer download(ai.rapids.cudf.BaseDeviceMemoryBuffer d, long bytes,
      ai.rapids.cudf.Cuda.Stream stream) {
    byte[] out = new byte[Math.toIntExact(bytes)];
    if (bytes > 0) {
      try (HostMemoryBuffer h = HostMemoryBuffer.allocate(d.getLength(), false)) {
        if (stream == null) {
          h.copyFromDeviceBuffer(d);
        } else {
          h.copyFromDeviceBuffer(d, stream);
        }
        h.getBytes(out, 0, 0, bytes);
      }
    }
    comm.synchronize();
    return ByteBuffer.wrap(out).order(ByteOrder.nativeOrder());
  }

  /** A column of {@code dt} whose data buffer holds {@code data} (the column owns the buffer). */
  private static ColumnVector column(DType dt, long rows, ByteBuffer data) {
    if (rows == 0) {
      throw new IllegalArgumentException("column(): 0 rows");
    }
    return new ColumnVector(dt, rows, Optional.of(0L), upload(data, null), null, null);
  }

  private static String sameBytes(ByteBuffer want, long wantAt, ByteBuffer got, long gotAt, long bytes, String what) {
    String bad = CaseTally.sameBytes(want, wantAt, got, gotAt, bytes);
    return bad == null ? null : what + ": " + bad;
  }
}
