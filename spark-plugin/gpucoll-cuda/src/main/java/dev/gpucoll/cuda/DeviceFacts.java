package dev.gpucoll.cuda;

import java.util.Map;

/**
 * One CUDA device as the rendezvous and the path report see it.
 *
 * @param ordinal           CUDA device ordinal in this process
 * @param uuid              "GPU-xxxxxxxx-xxxx-..." as nvidia-smi prints it; equal UUIDs = one physical GPU
 * @param pciBusId          e.g. "0000:19:00.0"
 * @param computeCapability 90 for sm_90
 * @param multiprocessors   SM count
 * @param name              e.g. "NVIDIA H200"
 */
public record DeviceFacts(int ordinal, String uuid, String pciBusId, int computeCapability, int multiprocessors,
    String name) {

  public static final String KEY_UUID = "gpu.uuid";
  public static final String KEY_PCI = "gpu.pciBusId";
  public static final String KEY_ORDINAL = "gpu.device";
  public static final String KEY_CC = "gpu.computeCapability";
  public static final String KEY_SMS = "gpu.multiprocessors";
  public static final String KEY_NAME = "gpu.name";

  public Map<String, String> asFacts() {
    return Map.of(KEY_UUID, uuid, KEY_PCI, pciBusId, KEY_ORDINAL, Integer.toString(ordinal),
        KEY_CC, Integer.toString(computeCapability), KEY_SMS, Integer.toString(multiprocessors), KEY_NAME, name);
  }

  /** nvidia-smi's spelling of a 16-byte UUID. */
  public static String uuidText(byte[] b) {
    StringBuilder sb = new StringBuilder("GPU-");
    for (int i = 0; i < 16; i++) {
      if (i == 4 || i == 6 || i == 8 || i == 10) {
        sb.append('-');
      }
      sb.append(String.format("%02x", b[i] & 0xff));
    }
    return sb.toString();
  }
}
