package dev.gpucoll.cuda.check.spark;

import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.PairType;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.check.CorrectnessMatrix;
import dev.gpucoll.check.PairReference;
import dev.gpucoll.check.Elements;
import dev.gpucoll.check.Reduction;
import dev.gpucoll.check.Reduction.Accumulation;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import java.util.SplittableRandom;

/**
 * One rank's checks over one {@link Memory}: the cases of the GPU checks' correctness matrix
 * (native-kernels/test/correctness-matrix.txt, its "auto" blocks at this group's size, through
 * gpucoll-check-support) whose buffers fit {@code maxBytes}, each output checked on this rank against
 * the inputs of every rank (regenerated here from their seeds) by the GPU checks' reference,
 * with the rounding bound of any path (NCCL may accumulate 16-bit floats in 16 bits). Returns report lines; a wrong element or an error is a
 * "FAIL" line, never an exception, so the other ranks' results still reach the driver.
 */
final class RankChecks {
  /** Seeds the matrix's random choices (broadcast roots, allToAllv tables): every rank makes the same. */
  private static final long MATRIX_SEED = 0x5EED_CA5EL;
  private static final int MAX_FAIL_LINES = 40;
  private static final int MAX_CONSECUTIVE_ERRORS = 3;

  private final Communicator comm;
  private final Memory mem;
  private final String stage;
  private final int rank;
  private final int n;
  private final CaseTally tally;
  private int consecutiveErrors;
  private long seed;

  RankChecks(Communicator comm, Memory mem, String stage) {
    this.comm = comm;
    this.mem = mem;
    this.stage = stage;
    this.rank = comm.rank();
    this.n = comm.size();
    this.tally = new CaseTally(stage, mem.name(), rank, MAX_FAIL_LINES);
  }

  /**
   * The matrix's cases whose largest buffer on any rank fits {@code maxBytes} (every rank skips the
   * same ones), then split; {@code quick} leaves out the sizes marked for the full matrix.
   */
  List<String> runAll(long maxBytes, boolean quick) {
    int beyond = 0;
    for (CorrectnessMatrix.Case c : CorrectnessMatrix.load().casesAt(CorrectnessMatrix.AUTO, n, quick,
        new SplittableRandom(MATRIX_SEED))) {
      long largest = 0;
      for (int r = 0; r < n; r++) {
        largest = Math.max(largest, Math.max(c.sendElems(r, n), c.recvElems(r, n)) * c.t().byteSize());
      }
      if (largest > maxBytes) {
        beyond++;
        continue;
      }
      switch (c.c()) {
        case ALL_REDUCE -> allReduce(c.t(), c.op(), c.count(), c.inPlace());
        case REDUCE_SCATTER -> reduceScatter(c.t(), c.op(), c.count());
        case ALL_GATHER -> allGather(c.t(), c.count());
        case ALL_TO_ALL -> allToAll(c.t(), c.count());
        case ALL_TO_ALLV -> allToAllv(c.t(), c);
        case BROADCAST -> broadcast(c.t(), c.count(), c.root(), c.inPlace());
        case BARRIER -> barrier();
      }
    }
    for (CorrectnessMatrix.PairCase c : CorrectnessMatrix.load().pairCasesAt(CorrectnessMatrix.AUTO, n, quick)) {
      pairReduction(c); // a few pairs each: every buffer fits
    }
    if (beyond > 0) {
      tally.add("NOTE stage=" + stage + " memory=" + mem.name() + " rank=" + rank + " " + beyond
          + " matrix cases need buffers above " + maxBytes + " bytes (--max-bytes): not run");
    }
    split();
    groupAgreement();
    return finish();
  }

  /** One small case per collective (a later stage on a cached communicator). */
  List<String> runSmall() {
    allReduce(DataType.FLOAT32, ReduceOp.SUM, 1000, false);
    allReduce(DataType.BFLOAT16, ReduceOp.AVG, 3, false);
    allGather(DataType.FLOAT32, 257);
    reduceScatter(DataType.FLOAT64, ReduceOp.SUM, 100);
    allToAll(DataType.INT8, 1001);
    allToAllv(DataType.FLOAT32, CorrectnessMatrix.allToAllvCase(DataType.FLOAT32, n, 10, new SplittableRandom(MATRIX_SEED)));
    broadcast(DataType.FLOAT64, 333, n - 1, false);
    barrier();
    return finish();
  }

  List<String> finish() {
    return tally.finish(true);
  }

  /** True when errors in a row stopped the matrix: the communicator is not to be trusted further. */
  boolean broken() {
    return consecutiveErrors >= MAX_CONSECUTIVE_ERRORS;
  }

  // ---------------------------------------------------------------- cases

  void allReduce(DataType t, ReduceOp op, long count, boolean inPlace) {
    long s = ++seed;
    run("allReduce " + t + " " + op + " " + count * t.byteSize() + " B" + (inPlace ? " in-place" : ""), () -> {
      Memory.Buf send = mem.send(Elements.input(s, rank, t, op, count));
      Memory.Buf recv = inPlace ? send : mem.recv(count * t.byteSize());
      comm.allReduce(send.comm(), recv.comm(), count, t, op);
      ByteBuffer out = mem.read(recv);
      String bad = Reduction.firstWrong(t, op, inputs(s, t, op, count), 0, out, count, Accumulation.ELEMENT_TYPE);
      return bad == null ? null : "element " + bad;
    });
  }

  /** One MAXLOC/MINLOC case of the matrix, against {@link PairReference}. */
  void pairReduction(CorrectnessMatrix.PairCase c) {
    long s = ++seed;
    PairType t = c.type();
    run(c.label(), () -> {
      Memory.Buf send = mem.send(PairReference.input(s, rank, t, c.count()));
      Memory.Buf recv = c.inPlace() ? send : mem.recv(c.count() * t.byteSize());
      comm.allReduce(send.comm(), recv.comm(), c.count(), t, c.op());
      return PairReference.firstWrong(s, n, t, c.op(), c.count(), mem.read(recv));
    });
  }

  void reduceScatter(DataType t, ReduceOp op, long count) {
    long s = ++seed;
    run("reduceScatter " + t + " " + op + " " + count * n * t.byteSize() + " B", () -> {
      Memory.Buf send = mem.send(Elements.input(s, rank, t, op, count * n));
      Memory.Buf recv = mem.recv(count * t.byteSize());
      comm.reduceScatter(send.comm(), recv.comm(), count, t, op);
      ByteBuffer out = mem.read(recv);
      String bad = Reduction.firstWrong(t, op, inputs(s, t, op, count * n), rank * count, out, count,
          Accumulation.ELEMENT_TYPE);
      return bad == null ? null : "element " + bad;
    });
  }

  void allGather(DataType t, long count) {
    long s = ++seed;
    run("allGather " + t + " " + count * n * t.byteSize() + " B", () -> {
      Memory.Buf send = mem.send(Elements.input(s, rank, t, null, count));
      Memory.Buf recv = mem.recv(count * n * t.byteSize());
      comm.allGather(send.comm(), recv.comm(), count, t);
      ByteBuffer out = mem.read(recv);
      int block = Math.toIntExact(count * t.byteSize());
      for (int r = 0; r < n; r++) {
        String bad = sameBytes(Elements.input(s, r, t, null, count), 0, out, r * block, block);
        if (bad != null) {
          return "block of rank " + r + ": " + bad;
        }
      }
      return null;
    });
  }

  void allToAll(DataType t, long count) {
    long s = ++seed;
    run("allToAll " + t + " " + count * n * t.byteSize() + " B", () -> {
      Memory.Buf send = mem.send(Elements.input(s, rank, t, null, count * n));
      Memory.Buf recv = mem.recv(count * n * t.byteSize());
      comm.allToAll(send.comm(), recv.comm(), count, t);
      ByteBuffer out = mem.read(recv);
      int block = Math.toIntExact(count * t.byteSize());
      for (int r = 0; r < n; r++) {
        String bad = sameBytes(Elements.input(s, r, t, null, count * n), rank * block, out, r * block, block);
        if (bad != null) {
          return "block from rank " + r + ": " + bad;
        }
      }
      return null;
    });
  }

  /** The case's count table (the same on every rank): rank r's rows, checked against every sender's input. */
  void allToAllv(DataType t, CorrectnessMatrix.Case c) {
    long s = ++seed;
    run("allToAllv " + t + " counts up to " + c.count(), () -> {
      long[][] mine = c.a2avOf(rank);
      Memory.Buf send = mem.send(Elements.input(s, rank, t, null, c.sendElems(rank, n)));
      Memory.Buf recv = mem.recv(c.recvElems(rank, n) * t.byteSize());
      comm.allToAllv(send.comm(), mine[0], mine[1], recv.comm(), mine[2], mine[3], t);
      ByteBuffer out = mem.read(recv);
      for (int r = 0; r < n; r++) {
        long[][] peer = c.a2avOf(r);
        String bad = sameBytes(Elements.input(s, r, t, null, c.sendElems(r, n)), (int) (peer[1][rank] * t.byteSize()),
            out, (int) (mine[3][r] * t.byteSize()), (int) (mine[2][r] * t.byteSize()));
        if (bad != null) {
          return "block from rank " + r + ": " + bad;
        }
      }
      return null;
    });
  }

  void broadcast(DataType t, long count, int root, boolean inPlace) {
    long s = ++seed;
    run("broadcast " + t + " " + count * t.byteSize() + " B root " + root + (inPlace ? " in-place" : ""), () -> {
      Memory.Buf send = mem.send(Elements.input(s, rank, t, null, count));
      Memory.Buf recv = inPlace ? send : mem.recv(count * t.byteSize());
      comm.broadcast(send.comm(), recv.comm(), count, t, root);
      ByteBuffer out = mem.read(recv);
      return sameBytes(Elements.input(s, root, t, null, count), 0, out, 0, (int) (count * t.byteSize()));
    });
  }

  void barrier() {
    run("barrier x3", () -> {
      for (int i = 0; i < 3; i++) {
        comm.barrier();
      }
      return null;
    });
  }

  /** Reversed order in one color, then ranks by parity; each sub-group checked with an allGather of ranks. */
  void split() {
    run("split", () -> {
      try (Communicator reversed = comm.split(0, n - 1 - rank)) {
        if (reversed.size() != n || reversed.rank() != n - 1 - rank) {
          return "split(0, n-1-rank): size " + reversed.size() + " rank " + reversed.rank() + ", expected size " + n
              + " rank " + (n - 1 - rank);
        }
        int[] mine = {rank};
        int[] all = new int[n];
        reversed.allGather(dev.gpucoll.api.CommBuffer.of(mine), dev.gpucoll.api.CommBuffer.of(all), 1, DataType.INT32);
        for (int j = 0; j < n; j++) {
          if (all[j] != n - 1 - j) {
            return "reversed sub-group: position " + j + " holds rank " + all[j] + ", expected " + (n - 1 - j);
          }
        }
      }
      try (Communicator parity = comm.split(rank % 2, rank)) {
        long[] sum = {rank};
        parity.allReduce(sum, ReduceOp.SUM);
        long expect = 0;
        for (int r = rank % 2; r < n; r += 2) {
          expect += r;
        }
        if (sum[0] != expect) {
          return "parity sub-group " + rank % 2 + ": sum of ranks " + sum[0] + ", expected " + expect;
        }
      }
      return null;
    });
  }

  /** Thrown on purpose by the last rank's group() body. */
  private static final class BodyStops extends RuntimeException {
    BodyStops(int rank) {
      super("rank " + rank + "'s group() body stops here on purpose");
    }
  }

  /**
   * group()'s agreement on the path this group takes: the last rank's body throws after one call, so
   * every rank fails at once (its own error on that rank, a word naming it on the others), nothing
   * runs; then a group of the same call runs right on every rank (the group stays usable).
   */
  void groupAgreement() {
    run("group() agreement", () -> {
      int count = 1000;
      int last = n - 1;
      ByteBuffer ones = ByteBuffer.allocate(count * 4).order(ByteOrder.nativeOrder());
      for (int i = 0; i < count; i++) {
        ones.putInt(rank + 1);
      }
      Memory.Buf send = mem.send(ones.clear());
      Memory.Buf recv = mem.recv(count * 4L);
      long start = System.nanoTime();
      RuntimeException thrown = null;
      try {
        comm.group(g -> {
          g.allReduce(send.comm(), recv.comm(), count, DataType.INT32, ReduceOp.SUM);
          if (rank == last) {
            throw new BodyStops(rank);
          }
        });
      } catch (RuntimeException e) {
        thrown = e;
      }
      long ms = (System.nanoTime() - start) / 1_000_000;
      if (thrown == null) {
        return "group() returned normally though rank " + last + "'s body threw";
      }
      if (rank == last && !(thrown instanceof BodyStops)) {
        return "the body's own error did not reach its caller: " + thrown;
      }
      if (rank != last && (thrown.getMessage() == null
          || !thrown.getMessage().contains("rank " + last + "'s group() body threw"))) {
        return "the failure does not name rank " + last + "'s body: " + thrown;
      }
      if (ms > 10_000) {
        return "the failed group() took " + ms + " ms to fail (a timeout, not the agreement)";
      }
      ByteBuffer untouched = mem.read(recv);
      for (int i = 0; i < count * 4; i++) {
        if (untouched.get(i) != Memory.POISON) {
          return "a call of the failed group() ran: byte " + i + " of its output was written";
        }
      }
      comm.group(g -> g.allReduce(send.comm(), recv.comm(), count, DataType.INT32, ReduceOp.SUM));
      ByteBuffer sums = mem.read(recv).order(ByteOrder.nativeOrder());
      int expect = n * (n + 1) / 2;
      for (int i = 0; i < count; i++) {
        if (sums.getInt(i * 4) != expect) {
          return "the group() after the failed one: element " + i + " is " + sums.getInt(i * 4) + ", expected "
              + expect;
        }
      }
      return null;
    });
  }

  // ---------------------------------------------------------------- helpers

  private ByteBuffer[] inputs(long s, DataType t, ReduceOp op, long count) {
    ByteBuffer[] in = new ByteBuffer[n];
    for (int r = 0; r < n; r++) {
      in[r] = Elements.input(s, r, t, op, count);
    }
    return in;
  }

  private static String sameBytes(ByteBuffer expect, int expectAt, ByteBuffer got, int gotAt, int len) {
    return CaseTally.sameBytes(expect, expectAt, got, gotAt, len);
  }

  private interface Case {
    /** Null when right, else what is wrong. */
    String run() throws Exception;
  }

  private void run(String what, Case c) {
    if (consecutiveErrors >= MAX_CONSECUTIVE_ERRORS) {
      return; // the communicator is broken: the first errors say why
    }
    String bad;
    try {
      bad = c.run();
      consecutiveErrors = 0;
    } catch (Exception | Error e) {
      bad = "error: " + e;
      consecutiveErrors++;
      if (consecutiveErrors == MAX_CONSECUTIVE_ERRORS) {
        tally.fail(MAX_CONSECUTIVE_ERRORS + " errors in a row: the remaining cases of this stage are skipped");
      }
    } finally {
      try {
        mem.caseDone();
      } catch (RuntimeException e) {
        tally.fail("releasing buffers: " + e);
      }
    }
    tally.ran(what, bad);
  }
}
