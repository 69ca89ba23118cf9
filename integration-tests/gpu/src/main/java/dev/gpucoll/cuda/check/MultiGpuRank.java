package dev.gpucoll.cuda.check;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.CollectiveTimeoutException;
import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.GpuCommunicator;
import dev.gpucoll.api.PathChoice;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.check.Elements;
import dev.gpucoll.check.Reduction;
import dev.gpucoll.check.Reduction.Accumulation;
import dev.gpucoll.core.CommunicatorFactory;
import dev.gpucoll.core.config.GpuCollConf;
import dev.gpucoll.core.rendezvous.FileRendezvous;
import dev.gpucoll.core.rendezvous.Rendezvous;
import dev.gpucoll.core.report.RankReport;
import dev.gpucoll.core.report.ReportingCommunicator;
import dev.gpucoll.cuda.CudaNative;
import dev.gpucoll.cuda.KernelTable;
import dev.gpucoll.cuda.KernelTable.Protocol;
import dev.gpucoll.cuda.nccl.NcclCommunicator;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.zip.CRC32;

/**
 * One rank of the multi-GPU run (integration-tests/gpu/bundle/run-multi-gpu.sh): one process per GPU, as Spark executors
 * would be, meeting through a {@link FileRendezvous}. Rank 0 prints the group's path report
 * (topology, eligibility, predicted paths); every rank runs the correctness matrix (inputs of all
 * ranks regenerated from seeds, float64 reference, poisoned outputs, CRC of allReduce outputs
 * compared across ranks); then group()'s agreement on the kernel and NCCL paths; then a latency
 * table against NCCL; then a peer that never arrives.
 *
 * <p>Usage: MultiGpuRank DIR RANK SIZE DEVICE [--quick]
 */
public final class MultiGpuRank {
  static final long MB = 1 << 20;

  private final Rendezvous rdv;
  private final int rank;
  private final int size;
  private final int device;
  private final boolean quick;
  private int cases;
  private final List<String> failures = new ArrayList<>();

  MultiGpuRank(Rendezvous rdv, int device, boolean quick) {
    this.rdv = rdv;
    this.rank = rdv.rank();
    this.size = rdv.size();
    this.device = device;
    this.quick = quick;
  }

  public static void main(String[] args) throws Exception {
    Path dir = Path.of(args[0]);
    int rank = Integer.parseInt(args[1]);
    int size = Integer.parseInt(args[2]);
    int device = Integer.parseInt(args[3]);
    boolean quick = args.length > 4 && args[4].equals("--quick");
    CudaNative.setDevice(device);
    boolean ok;
    try (FileRendezvous rdv = new FileRendezvous(dir, "multi-gpu", rank, size)) {
      ok = new MultiGpuRank(rdv, device, quick).run(dir);
    }
    System.exit(ok ? 0 : 1);
  }

  void say(String s) {
    System.out.println("[rank " + rank + "] " + s);
  }

  boolean run(Path dir) throws Exception {
    GpuCollConf conf = GpuCollConf.of(Map.of(GpuCollConf.TIMEOUT.key(), "30s"));
    Communicator c = CommunicatorFactory.create(rdv, conf, java.net.InetAddress.getLocalHost().getHostName());
    if (!(c instanceof GpuCommunicator g)) {
      say("FAIL: the factory chose backend " + c.backend() + ", not gpu");
      c.close();
      return false;
    }
    if (rank == 0 && c instanceof ReportingCommunicator rc) {
      RankReport r = rc.report();
      System.out.println("== path report (rank 0): backend " + r.backend() + ", rendezvous " + r.rendezvous()
          + ", " + r.size() + " ranks");
      r.findings().forEach(f -> System.out.println("  " + f));
      for (PathChoice p : r.predicted()) {
        System.out.println("  predicted " + p.collective().apiName() + " " + p.bytes() + " B -> " + p.algorithm()
            + "  " + p.reasons());
      }
      System.out.println("  ncclComm = 0x" + Long.toHexString(g.ncclComm()));
    }
    long cap = (quick ? 16 : 256) * MB + 4096;
    long send = CudaNative.malloc(cap);
    long recv = CudaNative.malloc(cap);
    long hostIn = CudaNative.hostAlloc(cap);
    long hostOut = CudaNative.hostAlloc(cap);
    ByteBuffer in = RankGroup.view(hostIn, cap);
    ByteBuffer out = RankGroup.view(hostOut, cap);
    try {
      correctness(g, send, recv, hostIn, hostOut, in, out, cap);
      if (rank == 0) {
        System.out.println("== correctness: " + cases + " cases on rank 0, " + failures.size() + " failures");
      }
      groupAgreement(g, send, recv, cap);
      latency(g, conf, send, recv, cap);
      variants(dir, conf, send, recv, cap);
      c.close();
      missingPeer(dir, send, recv);
    } catch (RuntimeException e) {
      failures.add("aborted: " + e);
      e.printStackTrace(System.out);
    } finally {
      CudaNative.free(send);
      CudaNative.free(recv);
      CudaNative.freeHost(hostIn);
      CudaNative.freeHost(hostOut);
    }
    failures.stream().limit(20).forEach(f -> say("FAIL " + f));
    say("done: " + cases + " cases, " + failures.size() + " failures -> " + (failures.isEmpty() ? "PASS" : "FAIL"));
    return failures.isEmpty();
  }

  // ------------------------------------------------------------------ correctness

  private void correctness(GpuCommunicator g, long send, long recv, long hostIn, long hostOut, ByteBuffer in,
      ByteBuffer out, long cap) {
    long[] blockBytes = quick ? new long[] {4, 4036, 4096, 65536} : new long[] {4, 4036, 4096, 65536, MB, 16 * MB};
    long seed = 77;
    for (Collective coll : List.of(Collective.ALL_REDUCE, Collective.REDUCE_SCATTER, Collective.ALL_GATHER,
        Collective.ALL_TO_ALL, Collective.BROADCAST)) {
      boolean reduction = coll == Collective.ALL_REDUCE || coll == Collective.REDUCE_SCATTER;
      DataType[] types = reduction ? GpuSuite.REDUCE_TYPES
          : new DataType[] {DataType.INT8, DataType.FLOAT16, DataType.FLOAT32, DataType.FLOAT64};
      for (DataType t : types) {
        for (ReduceOp op : reduction ? ReduceOp.values() : new ReduceOp[] {ReduceOp.SUM}) {
          for (long bytes : blockBytes) {
            if (bytes >= 16 * MB && !(op == ReduceOp.SUM && (t == DataType.FLOAT32 || t == DataType.INT8))) {
              continue;
            }
            long count = Math.max(1, bytes / t.byteSize());
            if (count * t.byteSize() * size > cap - 4096) {
              count = (cap - 4096) / size / t.byteSize();
            }
            seed++;
            runCase(g, coll, t, op, count, (int) (seed % size), seed, send, recv, hostIn, hostOut, in, out);
          }
        }
      }
    }
  }

  private void runCase(GpuCommunicator g, Collective coll, DataType t, ReduceOp op, long count, int root, long seed,
      long send, long recv, long hostIn, long hostOut, ByteBuffer in, ByteBuffer out) {
    cases++;
    int n = size;
    long sendElems = coll == Collective.REDUCE_SCATTER || coll == Collective.ALL_TO_ALL ? count * n : count;
    long recvElems = coll == Collective.ALL_GATHER || coll == Collective.ALL_TO_ALL ? count * n : count;
    boolean reduction = coll == Collective.ALL_REDUCE || coll == Collective.REDUCE_SCATTER;
    ByteBuffer[] inputs = new ByteBuffer[n];
    for (int r = 0; r < n; r++) {
      ByteBuffer b = r == rank ? in : ByteBuffer.allocate((int) (sendElems * t.byteSize())).order(ByteOrder.nativeOrder());
      SplittableRandom rnd = new SplittableRandom(seed * 1_000_003L + r);
      if (reduction) {
        Elements.fillForReduction(b, t, op, sendElems, rnd);
      } else {
        Elements.fillRandomBytes(b, sendElems * t.byteSize(), rnd);
      }
      inputs[r] = b;
    }
    long e = t.byteSize();
    CudaNative.memcpyAsync(send, hostIn, sendElems * e, g.stream());
    CudaNative.memsetAsync(recv, RankGroup.Poison.BYTE, recvElems * e, g.stream());
    CommBuffer s = CommBuffer.device(send, sendElems * e);
    CommBuffer d = CommBuffer.device(recv, recvElems * e);
    String label = coll.apiName() + " " + t + (reduction ? " " + op : "") + " count=" + count;
    try {
      switch (coll) {
        case ALL_REDUCE -> g.allReduce(s, d, count, t, op);
        case REDUCE_SCATTER -> g.reduceScatter(s, d, count, t, op);
        case ALL_GATHER -> g.allGather(s, d, count, t);
        case ALL_TO_ALL -> g.allToAll(s, d, count, t);
        case BROADCAST -> g.broadcast(s, d, count, t, root);
        default -> throw new IllegalStateException();
      }
      CudaNative.memcpyAsync(hostOut, recv, recvElems * e, g.stream());
      g.synchronize();
    } catch (CollectiveException ex) {
      failures.add(label + ": " + ex.getMessage());
      throw ex; // the group is unusable after a kernel error
    }
    List<String> bad = new ArrayList<>();
    switch (coll) {
      case ALL_REDUCE, REDUCE_SCATTER -> {
        long base = coll == Collective.REDUCE_SCATTER ? (long) rank * count : 0;
        long[] terms = new long[n];
        for (long i = 0; i < count && bad.size() < 3; i++) {
          for (int r = 0; r < n; r++) {
            terms[r] = Elements.bits(inputs[r], t, base + i);
          }
          String p = Reduction.check(t, op, terms, Elements.bits(out, t, i), Accumulation.WIDE_16_BIT);
          if (p != null) {
            bad.add("[" + i + "] " + p);
          }
        }
      }
      case ALL_GATHER -> {
        for (int r = 0; r < n; r++) {
          GpuSuite.compare(bad, rank, "block of rank " + r, out, (long) r * count, inputs[r], 0, count, t);
        }
      }
      case ALL_TO_ALL -> {
        for (int r = 0; r < n; r++) {
          GpuSuite.compare(bad, rank, "block of rank " + r, out, (long) r * count, inputs[r], (long) rank * count,
              count, t);
        }
      }
      case BROADCAST -> GpuSuite.compare(bad, rank, "root " + root, out, 0, inputs[root], 0, count, t);
      default -> { }
    }
    if (coll == Collective.ALL_REDUCE) {
      CRC32 crc = new CRC32();
      crc.update(out.slice(0, (int) (count * e)));
      ByteBuffer mine = ByteBuffer.allocate(8).putLong(0, crc.getValue());
      List<byte[]> all = rdv.allGather(mine.array(), Duration.ofSeconds(60));
      for (int r = 0; r < n; r++) {
        if (ByteBuffer.wrap(all.get(r)).getLong() != crc.getValue()) {
          bad.add("output differs from rank " + r + "'s (CRC32): results must be bit-identical");
          break;
        }
      }
    }
    if (!bad.isEmpty()) {
      failures.add(label + " [" + g.observedPaths() + "]: " + String.join("; ", bad));
    }
  }

  // ------------------------------------------------------------------ latency

  interface Op {
    void call();
  }

  /**
   * Median over batches of the per-call time of the rank that started last (see GpuBench#lastStarter:
   * the file rendezvous releases ranks milliseconds apart), from CUDA events and from a graph replay.
   */
  private double[] time(long stream, int k, int batches, Op op, boolean graph) {
    double[] ev = new double[batches];
    double[] gr = new double[batches];
    for (int i = 0; i < 3; i++) {
      op.call();
    }
    CudaNative.streamSynchronize(stream);
    long s = CudaNative.eventCreate();
    long e = CudaNative.eventCreate();
    for (int b = 0; b < batches; b++) {
      rdv.allGather(new byte[0], Duration.ofSeconds(60));
      CudaNative.eventRecord(s, stream);
      for (int i = 0; i < k; i++) {
        op.call();
      }
      CudaNative.eventRecord(e, stream);
      CudaNative.eventSynchronize(e);
      ev[b] = lastStarter(CudaNative.eventElapsedMs(s, e) * 1000.0 / k);
      if (graph) {
        CudaNative.beginCapture(stream);
        for (int i = 0; i < k; i++) {
          op.call();
        }
        long exec = CudaNative.endCaptureAndInstantiate(stream);
        rdv.allGather(new byte[0], Duration.ofSeconds(60));
        CudaNative.eventRecord(s, stream);
        CudaNative.graphLaunch(exec, stream);
        CudaNative.eventRecord(e, stream);
        CudaNative.eventSynchronize(e);
        gr[b] = lastStarter(CudaNative.eventElapsedMs(s, e) * 1000.0 / k);
        CudaNative.graphExecDestroy(exec);
      }
    }
    CudaNative.eventDestroy(s);
    CudaNative.eventDestroy(e);
    return new double[] {GpuBench.median(ev), graph ? GpuBench.median(gr) : Double.NaN};
  }

  private double lastStarter(double v) {
    List<byte[]> all = rdv.allGather(ByteBuffer.allocate(8).putDouble(0, v).array(), Duration.ofSeconds(60));
    return all.stream().mapToDouble(b -> ByteBuffer.wrap(b).getDouble()).min().orElse(v);
  }

  private void latency(GpuCommunicator ours, GpuCollConf conf, long send, long recv, long cap) {
    long maxBytes = Math.min(cap - 4096, (quick ? 16 : 256) * MB);
    List<Long> sizes = new ArrayList<>();
    for (long b = 8; b <= maxBytes; b *= 4) {
      sizes.add(b);
    }
    long stream = ours.stream();
    NcclCommunicator ncclDefault = null;
    NcclCommunicator ncclZero = null;
    try {
      ncclDefault = NcclCommunicator.create(rdv, device, 0, Duration.ofSeconds(60));
      ncclZero = NcclCommunicator.create(rdv, device, 2, Duration.ofSeconds(60)); // NCCL_CTA_POLICY_ZERO
    } catch (RuntimeException e) {
      if (rank == 0) {
        System.out.println("NCCL not available for the comparison: " + e.getMessage());
      }
    }
    List<String> rows = new ArrayList<>();
    for (Collective coll : List.of(Collective.ALL_REDUCE, Collective.ALL_GATHER, Collective.ALL_TO_ALL)) {
      for (long bytes : sizes) {
        // bytes = the largest buffer: allReduce's message, allGather's output, allToAll's input.
        long count = Math.max(1, coll == Collective.ALL_REDUCE ? bytes / 4 : bytes / 4 / size);
        if (count * 4 * size > cap - 4096 && coll != Collective.ALL_REDUCE) {
          continue;
        }
        int k = bytes <= 64 << 10 ? 200 : bytes <= MB ? 50 : bytes <= 16 * MB ? 10 : 3;
        int batches = quick ? 3 : 7;
        CommBuffer s = CommBuffer.device(send, cap);
        CommBuffer d = CommBuffer.device(recv, cap);
        // explain() takes the per-rank message: count elements of 4 bytes.
        String path = ours.explain(coll, count * 4).algorithm();
        double[] o = time(stream, k, batches, () -> {
          switch (coll) {
            case ALL_REDUCE -> ours.allReduce(s, d, count, DataType.FLOAT32, ReduceOp.SUM);
            case ALL_GATHER -> ours.allGather(s, d, count, DataType.FLOAT32);
            default -> ours.allToAll(s, d, count, DataType.FLOAT32);
          }
        }, true);
        double[] nd = {Double.NaN, Double.NaN};
        double[] nz = {Double.NaN, Double.NaN};
        if (ncclDefault != null) {
          NcclCommunicator nc = ncclDefault;
          nd = time(stream, k, batches, () -> ncclCall(nc, coll, send, recv, count, stream), true);
          if (coll != Collective.ALL_REDUCE) {
            NcclCommunicator z = ncclZero;
            nz = time(stream, k, batches, () -> ncclCall(z, coll, send, recv, count, stream), true);
          }
        }
        rows.add(String.format("%-13s %10d %-22s %9.2f %9.2f %9.2f %9.2f %9.2f %8.2f", coll.apiName(), bytes, path,
            o[0], o[1], nd[0], nd[1], nz[1], nd[1] / o[1]));
      }
    }
    if (ncclDefault != null) {
      ncclDefault.close();
      ncclZero.close();
    }
    if (rank == 0) {
      System.out.println();
      System.out.println("== multi-GPU latency table, " + size + " GPU(s), one process per GPU: median us per call"
          + " (rank that started last); ev = CUDA events around K calls, gr = one replay of a graph of K calls; fp32");
      System.out.printf("%-13s %10s %-22s %9s %9s %9s %9s %9s %8s%n", "collective", "bytes", "our path", "ours ev",
          "ours gr", "nccl ev", "nccl gr", "zeroCTA gr", "nccl/ours");
      rows.forEach(System.out::println);
    }
  }

  /** allReduce fp32 SUM under graph replay for each kernel variant (each allReduce kernel's protocol), forced. */
  private void variants(Path dir, GpuCollConf conf, long send, long recv, long cap) {
    Protocol[] vs = KernelTable.kernels().stream().filter(k -> k.collective() == Collective.ALL_REDUCE && !k.pairs())
        .map(KernelTable.Kernel::protocol).toArray(Protocol[]::new);
    long maxBytes = Math.min(cap - 4096, (quick ? 1 : 64) * MB);
    List<Long> sizes = new ArrayList<>();
    for (long b = 8; b <= maxBytes; b *= 8) {
      sizes.add(b);
    }
    double[][] us = new double[vs.length][sizes.size()];
    for (int vi = 0; vi < vs.length; vi++) {
      Protocol v = vs[vi];
      try (GpuCommunicator vc = formVariant(dir, conf, v)) {
        for (int si = 0; si < sizes.size(); si++) {
          long count = sizes.get(si) / 4 == 0 ? 1 : sizes.get(si) / 4;
          CommBuffer s = CommBuffer.device(send, cap);
          CommBuffer d = CommBuffer.device(recv, cap);
          try {
            vc.allReduce(s, d, count, DataType.FLOAT32, ReduceOp.SUM); // a variant's capacity error comes here
          } catch (CollectiveException e) {
            us[vi][si] = Double.NaN;
            continue;
          }
          int k = sizes.get(si) <= 64 << 10 ? 200 : sizes.get(si) <= MB ? 50 : 5;
          us[vi][si] = time(vc.stream(), k, quick ? 3 : 5,
              () -> vc.allReduce(s, d, count, DataType.FLOAT32, ReduceOp.SUM), true)[1];
        }
        vc.synchronize();
      } catch (RuntimeException e) {
        failures.add("variant " + v.abiName() + ": " + e);
        return;
      }
    }
    if (rank == 0) {
      System.out.println();
      System.out.println("== allReduce fp32 SUM per kernel variant (forced), " + size + " GPU(s): us per call, one"
          + " replay of a graph of K calls, rank that started last; '-' = above the variant's capacity");
      StringBuilder h = new StringBuilder(String.format("%10s", "bytes"));
      for (Protocol v : vs) {
        h.append(String.format(" %10s", v.abiName()));
      }
      System.out.println(h);
      for (int si = 0; si < sizes.size(); si++) {
        StringBuilder row = new StringBuilder(String.format("%10d", sizes.get(si)));
        for (int vi = 0; vi < vs.length; vi++) {
          row.append(Double.isNaN(us[vi][si]) ? String.format(" %10s", "-") : String.format(" %10.2f", us[vi][si]));
        }
        System.out.println(row);
      }
    }
  }

  /** A communicator of the same processes whose every collective runs {@code v}, formed by the factory. */
  private GpuCommunicator formVariant(Path dir, GpuCollConf conf, Protocol v) {
    FileRendezvous r2 = new FileRendezvous(dir, "multi-gpu-" + v.abiName(), rank, size);
    Map<String, String> settings = new HashMap<>(conf.asMap());
    settings.put(GpuCollConf.BACKEND.key(), "gpu");
    settings.put(GpuCollConf.INTERNAL_KERNEL_VARIANT.key(), v.abiName());
    return (GpuCommunicator) CommunicatorFactory.create(r2, GpuCollConf.of(settings).validate(), "localhost");
  }

  private static void ncclCall(NcclCommunicator nc, Collective coll, long send, long recv, long count, long stream) {
    switch (coll) {
      case ALL_REDUCE -> nc.allReduce(send, recv, count, DataType.FLOAT32, ReduceOp.SUM, stream);
      case ALL_GATHER -> nc.allGather(send, recv, count, DataType.FLOAT32, stream);
      default -> nc.allToAll(send, recv, count, DataType.FLOAT32, stream);
    }
  }

  // ------------------------------------------------------------------ a peer that never arrives

  /**
   * group()'s agreement on the paths this group's route takes for one allReduce of 4 KB (our kernels)
   * and of 4 MB (NCCL, where the group formed it): the last rank's body throws, then the last rank
   * refuses a call (its recv too small). Every rank must fail at once (not at the 30 s timeout)
   * naming it, nothing runs, and the group then runs a group() as before.
   */
  private void groupAgreement(GpuCommunicator g, long send, long recv, long cap) {
    if (size < 2) {
      say("group() agreement check needs 2+ GPUs: not run");
      return;
    }
    boolean last = rank == size - 1;
    for (long bytes : new long[] {4096, 4 * MB}) {
      if (bytes > cap - 4096) {
        continue;
      }
      String label = "group() agreement on " + g.explain(Collective.ALL_REDUCE, bytes).algorithm() + " (" + bytes
          + " B allReduce)";
      long count = bytes / 4;
      CommBuffer s = CommBuffer.device(send, bytes);
      CommBuffer d = CommBuffer.device(recv, bytes);
      CommBuffer small = CommBuffer.device(recv, bytes - 4);
      cases++;
      long t0 = System.nanoTime();
      String threw = outcome(() -> g.group(b -> {
        b.allReduce(s, d, count, DataType.FLOAT32, ReduceOp.SUM);
        if (last) {
          throw new IllegalStateException("planted body failure");
        }
      }));
      String refused = outcome(() -> g.group(b -> b.allReduce(s, last ? small : d, count, DataType.FLOAT32,
          ReduceOp.SUM)));
      double secs = (System.nanoTime() - t0) / 1e9;
      boolean named = threw.contains(last ? "planted body failure" : "rank " + (size - 1) + "'s group() body threw")
          && refused.contains(last ? "recv buffer holds" : "rank " + (size - 1) + " refused its arguments");
      if (!named || secs > 10) {
        failures.add(label + ": after " + String.format("%.2f", secs) + " s: the body -> " + threw + "; the refusal -> "
            + refused);
        continue;
      }
      try {
        g.group(b -> b.allReduce(s, d, count, DataType.FLOAT32, ReduceOp.SUM));
        g.synchronize();
      } catch (CollectiveException e) {
        failures.add(label + ": a group() after the failed ones: " + e.getMessage());
        continue;
      }
      if (rank == 0) {
        System.out.println("== " + label + ": every rank failed at once (" + String.format("%.2f", secs)
            + " s), the group stays usable");
      }
    }
  }

  /** The message of what {@code call} throws, or "no exception". */
  private static String outcome(Runnable call) {
    try {
      call.run();
      return "no exception";
    } catch (RuntimeException e) {
      return String.valueOf(e.getMessage());
    }
  }

  private void missingPeer(Path dir, long send, long recv) {
    if (size < 2) {
      say("missing-peer check needs 2+ GPUs: not run");
      return;
    }
    GpuCollConf conf = GpuCollConf.of(Map.of(GpuCollConf.TIMEOUT.key(), "3s"));
    try (FileRendezvous r2 = new FileRendezvous(dir, "multi-gpu-missing", rank, size);
        Communicator c = CommunicatorFactory.create(r2, conf, "localhost")) {
      GpuCommunicator g = (GpuCommunicator) c;
      if (rank == size - 1) {
        say("missing-peer check: this rank never calls allReduce (it keeps its workspace mapped until the"
            + " others have timed out)");
        Thread.sleep(8000);
        return;
      }
      long t0 = System.nanoTime();
      try {
        g.allReduce(CommBuffer.device(send, 4096), CommBuffer.device(recv, 4096), 256, DataType.FLOAT32, ReduceOp.SUM);
        g.synchronize();
        failures.add("missing peer: allReduce returned without rank " + (size - 1));
      } catch (CollectiveTimeoutException e) {
        boolean named = e.missingRanks().contains(size - 1);
        boolean idle = CudaNative.streamIdle(g.stream());
        say(String.format("missing-peer check: timeout after %.1f s, missing %s, stream idle %s: %s",
            (System.nanoTime() - t0) / 1e9, e.missingRanks(), idle, e.getMessage()));
        if (!named || !idle) {
          failures.add("missing peer: " + e.getMessage() + " (named " + named + ", GPU idle " + idle + ")");
        }
      }
      cases++;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (RuntimeException e) {
      if (rank != size - 1) {
        failures.add("missing peer: " + e);
      }
    }
  }
}
