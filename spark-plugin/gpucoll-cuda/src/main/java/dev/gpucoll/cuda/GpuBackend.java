package dev.gpucoll.cuda;

import dev.gpucoll.api.Communicator;
import dev.gpucoll.core.spi.CommunicatorBackend;
import dev.gpucoll.core.spi.GroupContext;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * The "gpu" backend: our barrier-free CUDA kernels inside a node, NCCL for large messages. Found by
 * ServiceLoader; on a machine without a usable GPU {@link #unavailableReason()} says why and the
 * factory picks the host backend.
 *
 * <p>The device a rank uses is the calling thread's current CUDA device when the communicator is
 * created (the Spark layer sets it from the task's GPU resource through {@link #useDevice}).
 */
public final class GpuBackend implements CommunicatorBackend {
  public static final String NAME = "gpu";
  public static final String KEY_DRIVER = "cuda.driver";
  public static final String KEY_RUNTIME = "cuda.runtime";

  private final Supplier<CudaProbe> probe;
  private final Supplier<Boolean> kernelsPresent;

  public GpuBackend() {
    this(CudaEnvironment::probe, KernelImage::present);
  }

  GpuBackend(Supplier<CudaProbe> probe, Supplier<Boolean> kernelsPresent) {
    this.probe = probe;
    this.kernelsPresent = kernelsPresent;
  }

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public Optional<String> unavailableReason() {
    CudaProbe p = probe.get();
    if (!p.available()) {
      return p.unavailableReason();
    }
    if (!kernelsPresent.get()) {
      return Optional.of("the kernel image " + KernelImage.RESOURCE
          + " is not on the class path (is the gpucoll-native-kernels jar missing?)");
    }
    return Optional.empty();
  }

  /** The probe's findings (versions, device count, NCCL); no CUDA context is created. */
  @Override
  public Map<String, String> environment() {
    CudaProbe p = probe.get();
    Map<String, String> env = new java.util.LinkedHashMap<>();
    env.put("CUDA driver", CudaProbe.cudaVersionText(p.driverVersion()));
    env.put("CUDA runtime", CudaProbe.cudaVersionText(p.runtimeVersion()));
    env.put("CUDA devices", String.valueOf(p.deviceCount()));
    env.put("NCCL", p.ncclAvailable() ? CudaProbe.ncclVersionText(p.ncclVersion())
        : "not loadable: " + p.ncclProblem().orElse("unknown"));
    return env;
  }

  @Override
  public Map<String, String> localFacts() {
    CudaProbe p = probe.get();
    if (!p.available()) {
      return Map.of();
    }
    Map<String, String> facts = new HashMap<>();
    facts.put(KEY_DRIVER, CudaProbe.cudaVersionText(p.driverVersion()));
    facts.put(KEY_RUNTIME, CudaProbe.cudaVersionText(p.runtimeVersion()));
    int device = CudaNative.currentDevice();
    facts.putAll(CudaNative.deviceFacts(device).asFacts());
    // The eligibility facts (P2P links, VMM, NCCL version and environment) the algorithm selector reads.
    facts.putAll(CudaNative.eligibilityFacts(device));
    return facts;
  }

  @Override
  public void useDevice(int ordinal) {
    CudaNative.setDevice(ordinal);
  }

  @Override
  public Communicator create(GroupContext group) {
    return CudaCommunicator.create(group);
  }
}
