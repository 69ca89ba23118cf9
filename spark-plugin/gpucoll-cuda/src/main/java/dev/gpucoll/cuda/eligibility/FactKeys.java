package dev.gpucoll.cuda.eligibility;

/**
 * Keys of the per-process facts that every member publishes at rendezvous
 * ({@link dev.gpucoll.core.spi.MemberInfo#facts()}) and that the Zero-CTA detector and the algorithm
 * selector read. {@link LocalFacts#collect(int)} fills them from CUDA; the backend's
 * {@code localFacts()} passes them on. A missing key means "unknown", never "false".
 */
public final class FactKeys {
  private FactKeys() {}

  /** GPU UUID as cuDeviceGetUuid prints it, "GPU-12e8fc5a-...". */
  public static final String GPU_UUID = "gpu.uuid";
  /** PCI bus id of this rank's GPU, "0000:00:06.0". */
  public static final String GPU_PCI_BUS_ID = "gpu.pciBusId";
  /** CUDA device ordinal in this process (same key as the backend's DeviceFacts). */
  public static final String GPU_ORDINAL = "gpu.device";
  /** Compute capability as major*10 + minor, "90" for sm_90 (same key as DeviceFacts). */
  public static final String GPU_COMPUTE_CAPABILITY = "gpu.computeCapability";
  /** "1" when the device supports virtual memory management (cuMem*), which NCCL windows need. */
  public static final String GPU_VMM = "gpu.vmm";
  /** Devices this process can see (CUDA_VISIBLE_DEVICES / container isolation limit it). */
  public static final String GPU_VISIBLE_COUNT = "gpu.visibleCount";
  /**
   * Every other GPU this process can see, as {@code busId|p2p|nativeAtomics} entries joined by ','
   * ("0000:00:07.0|1|1"). p2p is cudaDeviceCanAccessPeer; native atomics over the link are what
   * NVLink gives and PCIe usually does not, so the report calls such a pair "NVLink-class".
   */
  public static final String GPU_PEERS = "gpu.peers";
  /** cudaDriverGetVersion, "13000" for CUDA 13.0. */
  public static final String CUDA_DRIVER_VERSION = "cuda.driverVersion";
  /** ncclGetVersion of the loaded libnccl, "22803"; "0" when NCCL cannot be loaded. */
  public static final String NCCL_VERSION = "nccl.version";
  /** Why NCCL cannot be loaded in this process (absent when it can). */
  public static final String NCCL_PROBLEM = "nccl.problem";
  /** "1" on Windows Subsystem for Linux (no CUDA IPC / P2P between processes there). */
  public static final String OS_WSL = "os.wsl";
  /** Prefix of the NCCL environment overrides this process was started with, e.g. "env.NCCL_CTA_POLICY". */
  public static final String ENV_PREFIX = "env.";

  /** NCCL variables that decide the Zero-CTA / symmetric paths or the runtime proof. */
  public static final java.util.List<String> NCCL_ENV_VARIABLES = java.util.List.of(
      "NCCL_CTA_POLICY", "NCCL_WIN_ENABLE", "NCCL_CUMEM_ENABLE", "NCCL_P2P_DISABLE",
      "NCCL_NVLS_ENABLE", "NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_FILE", "CUDA_VISIBLE_DEVICES");

  public static String env(String variable) {
    return ENV_PREFIX + variable;
  }
}
