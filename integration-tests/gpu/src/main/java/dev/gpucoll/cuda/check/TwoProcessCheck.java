package dev.gpucoll.cuda.check;

import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.GpuCommunicator;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.check.Elements;
import dev.gpucoll.check.Reduction;
import dev.gpucoll.check.Reduction.Accumulation;
import dev.gpucoll.core.CommunicatorFactory;
import dev.gpucoll.core.config.GpuCollConf;
import dev.gpucoll.core.rendezvous.FileRendezvous;
import dev.gpucoll.core.report.ReportingCommunicator;
import dev.gpucoll.cuda.CudaNative;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * Two ranks as two processes on one GPU, formed through the normal factory with a file rendezvous:
 * the GPU backend must exchange real cudaIpcMemHandles (each rank verifies the peer's workspace
 * header through the mapping) and, because spin kernels of two processes on one GPU time-slice,
 * must run the collectives on the non-spinning staged path and say so.
 */
final class TwoProcessCheck {
  private TwoProcessCheck() {}

  /** Starts the two processes, returns their RESULT lines ("FAIL ..." for failures). */
  static List<String> run(int device) throws Exception {
    Path dir = Files.createTempDirectory("gpucoll-2proc");
    return ProcessRanks.run(TwoProcessCheck.class, 2, Duration.ofSeconds(90),
        r -> List.of(dir.toString(), Integer.toString(r), Integer.toString(device)), r -> Map.of());
  }

  /** One rank: args = rendezvous dir, rank, device. */
  public static void main(String[] args) throws Exception {
    Path dir = Path.of(args[0]);
    int rank = Integer.parseInt(args[1]);
    int device = Integer.parseInt(args[2]);
    CudaNative.setDevice(device);
    GpuCollConf conf = GpuCollConf.of(Map.of(GpuCollConf.TIMEOUT.key(), "20s"));
    boolean ok = true;
    try (FileRendezvous rdv = new FileRendezvous(dir, "two-process", rank, 2);
        Communicator c = CommunicatorFactory.create(rdv, conf, "localhost")) {
      if (!(c instanceof GpuCommunicator g)) {
        System.out.println("RESULT FAIL rank " + rank + ": the factory chose backend " + c.backend() + ", not gpu");
        System.exit(1);
        return;
      }
      long count = 1021;
      long bytes = count * 4 * 2;
      long send = CudaNative.malloc(bytes);
      long recv = CudaNative.malloc(bytes);
      long host = CudaNative.hostAlloc(bytes);
      ByteBuffer hb = RankGroup.view(host, bytes);
      ByteBuffer[] inputs = new ByteBuffer[2];
      for (int r = 0; r < 2; r++) {
        inputs[r] = ByteBuffer.allocate((int) bytes).order(java.nio.ByteOrder.nativeOrder());
        Elements.fillForReduction(inputs[r], DataType.FLOAT32, ReduceOp.SUM, count * 2, new SplittableRandom(4242 + r));
      }
      hb.clear();
      hb.put(inputs[rank].duplicate().clear());
      CudaNative.memcpyAsync(send, host, bytes, g.stream());
      long t0 = System.nanoTime();
      int reps = 20;
      for (int i = 0; i < reps; i++) {
        CudaNative.memsetAsync(recv, 0xA5, bytes, g.stream());
        g.allReduce(CommBuffer.device(send, bytes), CommBuffer.device(recv, bytes), count, DataType.FLOAT32,
            ReduceOp.SUM);
      }
      g.synchronize();
      double usPerCall = (System.nanoTime() - t0) / 1e3 / reps;
      CudaNative.memcpyAsync(host, recv, count * 4, g.stream());
      g.synchronize();
      int wrong = 0;
      for (long i = 0; i < count; i++) {
        long[] terms = {Elements.bits(inputs[0], DataType.FLOAT32, i), Elements.bits(inputs[1], DataType.FLOAT32, i)};
        if (Reduction.check(DataType.FLOAT32, ReduceOp.SUM, terms, Elements.bits(hb, DataType.FLOAT32, i),
            Accumulation.WIDE_16_BIT) != null) {
          wrong++;
        }
      }
      ok &= wrong == 0;
      System.out.println("RESULT " + (wrong == 0 ? "" : "FAIL ") + "rank " + rank + ": allReduce fp32 x" + count
          + " across processes: " + wrong + " wrong elements; " + String.format("%.1f", usPerCall)
          + " us per call on " + c.observedPaths());
      // allGather of the same data
      CudaNative.memsetAsync(recv, 0xA5, bytes, g.stream());
      g.allGather(CommBuffer.device(send, bytes), CommBuffer.device(recv, bytes), count, DataType.FLOAT32);
      CudaNative.memcpyAsync(host, recv, bytes, g.stream());
      g.synchronize();
      boolean gathered = hb.slice(0, (int) (count * 4)).equals(inputs[0].slice(0, (int) (count * 4)))
          && hb.slice((int) (count * 4), (int) (count * 4)).equals(inputs[1].slice(0, (int) (count * 4)));
      ok &= gathered;
      System.out.println("RESULT " + (gathered ? "" : "FAIL ") + "rank " + rank + ": allGather across processes "
          + (gathered ? "exact" : "WRONG"));
      // allToAllv: rank q sends (q + 1) * (k + 2) int32 to rank k, value q * 1_000_000 + index in q's buffer.
      long[] sc = new long[2];
      long[] sd = new long[2];
      long[] rcn = new long[2];
      long[] rd = new long[2];
      long sAt = 0;
      long rAt = 0;
      for (int k = 0; k < 2; k++) {
        sc[k] = (rank + 1L) * (k + 2);
        sd[k] = sAt;
        sAt += sc[k];
        rcn[k] = (k + 1L) * (rank + 2);
        rd[k] = rAt;
        rAt += rcn[k];
      }
      for (long i = 0; i < sAt; i++) {
        hb.putInt((int) (4 * i), (int) (rank * 1_000_000 + i));
      }
      CudaNative.memcpyAsync(send, host, 4 * sAt, g.stream());
      CudaNative.memsetAsync(recv, 0xA5, 4 * rAt, g.stream());
      g.allToAllv(CommBuffer.device(send, bytes), sc, sd, CommBuffer.device(recv, bytes), rcn, rd, DataType.INT32);
      CudaNative.memcpyAsync(host, recv, 4 * rAt, g.stream());
      g.synchronize();
      int a2avWrong = 0;
      for (int q = 0; q < 2; q++) {
        // q's send displacement to `rank`: q's counts to the ranks before it, (q + 1) * (k + 2) for k < rank.
        long qDispl = rank == 0 ? 0 : (q + 1L) * 2;
        for (long i = 0; i < rcn[q]; i++) {
          int expect = (int) (q * 1_000_000 + qDispl + i);
          if (hb.getInt((int) (4 * (rd[q] + i))) != expect) {
            a2avWrong++;
          }
        }
      }
      ok &= a2avWrong == 0;
      System.out.println("RESULT " + (a2avWrong == 0 ? "" : "FAIL ") + "rank " + rank + ": allToAllv across processes "
          + (a2avWrong == 0 ? "exact" : a2avWrong + " wrong elements"));
      if (c instanceof ReportingCommunicator rc) {
        for (String f : rc.report().findings()) {
          System.out.println("RESULT rank " + rank + " report: " + f);
        }
      }
      boolean staged = c.observedPaths().stream().allMatch(p -> p.contains("/gpu-staged-host="));
      ok &= staged;
      System.out.println("RESULT " + (staged ? "" : "FAIL ") + "rank " + rank + ": observed paths " + c.observedPaths()
          + (staged ? " (non-spinning, as required for two processes on one GPU)" : " (expected gpu-staged-host only)"));
      CudaNative.free(send);
      CudaNative.free(recv);
      CudaNative.freeHost(host);
    } catch (RuntimeException e) {
      System.out.println("RESULT FAIL rank " + rank + ": " + e);
      e.printStackTrace(System.out);
      ok = false;
    }
    System.exit(ok ? 0 : 1);
  }
}
