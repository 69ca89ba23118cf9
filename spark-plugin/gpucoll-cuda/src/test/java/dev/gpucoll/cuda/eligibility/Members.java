package dev.gpucoll.cuda.eligibility;

import dev.gpucoll.core.spi.MemberInfo;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Synthetic groups for tests: an H200 node whose GPUs all reach each other over NVLink. */
final class Members {
  private Members() {}

  static String bus(int gpu) {
    return String.format("0000:%02x:00.0", 0x10 + gpu);
  }

  /** Facts of a healthy rank on {@code gpu} of an {@code gpusOnHost}-GPU NVLink node, NCCL 2.28.3. */
  static Map<String, String> healthy(int gpu, int gpusOnHost) {
    Map<String, String> f = new LinkedHashMap<>();
    f.put(FactKeys.GPU_UUID, "GPU-0000000" + gpu + "-aaaa-bbbb-cccc-dddddddddddd");
    f.put(FactKeys.GPU_PCI_BUS_ID, bus(gpu));
    f.put(FactKeys.GPU_ORDINAL, Integer.toString(gpu));
    f.put(FactKeys.GPU_COMPUTE_CAPABILITY, "90");
    f.put(FactKeys.GPU_VMM, "1");
    f.put(FactKeys.GPU_VISIBLE_COUNT, Integer.toString(gpusOnHost));
    List<String> peers = new ArrayList<>();
    for (int g = 0; g < gpusOnHost; g++) {
      if (g != gpu) {
        peers.add(bus(g) + "|1|1");
      }
    }
    f.put(FactKeys.GPU_PEERS, String.join(",", peers));
    f.put(FactKeys.CUDA_DRIVER_VERSION, "13000");
    f.put(FactKeys.NCCL_VERSION, "22803");
    f.put(FactKeys.OS_WSL, "0");
    return f;
  }

  /** {@code n} ranks, one process per GPU, on one host. */
  static List<MemberInfo> node(int n) {
    return node(n, (r, f) -> { });
  }

  interface Tweak {
    void apply(int rank, Map<String, String> facts);
  }

  static List<MemberInfo> node(int n, Tweak tweak) {
    List<MemberInfo> out = new ArrayList<>();
    for (int r = 0; r < n; r++) {
      Map<String, String> f = healthy(r, n);
      tweak.apply(r, f);
      out.add(new MemberInfo(r, "host-a", (1000 + r) + "@host-a", f));
    }
    return out;
  }
}
