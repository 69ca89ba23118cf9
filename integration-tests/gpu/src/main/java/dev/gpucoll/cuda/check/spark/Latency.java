package dev.gpucoll.cuda.check.spark;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.GpuCommunicator;
import dev.gpucoll.api.ReduceOp;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * allReduce latency inside a barrier task, one rank's view. On device buffers: "eager" = CUDA
 * events around K back-to-back calls, "graph" = events around one replay of a CUDA graph that
 * captured K calls (captured anew for every batch: a captured collective of ours replays once);
 * each the median over batches of the per-call time. On host arrays (host backend): wall time
 * around K calls. Every rank measures; the driver keeps the smallest per row (the rank that started
 * last: ranks leave each call together, so the others' times include their head start).
 */
final class Latency {
  static final long[] SIZES = {8, 64, 512, 4 << 10, 32 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20};
  static final long[] QUICK_SIZES = {8, 4 << 10, 64 << 10, 1 << 20};
  static final DataType[] TYPES = {DataType.FLOAT32, DataType.BFLOAT16};

  private Latency() {}

  /** Calls per timed region: enough that the host skew between ranks is amortised. */
  static int callsPerBatch(long bytes) {
    return bytes <= (64 << 10) ? 200 : bytes <= (1 << 20) ? 100 : bytes <= (16 << 20) ? 20 : 5;
  }

  /** One "LAT {json}" line per type and size; {@code label} names the configuration (ours, nccl). */
  static List<String> measure(Communicator comm, String label, boolean quick) {
    long[] sizes = quick ? QUICK_SIZES : SIZES;
    int batches = quick ? 3 : 7;
    List<String> out = new ArrayList<>();
    GpuCommunicator gpu = comm instanceof GpuCommunicator g ? g : null;
    long capacity = sizes[sizes.length - 1];
    long send = 0;
    long recv = 0;
    try {
      if (gpu != null) {
        send = Cuda.malloc(capacity);
        recv = Cuda.malloc(capacity);
        Cuda.memset(send, 0x3C, capacity, gpu.stream()); // 1.0-ish bf16/fp32 bit patterns, never NaN
      }
      for (DataType t : TYPES) {
        for (long bytes : sizes) {
          long count = Math.max(1, bytes / t.byteSize());
          int k = callsPerBatch(bytes);
          String path = comm.explain(Collective.ALL_REDUCE, count * t.byteSize()).algorithm();
          String row;
          try {
            double[] eager = new double[batches];
            double[] graph = new double[batches];
            if (gpu != null) {
              CommBuffer s = CommBuffer.device(send, count * t.byteSize());
              CommBuffer r = CommBuffer.device(recv, count * t.byteSize());
              for (int i = 0; i < 3; i++) {
                gpu.allReduce(s, r, count, t, ReduceOp.SUM); // warm-up
              }
              gpu.synchronize();
              for (int b = 0; b < batches; b++) {
                eager[b] = eagerUs(gpu, s, r, count, t, k);
                graph[b] = graphUs(gpu, s, r, count, t, k);
              }
            } else {
              CommBuffer s = t == DataType.FLOAT32 ? CommBuffer.of(new float[(int) count])
                  : CommBuffer.of(new short[(int) count]);
              for (int i = 0; i < 3; i++) {
                comm.allReduce(s, s, count, t, ReduceOp.SUM);
              }
              for (int b = 0; b < batches; b++) {
                long t0 = System.nanoTime();
                for (int i = 0; i < k; i++) {
                  comm.allReduce(s, s, count, t, ReduceOp.SUM);
                }
                eager[b] = (System.nanoTime() - t0) / 1e3 / k;
                graph[b] = Double.NaN;
              }
            }
            row = String.format(Locale.ROOT,
                "{\"label\":\"%s\",\"rank\":%d,\"dtype\":\"%s\",\"bytes\":%d,\"path\":\"%s\",\"eager_us\":%s,"
                    + "\"graph_us\":%s,\"calls\":%d,\"batches\":%d}",
                label, comm.rank(), dtypeName(t), count * t.byteSize(), path, num(median(eager)), num(median(graph)),
                k, batches);
          } catch (RuntimeException e) {
            row = String.format(Locale.ROOT, "{\"label\":\"%s\",\"rank\":%d,\"dtype\":\"%s\",\"bytes\":%d,"
                + "\"path\":\"%s\",\"error\":\"%s\"}", label, comm.rank(), dtypeName(t), count * t.byteSize(), path,
                e.toString().replace('"', '\'').replace('\n', ' '));
          }
          out.add("LAT " + row);
        }
      }
    } finally {
      if (gpu != null) {
        gpu.synchronize();
        Cuda.free(send);
        Cuda.free(recv);
      }
    }
    return out;
  }

  private static double eagerUs(GpuCommunicator gpu, CommBuffer s, CommBuffer r, long count, DataType t, int k) {
    return perCallUs(gpu, k, () -> {
      for (int i = 0; i < k; i++) {
        gpu.allReduce(s, r, count, t, ReduceOp.SUM);
      }
    });
  }

  private static double graphUs(GpuCommunicator gpu, CommBuffer s, CommBuffer r, long count, DataType t, int k) {
    Cuda.beginCapture(gpu.stream());
    long exec;
    try {
      for (int i = 0; i < k; i++) {
        gpu.allReduce(s, r, count, t, ReduceOp.SUM);
      }
    } finally {
      exec = Cuda.endCapture(gpu.stream());
    }
    try {
      return perCallUs(gpu, k, () -> Cuda.graphLaunch(exec, gpu.stream()));
    } finally {
      Cuda.graphDestroy(exec);
    }
  }

  /** Microseconds per call of {@code calls} calls that {@code enqueue} puts on the stream, timed with events. */
  private static double perCallUs(GpuCommunicator gpu, int calls, Runnable enqueue) {
    long start = Cuda.eventCreate();
    long end = Cuda.eventCreate();
    try {
      Cuda.eventRecord(start, gpu.stream());
      enqueue.run();
      Cuda.eventRecord(end, gpu.stream());
      gpu.synchronize();
      return Cuda.elapsedMs(start, end) * 1000.0 / calls;
    } finally {
      Cuda.eventDestroy(start);
      Cuda.eventDestroy(end);
    }
  }

  static String dtypeName(DataType t) {
    return t == DataType.FLOAT32 ? "fp32" : t == DataType.BFLOAT16 ? "bf16" : t.name().toLowerCase(Locale.ROOT);
  }

  static double median(double[] v) {
    double[] s = v.clone();
    Arrays.sort(s);
    return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  }

  static String num(double v) {
    return Double.isNaN(v) ? "null" : String.format(Locale.ROOT, "%.3f", v);
  }
}
