package dev.gpucoll.cuda.check;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.CollectiveTimeoutException;
import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.GpuCommunicator;
import dev.gpucoll.api.LocOp;
import dev.gpucoll.api.PairType;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.check.CorrectnessMatrix;
import dev.gpucoll.check.CorrectnessMatrix.Case;
import dev.gpucoll.check.CorrectnessMatrix.Group;
import dev.gpucoll.check.CorrectnessMatrix.PairCase;
import dev.gpucoll.check.Elements;
import dev.gpucoll.check.PairReference;
import dev.gpucoll.check.Reduction;
import dev.gpucoll.check.Reduction.Accumulation;
import dev.gpucoll.cuda.CudaEnvironment;
import dev.gpucoll.cuda.CudaNative;
import dev.gpucoll.cuda.CudaProbe;
import dev.gpucoll.cuda.DeviceFacts;
import dev.gpucoll.cuda.KernelImage;
import dev.gpucoll.cuda.KernelTable;
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
 * threads of this JVM on one device; the cases are those of the correctness matrix
 * (native-kernels/test/correctness-matrix.txt: collective x type x op x size per group of ranks,
 * by size or with a kernel variant forced), outputs poisoned before each run, fresh random inputs every case, every rank's output checked
 * bit-for-bit against the others and against a float64 host reference; 1000 back-to-back calls;
 * two processes on the GPU through real IPC handles; a planted missing rank that must end in the
 * timeout exception. Prints a table last; exit status 1 when anything failed.
 *
 * <p>Usage: GpuSuite [--quick] [--groups-only] [--device N] [--budget-seconds S] ({@code --groups-only}:
 * the kernel names and the grouped-calls checks alone)
 */
public final class GpuSuite {

  private final int device;
  private final boolean quick;
  private final boolean groupsOnly;
  private final long deadline;
  /** key -> {cases, failed, exactOrderMismatch, refused}; a refused case (beyond a forced variant's capacity) is no case. */
  private final Map<String, long[]> table = new LinkedHashMap<>();
  private final List<String> failures = new ArrayList<>();
  private final List<String> notRun = new ArrayList<>();
  private final List<String> notes = new ArrayList<>();
  private final AtomicLong seeds = new AtomicLong(System.nanoTime());

  GpuSuite(int device, boolean quick, boolean groupsOnly, long budgetSeconds) {
    this.device = device;
    this.quick = quick;
    this.groupsOnly = groupsOnly;
    this.deadline = System.nanoTime() + budgetSeconds * 1_000_000_000L;
  }

  public static void main(String[] args) throws Exception {
    int device = 0;
    boolean quick = false;
    boolean groupsOnly = false;
    long budget = 300;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--quick" -> quick = true;
        case "--groups-only" -> groupsOnly = true;
        case "--device" -> device = Integer.parseInt(args[++i]);
        case "--budget-seconds" -> budget = Long.parseLong(args[++i]);
        default -> throw new IllegalArgumentException("unknown argument " + args[i]);
      }
    }
    System.exit(new GpuSuite(device, quick, groupsOnly, budget).runAll() ? 0 : 1);
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
    if (groupsOnly) {
      groupChecks();
      printSummary((System.nanoTime() - t0) / 1e9);
      return failures.isEmpty() && notRun.isEmpty();
    }
    Map<Group, List<Case>> matrix = CorrectnessMatrix.load().cases(quick, new SplittableRandom(seeds.incrementAndGet()));
    System.out.println("correctness matrix " + CorrectnessMatrix.RESOURCE + ": "
        + matrix.values().stream().mapToLong(List::size).sum() + " cases in " + matrix.size() + " groups"
        + (quick ? " (--quick)" : ""));
    matrix.forEach(this::section);
    CorrectnessMatrix.load().pairCases(quick).forEach(this::pairSection);
    hostArraysAndUserStream(3);
    groupChecks();
    captureAndReplay(quick ? 2 : 4, 1000);
    oneRank();
    split(5);
    forcedNccl();
    backToBack(quick ? 2 : 4, 1000);
    freeBetweenCalls(2, quick ? 12 : 60);
    plantedMissingRank(3);
    twoProcesses();
    printSummary((System.nanoTime() - t0) / 1e9);
    return failures.isEmpty() && notRun.isEmpty();
  }

  /** Every shipped kernel of the kernel table must be in the fatbin: cuModuleGetFunction on each. */
  private void checkKernelNames() {
    java.util.Set<String> names = KernelImage.shippedKernelNames();
    KernelImage image = KernelImage.forDevice(device);
    List<String> missing = new ArrayList<>();
    for (String name : names) {
      try {
        image.function(name);
      } catch (RuntimeException e) {
        missing.add(name);
      }
    }
    record("kernels in fatbin", names.size(), missing.size(), 0);
    if (!missing.isEmpty()) {
      failures.add("kernels missing from the fatbin: " + missing);
    }
    System.out.println("fatbin: " + (names.size() - missing.size()) + "/" + names.size() + " kernels found");
  }

  // ---------------------------------------------------------------- case matrix

  /** The reduction types of MultiGpuRank's checks. */
  static final DataType[] REDUCE_TYPES = {DataType.FLOAT32, DataType.FLOAT64, DataType.FLOAT16, DataType.BFLOAT16,
      DataType.INT32, DataType.INT64};

  /** Bytes of each rank's buffers: the largest send or receive extent of any case, at least 1 MB. */
  static long capacity(List<Case> cases, int n) {
    long cap = 1 << 20;
    for (Case c : cases) {
      for (int r = 0; r < n; r++) {
        cap = Math.max(cap, Math.max(c.sendElems(r, n), c.recvElems(r, n)) * c.t().byteSize());
      }
    }
    return cap + 4096;
  }

  /**
   * Whether a kernel variant has an allReduce kernel in the shipped fatbin (the product's kernel table).
   * Any other variant of the matrix is the C++ test's: its benchmark build has the comparison kernels,
   * and it fails a name it does not know.
   */
  static boolean shippedVariant(String variant) {
    return KernelTable.kernels().stream()
        .anyMatch(k -> k.collective() == Collective.ALL_REDUCE && !k.pairs() && k.protocol().abiName().equals(variant));
  }

  // ---------------------------------------------------------------- running

  private void section(Group group, List<Case> cases) {
    int n = group.ranks();
    String v = group.forcedVariant();
    String vname = group.variant();
    if (v != null && !shippedVariant(v)) {
      System.out.println(n + " ranks, variant " + vname + ": " + cases.size()
          + " cases for the C++ test only (its kernels are in the bench fatbin)");
      return;
    }
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
        String key = c.c().apiName() + " / " + vname + " / " + n;
        try {
          List<String> bad = runCase(g, c, seeds.incrementAndGet());
          if (bad.size() == 1 && bad.get(0).startsWith(REFUSED) && v != null) {
            // A forced variant beyond its capacity: the route refused the call on every rank before any launch.
            recordRefused(key);
            done++;
            continue;
          }
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

  /**
   * The MAXLOC/MINLOC cases of one group on device buffers, on the pair kernel (the group's kernels
   * spin): checked against {@link PairReference} on every rank, for identical bytes across ranks, and
   * that no rank took the host path (an allGather); then a NaN refused on every rank.
   */
  private void pairSection(Group group, List<PairCase> cases) {
    int n = group.ranks();
    String vname = group.variant();
    if (System.nanoTime() > deadline) {
      notRun.add(n + " ranks, variant " + vname + ": " + cases.size() + " maxloc/minloc cases (suite time budget spent)");
      return;
    }
    long cap = 1 << 20;
    for (PairCase c : cases) {
      cap = Math.max(cap, c.count() * c.type().byteSize());
    }
    long t0 = System.nanoTime();
    int done = 0;
    String key = "allReduce maxloc/minloc / " + vname + " / " + n;
    try (RankGroup g = RankGroup.create(n, device, group.forcedVariant(), Duration.ofSeconds(5), cap + 4096)) {
      for (PairCase c : cases) {
        try {
          List<String> bad = runPairCase(g, c, seeds.incrementAndGet());
          record(key, 1, bad.isEmpty() ? 0 : 1, 0);
          if (!bad.isEmpty()) {
            failures.add(n + " ranks, " + vname + ", " + c.label() + ": " + String.join("; ", bad));
          }
        } catch (RuntimeException e) {
          record(key, 1, 1, 0);
          failures.add(n + " ranks, " + vname + ", " + c.label() + ": " + e);
          notRun.add(n + " ranks, variant " + vname + ": " + (cases.size() - done - 1)
              + " maxloc/minloc cases skipped after an error");
          break;
        }
        done++;
      }
      if (done == cases.size()) {
        List<String> bad = runPairNanCase(g);
        record(key, 1, bad.isEmpty() ? 0 : 1, 0);
        if (!bad.isEmpty()) {
          failures.add(n + " ranks, " + vname + ", maxloc NaN refusal: " + String.join("; ", bad));
        }
      }
    } catch (RuntimeException e) {
      failures.add(n + " ranks, " + vname + ": maxloc/minloc group setup failed: " + e);
    }
    System.out.printf("section %d ranks, %-8s: %4d maxloc/minloc cases in %5.1f s, %d failures so far%n", n, vname,
        done, (System.nanoTime() - t0) / 1e9, failures.size());
  }

  /** Runs one MAXLOC/MINLOC case on every rank; returns the problems found. */
  static List<String> runPairCase(RankGroup g, PairCase c, long seed) {
    int n = g.size;
    int bytes = Math.toIntExact(c.count() * c.type().byteSize());
    g.onAll(Duration.ofSeconds(60), r -> {
      r.hostIn.put(0, PairReference.input(seed, r.rank, c.type(), c.count()), 0, bytes);
      r.upload(bytes, bytes);
      CommBuffer send = CommBuffer.device(r.send, r.capacity);
      CommBuffer recv = CommBuffer.device(r.recv, r.capacity);
      if (c.inPlace()) {
        CudaNative.memcpyAsync(r.recv, r.send, bytes, r.stream());
        send = recv;
      }
      r.comm.allReduce(send, recv, c.count(), c.type(), c.op());
      r.download(bytes);
      return null;
    });
    List<String> bad = new ArrayList<>();
    for (int k = 0; k < n; k++) {
      ByteBuffer out = g.ranks[k].hostOut;
      String wrong = PairReference.firstWrong(seed, n, c.type(), c.op(), c.count(), out);
      if (wrong != null) {
        bad.add("rank " + k + ": " + wrong);
      } else if (k > 0 && out.slice(0, bytes).mismatch(g.ranks[0].hostOut.slice(0, bytes)) >= 0) {
        bad.add("rank " + k + " differs from rank 0 (results must be bit-identical)");
      }
      List<String> paths = g.ranks[k].comm.observedPaths();
      if (paths.stream().anyMatch(p -> p.startsWith("allGather/")) || paths.stream().noneMatch(p -> p.startsWith(
          "allReduce/" + dev.gpucoll.core.Algorithm.GPU_LL_ONESHOT.id()))) {
        bad.add("rank " + k + " did not take the pair kernel: observed " + paths);
      }
    }
    return bad;
  }

  /**
   * A NaN value of rank 1's pair 2 (FLOAT64_INT32 MAXLOC, 3 pairs): the call is enqueued on every rank,
   * and every rank's synchronize() raises it in the host fold's words, recv untouched; then the group
   * runs the next call.
   */
  static List<String> runPairNanCase(RankGroup g) {
    PairType t = PairType.FLOAT64_INT32;
    int count = 3;
    int bytes = count * t.byteSize();
    List<List<String>> problems = g.onAll(Duration.ofSeconds(60), r -> {
      List<String> bad = new ArrayList<>();
      for (int i = 0; i < count; i++) {
        r.hostIn.putDouble(i * 16, r.rank == 1 && i == 2 ? Double.NaN : i).putInt(i * 16 + 8, 10 * r.rank + i);
      }
      r.upload(bytes, bytes);
      r.comm.synchronize();
      r.comm.allReduce(CommBuffer.device(r.send, bytes), CommBuffer.device(r.recv, bytes), count, t, LocOp.MAXLOC);
      try {
        r.comm.synchronize();
        bad.add("rank " + r.rank + ": no NaN refusal");
      } catch (CollectiveException e) {
        String want = "MAXLOC over FLOAT64_INT32: rank 1's pair 2 has a NaN value (index 12); MAXLOC refuses NaN values";
        if (!e.getMessage().contains(want)) {
          bad.add("rank " + r.rank + ": " + e.getMessage());
        }
      }
      r.download(bytes);
      for (int b = 0; b < bytes; b++) {
        if ((r.hostOut.get(b) & 0xFF) != RankGroup.Poison.BYTE) {
          bad.add("rank " + r.rank + ": recv written at byte " + b);
          break;
        }
      }
      r.hostIn.putDouble(32, 5.0);
      r.upload(bytes, bytes);
      r.comm.allReduce(CommBuffer.device(r.send, bytes), CommBuffer.device(r.recv, bytes), count, t, LocOp.MAXLOC);
      r.download(bytes);
      if (r.hostOut.getDouble(32) != 5.0 || r.hostOut.getInt(40) != 2) {
        bad.add("rank " + r.rank + ": after the refusal pair 2 is " + r.hostOut.getDouble(32) + " @ " + r.hostOut.getInt(40));
      }
      return bad;
    });
    List<String> all = new ArrayList<>();
    problems.forEach(all::addAll);
    return all;
  }

  /** The one problem of a case that every rank's route refused (the group stays usable). */
  static final String REFUSED = "refused by the route on every rank: ";

  /**
   * The problem of a case from each rank's refusal message (null: that rank's call ran): null when
   * no rank refused; one {@link #REFUSED} line when every rank did (the route decides alike on every
   * rank); otherwise a failure, since the ranks that ran wait for the others.
   */
  static List<String> refusalOutcome(List<String> refusals) {
    long refused = refusals.stream().filter(x -> x != null).count();
    if (refused == 0) {
      return null;
    }
    return new ArrayList<>(List.of(refused == refusals.size() ? REFUSED + refusals.get(0)
        : "refused on some ranks only (the others then wait): " + refusals));
  }

  /** Runs one case on every rank and checks every rank's output; returns the problems found. */
  List<String> runCase(RankGroup g, Case c, long seed) {
    int n = g.size;
    List<String> refusals = g.onAll(Duration.ofSeconds(60), r -> {
      long e = c.t().byteSize();
      long sendBytes = c.sendElems(r.rank, n) * e;
      long recvBytes = c.recvElems(r.rank, n) * e;
      SplittableRandom rnd = Elements.random(seed, r.rank);
      if (c.isReduction()) {
        Elements.fillForReduction(r.hostIn, c.t(), c.op(), c.sendElems(r.rank, n), rnd);
      } else {
        Elements.fillRandomBytes(r.hostIn, sendBytes, rnd);
      }
      r.upload(sendBytes, recvBytes);
      GpuCommunicator comm = r.comm;
      CommBuffer send = CommBuffer.device(r.send, r.capacity);
      CommBuffer recv = CommBuffer.device(r.recv, r.capacity);
      if (c.inPlace()) {
        CudaNative.memcpyAsync(r.recv, r.send, sendBytes, r.stream());
        send = recv;
      }
      try {
        switch (c.c()) {
          case ALL_REDUCE -> comm.allReduce(send, recv, c.count(), c.t(), c.op());
          case REDUCE_SCATTER -> comm.reduceScatter(send, recv, c.count(), c.t(), c.op());
          case ALL_GATHER -> comm.allGather(send, recv, c.count(), c.t());
          case ALL_TO_ALL -> comm.allToAll(send, recv, c.count(), c.t());
          case ALL_TO_ALLV -> {
            long[][] a = c.a2avOf(r.rank);
            comm.allToAllv(send, a[0], a[1], recv, a[2], a[3], c.t());
          }
          case BROADCAST -> comm.broadcast(send, recv, c.count(), c.t(), c.root());
          case BARRIER -> comm.barrier();
        }
      } catch (CollectiveTimeoutException timeout) {
        throw timeout;
      } catch (CollectiveException refusal) {
        comm.synchronize(); // the upload is on the stream; the refused call enqueued nothing
        return refusal.getMessage();
      }
      r.download(recvBytes);
      return null;
    });
    List<String> refusal = refusalOutcome(refusals);
    if (refusal != null) {
      return refusal;
    }
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
    DataType t = c.t();
    switch (c.c()) {
      case ALL_REDUCE, REDUCE_SCATTER -> {
        long base = c.c() == Collective.REDUCE_SCATTER ? (long) k * c.count() : 0;
        // LL128 sums in arrival order (kernel_abi.h): identical on all ranks, not the rank-order fold.
        boolean ll128 = g.ranks[k].comm.explain(c.c(), c.count() * t.byteSize()).algorithm().equals("gpu-ll128-atomic")
            || "ll128".equals(g.variant);
        long[] terms = new long[n];
        int orderMismatches = 0;
        for (long i = 0; i < c.count() && bad.size() < 3; i++) {
          for (int r = 0; r < n; r++) {
            terms[r] = Elements.bits(g.ranks[r].hostIn, t, base + i);
          }
          long got = Elements.bits(out, t, i);
          String problem = Reduction.check(t, c.op(), terms, got, Accumulation.WIDE_16_BIT);
          if (problem != null) {
            bad.add("rank " + k + " [" + i + "]: " + problem);
          } else if (!ll128 && Reduction.fold(t, c.op(), terms) != got) {
            orderMismatches++;
          }
        }
        if (orderMismatches > 0) {
          bad.add("order: rank " + k + ": " + orderMismatches + " elements differ from the rank-order fold");
        }
        if (c.c() == Collective.ALL_REDUCE && k > 0) {
          long bytes = c.count() * t.byteSize();
          int mismatch = out.slice(0, (int) bytes).mismatch(g.ranks[0].hostOut.slice(0, (int) bytes));
          if (mismatch >= 0) {
            bad.add("rank " + k + " differs from rank 0 at byte " + mismatch + " (results must be bit-identical)");
          }
        }
      }
      case ALL_GATHER -> {
        for (int r = 0; r < n && bad.size() < 3; r++) {
          compare(bad, k, "block from rank " + r, out, (long) r * c.count(), g.ranks[r].hostIn, 0, c.count(), t);
        }
      }
      case ALL_TO_ALL -> {
        for (int r = 0; r < n && bad.size() < 3; r++) {
          compare(bad, k, "block from rank " + r, out, (long) r * c.count(), g.ranks[r].hostIn, (long) k * c.count(),
              c.count(), t);
        }
      }
      case ALL_TO_ALLV -> {
        long[][] mine = c.a2avOf(k);
        for (int r = 0; r < n && bad.size() < 3; r++) {
          long[][] theirs = c.a2avOf(r);
          compare(bad, k, "block from rank " + r, out, mine[3][r], g.ranks[r].hostIn, theirs[1][k], mine[2][r], t);
        }
      }
      case BROADCAST -> compare(bad, k, "root " + c.root() + "'s data", out, 0, g.ranks[c.root()].hostIn, 0, c.count(), t);
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

  private void recordRefused(String key) {
    table.computeIfAbsent(key, x -> new long[4])[3]++;
  }

  private void record(String key, long cases, long failed, long orderMismatch) {
    long[] row = table.computeIfAbsent(key, x -> new long[4]);
    row[0] += cases;
    row[1] += failed;
    row[2] += orderMismatch;
  }

  // ---------------------------------------------------------------- special checks

  /** Runs one special check on a rank group, recording it as one case; the body returns its problems. */
  private void special(String key, int n, long capacity, RankGroup.RankTask<List<String>> body) {
    if (System.nanoTime() > deadline) {
      notRun.add(key + " (suite time budget spent)");
      return;
    }
    try (RankGroup g = RankGroup.create(n, device, null, Duration.ofSeconds(5), capacity)) {
      outcome(key, g.onAll(Duration.ofSeconds(120), body));
    } catch (RuntimeException e) {
      record(key, 1, 1, 0);
      failures.add(key + ": " + e);
    }
  }

  /** Records one special check as one case: failed when any rank found a problem. */
  private void outcome(String key, List<List<String>> problems) {
    List<String> bad = new ArrayList<>();
    problems.forEach(bad::addAll);
    record(key, 1, bad.isEmpty() ? 0 : 1, 0);
    if (!bad.isEmpty()) {
      failures.add(key + ": " + bad);
    }
  }

  /** Rank r's int32 input for call k, element i: exact sums, so grouped and separate results compare bit for bit. */
  private static int groupInput(int r, int k, int i) {
    return (r + 1) * 1000 + k * 7 + i;
  }

  /**
   * 16 allReduces of 4 KB int32 SUM in one group() against the same calls one by one: every result
   * exact and bit-identical; then a group inside which the communicator itself is called fails, and
   * the group still works.
   */
  private void groupedCalls(int n) {
    int calls = 16;
    int count = 1024;
    long block = (long) count * 4;
    special("group of 16 allReduce 4 KB vs separate / auto / " + n, n, 2 * calls * block, r -> {
      List<String> bad = new ArrayList<>();
      for (int k = 0; k < calls; k++) {
        for (int i = 0; i < count; i++) {
          r.hostIn.putInt((int) (k * block + 4L * i), groupInput(r.rank, k, i));
        }
      }
      r.upload(calls * block, 2 * calls * block);
      for (int k = 0; k < calls; k++) {
        r.comm.allReduce(CommBuffer.device(r.send + k * block, block), CommBuffer.device(r.recv + k * block, block),
            count, DataType.INT32, ReduceOp.SUM);
      }
      long grouped = r.recv + calls * block;
      r.comm.group(g -> {
        for (int k = 0; k < calls; k++) {
          g.allReduce(CommBuffer.device(r.send + k * block, block), CommBuffer.device(grouped + k * block, block),
              count, DataType.INT32, ReduceOp.SUM);
        }
      });
      r.download(2 * calls * block);
      int sumRanks = sumOfRankBases(r.comm.size());
      for (int k = 0; k < calls && bad.size() < 3; k++) {
        for (int i = 0; i < count; i++) {
          int expect = sumRanks + r.comm.size() * (k * 7 + i);
          int sep = r.hostOut.getInt((int) (k * block + 4L * i));
          int grp = r.hostOut.getInt((int) ((calls + k) * block + 4L * i));
          if (sep != expect || grp != sep) {
            bad.add("rank " + r.rank + " call " + k + " [" + i + "]: separate " + sep + ", grouped " + grp + ", expected "
                + expect);
            break;
          }
        }
      }
      expectRefusal(r, bad, "inside group()", () -> r.comm.group(g -> r.comm.barrier()));
      return bad;
    });
  }

  /** Grouped calls: fused and not, against separate calls; a mismatched batch; a captured group. */
  private void groupChecks() {
    groupedCalls(quick ? 2 : 4);
    for (int n : quick ? new int[] {2} : new int[] {2, 3, 4}) {
      fusedGroups(n);
    }
    groupMismatch(quick ? 2 : 3);
    captureGroup(quick ? 2 : 4, 1000);
  }

  /** One fused-group shape: element counts of its allReduces, their type and op. */
  private record GroupShape(String name, int[] counts, DataType type, ReduceOp op) {}

  /**
   * Grouped allReduces that fuse into one batch-kernel launch, each shape against the same calls one
   * by one: every rank's grouped results bit-identical to its separate ones (floats, so any other
   * order or rounding shows). Some calls start one element off the 8-byte grid.
   */
  private void fusedGroups(int n) {
    int[] mixed = new int[27];
    for (int k = 0; k < mixed.length; k++) {
      mixed[k] = k % 5 == 0 ? 3 : 1 + (k * 389) % 1500;
    }
    List<GroupShape> shapes = List.of(
        new GroupShape("16 x 4 KB fp32 SUM", repeat(16, 1024), DataType.FLOAT32, ReduceOp.SUM),
        new GroupShape("64 x 1 KB bf16 AVG", repeat(64, 512), DataType.BFLOAT16, ReduceOp.AVG),
        new GroupShape("16 x 256 B fp64 PROD", repeat(16, 32), DataType.FLOAT64, ReduceOp.PROD),
        new GroupShape("27 mixed sizes fp16 MAX", mixed, DataType.FLOAT16, ReduceOp.MAX),
        new GroupShape("70 x 8 B int8 MIN (64 + 6)", repeat(70, 8), DataType.INT8, ReduceOp.MIN));
    long capacity = 1 << 20;
    special("fused group vs separate calls, bit for bit / auto / " + n, n, 2 * capacity, r -> {
      List<String> bad = new ArrayList<>();
      for (GroupShape shape : shapes) {
        int esz = shape.type().byteSize();
        long[] offs = new long[shape.counts().length];
        long total = 0;
        for (int k = 0; k < offs.length; k++) {
          offs[k] = total + (k % 3 == 1 ? esz : 0);
          total = (offs[k] + (long) shape.counts()[k] * esz + 255) / 256 * 256;
        }
        SplittableRandom rnd = new SplittableRandom(1000L * r.rank + shape.name().hashCode());
        for (long i = 0; i < total; i++) {
          r.hostIn.put((int) i, (byte) rnd.nextInt(256));
        }
        if (shape.type().isFloatingPoint()) {
          for (long i = 0; i + esz <= total; i += esz) {
            r.hostIn.put((int) (i + esz - 1), (byte) 0x3c); // sign 0, mid exponents: finite values near 1
          }
        }
        r.upload(total, 2 * total);
        for (int k = 0; k < offs.length; k++) {
          long bytes = (long) shape.counts()[k] * esz;
          r.comm.allReduce(CommBuffer.device(r.send + offs[k], bytes), CommBuffer.device(r.recv + offs[k], bytes),
              shape.counts()[k], shape.type(), shape.op());
        }
        long grouped = r.recv + total;
        long t = total;
        r.comm.group(g -> {
          for (int k = 0; k < offs.length; k++) {
            long bytes = (long) shape.counts()[k] * esz;
            g.allReduce(CommBuffer.device(r.send + offs[k], bytes), CommBuffer.device(grouped + offs[k], bytes),
                shape.counts()[k], shape.type(), shape.op());
          }
        });
        r.download(2 * t);
        for (int k = 0; k < offs.length && bad.size() < 3; k++) {
          for (long i = offs[k]; i < offs[k] + (long) shape.counts()[k] * esz; i++) {
            if (r.hostOut.get((int) i) != r.hostOut.get((int) (t + i))) {
              bad.add("rank " + r.rank + " " + shape.name() + " call " + k + " byte " + (i - offs[k])
                  + ": grouped differs from separate");
              break;
            }
          }
        }
      }
      return bad;
    });
  }

  private static int[] repeat(int calls, int count) {
    int[] out = new int[calls];
    java.util.Arrays.fill(out, count);
    return out;
  }

  /**
   * Rank n-1 records 15 allReduces where the others record 16: every rank must fail with group()'s
   * agreement naming every rank's number of calls, well before the 3 s timeout, before any launch.
   */
  private void groupMismatch(int n) {
    Duration timeout = Duration.ofSeconds(3);
    failureCase("group: mismatched batches fail on every rank / auto / " + n, n, timeout, r -> {
      int calls = r.rank == n - 1 ? 15 : 16;
      try {
        r.comm.group(b -> {
          for (int k = 0; k < calls; k++) {
            b.allReduce(CommBuffer.device(r.send + k * 1024L, 1024), CommBuffer.device(r.recv + k * 1024L, 1024), 256,
                DataType.FLOAT32, ReduceOp.SUM);
          }
        });
        r.comm.synchronize();
        return "no exception";
      } catch (CollectiveTimeoutException e) {
        return "timeout: " + e.getMessage();
      } catch (CollectiveException e) {
        return e.getMessage();
      }
    }, (outcome, secs) -> {
      boolean ok = secs < timeout.toSeconds() - 1;
      for (int r = 0; r < n; r++) {
        ok &= outcome.get(r).contains("ranks recorded different batches in group(): rank 0: 16 calls")
            && outcome.get(r).contains("rank " + (n - 1) + ": 15 calls");
      }
      return ok;
    });
  }

  /**
   * A check of a failure path on a fresh group of {@code n} ranks whose waits end after
   * {@code timeout}: every rank runs {@code body}, {@code ok} judges the outcomes (by rank) and the
   * seconds they took; rank 0's outcome goes to the notes.
   */
  private void failureCase(String key, int n, Duration timeout, RankGroup.RankTask<String> body,
      java.util.function.BiPredicate<List<String>, Double> ok) {
    if (System.nanoTime() > deadline) {
      notRun.add(key + " (suite time budget spent)");
      return;
    }
    try (RankGroup g = RankGroup.create(n, device, null, timeout, 1 << 20)) {
      long t0 = System.nanoTime();
      List<String> outcome = g.onAll(Duration.ofSeconds(30), body);
      double secs = (System.nanoTime() - t0) / 1e9;
      boolean pass = ok.test(outcome, secs);
      record(key, 1, pass ? 0 : 1, 0);
      notes.add(key + ": after " + String.format("%.2f", secs) + " s: rank 0 -> " + outcome.get(0));
      if (!pass) {
        failures.add(key + ": after " + String.format("%.2f", secs) + " s: " + outcome);
      }
    } catch (RuntimeException e) {
      record(key, 1, 1, 0);
      failures.add(key + ": " + e);
    }
  }

  /**
   * A captured group (16 allReduces of 1 KB int32: 8 SUM then 8 MAX, two fused launches) replayed
   * {@code replays} times; every 100th replay follows a poisoning of the outputs and is checked.
   */
  private void captureGroup(int n, int replays) {
    int calls = 16;
    int count = 256;
    long block = (long) count * 4;
    special("capture + replay of a fused group x" + replays + " / auto / " + n, n, calls * block, r -> {
      List<String> bad = new ArrayList<>();
      for (int k = 0; k < calls; k++) {
        for (int i = 0; i < count; i++) {
          r.hostIn.putInt((int) (k * block + 4L * i), groupInput(r.rank, k, i));
        }
      }
      r.upload(calls * block, calls * block);
      r.comm.synchronize();
      try (GpuCommunicator.CapturedGraph graph = r.comm.capture(() -> r.comm.group(g -> {
        for (int k = 0; k < calls; k++) {
          g.allReduce(CommBuffer.device(r.send + k * block, block), CommBuffer.device(r.recv + k * block, block), count,
              DataType.INT32, k < calls / 2 ? ReduceOp.SUM : ReduceOp.MAX);
        }
      }))) {
        r.awaitPeers(); // every rank's graph instantiated before any replays (RankGroup.Rank.awaitPeers)
        int size = r.comm.size();
        for (int rep = 0; rep < replays && bad.size() < 3; rep++) {
          boolean check = rep % 100 == 0 || rep == replays - 1;
          if (check) {
            CudaNative.memsetAsync(r.recv, RankGroup.Poison.BYTE, calls * block, r.stream());
          }
          graph.replay();
          if (check) {
            r.download(calls * block);
            for (int k = 0; k < calls && bad.size() < 3; k++) {
              for (int i = 0; i < count; i++) {
                int got = r.hostOut.getInt((int) (k * block + 4L * i));
                int want = k < calls / 2 ? sumOfRankBases(size) + size * (k * 7 + i) : groupInput(size - 1, k, i);
                if (got != want) {
                  bad.add("rank " + r.rank + " replay " + rep + " call " + k + " [" + i + "]: " + got + ", expected " + want);
                  break;
                }
              }
            }
          }
        }
      }
      return bad;
    });
  }

  /**
   * A captured step (two allReduces on the communicator's stream) replayed {@code replays} times;
   * every 100th replay follows a poisoning of the outputs and is checked, so each replay is seen to
   * recompute with a fresh epoch. A barrier inside a capture is refused, and the group still works.
   */
  private void captureAndReplay(int n, int replays) {
    int count = 1024;
    long block = (long) count * 4;
    special("capture + replay x" + replays + " / auto / " + n, n, 4 * block, r -> {
      List<String> bad = new ArrayList<>();
      for (int i = 0; i < 2 * count; i++) {
        r.hostIn.putInt(4 * i, groupInput(r.rank, i / count, i % count));
      }
      r.upload(2 * block, 2 * block);
      r.comm.synchronize();
      try (GpuCommunicator.CapturedGraph graph = r.comm.capture(() -> {
        r.comm.allReduce(CommBuffer.device(r.send, block), CommBuffer.device(r.recv, block), count, DataType.INT32,
            ReduceOp.SUM);
        r.comm.allReduce(CommBuffer.device(r.send + block, block), CommBuffer.device(r.recv + block, block), count,
            DataType.INT32, ReduceOp.MAX);
      })) {
        r.awaitPeers(); // every rank's graph instantiated before any replays (RankGroup.Rank.awaitPeers)
        int sumRanks = sumOfRankBases(r.comm.size());
        for (int k = 0; k < replays && bad.size() < 3; k++) {
          boolean check = k % 100 == 0 || k == replays - 1;
          if (check) {
            CudaNative.memsetAsync(r.recv, RankGroup.Poison.BYTE, 2 * block, r.stream());
          }
          graph.replay();
          if (check) {
            r.download(2 * block);
            for (int i = 0; i < count; i++) {
              int sum = r.hostOut.getInt(4 * i);
              int max = r.hostOut.getInt((int) block + 4 * i);
              int expectMax = (r.comm.size()) * 1000 + 7 + i;
              if (sum != sumRanks + r.comm.size() * i || max != expectMax) {
                bad.add("rank " + r.rank + " replay " + k + " [" + i + "]: sum " + sum + " max " + max);
                break;
              }
            }
          }
        }
      }
      expectRefusal(r, bad, "cannot be captured", () -> r.comm.capture(r.comm::barrier).close());
      return bad;
    });
  }

  /** {@code call} must fail with a message containing {@code why}; then the group must still run a barrier. */
  private static void expectRefusal(RankGroup.Rank r, List<String> bad, String why, Runnable call) {
    try {
      call.run();
      bad.add("rank " + r.rank + ": ran although it should fail with '" + why + "'");
    } catch (CollectiveException e) {
      if (!e.getMessage().contains(why)) {
        bad.add("rank " + r.rank + ": " + e.getMessage());
      }
    }
    r.comm.barrier();
  }

  /** Sum over the group's ranks of {@link #groupInput}'s per-rank base. */
  private static int sumOfRankBases(int size) {
    int sum = 0;
    for (int q = 0; q < size; q++) {
      sum += (q + 1) * 1000;
    }
    return sum;
  }

  /** A one-rank group: every collective is one copy (nothing in place), reported as one-rank-copy. */
  private void oneRank() {
    special("one-rank group: copies / auto / 1", 1, 1 << 20, r -> {
      List<String> bad = new ArrayList<>();
      int count = 1009;
      for (int i = 0; i < count; i++) {
        r.hostIn.putInt(4 * i, i * 31 - 5);
      }
      r.upload(4L * count, 8L * count);
      CommBuffer send = CommBuffer.device(r.send, 4L * count);
      CommBuffer recv = CommBuffer.device(r.recv, 8L * count);
      r.comm.allReduce(send, recv, count, DataType.INT32, ReduceOp.AVG);
      r.comm.allReduce(send, send, count, DataType.INT32, ReduceOp.SUM); // in place: nothing to do
      r.comm.allToAllv(send, new long[] {count - 9}, new long[] {9}, recv, new long[] {count - 9},
          new long[] {count}, DataType.INT32);
      r.download(8L * count);
      for (int i = 0; i < count && bad.size() < 3; i++) {
        if (r.hostOut.getInt(4 * i) != i * 31 - 5) {
          bad.add("allReduce copy [" + i + "]: " + r.hostOut.getInt(4 * i));
        }
        if (i >= 9 && r.hostOut.getInt(4 * (count + i - 9)) != i * 31 - 5) {
          bad.add("allToAllv block [" + i + "]: " + r.hostOut.getInt(4 * (count + i - 9)));
        }
      }
      int[] host = {3, -4};
      r.comm.allReduce(host, ReduceOp.PROD);
      if (host[0] != 3 || host[1] != -4) {
        bad.add("host int[] allReduce: " + java.util.Arrays.toString(host));
      }
      if (!r.comm.observedPaths().toString().contains("one-rank-copy")) {
        bad.add("observed " + r.comm.observedPaths());
      }
      return bad;
    });
  }

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
            if (got != Reduction.fold(DataType.INT32, ReduceOp.SUM, terms)) {
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
    long seed = seeds.incrementAndGet();
    special("host arrays + setStream / auto / " + n, n, 1 << 20, r -> {
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
  }

  /**
   * split(color = rank % 2, key = -rank) with the last rank opting out (color -1): each child
   * allReduces its members' values, the opted-out rank gets null, and the parent still works.
   */
  private void split(int n) {
    special("split into 2 colors + 1 opted out / auto / " + n, n, 1 << 20, r -> {
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
      outcome(key, problems);
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
    failureCase("planted missing rank / auto / " + n, n, Duration.ofSeconds(2), r -> {
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
    }, (outcome, secs) -> {
      for (int r = 0; r < n - 1; r++) {
        if (!outcome.get(r).startsWith("timeout missing=[" + (n - 1) + "]")) {
          return false;
        }
      }
      return true;
    });
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
    System.out.println("== GpuSuite table (collective / variant / ranks: cases, failed, order-mismatch, refused:"
        + " beyond the forced variant's capacity, refused by the route on every rank)");
    System.out.printf("%-44s %7s %7s %7s %7s%n", "check", "cases", "failed", "order", "refused");
    long cases = 0;
    long failed = 0;
    long refused = 0;
    for (Map.Entry<String, long[]> e : table.entrySet()) {
      long[] v = e.getValue();
      System.out.printf("%-44s %7d %7d %7d %7d%n", e.getKey(), v[0], v[1], v[2], v[3]);
      cases += v[0];
      failed += v[1];
      refused += v[3];
    }
    System.out.printf("GpuSuite: %d cases, %d failed, %d refused beyond a forced variant's capacity, %d sections not"
        + " run, %.1f s -> %s%n", cases, failed, refused, notRun.size(), seconds,
        failures.isEmpty() && notRun.isEmpty() ? "PASS" : "FAIL");
  }
}
