package dev.gpucoll.cuda;

import static org.bytedeco.cuda.global.cudart.*;

import java.util.LinkedHashMap;
import java.util.Map;
import org.bytedeco.cuda.cudart.CUctx_st;
import org.bytedeco.cuda.cudart.CUevent_st;
import org.bytedeco.cuda.cudart.CUfunc_st;
import org.bytedeco.cuda.cudart.CUgraphExec_st;
import org.bytedeco.cuda.cudart.CUgraph_st;
import org.bytedeco.cuda.cudart.CUlaunchAttribute;
import org.bytedeco.cuda.cudart.CUlaunchConfig;
import org.bytedeco.cuda.cudart.CUmod_st;
import org.bytedeco.cuda.cudart.CUstream_st;
import org.bytedeco.cuda.cudart.cudaDeviceProp;
import org.bytedeco.cuda.cudart.cudaIpcMemHandle_t;
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

  static CUstream_st stream(long s) {
    return new CUstream_st(ptr(s));
  }

  static void check(int rc, String call) {
    if (rc != 0) {
      String name = cudaGetErrorName(rc).getString();
      String text = cudaGetErrorString(rc).getString();
      throw new CudaException(call, rc, name + ": " + text);
    }
  }

  static void checkDriver(int rc, String call) {
    if (rc != 0) {
      PointerPointer<BytePointer> s = new PointerPointer<>(1);
      String text = cuGetErrorString(rc, s) == 0 && s.get(0) != null ? new BytePointer(s.get(0)).getString()
          : "CUresult " + rc;
      throw new CudaException(call, rc, text);
    }
  }

  // ---- probe ----

  static void versions(int[] driver, int[] runtime, int[] devices) {
    check(cudaRuntimeGetVersion(runtime), "cudaRuntimeGetVersion");
    check(cudaDriverGetVersion(driver), "cudaDriverGetVersion");
    int rc = cudaGetDeviceCount(devices);
    if (rc == cudaErrorNoDevice) {
      devices[0] = 0;
    } else if (rc == cudaErrorInsufficientDriver) {
      throw new CudaException("cudaGetDeviceCount", rc,
          "cudaErrorInsufficientDriver: no CUDA driver, or one older than the CUDA 13 runtime");
    } else {
      check(rc, "cudaGetDeviceCount");
    }
  }

  // ---- devices ----

  public static int currentDevice() {
    int[] d = new int[1];
    check(cudaGetDevice(d), "cudaGetDevice");
    return d[0];
  }

  /** Makes {@code device}'s primary context current on this thread (runtime and driver API alike). */
  public static void setDevice(int device) {
    check(cudaSetDevice(device), "cudaSetDevice(" + device + ")");
    check(cudaFree(null), "cudaFree(null) to initialise the primary context");
    CUctx_st ctx = new CUctx_st();
    checkDriver(cuCtxGetCurrent(ctx), "cuCtxGetCurrent");
    if (ctx.isNull()) {
      throw new CudaException("no CUDA context is current after cudaSetDevice(" + device + ")");
    }
  }

  /** Facts of one device for rendezvous and reports. */
  public static DeviceFacts deviceFacts(int device) {
    cudaDeviceProp prop = new cudaDeviceProp();
    check(cudaGetDeviceProperties(prop, device), "cudaGetDeviceProperties(" + device + ")");
    byte[] uuid = new byte[16];
    new BytePointer(prop.uuid()).get(uuid); // cudaUUID_t is opaque in the bindings: 16 raw bytes
    byte[] bus = new byte[32];
    check(cudaDeviceGetPCIBusId(bus, bus.length, device), "cudaDeviceGetPCIBusId");
    int[] v = new int[1];
    check(cudaDeviceGetAttribute(v, cudaDevAttrComputeCapabilityMajor, device), "cudaDeviceGetAttribute(major)");
    int major = v[0];
    check(cudaDeviceGetAttribute(v, cudaDevAttrComputeCapabilityMinor, device), "cudaDeviceGetAttribute(minor)");
    int minor = v[0];
    check(cudaDeviceGetAttribute(v, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute(SMs)");
    int sms = v[0];
    return new DeviceFacts(device, DeviceFacts.uuidText(uuid), cString(bus), major * 10 + minor, sms,
        prop.name().getString());
  }

  public static boolean canAccessPeer(int device, int peer) {
    int[] v = new int[1];
    check(cudaDeviceCanAccessPeer(v, device, peer), "cudaDeviceCanAccessPeer");
    return v[0] != 0;
  }

  /** Enables access from the current device to {@code peer}; already enabled is fine. */
  public static void enablePeerAccess(int peer) {
    int rc = cudaDeviceEnablePeerAccess(peer, 0);
    if (rc == cudaErrorPeerAccessAlreadyEnabled) {
      cudaGetLastError(); // clear the sticky-free error state of this thread
      return;
    }
    check(rc, "cudaDeviceEnablePeerAccess(" + peer + ")");
  }

  private static String cString(byte[] b) {
    int n = 0;
    while (n < b.length && b[n] != 0) {
      n++;
    }
    return new String(b, 0, n, java.nio.charset.StandardCharsets.US_ASCII);
  }

  // ---- memory ----

  public static long malloc(long bytes) {
    Pointer p = new Pointer();
    check(cudaMalloc(p, bytes), "cudaMalloc(" + bytes + " B)");
    return p.address();
  }

  public static void free(long address) {
    if (address != 0) {
      check(cudaFree(ptr(address)), "cudaFree");
    }
  }

  /** Pinned host memory mapped into the device's address space (abort word, error record). */
  public static long hostAllocMapped(long bytes) {
    Pointer p = new Pointer();
    check(cudaHostAlloc(p, bytes, cudaHostAllocMapped | cudaHostAllocPortable), "cudaHostAlloc(mapped, " + bytes + " B)");
    return p.address();
  }

  /** Pinned host memory (staging). */
  public static long hostAlloc(long bytes) {
    Pointer p = new Pointer();
    check(cudaHostAlloc(p, bytes, cudaHostAllocPortable), "cudaHostAlloc(" + bytes + " B)");
    return p.address();
  }

  public static long hostDevicePointer(long host) {
    Pointer d = new Pointer();
    check(cudaHostGetDevicePointer(d, ptr(host), 0), "cudaHostGetDevicePointer");
    return d.address();
  }

  public static void freeHost(long address) {
    if (address != 0) {
      check(cudaFreeHost(ptr(address)), "cudaFreeHost");
    }
  }

  public static void memcpyAsync(long dst, long src, long bytes, long stream) {
    if (bytes > 0) {
      check(cudaMemcpyAsync(ptr(dst), ptr(src), bytes, cudaMemcpyDefault, stream(stream)), "cudaMemcpyAsync");
    }
  }

  public static void memsetAsync(long dst, int value, long bytes, long stream) {
    if (bytes > 0) {
      check(cudaMemsetAsync(ptr(dst), value, bytes, stream(stream)), "cudaMemsetAsync");
    }
  }

  /** Fills {@code words} 32-bit words with {@code value} (the sentinel prefill). */
  public static void memsetD32Async(long dst, int value, long words, long stream) {
    if (words > 0) {
      checkDriver(cuMemsetD32Async(dst, value, words, stream(stream)), "cuMemsetD32Async");
    }
  }

  // ---- streams, events, graphs ----

  public static long streamCreateNonBlocking() {
    CUstream_st s = new CUstream_st();
    check(cudaStreamCreateWithFlags(s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    return s.address();
  }

  public static void streamSynchronize(long stream) {
    check(cudaStreamSynchronize(stream(stream)), "cudaStreamSynchronize");
  }

  /** True when all work on the stream has completed; errors other than not-ready are thrown. */
  public static boolean streamIdle(long stream) {
    int rc = cudaStreamQuery(stream(stream));
    if (rc == cudaErrorNotReady) {
      return false;
    }
    check(rc, "cudaStreamQuery");
    return true;
  }

  public static void streamDestroy(long stream) {
    if (stream != 0) {
      check(cudaStreamDestroy(stream(stream)), "cudaStreamDestroy");
    }
  }

  public static long eventCreate() {
    CUevent_st e = new CUevent_st();
    check(cudaEventCreate(e), "cudaEventCreate");
    return e.address();
  }

  public static void eventRecord(long event, long stream) {
    check(cudaEventRecord(new CUevent_st(ptr(event)), stream(stream)), "cudaEventRecord");
  }

  public static void eventSynchronize(long event) {
    check(cudaEventSynchronize(new CUevent_st(ptr(event))), "cudaEventSynchronize");
  }

  public static float eventElapsedMs(long start, long end) {
    float[] ms = new float[1];
    check(cudaEventElapsedTime(ms, new CUevent_st(ptr(start)), new CUevent_st(ptr(end))), "cudaEventElapsedTime");
    return ms[0];
  }

  public static void eventDestroy(long event) {
    if (event != 0) {
      check(cudaEventDestroy(new CUevent_st(ptr(event))), "cudaEventDestroy");
    }
  }

  /** True while {@code stream} is being captured into a CUDA graph. */
  public static boolean isCapturing(long stream) {
    int[] status = new int[1];
    check(cudaStreamIsCapturing(stream(stream), status), "cudaStreamIsCapturing");
    return status[0] != cudaStreamCaptureStatusNone;
  }

  public static void beginCapture(long stream) {
    check(cudaStreamBeginCapture(stream(stream), cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  }

  /** Ends the capture and instantiates it; returns the cudaGraphExec_t. */
  public static long endCaptureAndInstantiate(long stream) {
    CUgraph_st g = new CUgraph_st();
    check(cudaStreamEndCapture(stream(stream), g), "cudaStreamEndCapture");
    CUgraphExec_st exec = new CUgraphExec_st();
    try {
      check(cudaGraphInstantiate(exec, g, 0L), "cudaGraphInstantiate");
    } finally {
      cudaGraphDestroy(g);
    }
    return exec.address();
  }

  public static void graphLaunch(long exec, long stream) {
    check(cudaGraphLaunch(new CUgraphExec_st(ptr(exec)), stream(stream)), "cudaGraphLaunch");
  }

  public static void graphExecDestroy(long exec) {
    if (exec != 0) {
      check(cudaGraphExecDestroy(new CUgraphExec_st(ptr(exec))), "cudaGraphExecDestroy");
    }
  }

  // ---- IPC ----

  /** The 64-byte cudaIpcMemHandle_t of a cudaMalloc'ed allocation. */
  public static byte[] ipcGetMemHandle(long devicePtr) {
    cudaIpcMemHandle_t h = new cudaIpcMemHandle_t();
    check(cudaIpcGetMemHandle(h, ptr(devicePtr)), "cudaIpcGetMemHandle");
    byte[] out = new byte[CUDA_IPC_HANDLE_SIZE];
    h.reserved().get(out);
    return out;
  }

  public static long ipcOpenMemHandle(byte[] handle) {
    if (handle.length != CUDA_IPC_HANDLE_SIZE) {
      throw new IllegalArgumentException("IPC handle has " + handle.length + " bytes, expected " + CUDA_IPC_HANDLE_SIZE);
    }
    cudaIpcMemHandle_t h = new cudaIpcMemHandle_t();
    h.reserved().put(handle);
    Pointer p = new Pointer();
    check(cudaIpcOpenMemHandle(p, h, cudaIpcMemLazyEnablePeerAccess), "cudaIpcOpenMemHandle");
    return p.address();
  }

  public static void ipcCloseMemHandle(long devicePtr) {
    if (devicePtr != 0) {
      check(cudaIpcCloseMemHandle(ptr(devicePtr)), "cudaIpcCloseMemHandle");
    }
  }

  // ---- modules and launches ----

  /** Loads a fatbin/cubin image into the current context; returns the CUmodule. */
  public static long moduleLoadData(byte[] image) {
    BytePointer data = new BytePointer(image.length + 1L);
    data.put(image);
    CUmod_st m = new CUmod_st();
    checkDriver(cuModuleLoadData(m, data), "cuModuleLoadData(" + image.length + " B fatbin)");
    return m.address();
  }

  public static long moduleGetFunction(long module, String name) {
    CUfunc_st f = new CUfunc_st();
    checkDriver(cuModuleGetFunction(f, new CUmod_st(ptr(module)), name), "cuModuleGetFunction(" + name + ")");
    return f.address();
  }

  /**
   * Loads a function now (a no-op when loaded). Under CUDA's lazy loading (the default) a kernel is
   * otherwise loaded at its first launch, which can wait for the context to go idle: a peer's
   * spinning kernel on the same GPU never lets it.
   */
  public static void functionLoad(long function, String name) {
    checkDriver(cuFuncLoad(new CUfunc_st(ptr(function))), "cuFuncLoad(" + name + ")");
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
    /** Null when launches take plain cuLaunchKernel. */
    private final CUlaunchConfig config;
    private final CUlaunchAttribute attribute;
    private final FunctionHandle fn = new FunctionHandle();
    private long function;
    private final StreamHandle st = new StreamHandle();
    private long stream = -1;
    private int gridX = -1;
    private int blockX = -1;
    private int sharedBytes = -1;

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
      if (programmatic) {
        attribute = new CUlaunchAttribute();
        attribute.id(CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION);
        attribute.value().programmaticStreamSerializationAllowed(1);
        config = new CUlaunchConfig();
        config.gridDimY(1).gridDimZ(1).blockDimY(1).blockDimZ(1);
        config.attrs(attribute).numAttrs(1);
      } else {
        attribute = null;
        config = null;
      }
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
      return config != null;
    }

    public void launch(long function, int gridX, int blockX, int sharedBytes, long stream) {
      if (function != this.function) {
        fn.set(function);
        this.function = function;
      }
      if (stream != this.stream) {
        st.set(stream);
        this.stream = stream;
        if (config != null) {
          config.hStream(st);
        }
      }
      if (config == null) {
        checkDriver(cuLaunchKernel(fn, gridX, 1, 1, blockX, 1, 1, sharedBytes, st, params, null), "cuLaunchKernel");
        return;
      }
      if (gridX != this.gridX || blockX != this.blockX || sharedBytes != this.sharedBytes) {
        config.gridDimX(gridX).blockDimX(blockX).sharedMemBytes(sharedBytes);
        this.gridX = gridX;
        this.blockX = blockX;
        this.sharedBytes = sharedBytes;
      }
      checkDriver(cuLaunchKernelEx(config, fn, params, null), "cuLaunchKernelEx");
    }
  }

  /** A CUfunction whose address is patched in place (an opaque handle: the address is all JNI reads). */
  private static final class FunctionHandle extends CUfunc_st {
    void set(long a) {
      address = a;
    }
  }

  /** A CUstream patched in place, as {@link FunctionHandle}. */
  private static final class StreamHandle extends CUstream_st {
    void set(long a) {
      address = a;
    }
  }
}
