package dev.gpucoll.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.CollectiveMismatchException;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.core.config.GpuCollConf;
import dev.gpucoll.core.rendezvous.LocalRendezvous;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Ranks whose settings pick different protocols for the same call used to return wrong data on
 * the first allReduce; now no group forms and every rank gets an error naming the setting.
 */
class ConfigSkewTest {

  @ParameterizedTest
  @CsvSource({"algorithm, host-oneshot, host-twoshot", "host.oneShotMaxBytes, 64k, 16", "backend, host, auto"})
  void skewedProtocolSettingFailsOnEveryRankBeforeAnyDataMoves(String key, String v0, String v1)
      throws Exception {
    int n = 2;
    String group = "skew-" + key;
    ExecutorService pool = Executors.newFixedThreadPool(n);
    try {
      List<Future<Throwable>> futures = new ArrayList<>();
      for (int r = 0; r < n; r++) {
        int rank = r;
        GpuCollConf conf = GpuCollConf.of(Map.of("spark.gpucoll.timeout", "20s",
            "spark.gpucoll." + key, rank == 0 ? v0 : v1)).validate();
        futures.add(pool.submit(() -> {
          try (LocalRendezvous rv = LocalRendezvous.join(group, rank, n);
              Communicator comm = CommunicatorFactory.create(rv, conf, "localhost")) {
            float[] v = {rank + 1f};
            comm.allReduce(v, dev.gpucoll.api.ReduceOp.SUM);
            return null;
          } catch (Throwable t) {
            return t;
          }
        }));
      }
      for (int r = 0; r < n; r++) {
        Throwable t = futures.get(r).get(60, TimeUnit.SECONDS);
        assertNotNull(t, "rank " + r + " formed a group despite skewed " + key);
        assertInstanceOf(CollectiveMismatchException.class, t);
        String expected = "spark.gpucoll." + key + " is '";
        assertTrue(t.getMessage().startsWith("rank " + r + ", communicator setup: ")
            && t.getMessage().contains(expected) && t.getMessage().contains("on rank 1"), t.getMessage());
        assertEquals(r, ((CollectiveMismatchException) t).rank());
      }
    } finally {
      pool.shutdownNow();
    }
  }
}
