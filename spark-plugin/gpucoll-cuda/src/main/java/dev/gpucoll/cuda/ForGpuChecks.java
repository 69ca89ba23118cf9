package dev.gpucoll.cuda;

import dev.gpucoll.api.DataType;
import dev.gpucoll.api.GpuCommunicator;
import dev.gpucoll.core.spi.GroupContext;
import java.util.ArrayList;
import java.util.List;

/**
 * The entry point of the GPU checks (module gpucoll-gpu-checks: the GPU suite, benchmark and
 * multi-GPU runs), not an API: what they need of this package's internals, and nothing else.
 */
public final class ForGpuChecks {
  private ForGpuChecks() {}

  /**
   * A communicator that runs our kernels even when ranks of this process share a GPU (the suite
   * runs many ranks on one GPU; the default route stages such groups through the host). Every
   * collective runs {@code variant} when it is not null (a call the variant cannot take fails);
   * otherwise the route chooses by size as usual.
   */
  public static GpuCommunicator kernelCommunicator(GroupContext group, KernelVariant variant) {
    return CudaCommunicator.create(group, variant, true);
  }

  /** Largest per-peer payload of the LL kernels (kernel_abi.h GC_LL_MAX_BYTES). */
  public static long llMaxBytes() {
    return KernelTable.LL_MAX_BYTES;
  }

  /** Largest message of the sentinel two-shot kernels (GC_SENT_MAX_BYTES). */
  public static long sentinelMaxBytes() {
    return KernelTable.SENT_MAX_BYTES;
  }

  /** Largest count of the LL128 kernels for {@code type} (GC_LL128_MAX_COUNT). */
  public static long ll128MaxCount(DataType type) {
    return KernelTable.kernel(dev.gpucoll.api.Collective.ALL_REDUCE, KernelTable.Protocol.LL128).capacityElements(type);
  }

  /** The names among {@code kernels} that the fatbin loaded on {@code device} lacks. */
  public static List<String> missingKernels(int device, List<String> kernels) {
    KernelImage image = KernelImage.forDevice(device);
    List<String> missing = new ArrayList<>();
    for (String k : kernels) {
      try {
        image.function(k);
      } catch (RuntimeException e) {
        missing.add(k);
      }
    }
    return missing;
  }
}
