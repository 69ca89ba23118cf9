package dev.gpucoll.cuda.eligibility;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Gathers this process's {@link FactKeys facts} for one CUDA device: GPU identity, compute
 * capability, VMM support, P2P to every other visible GPU, the driver version, the NCCL
 * environment overrides and WSL (the NCCL version comes from {@code NcclLibrary.facts()}, the one
 * place NCCL is loaded). Never throws: what cannot be read is left out (unknown) and a missing
 * CUDA becomes a fact, so a member without a GPU still describes itself.
 *
 * <p>Only long-standing CUDA entry points are called (runtime and driver API of CUDA 11+), so the
 * lazily bound JavaCPP glue cannot hit a symbol the installed driver lacks.
 */
public final class LocalFacts {
  private LocalFacts() {}

  /** Facts for {@code device} (a CUDA ordinal in this process). */
  public static Map<String, String> collect(int device) {
    Map<String, String> facts = new LinkedHashMap<>(processFacts(System.getenv(), readProcVersion()));
    try {
      Cuda.gpuFacts(device, facts);
    } catch (UnsatisfiedLinkError | NoClassDefFoundError | ExceptionInInitializerError e) {
      facts.put(FactKeys.CUDA_DRIVER_VERSION, "0");
    } catch (RuntimeException e) {
      // A partial set is still useful; the detector treats what is missing as unknown.
    }
    return facts;
  }

  /** The facts that need no GPU: NCCL environment overrides and WSL. */
  public static Map<String, String> processFacts(Map<String, String> env, String procVersion) {
    Map<String, String> facts = new LinkedHashMap<>();
    for (String var : FactKeys.NCCL_ENV_VARIABLES) {
      String v = env.get(var);
      if (v != null) {
        facts.put(FactKeys.env(var), v);
      }
    }
    boolean wsl = env.containsKey("WSL_DISTRO_NAME") || env.containsKey("WSL_INTEROP")
        || procVersion.toLowerCase(Locale.ROOT).contains("microsoft");
    facts.put(FactKeys.OS_WSL, wsl ? "1" : "0");
    return facts;
  }

  private static String readProcVersion() {
    try {
      return Files.readString(Path.of("/proc/version"), StandardCharsets.UTF_8);
    } catch (IOException | RuntimeException e) {
      return "";
    }
  }

  /** Every touch of org.bytedeco.cuda is in here, so a missing driver fails as a catchable error. */
  private static final class Cuda {
    static void gpuFacts(int device, Map<String, String> facts) {
      int[] v = new int[1];
      if (org.bytedeco.cuda.global.cudart.cudaDriverGetVersion(v) == 0) {
        facts.put(FactKeys.CUDA_DRIVER_VERSION, Integer.toString(v[0]));
      }
      int[] count = new int[1];
      if (org.bytedeco.cuda.global.cudart.cudaGetDeviceCount(count) != 0 || device >= count[0]) {
        facts.put(FactKeys.GPU_VISIBLE_COUNT, "0");
        return;
      }
      facts.put(FactKeys.GPU_VISIBLE_COUNT, Integer.toString(count[0]));
      facts.put(FactKeys.GPU_ORDINAL, Integer.toString(device));
      String bus = busId(device);
      if (bus != null) {
        facts.put(FactKeys.GPU_PCI_BUS_ID, bus);
      }
      int major = attribute(org.bytedeco.cuda.global.cudart.cudaDevAttrComputeCapabilityMajor, device);
      int minor = attribute(org.bytedeco.cuda.global.cudart.cudaDevAttrComputeCapabilityMinor, device);
      if (major >= 0 && minor >= 0) {
        facts.put(FactKeys.GPU_COMPUTE_CAPABILITY, Integer.toString(major * 10 + minor));
      }
      if (org.bytedeco.cuda.global.cudart.cuInit(0) == 0) {
        int[] dev = new int[1];
        if (org.bytedeco.cuda.global.cudart.cuDeviceGet(dev, device) == 0) {
          int[] vmm = new int[1];
          if (org.bytedeco.cuda.global.cudart.cuDeviceGetAttribute(vmm,
              org.bytedeco.cuda.global.cudart.CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, dev[0]) == 0) {
            facts.put(FactKeys.GPU_VMM, vmm[0] != 0 ? "1" : "0");
          }
          org.bytedeco.cuda.cudart.CUuuid uuid = new org.bytedeco.cuda.cudart.CUuuid();
          if (org.bytedeco.cuda.global.cudart.cuDeviceGetUuid(uuid, dev[0]) == 0) {
            facts.put(FactKeys.GPU_UUID, uuidText(uuid));
          }
        }
      }
      List<String> peers = new ArrayList<>();
      for (int other = 0; other < count[0]; other++) {
        if (other == device) {
          continue;
        }
        String otherBus = busId(other);
        if (otherBus == null) {
          continue;
        }
        int[] can = new int[1];
        int[] atomics = new int[1];
        org.bytedeco.cuda.global.cudart.cudaDeviceCanAccessPeer(can, device, other);
        org.bytedeco.cuda.global.cudart.cudaDeviceGetP2PAttribute(atomics,
            org.bytedeco.cuda.global.cudart.cudaDevP2PAttrNativeAtomicSupported, device, other);
        peers.add(otherBus + "|" + (can[0] != 0 ? 1 : 0) + "|" + (atomics[0] != 0 ? 1 : 0));
      }
      facts.put(FactKeys.GPU_PEERS, String.join(",", peers));
    }

    private static int attribute(int attr, int device) {
      int[] out = new int[1];
      return org.bytedeco.cuda.global.cudart.cudaDeviceGetAttribute(out, attr, device) == 0 ? out[0] : -1;
    }

    private static String busId(int device) {
      byte[] buf = new byte[32];
      if (org.bytedeco.cuda.global.cudart.cudaDeviceGetPCIBusId(buf, buf.length, device) != 0) {
        return null;
      }
      int n = 0;
      while (n < buf.length && buf[n] != 0) {
        n++;
      }
      return new String(buf, 0, n, StandardCharsets.US_ASCII);
    }

    private static String uuidText(org.bytedeco.cuda.cudart.CUuuid uuid) {
      StringBuilder sb = new StringBuilder("GPU-");
      for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) {
          sb.append('-');
        }
        sb.append(String.format("%02x", uuid.bytes(i) & 0xff));
      }
      return sb.toString();
    }
  }
}
