package dev.gpucoll.spark;

import dev.gpucoll.core.config.GpuCollConf;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.SparkContext;
// scala.collection.JavaConverters, not scala.jdk.javaapi (Scala 2.13 only): one source for both Scala binaries.
import scala.collection.JavaConverters;

/**
 * Driver side of the check made before the first stage: the executors' backend checks
 * ({@link BackendCheckEvent}, sent by each executor plugin at start when the settings require a
 * backend), and the refusal of a barrier job that cannot run, at the job's submission, naming each
 * executor's reason and what to install or set.
 */
final class BackendGate {
  /** How long a job's submission waits for the checks of executors that registered but have not reported yet. */
  static final long WAIT_FOR_CHECKS_MILLIS = 10_000;

  private final Map<String, BackendCheckEvent> checks = new ConcurrentHashMap<>();

  void add(BackendCheckEvent check) {
    checks.put(check.executorId(), check);
  }

  /** Every executor's latest check, by executor id. */
  List<BackendCheckEvent> checks() {
    List<BackendCheckEvent> out = new ArrayList<>(checks.values());
    out.sort(Comparator.comparing(BackendCheckEvent::executorId));
    return out;
  }

  /**
   * Fails when the backend this job requires ({@code jobConf}: the driver's settings with the
   * job's local properties over them) cannot run on some executor. When the requirement is the
   * driver's own setting, every executor checks at start; their checks are awaited (a bounded
   * wait) first.
   */
  void require(SparkContext sc, GpuCollConf driverConf, GpuCollConf jobConf) {
    String backend = jobConf.get(GpuCollConf.BACKEND);
    if (backend.equals("auto")) {
      return;
    }
    if (backend.equals(driverConf.get(GpuCollConf.BACKEND))) {
      awaitChecks(expectedExecutors(sc));
    }
    List<BackendCheckEvent> failed = checks().stream()
        .filter(c -> c.backend().equals(backend) && !c.usable()).toList();
    if (!failed.isEmpty()) {
      throw new IllegalStateException(refusal(backend, failed, checks().size()));
    }
  }

  @SuppressWarnings("deprecation") // JavaConverters, deprecated in Scala 2.13 only: one source for both Scala binaries
  private static Set<String> expectedExecutors(SparkContext sc) {
    Set<String> ids = new LinkedHashSet<>(JavaConverters.seqAsJavaList(sc.getExecutorIds()));
    if (ids.isEmpty() && sc.isLocal()) {
      ids.add("driver"); // local mode: the executor runs in the driver's JVM
    }
    return ids;
  }

  private void awaitChecks(Set<String> executors) {
    long deadline = System.nanoTime() + WAIT_FOR_CHECKS_MILLIS * 1_000_000L;
    while (!checks.keySet().containsAll(executors) && System.nanoTime() < deadline) {
      try {
        Thread.sleep(20);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }

  /** The error text: per executor its reason, then what to do. */
  static String refusal(String backend, List<BackendCheckEvent> failed, int checked) {
    StringBuilder sb = new StringBuilder("gpucoll: spark.gpucoll.backend=").append(backend)
        .append(", but the ").append(backend).append(" backend cannot run on ").append(failed.size())
        .append(" of ").append(checked).append(" executor(s), so the barrier job was not started:");
    for (BackendCheckEvent c : failed) {
      sb.append("\n  executor ").append(c.executorId()).append(" (host ").append(c.host())
          .append(c.gpus().isEmpty() ? ", no GPU assigned" : ", GPUs " + c.gpus()).append("): ")
          .append(c.unavailableReason());
    }
    if (backend.equals("gpu")) {
      sb.append("\nWhat to do on those hosts: install the NVIDIA driver (libcuda.so.1, e.g. the nvidia-driver"
          + " or cuda-drivers package; nvidia-smi must list the GPU), the CUDA 13 runtime (libcudart.so.13:"
          + " the cuda-cudart-13-0 package or NVIDIA's cuda_cudart redistributable) and NCCL (libnccl.so.2,"
          + " 2.28+ for Zero-CTA: the libnccl2 package or the nvidia-nccl-cu13 wheel); put the folder of any"
          + " library outside the system paths on spark.executorEnv.LD_LIBRARY_PATH; give each executor its"
          + " GPU (spark.executor.resource.gpu.amount=1 with a discovery script, spark.task.resource.gpu.amount)."
          + " Or set spark.gpucoll.backend=auto to run on the host backend where a GPU cannot be used.");
    } else {
      sb.append("\nOr set spark.gpucoll.backend=auto to let every group take a backend its members can run.");
    }
    return sb.toString();
  }
}
