package dev.gpucoll.cuda;

import dev.gpucoll.api.DataType;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The fatbin of our kernels (built by native-kernels with nvcc: sm_80/90/100 machine code + PTX),
 * loaded once per device into that device's primary context, with its functions by name. Public
 * for the GPU checks, which look up every shipped kernel of {@link KernelTable} in it.
 */
public final class KernelImage {
  public static final String RESOURCE = "dev/gpucoll/native/gpucoll_kernels.fatbin";
  private static final Map<Integer, KernelImage> BY_DEVICE = new ConcurrentHashMap<>();
  private static volatile byte[] bytes;

  private final int device;
  private final long module;
  private final Map<String, Long> functions = new ConcurrentHashMap<>();

  private KernelImage(int device, long module) {
    this.device = device;
    this.module = module;
  }

  /** True when the fatbin is on the class path (checked without CUDA). */
  public static boolean present() {
    return KernelImage.class.getClassLoader().getResource(RESOURCE) != null;
  }

  static byte[] bytes() {
    byte[] b = bytes;
    if (b == null) {
      try (InputStream in = KernelImage.class.getClassLoader().getResourceAsStream(RESOURCE)) {
        if (in == null) {
          throw new IllegalStateException("kernel image " + RESOURCE + " is not on the class path");
        }
        b = in.readAllBytes();
      } catch (IOException e) {
        throw new UncheckedIOException("cannot read " + RESOURCE, e);
      }
      bytes = b;
    }
    return b;
  }

  /**
   * The image loaded on {@code device}, every shipped kernel of {@link KernelTable} loaded with it;
   * the device's primary context must be current. A communicator gets it while it forms, before any
   * of its kernels spins: a kernel loaded lazily at its first launch (CUDA's default) can wait for
   * the context to go idle, which another rank's spinning kernel on this GPU never lets happen.
   */
  public static KernelImage forDevice(int device) {
    return BY_DEVICE.computeIfAbsent(device, d -> {
      KernelImage image = new KernelImage(d, CudaNative.moduleLoadData(bytes()));
      for (String name : shippedKernelNames()) {
        CudaNative.functionLoad(image.function(name), name);
      }
      return image;
    });
  }

  /** The name of every kernel the kernel table ships in the fatbin, each once (untyped kernels serve every type). */
  public static java.util.Set<String> shippedKernelNames() {
    java.util.Set<String> names = new java.util.LinkedHashSet<>();
    for (KernelTable.Kernel k : KernelTable.kernels()) {
      for (DataType t : DataType.values()) {
        String name = k.name(t);
        if (name != null) {
          names.add(name);
        }
      }
      for (dev.gpucoll.api.PairType t : dev.gpucoll.api.PairType.values()) {
        String name = k.name(t);
        if (name != null) {
          names.add(name);
        }
      }
    }
    return names;
  }

  public int device() {
    return device;
  }

  /** The CUfunction of a kernel; a missing name fails with the kernel's name. */
  public long function(String name) {
    return functions.computeIfAbsent(name, n -> CudaNative.moduleGetFunction(module, n));
  }
}
