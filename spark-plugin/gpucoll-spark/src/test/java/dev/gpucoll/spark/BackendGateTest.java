package dev.gpucoll.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.core.CommunicatorFactory;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * spark.gpucoll.backend=gpu where the GPU backend cannot run: the job fails at its submission with
 * each executor's reason and what to install, before any stage (and so any barrier task) starts.
 */
class BackendGateTest {

  @Test
  void aRequiredGpuBackendThatCannotRunFailsTheJobBeforeItsFirstStage() throws Exception {
    Assumptions.assumeTrue(CommunicatorFactory.check("gpu").unavailableReason().isPresent(),
        "this machine can run the GPU backend");
    SparkConf conf = LocalSpark.withPlugin("gpucoll-backend-gate", "local[2]")
        .set("spark.gpucoll.backend", "gpu");
    try (JavaSparkContext sc = new JavaSparkContext(conf)) {
      AtomicInteger stages = LocalSpark.countStages(sc);
      IllegalStateException e = assertThrows(IllegalStateException.class,
          () -> GpuCollectives.barrierMapPartitions(sc.parallelize(List.of(1, 2), 2),
              (comm, rows) -> List.of(comm.rank()).iterator()).collect());
      String m = e.getMessage();
      assertTrue(m.startsWith("gpucoll: spark.gpucoll.backend=gpu, but the gpu backend cannot run on 1 of 1"
          + " executor(s), so the barrier job was not started:\n  executor driver (host "), m);
      for (String hint : List.of("libcuda.so.1", "cuda-cudart-13-0", "libnccl2", "nvidia-nccl-cu13",
          "spark.executorEnv.LD_LIBRARY_PATH", "spark.gpucoll.backend=auto")) {
        assertTrue(m.contains(hint), hint + " in " + m);
      }
      sc.sc().listenerBus().waitUntilEmpty();
      assertEquals(0, stages.get(), "no stage may start");
      // The same facts for the tab: the executor's check with its reason and environment.
      List<BackendCheckEvent> checks = GpuCollectivesPlugin.driverBackendChecks();
      assertEquals(1, checks.size(), checks.toString());
      BackendCheckEvent check = checks.get(0);
      assertEquals("gpu", check.backend());
      assertFalse(check.usable());
      assertTrue(m.contains(check.unavailableReason()), m);
      assertTrue(check.environment().containsKey("CUDA driver"), check.environment().toString());
      // A job that asks for the host backend through its local property is not refused.
      sc.setLocalProperty("spark.gpucoll.backend", "host");
      assertEquals(List.of(0, 1), GpuCollectives.barrierMapPartitions(sc.parallelize(List.of(1, 2), 2),
          (comm, rows) -> List.of(comm.rank()).iterator()).collect());
    }
  }
}
