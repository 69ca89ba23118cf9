package dev.gpucoll.spark.barrier;

import dev.gpucoll.core.config.ConfigEntry;
import dev.gpucoll.core.config.GpuCollConf;
import dev.gpucoll.spark.BackendCheckEvent;
import dev.gpucoll.spark.rpc.GroupCredential;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.SparkContext;
// scala.collection.JavaConverters, not scala.jdk.javaapi (Scala 2.13 only): one source for both Scala binaries.
import scala.collection.JavaConverters;

/**
 * The driver's admission of a barrier job of our API, at its submission, before any stage: the
 * job's spark.gpucoll local properties must parse, the backend they require must run on every
 * executor (the executors' backend checks, {@link BackendCheckEvent}, sent by each executor plugin
 * at start when the settings require a backend; a job that cannot run is refused, naming each
 * executor's reason and what to install or set), and then the job gets its own
 * {@link GroupCredential}.
 *
 * <p>Internal: public for the other packages of gpucoll-spark, not for users.
 */
public final class BackendGate {
  /** How long a job's submission waits for the checks of executors that registered but have not reported yet. */
  static final long WAIT_FOR_CHECKS_MILLIS = 10_000;

  /** The gate of the driver plugin running in this JVM ({@link #open}); null where none runs. */
  private static volatile BackendGate active;

  private final Map<String, BackendCheckEvent> checks = new ConcurrentHashMap<>();
  private final GroupCredential.Issuer credentials;
  private volatile GpuCollConf driverConf = GpuCollConf.defaults();

  /** The gate of a driver whose jobs get credentials of {@code credentials}. */
  public BackendGate(GroupCredential.Issuer credentials) {
    this.credentials = credentials;
  }

  /** The gate of the driver plugin running in this JVM, or null where none runs. */
  public static BackendGate active() {
    return active;
  }

  /** From the driver plugin once it runs: jobs are admitted here from now on, against {@code conf}. */
  public void open(GpuCollConf conf) {
    this.driverConf = conf;
    active = this;
  }

  /** From the driver plugin at its shutdown. */
  public void close() {
    if (active == this) {
      active = null;
    }
  }

  public void add(BackendCheckEvent check) {
    checks.put(check.executorId(), check);
  }

  /** Every executor's latest check, by executor id. */
  public List<BackendCheckEvent> checks() {
    List<BackendCheckEvent> out = new ArrayList<>(checks.values());
    out.sort(Comparator.comparing(BackendCheckEvent::executorId));
    return out;
  }

  /**
   * Checks a barrier job at its submission, on the driver, before any stage: the job's
   * spark.gpucoll local properties must parse (else one {@link
   * dev.gpucoll.core.config.InvalidSettingException}, instead of a failure in every task), and the
   * backend it requires must run on every executor ({@link #require}). Then the job gets its own
   * {@link GroupCredential}: set on the submitting thread now, before Spark copies the thread's
   * local properties into the job, it travels inside each of the job's tasks, naming {@code
   * checkedRdd} so that only the tasks computing through it take it.
   */
  void checkJob(SparkContext context, int checkedRdd) {
    GpuCollConf conf = driverConf;
    Map<String, String> settings = new HashMap<>(conf.asMap());
    for (ConfigEntry<?> e : GpuCollConf.entries()) {
      String local = context.getLocalProperty(e.key());
      if (local != null) {
        settings.put(e.key(), local);
      }
    }
    require(context, conf, GpuCollConf.of(settings).validate());
    context.setLocalProperty(GroupCredential.JOB_PROPERTY, credentials.nextJob().jobProperty(checkedRdd));
  }

  /**
   * Fails when the backend this job requires ({@code jobConf}: the driver's settings with the
   * job's local properties over them) cannot run on some executor. When the requirement is the
   * driver's own setting, every executor checks at start; their checks are awaited (a bounded
   * wait) first.
   */
  private void require(SparkContext sc, GpuCollConf driverConf, GpuCollConf jobConf) {
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
