package dev.gpucoll.cuda;

import java.util.LinkedHashMap;
import java.util.Map;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.PointerPointer;

/**
 * Every CUDA call the GPU backend makes, in one place, each checked. The JavaCPP 1.5.13 glue is
 * built against CUDA 13.1 / NCCL 2.29 headers while machines run CUDA 13.0 / NCCL 2.28: a call to
 * a function the loaded library lacks kills the JVM (lazy binding, no Java exception). So this
 * class calls only the functions listed in {@link #USED_SYMBOLS}, each present since the version
 * given there, and {@link CudaEnvironment} refuses CUDA older than the oldest of those.
 *
 * <p>Device and host addresses travel as {@code long}; {@link #ptr(long)} wraps one for JavaCPP.
 *
 * <p>Every call goes to one {@link CudaApi}: the real device ({@link JavaCppCuda}, created at the
 * first call, after {@link CudaEnvironment}'s probe), or a simulated one that the project's tests
 * {@link #install} so that the backend's Java paths run without a GPU.
 */
public final class CudaNative {
  private CudaNative() {}

  /**
   * The exported symbols this class binds to, with the CUDA (or NCCL) version that introduced the
   * exact symbol the 1.5.13 glue imports. A unit test checks that none of them is among the
   * symbols the CUDA 13.0 libraries lack.
   */
  public static final Map<String, Integer> USED_SYMBOLS = usedSymbols();

  private static Map<String, Integer> usedSymbols() {
    Map<String, Integer> m = new LinkedHashMap<>();
    for (String s : new String[] {"cudaDriverGetVersion", "cudaRuntimeGetVersion", "cudaGetDeviceCount",
        "cudaGetDevice", "cudaSetDevice", "cudaFree", "cudaMalloc", "cudaHostAlloc", "cudaHostGetDevicePointer",
        "cudaFreeHost", "cudaMemcpyAsync", "cudaMemsetAsync", "cudaStreamCreateWithFlags", "cudaStreamSynchronize",
        "cudaStreamQuery", "cudaStreamDestroy", "cudaEventCreate", "cudaEventCreateWithFlags", "cudaEventRecord",
        "cudaEventSynchronize", "cudaEventElapsedTime", "cudaEventDestroy",
        "cudaIpcGetMemHandle", "cudaIpcOpenMemHandle", "cudaIpcCloseMemHandle", "cudaDeviceGetAttribute",
        "cudaDeviceGetPCIBusId", "cudaGetErrorString", "cudaGetErrorName", "cudaGetLastError",
        "cudaDeviceSynchronize", "cudaDeviceCanAccessPeer", "cudaDeviceEnablePeerAccess"}) {
      m.put(s, 4000);
    }
    m.put("cudaGetDeviceProperties", 13000); // CUDA 13 dropped the _v2 suffix CUDA 12 exported
    m.put("cudaStreamBeginCapture", 10000);
    m.put("cudaStreamEndCapture", 10000);
    m.put("cudaGraphInstantiate", 10000);
    m.put("cudaGraphLaunch", 10000);
    m.put("cudaGraphExecDestroy", 10000);
    m.put("cudaGraphDestroy", 10000);
    m.put("cuCtxGetCurrent", 4000);
    m.put("cuModuleLoadData", 2000);
    m.put("cuModuleGetFunction", 2000);
    m.put("cuFuncLoad", 12040);
    m.put("cuLaunchKernel", 4000);
    m.put("cuLaunchKernelEx", 12000);
    m.put("cudaStreamIsCapturing", 10000);
    m.put("cuMemsetD32Async", 3020);
    m.put("cuGetErrorString", 6000);
    return Map.copyOf(m);
  }

  /** A JavaCPP view of a raw address (device or host). */
  public static Pointer ptr(long address) {
    return new Address(address);
  }

  private static final class Address extends Pointer {
    Address(long a) {
      this.address = a;
    }
  }

  private static volatile CudaApi api;

  private static CudaApi api() {
    CudaApi a = api;
    if (a == null) {
      synchronized (CudaNative.class) {
        if (api == null) {
          api = new JavaCppCuda();
        }
        a = api;
      }
    }
    return a;
  }

  /**
   * Replaces the device for this process (the project's tests: a simulated device); returns what it
   * replaced (null: the real device, not yet created), for {@link #restore}.
   */
  static synchronized CudaApi install(CudaApi device) {
    CudaApi before = api;
    api = device;
    return before;
  }

  /** Puts back what {@link #install} returned. */
  static synchronized void restore(CudaApi before) {
    api = before;
  }

  /** True when a simulated device is installed (no real GPU behind these calls). */
  public static boolean simulated() {
    CudaApi a = api;
    return a != null && a.simulated();
  }

  // ---- probe ----

  static void versions(int[] driver, int[] runtime, int[] devices) {
    api().versions(driver, runtime, devices);
  }

  // ---- devices ----

  public static int currentDevice() {
    return api().currentDevice();
  }

  /** Makes {@code device}'s primary context current on this thread (runtime and driver API alike). */
  public static void setDevice(int device) {
    api().setDevice(device);
  }

  /** Facts of one device for rendezvous and reports. */
  public static DeviceFacts deviceFacts(int device) {
    return api().deviceFacts(device);
  }

  public static boolean canAccessPeer(int device, int peer) {
    return api().canAccessPeer(device, peer);
  }

  /** Enables access from the current device to {@code peer}; already enabled is fine. */
  public static void enablePeerAccess(int peer) {
    api().enablePeerAccess(peer);
  }

  /** The eligibility facts of {@code device} (P2P links, VMM, driver, NCCL) for the rendezvous. */
  static Map<String, String> eligibilityFacts(int device) {
    return api().eligibilityFacts(device);
  }

  // ---- memory ----

  public static long malloc(long bytes) {
    return api().malloc(bytes);
  }

  public static void free(long address) {
    api().free(address);
  }

  /** Pinned host memory mapped into the device's address space (abort word, error record). */
  public static long hostAllocMapped(long bytes) {
    return api().hostAllocMapped(bytes);
  }

  /** Pinned host memory (staging). */
  public static long hostAlloc(long bytes) {
    return api().hostAlloc(bytes);
  }

  public static long hostDevicePointer(long host) {
    return api().hostDevicePointer(host);
  }

  public static void freeHost(long address) {
    api().freeHost(address);
  }

  public static void memcpyAsync(long dst, long src, long bytes, long stream) {
    api().memcpyAsync(dst, src, bytes, stream);
  }

  public static void memsetAsync(long dst, int value, long bytes, long stream) {
    api().memsetAsync(dst, value, bytes, stream);
  }

  /** Fills {@code words} 32-bit words with {@code value} (the sentinel prefill). */
  public static void memsetD32Async(long dst, int value, long words, long stream) {
    api().memsetD32Async(dst, value, words, stream);
  }

  // ---- streams, events, graphs ----

  public static long streamCreateNonBlocking() {
    return api().streamCreateNonBlocking();
  }

  public static void streamSynchronize(long stream) {
    api().streamSynchronize(stream);
  }

  /** True when all work on the stream has completed; errors other than not-ready are thrown. */
  public static boolean streamIdle(long stream) {
    return api().streamIdle(stream);
  }

  public static void streamDestroy(long stream) {
    api().streamDestroy(stream);
  }

  public static long eventCreate() {
    return api().eventCreate();
  }

  public static void eventRecord(long event, long stream) {
    api().eventRecord(event, stream);
  }

  public static void eventSynchronize(long event) {
    api().eventSynchronize(event);
  }

  public static float eventElapsedMs(long start, long end) {
    return api().eventElapsedMs(start, end);
  }

  public static void eventDestroy(long event) {
    api().eventDestroy(event);
  }

  /** True while {@code stream} is being captured into a CUDA graph. */
  public static boolean isCapturing(long stream) {
    return api().isCapturing(stream);
  }

  /** Begins a thread-local capture of {@code stream}. */
  public static void beginCapture(long stream) {
    api().beginCapture(stream);
  }

  /** Ends the capture and instantiates it; returns the cudaGraphExec_t. */
  public static long endCaptureAndInstantiate(long stream) {
    return api().endCaptureAndInstantiate(stream);
  }

  public static void graphLaunch(long exec, long stream) {
    api().graphLaunch(exec, stream);
  }

  public static void graphExecDestroy(long exec) {
    api().graphExecDestroy(exec);
  }

  // ---- IPC ----

  /** The 64-byte cudaIpcMemHandle_t of a cudaMalloc'ed allocation. */
  public static byte[] ipcGetMemHandle(long devicePtr) {
    return api().ipcGetMemHandle(devicePtr);
  }

  public static long ipcOpenMemHandle(byte[] handle) {
    return api().ipcOpenMemHandle(handle);
  }

  public static void ipcCloseMemHandle(long devicePtr) {
    api().ipcCloseMemHandle(devicePtr);
  }

  // ---- modules and launches ----

  /** Loads a fatbin/cubin image into the current context; returns the CUmodule. */
  public static long moduleLoadData(byte[] image) {
    return api().moduleLoadData(image);
  }

  public static long moduleGetFunction(long module, String name) {
    return api().moduleGetFunction(module, name);
  }

  /**
   * Loads a function now (a no-op when loaded). Under CUDA's lazy loading (the default) a kernel is
   * otherwise loaded at its first launch, which can wait for the context to go idle: a peer's
   * spinning kernel on the same GPU never lets it.
   */
  public static void functionLoad(long function, String name) {
    api().functionLoad(function, name);
  }

  /**
   * Launches of kernels whose parameter is a by-value struct held in {@link #args()} (and, for a
   * kernel of two, a second one in {@link #second()}: the batch kernels' GcBatch), prepared
   * once: the argument block, the parameter array and (with programmatic dependent launch) the launch
   * configuration are native memory allocated here, so a launch only patches the fields that change
   * and crosses JNI once, with no allocation. cuLaunchKernel(Ex) copies the parameter bytes before it
   * returns, so the block is reused at once.
   *
   * <p>With {@code programmatic} the launch carries CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
   * the kernel may start while its predecessor on the stream still runs (the gc_ kernels execute
   * griddepcontrol.wait before they touch memory), which hides the launch gap between back-to-back
   * collectives, also inside a captured graph.
   */
  public static final class Launcher {
    private final BytePointer args;
    private final java.nio.ByteBuffer argsView;
    /** The second parameter block (a batch kernel's GcBatch), or null for kernels of one parameter. */
    private final BytePointer second;
    private final java.nio.ByteBuffer secondView;
    private final PointerPointer<BytePointer> params;
    private final CudaApi.KernelLaunch launch;

    public Launcher(int argBytes) {
      this(argBytes, false);
    }

    public Launcher(int argBytes, boolean programmatic) {
      this(argBytes, 0, programmatic);
    }

    /** A kernel of two parameters ({@code secondBytes} > 0): kernelParams = { args, second }. */
    public Launcher(int argBytes, int secondBytes, boolean programmatic) {
      args = new BytePointer(argBytes);
      args.fill(0);
      argsView = args.asByteBuffer().order(java.nio.ByteOrder.LITTLE_ENDIAN);
      params = new PointerPointer<>(secondBytes > 0 ? 2 : 1);
      params.put(0, args);
      if (secondBytes > 0) {
        second = new BytePointer(secondBytes);
        second.fill(0);
        secondView = second.asByteBuffer().order(java.nio.ByteOrder.LITTLE_ENDIAN);
        params.put(1, second);
      } else {
        second = null;
        secondView = null;
      }
      launch = api().kernelLaunch(params, programmatic);
    }

    /** The argument block as a little-endian direct buffer over the same native memory. */
    public java.nio.ByteBuffer args() {
      return argsView;
    }

    /** The second parameter block as a little-endian direct buffer; null for kernels of one parameter. */
    public java.nio.ByteBuffer second() {
      return secondView;
    }

    /** True when launches carry the programmatic stream serialization attribute. */
    public boolean programmatic() {
      return launch.programmatic();
    }

    public void launch(long function, int gridX, int blockX, int sharedBytes, long stream) {
      launch.launch(function, gridX, blockX, sharedBytes, stream);
    }
  }
}
