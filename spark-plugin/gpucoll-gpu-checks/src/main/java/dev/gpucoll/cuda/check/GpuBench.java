package dev.gpucoll.cuda.check;

import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.cuda.CudaEnvironment;
import dev.gpucoll.cuda.CudaNative;
import dev.gpucoll.cuda.DeviceFacts;
import dev.gpucoll.cuda.ForGpuChecks;
import dev.gpucoll.cuda.KernelVariant;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

/**
 * The GPU benchmark (a program that prints a table; run from the GPU bundle). Ranks are threads
 * of this JVM on one GPU. For allReduce fp32 SUM, 8 B .. 64 MB: median latency per call from CUDA
 * events around K back-to-back calls, and from one replay of a CUDA graph holding K calls, for our
 * barrier-free kernels (variant by size) and the two-barrier variant on the same ranks; then the
 * host cost of one Java launch vs the C++ launcher's number from the same run.
 *
 * <p>Usage: GpuBench [--quick] [--device N] [--cpp-us-per-launch X]
 */
public final class GpuBench {
  static final long[] SIZES = {8, 64, 512, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20,
      64 << 20};

  record Row(int ranks, long bytes, String variant, String kernel, double eventsUs, double graphUs) {}

  public static void main(String[] args) throws Exception {
    int device = 0;
    boolean quick = false;
    Double cppUs = null;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--quick" -> quick = true;
        case "--device" -> device = Integer.parseInt(args[++i]);
        case "--cpp-us-per-launch" -> cppUs = Double.parseDouble(args[++i]);
        default -> throw new IllegalArgumentException("unknown argument " + args[i]);
      }
    }
    if (!CudaEnvironment.probe().available()) {
      System.out.println("GPU backend unavailable: " + CudaEnvironment.probe().unavailableReason().get());
      System.exit(1);
    }
    CudaNative.setDevice(device);
    DeviceFacts f = CudaNative.deviceFacts(device);
    System.out.println("== GpuBench on " + f.name() + " " + f.uuid() + ", ranks as threads of one process");
    List<Row> rows = new ArrayList<>();
    int[] rankCounts = quick ? new int[] {2} : new int[] {2, 4, 8};
    long[] sizes = quick ? new long[] {8, 4 << 10, 64 << 10, 1 << 20} : SIZES;
    for (int n : rankCounts) {
      for (KernelVariant v : new KernelVariant[] {null, KernelVariant.LL}) {
        try (RankGroup g = RankGroup.create(n, device, v, Duration.ofSeconds(20), 64L << 20)) {
          g.onAll(Duration.ofSeconds(60), r -> {
            Elements.fillForReduction(r.hostIn, DataType.FLOAT32, ReduceOp.SUM, (64L << 20) / 4,
                new SplittableRandom(r.rank));
            r.upload(64L << 20, 64L << 20);
            r.comm.synchronize();
            return null;
          });
          for (long bytes : sizes) {
            if (v == KernelVariant.LL && bytes > ForGpuChecks.llMaxBytes()) {
              continue;
            }
            rows.add(measure(g, n, v, bytes, quick));
            Row last = rows.get(rows.size() - 1);
            System.out.printf("n=%d %9d B %-9s events %9.2f us  graph %9.2f us%n", n, bytes, last.variant,
                last.eventsUs, last.graphUs);
          }
        } catch (RuntimeException e) {
          System.out.println("n=" + n + " variant " + (v == null ? "auto" : v.abiName()) + " FAILED: " + e);
        }
      }
    }
    double[] launch = launchOverhead(device);
    printTable(rows, launch, cppUs);
  }

  static Row measure(RankGroup g, int n, KernelVariant v, long bytes, boolean quick) {
    long count = Math.max(1, bytes / 4);
    // Many calls per timed region so the host skew between rank threads (~0.1 ms) is amortised.
    int k = bytes <= (64 << 10) ? 1000 : bytes <= (1 << 20) ? 200 : bytes <= (16 << 20) ? 20 : 5;
    int batches = quick ? 5 : 11;
    String kernel = g.ranks[0].comm.explain(dev.gpucoll.api.Collective.ALL_REDUCE, bytes).algorithm();
    // warm-up
    g.onAll(Duration.ofSeconds(60), r -> {
      for (int i = 0; i < 5; i++) {
        call(r, count);
      }
      r.comm.synchronize();
      return null;
    });
    double[] events = new double[batches];
    double[] graphs = new double[batches];
    for (int b = 0; b < batches; b++) {
      List<Double> perRank = g.onAll(Duration.ofSeconds(120), r -> {
        long s = CudaNative.eventCreate();
        long e = CudaNative.eventCreate();
        CudaNative.eventRecord(s, r.stream());
        for (int i = 0; i < k; i++) {
          call(r, count);
        }
        CudaNative.eventRecord(e, r.stream());
        r.comm.synchronize();
        double ms = CudaNative.eventElapsedMs(s, e);
        CudaNative.eventDestroy(s);
        CudaNative.eventDestroy(e);
        return ms * 1000 / k;
      });
      events[b] = lastStarter(perRank);
      // Capture K calls per rank, then replay each rank's graph once, timed with events.
      List<Long> execs = g.onAll(Duration.ofSeconds(60), r -> {
        CudaNative.beginCapture(r.stream());
        for (int i = 0; i < k; i++) {
          call(r, count);
        }
        return CudaNative.endCaptureAndInstantiate(r.stream());
      });
      List<Double> graphRank = g.onAll(Duration.ofSeconds(120), r -> {
        long exec = execs.get(r.rank);
        long s = CudaNative.eventCreate();
        long e = CudaNative.eventCreate();
        CudaNative.eventRecord(s, r.stream());
        CudaNative.graphLaunch(exec, r.stream());
        CudaNative.eventRecord(e, r.stream());
        r.comm.synchronize();
        double ms = CudaNative.eventElapsedMs(s, e);
        CudaNative.eventDestroy(s);
        CudaNative.eventDestroy(e);
        CudaNative.graphExecDestroy(exec);
        return ms * 1000 / k;
      });
      graphs[b] = lastStarter(graphRank);
    }
    return new Row(n, bytes, v == null ? "auto" : v.abiName(), kernel, median(events), median(graphs));
  }

  private static void call(RankGroup.Rank r, long count) {
    r.comm.allReduce(CommBuffer.device(r.send, r.capacity), CommBuffer.device(r.recv, r.capacity), count,
        DataType.FLOAT32, ReduceOp.SUM);
  }

  /**
   * Host cost per call of the Java path (checks, plan, GcArgs, cuLaunchKernel through JavaCPP) on a
   * 1-rank group's gc_allreduce_ll_f32 of 8 bytes: 20k enqueues timed on the host, best of 3.
   */
  static double[] launchOverhead(int device) {
    try (RankGroup g = RankGroup.create(1, device, null, Duration.ofSeconds(20), 1 << 20)) {
      return g.onAll(Duration.ofSeconds(120), r -> {
        int calls = 20000;
        double best = Double.MAX_VALUE;
        for (int rep = 0; rep < 3; rep++) {
          r.comm.synchronize();
          long t0 = System.nanoTime();
          for (int i = 0; i < calls; i++) {
            call(r, 2);
          }
          long t1 = System.nanoTime();
          r.comm.synchronize();
          best = Math.min(best, (t1 - t0) / 1e3 / calls);
        }
        return new double[] {best};
      }).get(0);
    } catch (RuntimeException e) {
      System.out.println("launch overhead measurement failed: " + e);
      return new double[] {Double.NaN};
    }
  }

  /**
   * Per-call time of the rank that started last: ranks start their timed region at different host
   * times but finish together (each call waits for every peer), so the shortest elapsed time is the
   * steady-state time without the start skew between rank threads.
   */
  static double lastStarter(List<Double> perRank) {
    return perRank.stream().mapToDouble(Double::doubleValue).min().orElse(Double.NaN);
  }

  static Row find(List<Row> rows, Row like, String variant) {
    return rows.stream().filter(x -> x.ranks == like.ranks && x.bytes == like.bytes && x.variant.equals(variant))
        .findFirst().orElse(null);
  }

  static double median(double[] v) {
    double[] s = v.clone();
    Arrays.sort(s);
    return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  }

  static void printTable(List<Row> rows, double[] launch, Double cppUs) {
    System.out.println();
    System.out.println("== GpuBench table: allReduce fp32 SUM, median us per call (rank that started last); gr = one replay"
        + " of a CUDA graph of K calls; ll = one-shot LL forced (the two-barrier comparison is in the C++ gc_bench)");
    System.out.printf("%5s %9s %-20s %8s %8s %8s %8s%n", "ranks", "bytes", "auto path", "auto ev", "auto gr", "ll gr",
        "GB/s gr");
    for (Row r : rows) {
      if (!r.variant.equals("auto")) {
        continue;
      }
      Row ll = find(rows, r, "ll");
      System.out.printf("%5d %9d %-20s %8.2f %8.2f %8.2f %8.1f%n", r.ranks, r.bytes, r.kernel, r.eventsUs, r.graphUs,
          ll == null ? Double.NaN : ll.graphUs, r.bytes / r.graphUs / 1e3);
    }
    System.out.printf("Java host cost per allReduce launch (1 rank, 8 B, 20k calls, best of 3): %.2f us%n", launch[0]);
    if (cppUs != null) {
      System.out.printf("C++ launcher, same run: %.2f us per launch -> Java/C++ = %.2f (target <= 1.1)%n", cppUs,
          launch[0] / cppUs);
    } else {
      System.out.println("C++ launcher number: not available in this run");
    }
  }
}
