package dev.gpucoll.cuda;

import dev.gpucoll.cuda.nccl.NcclLibrary;
import java.util.Optional;
import java.util.logging.Logger;

/**
 * Loads the CUDA libraries through JavaCPP once per process, without ever crashing the JVM: every
 * failure of the loader (missing libcuda.so.1, no device, a driver older than the fatbin) becomes
 * the {@link CudaProbe#unavailableReason()} that the GPU backend reports and the factory uses to
 * fall back to the host backend.
 *
 * <p>No class that touches {@code org.bytedeco.cuda.global.*} is loaded before this probe says
 * CUDA is usable: their static initialisers load the JNI libraries.
 */
public final class CudaEnvironment {
  private static final Logger LOG = Logger.getLogger(CudaEnvironment.class.getName());
  /** Set to "true" to make this process behave as if it had no GPU (tests, debugging). */
  public static final String DISABLE_PROPERTY = "gpucoll.cuda.disable";

  private CudaEnvironment() {}

  /** Loaded by the JVM on first use, once per process (class initialisation is thread-safe). */
  private static final class Loaded {
    static final CudaProbe PROBE = load();
  }

  /** The process-wide probe; the first call loads the libraries. A simulated device answers for itself. */
  public static CudaProbe probe() {
    if (CudaNative.simulated()) {
      int[] driver = new int[1];
      int[] runtime = new int[1];
      int[] devices = new int[1];
      CudaNative.versions(driver, runtime, devices);
      return new CudaProbe(Optional.empty(), driver[0], runtime[0], devices[0], 0,
          Optional.of("NCCL unavailable: simulated device"));
    }
    return Loaded.PROBE;
  }

  private static CudaProbe load() {
    if (Boolean.getBoolean(DISABLE_PROPERTY)) {
      return CudaProbe.unavailable("disabled by -D" + DISABLE_PROPERTY + "=true");
    }
    int[] driver = new int[1];
    int[] runtime = new int[1];
    int[] devices = new int[1];
    try {
      // Loads libjnicudart, which NEEDs libcuda.so.1 and libcudart.so.13.
      CudaNative.versions(driver, runtime, devices);
    } catch (UnsatisfiedLinkError | NoClassDefFoundError | ExceptionInInitializerError e) {
      return CudaProbe.unavailable("CUDA libraries cannot be loaded: " + rootMessage(e));
    } catch (CudaException e) {
      return CudaProbe.unavailable(e.getMessage());
    } catch (RuntimeException e) {
      return CudaProbe.unavailable("CUDA probe failed: " + e);
    }
    String why = null;
    if (devices[0] <= 0) {
      why = "no CUDA device is visible (cudaGetDeviceCount = 0)";
    } else if (driver[0] < CudaProbe.MIN_DRIVER_VERSION) {
      why = "the CUDA driver supports CUDA " + CudaProbe.cudaVersionText(driver[0]) + "; the kernels need "
          + CudaProbe.cudaVersionText(CudaProbe.MIN_DRIVER_VERSION) + " or newer";
    } else if (runtime[0] < CudaProbe.MIN_RUNTIME_VERSION) {
      why = "the loaded CUDA runtime is " + CudaProbe.cudaVersionText(runtime[0]) + "; need "
          + CudaProbe.cudaVersionText(CudaProbe.MIN_RUNTIME_VERSION) + " or newer";
    }
    int ncclVersion = 0;
    String ncclProblem = null;
    if (why == null) {
      // NCCL is loaded in one place, NcclLibrary, which also refuses versions too old to drive.
      Optional<String> ncclWhy = NcclLibrary.unavailableReason();
      if (ncclWhy.isPresent()) {
        ncclProblem = ncclWhy.get();
      } else {
        ncclVersion = NcclLibrary.get().version();
      }
    } else {
      ncclProblem = "CUDA is not usable";
    }
    CudaProbe p = new CudaProbe(Optional.ofNullable(why), driver[0], runtime[0], devices[0], ncclVersion,
        Optional.ofNullable(ncclProblem));
    if (p.available()) {
      LOG.fine("CUDA: driver " + CudaProbe.cudaVersionText(driver[0]) + ", runtime "
          + CudaProbe.cudaVersionText(runtime[0]) + ", " + devices[0] + " device(s), NCCL "
          + CudaProbe.ncclVersionText(ncclVersion));
    }
    return p;
  }

  /** The innermost cause's message, cut to 300 characters (JavaCPP's carry the full cache path). */
  public static String rootMessage(Throwable e) {
    Throwable t = e;
    while (t.getCause() != null && t.getCause() != t) {
      t = t.getCause();
    }
    String m = t.getMessage() == null ? t.toString() : t.getMessage();
    return m.length() > 300 ? m.substring(0, 300) + "..." : m;
  }
}
