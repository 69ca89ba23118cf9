package dev.gpucoll.cuda;

import java.util.Optional;

/**
 * What loading the CUDA libraries in this process found: versions, device count, NCCL, and the
 * reason the GPU backend cannot run here (empty when it can). Computed once per process by
 * {@link CudaEnvironment#probe()}; a plain value so tests can build one without a GPU.
 *
 * @param unavailableReason why the GPU backend is unusable here, e.g. the driver library is missing
 * @param driverVersion     cudaDriverGetVersion (13000 = CUDA 13.0), 0 when unknown
 * @param runtimeVersion    cudaRuntimeGetVersion of the loaded libcudart, 0 when unknown
 * @param deviceCount       visible CUDA devices
 * @param ncclVersion       ncclGetVersion (22803 = 2.28.3), 0 when NCCL is not loadable
 * @param ncclProblem       why NCCL is not loadable, empty when it is
 */
public record CudaProbe(
    Optional<String> unavailableReason,
    int driverVersion,
    int runtimeVersion,
    int deviceCount,
    int ncclVersion,
    Optional<String> ncclProblem) {

  /** The oldest driver our fatbin (nvcc 13.0) and the calls we make are known to work with. */
  public static final int MIN_DRIVER_VERSION = 13000;
  /** libcudart.so.13 of CUDA 13.0 is the oldest runtime the JavaCPP 1.5.13 glue links against. */
  public static final int MIN_RUNTIME_VERSION = 13000;

  public boolean available() {
    return unavailableReason.isEmpty();
  }

  public boolean ncclAvailable() {
    return ncclVersion > 0;
  }

  public static CudaProbe unavailable(String reason) {
    return new CudaProbe(Optional.of(reason), 0, 0, 0, 0, Optional.of("CUDA is not usable"));
  }

  /** "13.0" from 13000. */
  public static String cudaVersionText(int v) {
    return v <= 0 ? "none" : (v / 1000) + "." + (v % 1000) / 10;
  }

  /** "2.28.3" from 22803 (NCCL >= 2.9 encodes major*10000 + minor*100 + patch). */
  public static String ncclVersionText(int v) {
    return v <= 0 ? "none" : (v / 10000) + "." + (v % 10000) / 100 + "." + (v % 100);
  }
}
