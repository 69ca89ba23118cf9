package dev.gpucoll.cuda.check;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.CollectiveTimeoutException;
import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.GpuCommunicator;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.cuda.CudaEnvironment;
import dev.gpucoll.cuda.CudaNative;
import dev.gpucoll.cuda.CudaProbe;
import dev.gpucoll.cuda.DeviceFacts;
import dev.gpucoll.cuda.ForGpuChecks;
import dev.gpucoll.cuda.KernelVariant;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The GPU correctness suite, run from the GPU bundle (never by CI: it needs a GPU). Ranks are
 * threads of this JVM on one device (2, 3, 4, 5, 8 ranks); every collective x type x op x size,
 * outputs poisoned before each run, fresh random inputs every case, every rank's output checked
 * bit-for-bit against the others and against a float64 host reference; 1000 back-to-back calls;
 * two processes on the GPU through real IPC handles; a planted missing rank that must end in the
 * timeout exception. Prints a table last; exit status 1 when anything failed.
 *
 * <p>Usage: GpuSuite [--quick] [--device N] [--budget-seconds S]
 */
public final class GpuSuite {
  static final long PRIME_COUNT = 1009;
  static final long MB = 1 << 20;

  private final int device;
  private final boolean quick;
  private final long deadline;
  private final Map<String, long[]> table = new LinkedHashMap<>(); // key -> {cases, failed, exactOrderMismatch}
  private final List<String> failures = new ArrayList<>();
  private final List<String> notRun = new ArrayList<>();
  private final List<String> notes = new ArrayList<>();
  private final AtomicLong seeds = new AtomicLong(System.nanoTime());

  GpuSuite(int device, boolean quick, long budgetSeconds) {
    this.device = device;
    this.quick = quick;
    this.deadline = System.nanoTime() + budgetSeconds * 1_000_000_000L;
  }

  public static void main(String[] args) throws Exception {
    int device = 0;
    boolean quick = false;
    long budget = 300;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--quick" -> quick = true;
        case "--device" -> device = Integer.parseInt(args[++i]);
        case "--budget-seconds" -> budget = Long.parseLong(args[++i]);
        default -> throw new IllegalArgumentException("unknown argument " + args[i]);
      }
    }
    System.exit(new GpuSuite(device, quick, budget).runAll() ? 0 : 1);
  }

  boolean runAll() throws Exception {
    CudaProbe p = CudaEnvironment.probe();
    System.out.println("== GpuSuite: CUDA driver " + CudaProbe.cudaVersionText(p.driverVersion()) + ", runtime "
        + CudaProbe.cudaVersionText(p.runtimeVersion()) + ", NCCL " + CudaProbe.ncclVersionText(p.ncclVersion())
        + ", devices " + p.deviceCount());
    if (!p.available()) {
      System.out.println("GPU backend unavailable: " + p.unavailableReason().get());
      return false;
    }
    CudaNative.setDevice(device);
    DeviceFacts f = CudaNative.deviceFacts(device);
    System.out.println("device " + device + ": " + f.name() + " " + f.uuid() + " sm_" + f.computeCapability() + ", "
        + f.multiprocessors() + " SMs");
    long t0 = System.nanoTime();
    checkKernelNames();
    int[] rankCounts = quick ? new int[] {2, 3} : new int[] {2, 3, 4, 5, 8};
    for (int n : rankCounts) {
      section(n, null);
    }
    for (KernelVariant v : List.of(KernelVariant.SENTINEL, KernelVariant.LL128, KernelVariant.PIPE)) {
      for (int n : quick ? new int[] {3} : new int[] {2, 5, 8}) {
        section(n, v);
      }
    }
    hostArraysAndUserStream(3);
    split(5);
    forcedNccl();
    backToBack(quick ? 2 : 4, 1000);
    freeBetweenCalls(2, quick ? 12 : 60);
    plantedMissingRank(3);
    twoProcesses();
    printSummary((System.nanoTime() - t0) / 1e9);
    return failures.isEmpty() && notRun.isEmpty();
  }

  /** Every kernel the kernel table ships must be in the fatbin: cuModuleGetFunction on each name. */
  private void checkKernelNames() {
    java.util.Set<String> unique = new java.util.LinkedHashSet<>();
    for (dev.gpucoll.cuda.KernelTable.Kernel k : dev.gpucoll.cuda.KernelTable.kernels()) {
      for (DataType t : DataType.values()) {
        if (k.shipped() && k.supports(t)) {
          unique.add(k.name(t));
        }
      }
    }
    List<String> names = new ArrayList<>(unique);
    List<String> missing = ForGpuChecks.missingKernels(device, names);
    record("kernels in fatbin", names.size(), missing.size(), 0);
    if (!missing.isEmpty()) {
      failures.add("kernels missing from the fatbin: " + missing);
    }
    System.out.println("fatbin: " + (names.size() - missing.size()) + "/" + names.size() + " kernels found");
  }

  // ---------------------------------------------------------------- case matrix

  record Case(Collective c, DataType t, ReduceOp op, long count, int root, boolean inPlace, long[][] a2av) {
    long sendElems(int n) {
      return switch (c) {
        case REDUCE_SCATTER, ALL_TO_ALL -> count * n;
        case ALL_TO_ALLV -> a2avExtent(a2av[0], a2av[1]);
        default -> count;
      };
    }

    long recvElems(int n) {
      return switch (c) {
        case ALL_GATHER, ALL_TO_ALL -> count * n;
        case ALL_TO_ALLV -> a2avExtent(a2av[2], a2av[3]);
        case BARRIER -> 0;
        default -> count;
      };
    }

    String label() {
      return c.apiName() + " " + t + (isReduction() ? " " + op : "") + " count=" + count
          + (c == Collective.BROADCAST ? " root=" + root : "") + (inPlace ? " in-place" : "");
    }

    boolean isReduction() {
      return c == Collective.ALL_REDUCE || c == Collective.REDUCE_SCATTER;
    }
  }

  static long a2avExtent(long[] counts, long[] displs) {
    long end = 0;
    for (int i = 0; i < counts.length; i++) {
      end = Math.max(end, displs[i] + counts[i]);
    }
    return end;
  }

  static final DataType[] REDUCE_TYPES = {DataType.FLOAT32, DataType.FLOAT64, DataType.FLOAT16, DataType.BFLOAT16,
      DataType.INT32, DataType.INT64};

  /** Per-rank block sizes: 1 element, a prime count, 4 KB, 64 KB, 1 MB (elements from bytes). */
  static long[] counts(DataType t, boolean quick) {
    long e = t.byteSize();
    return quick ? new long[] {1, PRIME_COUNT, 4096 / e} : new long[] {1, PRIME_COUNT, 4096 / e, 65536 / e, MB / e};
  }

  private List<Case> cases(int n, KernelVariant v, SplittableRandom rnd) {
    List<Case> out = new ArrayList<>();
    boolean reductionsOnly = v == KernelVariant.SENTINEL || v == KernelVariant.LL128 || v == KernelVariant.BARRIER2;
    for (DataType t : REDUCE_TYPES) {
      for (long count : counts(t, quick)) {
        for (ReduceOp op : ReduceOp.values()) {
          if (v == KernelVariant.LL128 && op != ReduceOp.SUM && op != ReduceOp.AVG) {
            continue;
          }
          if (v == KernelVariant.SENTINEL && count * t.byteSize() > ForGpuChecks.sentinelMaxBytes()) {
            continue;
          }
          if (v == KernelVariant.LL128 && count > ForGpuChecks.ll128MaxCount(t)) {
            continue; // 1 MB of fp16/bf16 is 524288 elements; the LL128 lines hold 491520
          }
          out.add(new Case(Collective.ALL_REDUCE, t, op, count, 0, false, null));
          if (!reductionsOnly) {
            out.add(new Case(Collective.REDUCE_SCATTER, t, op, count, 0, false, null));
          }
        }
      }
      out.add(new Case(Collective.ALL_REDUCE, t, ReduceOp.SUM, PRIME_COUNT, 0, true, null));
    }
    if (!reductionsOnly) {
      for (DataType t : DataType.values()) {
        for (long count : counts(t, quick)) {
          out.add(new Case(Collective.ALL_GATHER, t, ReduceOp.SUM, count, 0, false, null));
          out.add(new Case(Collective.ALL_TO_ALL, t, ReduceOp.SUM, count, 0, false, null));
          out.add(new Case(Collective.BROADCAST, t, ReduceOp.SUM, count, rnd.nextInt(n), false, null));
        }
      }
      out.add(new Case(Collective.BROADCAST, DataType.FLOAT32, ReduceOp.SUM, PRIME_COUNT, n - 1, true, null));
      for (long maxCount : quick ? new long[] {7, 1000} : new long[] {1, 7, 1000, 20000, 100000}) {
        for (DataType t : List.of(DataType.FLOAT32, DataType.INT8, DataType.FLOAT64)) {
          out.add(new Case(Collective.ALL_TO_ALLV, t, ReduceOp.SUM, 0, 0, false, a2avTable(n, maxCount, rnd)));
        }
      }
      out.add(new Case(Collective.BARRIER, DataType.INT32, ReduceOp.SUM, 0, 0, false, null));
    }
    if (!quick && (n == 2 || n == 8) && (v == null || v == KernelVariant.PIPE)) {
      // 64 MB: the largest buffer per rank is 64 MB.
      long big = 64 * MB;
      out.add(new Case(Collective.ALL_REDUCE, DataType.FLOAT32, ReduceOp.SUM, big / 4, 0, false, null));
      out.add(new Case(Collective.ALL_REDUCE, DataType.BFLOAT16, ReduceOp.MAX, big / 2, 0, false, null));
      out.add(new Case(Collective.ALL_REDUCE, DataType.INT64, ReduceOp.SUM, big / 8, 0, false, null));
      out.add(new Case(Collective.REDUCE_SCATTER, DataType.FLOAT32, ReduceOp.SUM, big / 4 / n, 0, false, null));
      out.add(new Case(Collective.ALL_GATHER, DataType.FLOAT32, ReduceOp.SUM, big / 4 / n, 0, false, null));
      out.add(new Case(Collective.ALL_TO_ALL, DataType.FLOAT64, ReduceOp.SUM, big / 8 / n, 0, false, null));
      out.add(new Case(Collective.BROADCAST, DataType.INT32, ReduceOp.SUM, big / 4, n / 2, false, null));
    }
    return out;
  }

  /** A random allToAllv: counts[src][dst] in [0, maxCount], blocks packed with random gaps. */
  static long[][] a2avTable(int n, long maxCount, SplittableRandom rnd) {
    long[][] c = new long[n][n];
    for (int s = 0; s < n; s++) {
      for (int d = 0; d < n; d++) {
        c[s][d] = rnd.nextLong(maxCount + 1);
      }
    }
    // Flattened: [rank][4][n] -> store per rank later; here rows are src, columns dst.
    long[][] flat = new long[n * 4][];
    for (int r = 0; r < n; r++) {
      long[] sc = new long[n];
      long[] sd = new long[n];
      long[] rc = new long[n];
      long[] rd = new long[n];
      long at = 0;
      for (int k = 0; k < n; k++) {
        sc[k] = c[r][k];
        sd[k] = at;
        at += sc[k] + (k % 2);
      }
      at = 0;
      for (int k = 0; k < n; k++) {
        rc[k] = c[k][r];
        rd[k] = at;
        at += rc[k] + ((k + 1) % 2);
      }
      flat[4 * r] = sc;
      flat[4 * r + 1] = sd;
      flat[4 * r + 2] = rc;
      flat[4 * r + 3] = rd;
    }
    return flat;
  }

  static long[][] a2avOf(long[][] flat, int rank) {
    return new long[][] {flat[4 * rank], flat[4 * rank + 1], flat[4 * rank + 2], flat[4 * rank + 3]};
  }

  static long capacity(List<Case> cases, int n) {
    long cap = 1 << 20;
    for (Case c : cases) {
      for (int r = 0; r < n; r++) {
        Case rc = c.a2av == null ? c : new Case(c.c, c.t, c.op, c.count, c.root, c.inPlace, a2avOf(c.a2av, r));
        cap = Math.max(cap, Math.max(rc.sendElems(n), rc.recvElems(n)) * c.t.byteSize());
      }
    }
    return cap + 4096;
  }

  // ---------------------------------------------------------------- running

  private void section(int n, KernelVariant v) {
    String vname = v == null ? "auto" : v.abiName();
    SplittableRandom rnd = new SplittableRandom(seeds.incrementAndGet());
    List<Case> cases = cases(n, v, rnd);
    if (System.nanoTime() > deadline) {
      notRun.add(n + " ranks, variant " + vname + ": " + cases.size() + " cases (suite time budget spent)");
      return;
    }
    long cap = capacity(cases, n);
    long t0 = System.nanoTime();
    RankGroup g = null;
    int errors = 0;
    int done = 0;
    try {
      for (Case c : cases) {
        if (System.nanoTime() > deadline) {
          notRun.add(n + " ranks, variant " + vname + ": " + (cases.size() - done) + " cases (suite time budget spent)");
          break;
        }
        if (g == null) {
          g = RankGroup.create(n, device, v, Duration.ofSeconds(5), cap);
        }
        String key = c.c.apiName() + " / " + vname + " / " + n;
        try {
          List<String> bad = runCase(g, c, seeds.incrementAndGet());
          long exactMismatch = bad.stream().filter(s -> s.startsWith("order:")).count();
          bad.removeIf(s -> s.startsWith("order:"));
          record(key, 1, bad.isEmpty() ? 0 : 1, exactMismatch > 0 ? 1 : 0);
          if (!bad.isEmpty()) {
            failures.add(n + " ranks, " + vname + ", " + c.label() + ": " + String.join("; ", bad));
          }
        } catch (RuntimeException e) {
          record(key, 1, 1, 0);
          failures.add(n + " ranks, " + vname + ", " + c.label() + ": " + e);
          errors++;
          g.close();
          g = null;
          if (errors >= 3 || e instanceof RankGroup.HarnessTimeout) {
            notRun.add(n + " ranks, variant " + vname + ": " + (cases.size() - done - 1)
                + " cases skipped after " + errors + " errors");
            break;
          }
        }
        done++;
      }
    } catch (RuntimeException e) {
      failures.add(n + " ranks, " + vname + ": group setup failed: " + e);
    } finally {
      if (g != null) {
        g.close();
      }
    }
    System.out.printf("section %d ranks, %-8s: %4d cases in %5.1f s, %d failures so far%n", n, vname, done,
        (System.nanoTime() - t0) / 1e9, failures.size());
  }

  /** Runs one case on every rank and checks every rank's output; returns the problems found. */
  List<String> runCase(RankGroup g, Case c, long seed) {
    int n = g.size;
    g.onAll(Duration.ofSeconds(60), r -> {
      Case rc = c.a2av == null ? c : new Case(c.c, c.t, c.op, c.count, c.root, c.inPlace, a2avOf(c.a2av, r.rank));
      long e = c.t.byteSize();
      long sendBytes = rc.sendElems(n) * e;
      long recvBytes = rc.recvElems(n) * e;
      SplittableRandom rnd = new SplittableRandom(seed * 1_000_003L + r.rank);
      if (c.isReduction()) {
        Elements.fillForReduction(r.hostIn, c.t, c.op, rc.sendElems(n), rnd);
      } else {
        Elements.fillRandomBytes(r.hostIn, sendBytes, rnd);
      }
      r.upload(sendBytes, recvBytes);
      GpuCommunicator comm = r.comm;
      CommBuffer send = CommBuffer.device(r.send, r.capacity);
      CommBuffer recv = CommBuffer.device(r.recv, r.capacity);
      if (c.inPlace) {
        CudaNative.memcpyAsync(r.recv, r.send, sendBytes, r.stream());
        send = recv;
      }
      switch (c.c) {
        case ALL_REDUCE -> comm.allReduce(send, recv, c.count, c.t, c.op);
        case REDUCE_SCATTER -> comm.reduceScatter(send, recv, c.count, c.t, c.op);
        case ALL_GATHER -> comm.allGather(send, recv, c.count, c.t);
        case ALL_TO_ALL -> comm.allToAll(send, recv, c.count, c.t);
        case ALL_TO_ALLV -> comm.allToAllv(send, rc.a2av[0], rc.a2av[1], recv, rc.a2av[2], rc.a2av[3], c.t);
        case BROADCAST -> comm.broadcast(send, recv, c.count, c.t, c.root);
        case BARRIER -> comm.barrier();
      }
      r.download(recvBytes);
      return null;
    });
    List<List<String>> perRank = g.onAll(Duration.ofSeconds(120), r -> check(g, c, r.rank));
    List<String> all = new ArrayList<>();
    perRank.forEach(all::addAll);
    return all;
  }

  /** Checks rank k's output; at most a few messages per rank. */
  static List<String> check(RankGroup g, Case c, int k) {
    int n = g.size;
    List<String> bad = new ArrayList<>();
    ByteBuffer out = g.ranks[k].hostOut;
    DataType t = c.t;
    switch (c.c) {
      case ALL_REDUCE, REDUCE_SCATTER -> {
        long base = c.c == Collective.REDUCE_SCATTER ? (long) k * c.count : 0;
        // LL128 sums in arrival order (kernel_abi.h): identical on all ranks, not the rank-order fold.
        boolean ll128 = g.ranks[k].comm.explain(c.c, c.count * t.byteSize()).algorithm().equals("gpu-ll128-atomic")
            || g.variant == KernelVariant.LL128;
        long[] terms = new long[n];
        int orderMismatches = 0;
        for (long i = 0; i < c.count && bad.size() < 3; i++) {
          for (int r = 0; r < n; r++) {
            terms[r] = Elements.bits(g.ranks[r].hostIn, t, base + i);
          }
          long got = Elements.bits(out, t, i);
          String problem = Elements.checkReduced(t, c.op, terms, got);
          if (problem != null) {
            bad.add("rank " + k + " [" + i + "]: " + problem);
          } else if (!ll128 && Elements.fold(t, c.op, terms) != got) {
            orderMismatches++;
          }
        }
        if (orderMismatches > 0) {
          bad.add("order: rank " + k + ": " + orderMismatches + " elements differ from the rank-order fold");
        }
        if (c.c == Collective.ALL_REDUCE && k > 0) {
          long bytes = c.count * t.byteSize();
          int mismatch = out.slice(0, (int) bytes).mismatch(g.ranks[0].hostOut.slice(0, (int) bytes));
          if (mismatch >= 0) {
            bad.add("rank " + k + " differs from rank 0 at byte " + mismatch + " (results must be bit-identical)");
          }
        }
      }
      case ALL_GATHER -> {
        for (int r = 0; r < n && bad.size() < 3; r++) {
          compare(bad, k, "block from rank " + r, out, (long) r * c.count, g.ranks[r].hostIn, 0, c.count, t);
        }
      }
      case ALL_TO_ALL -> {
        for (int r = 0; r < n && bad.size() < 3; r++) {
          compare(bad, k, "block from rank " + r, out, (long) r * c.count, g.ranks[r].hostIn, (long) k * c.count,
              c.count, t);
        }
      }
      case ALL_TO_ALLV -> {
        long[][] mine = a2avOf(c.a2av, k);
        for (int r = 0; r < n && bad.size() < 3; r++) {
          long[][] theirs = a2avOf(c.a2av, r);
          compare(bad, k, "block from rank " + r, out, mine[3][r], g.ranks[r].hostIn, theirs[1][k], mine[2][r], t);
        }
      }
      case BROADCAST -> compare(bad, k, "root " + c.root + "'s data", out, 0, g.ranks[c.root].hostIn, 0, c.count, t);
      case BARRIER -> { }
    }
    return bad;
  }

  static void compare(List<String> bad, int k, String what, ByteBuffer out, long outAt, ByteBuffer in, long inAt,
      long count, DataType t) {
    int e = t.byteSize();
    ByteBuffer a = out.slice((int) (outAt * e), (int) (count * e));
    ByteBuffer b = in.slice((int) (inAt * e), (int) (count * e));
    int m = a.mismatch(b);
    if (m >= 0) {
      bad.add("rank " + k + ": " + what + " differs at element " + (m / e) + " of " + count
          + (a.get(m) == (byte) RankGroup.Poison.BYTE ? " (poison left: not written)" : ""));
    }
  }

  private void record(String key, long cases, long failed, long orderMismatch) {
    long[] row = table.computeIfAbsent(key, x -> new long[3]);
    row[0] += cases;
    row[1] += failed;
    row[2] += orderMismatch;
  }

  // ---------------------------------------------------------------- special checks

  /** 1000 back-to-back calls without a host sync, mixing variants, then every result checked. */
  private void backToBack(int n, int calls) {
    String key = "back-to-back x" + calls + " / auto / " + n;
    if (System.nanoTime() > deadline) {
      notRun.add(key + " (suite time budget spent)");
      return;
    }
    long count = 4096; // fp32: 16 KB (LL); every 10th call 64 KB + 4 (sentinel), every 25th 2 MB (pipe)
    long slot = 1 << 20;
    try (RankGroup g = RankGroup.create(n, device, null, Duration.ofSeconds(5), slot * 4 + 4096)) {
      long seed = seeds.incrementAndGet();
      g.onAll(Duration.ofSeconds(120), r -> {
        SplittableRandom rnd = new SplittableRandom(seed + r.rank);
        Elements.fillForReduction(r.hostIn, DataType.INT32, ReduceOp.SUM, slot / 4 * 2, rnd);
        r.upload(slot * 2, slot * 4);
        for (int i = 0; i < calls; i++) {
          long elems = i % 25 == 24 ? slot / 4 * 2 : i % 10 == 9 ? 16385 : count;
          int outSlot = i % 2;
          if (elems == slot / 4 * 2) {
            r.comm.allReduce(CommBuffer.device(r.send, slot * 2), CommBuffer.device(r.recv + 2 * slot, slot * 2),
                elems, DataType.INT32, ReduceOp.SUM);
          } else {
            r.comm.allReduce(CommBuffer.device(r.send, slot), CommBuffer.device(r.recv + outSlot * slot, slot), elems,
                DataType.INT32, ReduceOp.SUM);
          }
        }
        r.download(slot * 4);
        return null;
      });
      List<String> bad = new ArrayList<>();
      for (int k = 0; k < n && bad.size() < 5; k++) {
        ByteBuffer out = g.ranks[k].hostOut;
        long[] terms = new long[n];
        // recv slot 0 holds the last LL call (4096 elems), slot 1 the last of the odd calls, slot 2..3 the pipe call.
        long[][] regions = {{0, count}, {slot / 4, count}, {2 * slot / 4, slot / 4 * 2}};
        for (long[] reg : regions) {
          for (long i = 0; i < reg[1] && bad.size() < 5; i++) {
            for (int r = 0; r < n; r++) {
              terms[r] = Elements.bits(g.ranks[r].hostIn, DataType.INT32, i);
            }
            long got = Elements.bits(out, DataType.INT32, reg[0] + i);
            if (got != Elements.fold(DataType.INT32, ReduceOp.SUM, terms)) {
              bad.add("rank " + k + " region@" + reg[0] + " [" + i + "] wrong");
            }
          }
        }
      }
      long epoch = calls; // every call is one launch
      record(key, 1, bad.isEmpty() ? 0 : 1, 0);
      if (!bad.isEmpty()) {
        failures.add(key + ": " + bad);
      }
      notes.add(key + ": " + calls + " launches (epochs 1.." + epoch + "), results checked after the last");
    } catch (RuntimeException e) {
      record(key, 1, 1, 0);
      failures.add(key + ": " + e);
    }
  }

  /**
   * The Java-array entry points (what a Spark job passes: float[] etc., staged through device
   * scratch) and a caller-provided stream via setStream, each checked.
   */
  private void hostArraysAndUserStream(int n) {
    String key = "host arrays + setStream / auto / " + n;
    if (System.nanoTime() > deadline) {
      notRun.add(key + " (suite time budget spent)");
      return;
    }
    try (RankGroup g = RankGroup.create(n, device, null, Duration.ofSeconds(5), 1 << 20)) {
      long seed = seeds.incrementAndGet();
      List<List<String>> problems = g.onAll(Duration.ofSeconds(60), r -> {
        List<String> bad = new ArrayList<>();
        int count = 1009;
        // float[] in place, SUM: every rank fills from the same seeds, so each can compute the expectation.
        float[][] all = new float[n][count];
        for (int q = 0; q < n; q++) {
          SplittableRandom rnd = new SplittableRandom(seed + q);
          for (int i = 0; i < count; i++) {
            all[q][i] = (float) rnd.nextDouble(-1, 1);
          }
        }
        float[] mine = all[r.rank].clone();
        r.comm.allReduce(mine, ReduceOp.SUM);
        for (int i = 0; i < count && bad.size() < 3; i++) {
          float expect = all[0][i];
          for (int q = 1; q < n; q++) {
            expect += all[q][i];
          }
          if (Float.floatToIntBits(expect) != Float.floatToIntBits(mine[i])) {
            bad.add("rank " + r.rank + " float[] allReduce [" + i + "]: " + mine[i] + " != " + expect);
          }
        }
        // long[] allGather through CommBuffer.of(long[])
        long[] in = {r.rank * 1000L + 7, -r.rank};
        long[] out = new long[2 * n];
        java.util.Arrays.fill(out, Long.MIN_VALUE);
        r.comm.allGather(CommBuffer.of(in), CommBuffer.of(out), 2, DataType.INT64);
        for (int q = 0; q < n; q++) {
          if (out[2 * q] != q * 1000L + 7 || out[2 * q + 1] != -q) {
            bad.add("rank " + r.rank + " long[] allGather block " + q + ": " + out[2 * q] + "," + out[2 * q + 1]);
          }
        }
        // A caller-provided stream: device buffers, then synchronize().
        long own = r.comm.stream();
        long user = CudaNative.streamCreateNonBlocking();
        try {
          r.comm.setStream(user);
          java.nio.ByteBuffer v = r.hostIn;
          for (int i = 0; i < 64; i++) {
            v.putInt(4 * i, r.rank + i);
          }
          r.upload(256, 256); // on comm.stream(), which is now the caller's stream
          r.comm.allReduce(CommBuffer.device(r.send, 256), CommBuffer.device(r.recv, 256), 64, DataType.INT32,
              ReduceOp.MAX);
          r.download(256);
          for (int i = 0; i < 64; i++) {
            if (r.hostOut.getInt(4 * i) != n - 1 + i) {
              bad.add("rank " + r.rank + " allReduce on setStream stream [" + i + "]: " + r.hostOut.getInt(4 * i));
              break;
            }
          }
        } finally {
          r.comm.setStream(own);
          CudaNative.streamDestroy(user);
        }
        if (!r.comm.observedPaths().toString().contains("gpu-")) {
          bad.add("rank " + r.rank + " observed " + r.comm.observedPaths());
        }
        return bad;
      });
      List<String> bad = new ArrayList<>();
      problems.forEach(bad::addAll);
      record(key, 1, bad.isEmpty() ? 0 : 1, 0);
      if (!bad.isEmpty()) {
        failures.add(key + ": " + bad);
      }
    } catch (RuntimeException e) {
      record(key, 1, 1, 0);
      failures.add(key + ": " + e);
    }
  }

  /**
   * split(color = rank % 2, key = -rank) with the last rank opting out (color -1): each child
   * allReduces its members' values, the opted-out rank gets null, and the parent still works.
   */
  private void split(int n) {
    String key = "split into 2 colors + 1 opted out / auto / " + n;
    if (System.nanoTime() > deadline) {
      notRun.add(key + " (suite time budget spent)");
      return;
    }
    try (RankGroup g = RankGroup.create(n, device, null, Duration.ofSeconds(5), 1 << 20)) {
      List<List<String>> problems = g.onAll(Duration.ofSeconds(60), r -> {
        List<String> bad = new ArrayList<>();
        int color = r.rank == n - 1 ? -1 : r.rank % 2;
        GpuCommunicator child = r.comm.split(color, -r.rank);
        if (color < 0) {
          if (child != null) {
            bad.add("rank " + r.rank + " opted out but got a communicator");
          }
          r.comm.barrier();
        } else {
          try (GpuCommunicator c = child) {
            List<Integer> members = new ArrayList<>();
            for (int q = n - 2; q >= 0; q--) {
              if (q % 2 == color) {
                members.add(q); // keys -q: higher parent rank first
              }
            }
            if (c.size() != members.size() || c.rank() != members.indexOf(r.rank)) {
              bad.add("rank " + r.rank + ": child rank/size " + c.rank() + "/" + c.size() + ", expected "
                  + members.indexOf(r.rank) + "/" + members.size());
            }
            int[] v = new int[64];
            for (int i = 0; i < v.length; i++) {
              v[i] = r.rank * 100 + i;
            }
            c.allReduce(v, ReduceOp.SUM);
            for (int i = 0; i < v.length; i++) {
              int expect = 0;
              for (int q : members) {
                expect += q * 100 + i;
              }
              if (v[i] != expect) {
                bad.add("rank " + r.rank + " child allReduce [" + i + "] = " + v[i] + ", expected " + expect);
                break;
              }
            }
            // Close only when no rank of any child still has a kernel in flight: cudaFree waits for the
            // whole device, and a kernel of the other child could be waiting on a rank stuck behind it.
            r.comm.barrier();
          }
        }
        int[] w = {1};
        r.comm.allReduce(w, ReduceOp.SUM);
        if (w[0] != n) {
          bad.add("rank " + r.rank + ": parent allReduce after split = " + w[0]);
        }
        return bad;
      });
      List<String> bad = new ArrayList<>();
      problems.forEach(bad::addAll);
      record(key, 1, bad.isEmpty() ? 0 : 1, 0);
      if (!bad.isEmpty()) {
        failures.add(key + ": " + bad);
      }
    } catch (RuntimeException e) {
      record(key, 1, 1, 0);
      failures.add(key + ": " + e);
    }
  }

  /** spark.gpucoll.algorithm=nccl on a 1-rank group (NCCL refuses two ranks on one GPU): NCCL runs every call. */
  private void forcedNccl() {
    String key = "algorithm=nccl, every call on NCCL / nccl / 1";
    if (System.nanoTime() > deadline) {
      notRun.add(key + " (suite time budget spent)");
      return;
    }
    try (RankGroup g = RankGroup.create(1, device, null, Duration.ofSeconds(5), 1 << 20,
        java.util.Map.of("spark.gpucoll.algorithm", "nccl"))) {
      List<List<String>> problems = g.onAll(Duration.ofSeconds(60), r -> {
        List<String> bad = new ArrayList<>();
        float[] v = {1.5f, -2f, 3.25f};
        r.comm.allReduce(v, ReduceOp.SUM);
        if (v[0] != 1.5f || v[1] != -2f || v[2] != 3.25f) {
          bad.add("1-rank allReduce changed the data: " + java.util.Arrays.toString(v));
        }
        r.comm.barrier();
        long[] in = {7, 8};
        long[] out = new long[2];
        r.comm.allGather(CommBuffer.of(in), CommBuffer.of(out), 2, DataType.INT64);
        if (out[0] != 7 || out[1] != 8) {
          bad.add("allGather " + java.util.Arrays.toString(out));
        }
        if (r.comm.ncclComm() == 0) {
          bad.add("ncclComm() is 0");
        }
        List<String> paths = r.comm.observedPaths();
        if (paths.isEmpty() || !paths.stream().allMatch(p -> p.contains("/nccl"))) {
          bad.add("observed " + paths + ", expected NCCL paths only");
        }
        notes.add(key + ": observed " + paths);
        return bad;
      });
      List<String> bad = new ArrayList<>();
      problems.forEach(bad::addAll);
      record(key, 1, bad.isEmpty() ? 0 : 1, 0);
      if (!bad.isEmpty()) {
        failures.add(key + ": " + bad);
      }
    } catch (RuntimeException e) {
      record(key, 1, 1, 0);
      failures.add(key + ": " + e);
    }
  }

  /**
   * Fractional GPUs (Spark's spark.task.resource.gpu.amount=0.5): ranks of this process on one GPU,
   * formed by the gpu backend's default route, with cudaFree of the previous buffers and cudaMalloc
   * of new ones between every call, as user code may do. Spinning kernels would deadlock here (cudaFree
   * waits for a peer's kernel that waits for this rank); the default route takes gpu-staged-host, so
   * every call must finish, give the exact result, and be reported on that path.
   */
  private void freeBetweenCalls(int n, int calls) {
    String key = "cudaFree between calls / default route / " + n + " ranks on one GPU";
    if (System.nanoTime() > deadline) {
      notRun.add(key + " (suite time budget spent)");
      return;
    }
    long count = 1024; // int32 elements per rank and call
    long bytes = count * 4 * n;
    Collective[] order = {Collective.BROADCAST, Collective.REDUCE_SCATTER, Collective.ALL_REDUCE,
        Collective.ALL_GATHER, Collective.ALL_TO_ALL, Collective.BARRIER};
    try (RankGroup g = RankGroup.createDefaultRoute(n, device, Duration.ofSeconds(10), 4096)) {
      List<List<String>> problems = g.onAll(Duration.ofSeconds(120), r -> {
        List<String> bad = new ArrayList<>();
        long host = CudaNative.hostAlloc(bytes);
        ByteBuffer out = RankGroup.view(host, bytes);
        long send = 0;
        long recv = 0;
        try {
          for (int i = 0; i < calls && bad.size() < 5; i++) {
            CudaNative.free(send); // cudaFree synchronises the device: a spinning peer would never let it return
            CudaNative.free(recv);
            send = CudaNative.malloc(bytes);
            recv = CudaNative.malloc(bytes);
            // Every byte of rank r's input is r + 1, so every int32 element is (r + 1) * 0x01010101.
            CudaNative.memsetAsync(send, r.rank + 1, bytes, r.stream());
            CudaNative.memsetAsync(recv, 0, bytes, r.stream());
            Collective c = order[i % order.length];
            CommBuffer s = CommBuffer.device(send, bytes);
            CommBuffer d = CommBuffer.device(recv, bytes);
            switch (c) {
              case BROADCAST -> r.comm.broadcast(s, d, count, DataType.INT32, 0);
              case REDUCE_SCATTER -> r.comm.reduceScatter(s, d, count, DataType.INT32, ReduceOp.SUM);
              case ALL_REDUCE -> r.comm.allReduce(s, d, count, DataType.INT32, ReduceOp.SUM);
              case ALL_GATHER -> r.comm.allGather(s, d, count, DataType.INT32);
              case ALL_TO_ALL -> r.comm.allToAll(s, d, count, DataType.INT32);
              default -> r.comm.barrier();
            }
            CudaNative.memcpyAsync(host, recv, bytes, r.stream());
            r.comm.synchronize();
            long outElems = c == Collective.ALL_GATHER || c == Collective.ALL_TO_ALL ? count * n
                : c == Collective.BARRIER ? 0 : count;
            for (long e = 0; e < outElems && bad.size() < 5; e++) {
              int from = (int) (e / count); // allGather / allToAll: the block of rank "from"
              long unit = 0x01010101L;
              long expect = switch (c) {
                case BROADCAST -> unit;
                case REDUCE_SCATTER, ALL_REDUCE -> unit * n * (n + 1) / 2;
                default -> unit * (from + 1);
              };
              int got = out.getInt((int) (e * 4));
              if (got != (int) expect) {
                bad.add("rank " + r.rank + " call " + i + " " + c.apiName() + " [" + e + "] = " + got + ", expected "
                    + (int) expect);
              }
            }
          }
          List<String> paths = r.comm.observedPaths();
          if (!paths.stream().allMatch(p -> p.contains("/gpu-staged-host="))) {
            bad.add("rank " + r.rank + " observed " + paths + ", expected gpu-staged-host only");
          }
          if (r.rank == 0) {
            notes.add(key + ": " + calls + " calls, observed " + paths);
          }
        } finally {
          CudaNative.free(send);
          CudaNative.free(recv);
          CudaNative.freeHost(host);
        }
        return bad;
      });
      List<String> bad = new ArrayList<>();
      problems.forEach(bad::addAll);
      record(key, calls, bad.isEmpty() ? 0 : 1, 0);
      if (!bad.isEmpty()) {
        failures.add(key + ": " + bad);
      }
    } catch (RuntimeException e) {
      record(key, calls, 1, 0);
      failures.add(key + ": " + e);
    }
  }

  /** Ranks 0..n-2 call allReduce, rank n-1 never does: the others must get a timeout naming it. */
  private void plantedMissingRank(int n) {
    String key = "planted missing rank / auto / " + n;
    if (System.nanoTime() > deadline) {
      notRun.add(key + " (suite time budget spent)");
      return;
    }
    Duration timeout = Duration.ofSeconds(2);
    try (RankGroup g = RankGroup.create(n, device, null, timeout, 1 << 20)) {
      long t0 = System.nanoTime();
      List<String> outcome = g.onAll(Duration.ofSeconds(30), r -> {
        if (r.rank == n - 1) {
          return "absent";
        }
        try {
          r.comm.allReduce(CommBuffer.device(r.send, 4096), CommBuffer.device(r.recv, 4096), 64, DataType.FLOAT32,
              ReduceOp.SUM);
          r.comm.synchronize();
          return "no exception";
        } catch (CollectiveTimeoutException e) {
          return "timeout missing=" + e.missingRanks() + ": " + e.getMessage();
        } catch (CollectiveException e) {
          return "other: " + e.getMessage();
        }
      });
      double secs = (System.nanoTime() - t0) / 1e9;
      boolean ok = true;
      for (int r = 0; r < n - 1; r++) {
        String o = outcome.get(r);
        if (!o.startsWith("timeout missing=[" + (n - 1) + "]")) {
          ok = false;
        }
      }
      record(key, 1, ok ? 0 : 1, 0);
      notes.add(key + ": after " + String.format("%.1f", secs) + " s: rank 0 -> " + outcome.get(0));
      if (!ok) {
        failures.add(key + ": " + outcome);
      }
    } catch (RuntimeException e) {
      record(key, 1, 1, 0);
      failures.add(key + ": " + e);
    }
  }

  /** Two processes on this GPU: real IPC handle exchange, then the non-spinning staged path. */
  private void twoProcesses() throws Exception {
    String key = "two processes, one GPU / staged / 2";
    if (System.nanoTime() > deadline) {
      notRun.add(key + " (suite time budget spent)");
      return;
    }
    List<String> result = TwoProcessCheck.run(device);
    boolean ok = result.stream().allMatch(s -> !s.startsWith("FAIL"));
    record(key, 1, ok ? 0 : 1, 0);
    for (String s : result) {
      if (s.startsWith("FAIL")) {
        failures.add(key + ": " + s);
      } else {
        notes.add(key + ": " + s);
      }
    }
  }

  private void printSummary(double seconds) {
    System.out.println();
    System.out.println("== GpuSuite notes");
    notes.forEach(s -> System.out.println("  " + s));
    if (!notRun.isEmpty()) {
      System.out.println("== NOT RUN");
      notRun.forEach(s -> System.out.println("  " + s));
    }
    if (!failures.isEmpty()) {
      System.out.println("== FAILURES (" + failures.size() + ", first 40)");
      failures.stream().limit(40).forEach(s -> System.out.println("  " + s));
    }
    System.out.println();
    System.out.println("== GpuSuite table (collective / variant / ranks: cases, failed, order-mismatch)");
    System.out.printf("%-44s %7s %7s %7s%n", "check", "cases", "failed", "order");
    long cases = 0;
    long failed = 0;
    for (Map.Entry<String, long[]> e : table.entrySet()) {
      long[] v = e.getValue();
      System.out.printf("%-44s %7d %7d %7d%n", e.getKey(), v[0], v[1], v[2]);
      cases += v[0];
      failed += v[1];
    }
    System.out.printf("GpuSuite: %d cases, %d failed, %d sections not run, %.1f s -> %s%n", cases, failed,
        notRun.size(), seconds, failures.isEmpty() && notRun.isEmpty() ? "PASS" : "FAIL");
  }
}
