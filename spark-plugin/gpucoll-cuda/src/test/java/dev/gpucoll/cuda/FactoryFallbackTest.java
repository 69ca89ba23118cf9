package dev.gpucoll.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.core.CommunicatorFactory;
import dev.gpucoll.core.config.GpuCollConf;
import dev.gpucoll.core.rendezvous.LocalRendezvous;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * With the gpu backend on the class path but no usable GPU (CI), the factory forms the group on the
 * host backend under spark.gpucoll.backend=auto, and a request for "gpu" fails naming the ranks.
 */
class FactoryFallbackTest {

  @Test
  void autoPicksTheHostBackendWithoutAGpu() throws Exception {
    boolean gpu = CudaEnvironment.probe().available();
    List<String> backends = formAndAllReduce("fallback-auto", Map.of());
    for (String b : backends) {
      assertTrue(gpu ? b.equals("gpu") : b.startsWith("host"), "backend " + b + " (GPU usable: " + gpu + ")");
    }
  }

  @Test
  void askingForGpuWithoutOneNamesTheRanks() throws Exception {
    if (CudaEnvironment.probe().available()) {
      return; // on a GPU machine this request is valid
    }
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      List<Future<Throwable>> fs = new ArrayList<>();
      for (int r = 0; r < 2; r++) {
        int rank = r;
        fs.add(pool.submit(() -> {
          LocalRendezvous rdv = LocalRendezvous.join("fallback-gpu", rank, 2);
          GpuCollConf conf = GpuCollConf.of(Map.of(GpuCollConf.BACKEND.key(), "gpu"));
          return assertThrows(CollectiveException.class, () -> CommunicatorFactory.create(rdv, conf, "localhost"));
        }));
      }
      for (Future<Throwable> f : fs) {
        String m = f.get(60, TimeUnit.SECONDS).getMessage();
        assertTrue(m.contains("backend 'gpu' is not usable on ranks [0, 1]"), m);
        // The reason each rank found (here the same on both) travels with the error.
        assertTrue(m.contains(new GpuBackend().unavailableReason().orElseThrow()), m);
      }
    } finally {
      pool.shutdownNow();
    }
  }

  private static List<String> formAndAllReduce(String id, Map<String, String> settings) throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      List<Future<String>> fs = new ArrayList<>();
      for (int r = 0; r < 2; r++) {
        int rank = r;
        fs.add(pool.submit(() -> {
          LocalRendezvous rdv = LocalRendezvous.join(id, rank, 2);
          try (Communicator c = CommunicatorFactory.create(rdv, GpuCollConf.of(settings), "localhost")) {
            float[] v = {rank + 1f, 10f * (rank + 1)};
            c.allReduce(v, ReduceOp.SUM);
            assertArrayEquals(new float[] {3f, 30f}, v);
            return c.backend();
          }
        }));
      }
      List<String> out = new ArrayList<>();
      for (Future<String> f : fs) {
        out.add(f.get(60, TimeUnit.SECONDS));
      }
      assertEquals(2, out.size());
      return out;
    } finally {
      pool.shutdownNow();
    }
  }
}
