package dev.gpucoll.cuda;

import static org.bytedeco.cuda.global.cudart.*;

import dev.gpucoll.cuda.eligibility.LocalFacts;
import dev.gpucoll.cuda.nccl.NcclLibrary;
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
 * The real device: every CUDA call of {@link CudaApi} through the JavaCPP CUDA presets, each checked
 * (the symbol rules are {@link CudaNative}'s). Loading this class loads the CUDA JNI libraries, so
 * only {@link CudaNative} creates it, after {@link CudaEnvironment}'s probe.
 */
final class JavaCppCuda implements CudaApi {
  static CUstream_st stream(long s) {
    return new CUstream_st(CudaNative.ptr(s));
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

  @Override
  public void versions(int[] driver, int[] runtime, int[] devices) {
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

  @Override
  public int currentDevice() {
    int[] d = new int[1];
    check(cudaGetDevice(d), "cudaGetDevice");
    return d[0];
  }

  /** Makes {@code device}'s primary context current on this thread (runtime and driver API alike). */
  @Override
  public void setDevice(int device) {
    check(cudaSetDevice(device), "cudaSetDevice(" + device + ")");
    check(cudaFree(null), "cudaFree(null) to initialise the primary context");
    CUctx_st ctx = new CUctx_st();
    checkDriver(cuCtxGetCurrent(ctx), "cuCtxGetCurrent");
    if (ctx.isNull()) {
      throw new CudaException("no CUDA context is current after cudaSetDevice(" + device + ")");
    }
  }

  /** Facts of one device for rendezvous and reports. */
  @Override
  public DeviceFacts deviceFacts(int device) {
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

  @Override
  public boolean canAccessPeer(int device, int peer) {
    int[] v = new int[1];
    check(cudaDeviceCanAccessPeer(v, device, peer), "cudaDeviceCanAccessPeer");
    return v[0] != 0;
  }

  /** Enables access from the current device to {@code peer}; already enabled is fine. */
  @Override
  public void enablePeerAccess(int peer) {
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

  @Override
  public long malloc(long bytes) {
    Pointer p = new Pointer();
    check(cudaMalloc(p, bytes), "cudaMalloc(" + bytes + " B)");
    return p.address();
  }

  @Override
  public void free(long address) {
    if (address != 0) {
      check(cudaFree(CudaNative.ptr(address)), "cudaFree");
    }
  }

  /** Pinned host memory mapped into the device's address space (abort word, error record). */
  @Override
  public long hostAllocMapped(long bytes) {
    Pointer p = new Pointer();
    check(cudaHostAlloc(p, bytes, cudaHostAllocMapped | cudaHostAllocPortable), "cudaHostAlloc(mapped, " + bytes + " B)");
    return p.address();
  }

  /** Pinned host memory (staging). */
  @Override
  public long hostAlloc(long bytes) {
    Pointer p = new Pointer();
    check(cudaHostAlloc(p, bytes, cudaHostAllocPortable), "cudaHostAlloc(" + bytes + " B)");
    return p.address();
  }

  @Override
  public long hostDevicePointer(long host) {
    Pointer d = new Pointer();
    check(cudaHostGetDevicePointer(d, CudaNative.ptr(host), 0), "cudaHostGetDevicePointer");
    return d.address();
  }

  @Override
  public void freeHost(long address) {
    if (address != 0) {
      check(cudaFreeHost(CudaNative.ptr(address)), "cudaFreeHost");
    }
  }

  @Override
  public void memcpyAsync(long dst, long src, long bytes, long stream) {
    if (bytes > 0) {
      check(cudaMemcpyAsync(CudaNative.ptr(dst), CudaNative.ptr(src), bytes, cudaMemcpyDefault, stream(stream)), "cudaMemcpyAsync");
    }
  }

  @Override
  public void memsetAsync(long dst, int value, long bytes, long stream) {
    if (bytes > 0) {
      check(cudaMemsetAsync(CudaNative.ptr(dst), value, bytes, stream(stream)), "cudaMemsetAsync");
    }
  }

  /** Fills {@code words} 32-bit words with {@code value} (the sentinel prefill). */
  @Override
  public void memsetD32Async(long dst, int value, long words, long stream) {
    if (words > 0) {
      checkDriver(cuMemsetD32Async(dst, value, words, stream(stream)), "cuMemsetD32Async");
    }
  }

  // ---- streams, events, graphs ----

  @Override
  public long streamCreateNonBlocking() {
    CUstream_st s = new CUstream_st();
    check(cudaStreamCreateWithFlags(s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    return s.address();
  }

  @Override
  public void streamSynchronize(long stream) {
    check(cudaStreamSynchronize(stream(stream)), "cudaStreamSynchronize");
  }

  /** True when all work on the stream has completed; errors other than not-ready are thrown. */
  @Override
  public boolean streamIdle(long stream) {
    int rc = cudaStreamQuery(stream(stream));
    if (rc == cudaErrorNotReady) {
      return false;
    }
    check(rc, "cudaStreamQuery");
    return true;
  }

  @Override
  public void streamDestroy(long stream) {
    if (stream != 0) {
      check(cudaStreamDestroy(stream(stream)), "cudaStreamDestroy");
    }
  }

  @Override
  public long eventCreate() {
    CUevent_st e = new CUevent_st();
    check(cudaEventCreate(e), "cudaEventCreate");
    return e.address();
  }

  @Override
  public void eventRecord(long event, long stream) {
    check(cudaEventRecord(new CUevent_st(CudaNative.ptr(event)), stream(stream)), "cudaEventRecord");
  }

  @Override
  public void eventSynchronize(long event) {
    check(cudaEventSynchronize(new CUevent_st(CudaNative.ptr(event))), "cudaEventSynchronize");
  }

  @Override
  public float eventElapsedMs(long start, long end) {
    float[] ms = new float[1];
    check(cudaEventElapsedTime(ms, new CUevent_st(CudaNative.ptr(start)), new CUevent_st(CudaNative.ptr(end))), "cudaEventElapsedTime");
    return ms[0];
  }

  @Override
  public void eventDestroy(long event) {
    if (event != 0) {
      check(cudaEventDestroy(new CUevent_st(CudaNative.ptr(event))), "cudaEventDestroy");
    }
  }

  /** True while {@code stream} is being captured into a CUDA graph. */
  @Override
  public boolean isCapturing(long stream) {
    int[] status = new int[1];
    check(cudaStreamIsCapturing(stream(stream), status), "cudaStreamIsCapturing");
    return status[0] != cudaStreamCaptureStatusNone;
  }

  @Override
  public void beginCapture(long stream) {
    check(cudaStreamBeginCapture(stream(stream), cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  }

  /** Ends the capture and instantiates it; returns the cudaGraphExec_t. */
  @Override
  public long endCaptureAndInstantiate(long stream) {
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

  @Override
  public void graphLaunch(long exec, long stream) {
    check(cudaGraphLaunch(new CUgraphExec_st(CudaNative.ptr(exec)), stream(stream)), "cudaGraphLaunch");
  }

  @Override
  public void graphExecDestroy(long exec) {
    if (exec != 0) {
      check(cudaGraphExecDestroy(new CUgraphExec_st(CudaNative.ptr(exec))), "cudaGraphExecDestroy");
    }
  }

  // ---- IPC ----

  /** The 64-byte cudaIpcMemHandle_t of a cudaMalloc'ed allocation. */
  @Override
  public byte[] ipcGetMemHandle(long devicePtr) {
    cudaIpcMemHandle_t h = new cudaIpcMemHandle_t();
    check(cudaIpcGetMemHandle(h, CudaNative.ptr(devicePtr)), "cudaIpcGetMemHandle");
    byte[] out = new byte[CUDA_IPC_HANDLE_SIZE];
    h.reserved().get(out);
    return out;
  }

  @Override
  public long ipcOpenMemHandle(byte[] handle) {
    if (handle.length != CUDA_IPC_HANDLE_SIZE) {
      throw new IllegalArgumentException("IPC handle has " + handle.length + " bytes, expected " + CUDA_IPC_HANDLE_SIZE);
    }
    cudaIpcMemHandle_t h = new cudaIpcMemHandle_t();
    h.reserved().put(handle);
    Pointer p = new Pointer();
    check(cudaIpcOpenMemHandle(p, h, cudaIpcMemLazyEnablePeerAccess), "cudaIpcOpenMemHandle");
    return p.address();
  }

  @Override
  public void ipcCloseMemHandle(long devicePtr) {
    if (devicePtr != 0) {
      check(cudaIpcCloseMemHandle(CudaNative.ptr(devicePtr)), "cudaIpcCloseMemHandle");
    }
  }

  // ---- modules and launches ----

  /** Loads a fatbin/cubin image into the current context; returns the CUmodule. */
  @Override
  public long moduleLoadData(byte[] image) {
    BytePointer data = new BytePointer(image.length + 1L);
    data.put(image);
    CUmod_st m = new CUmod_st();
    checkDriver(cuModuleLoadData(m, data), "cuModuleLoadData(" + image.length + " B fatbin)");
    return m.address();
  }

  @Override
  public long moduleGetFunction(long module, String name) {
    CUfunc_st f = new CUfunc_st();
    checkDriver(cuModuleGetFunction(f, new CUmod_st(CudaNative.ptr(module)), name), "cuModuleGetFunction(" + name + ")");
    return f.address();
  }

  /**
   * Loads a function now (a no-op when loaded). Under CUDA's lazy loading (the default) a kernel is
   * otherwise loaded at its first launch, which can wait for the context to go idle: a peer's
   * spinning kernel on the same GPU never lets it.
   */
  @Override
  public void functionLoad(long function, String name) {
    checkDriver(cuFuncLoad(new CUfunc_st(CudaNative.ptr(function))), "cuFuncLoad(" + name + ")");
  }

  @Override
  public Map<String, String> eligibilityFacts(int device) {
    Map<String, String> facts = new LinkedHashMap<>(LocalFacts.collect(device));
    facts.putAll(NcclLibrary.facts());
    return facts;
  }

  @Override
  public CudaApi.KernelLaunch kernelLaunch(PointerPointer<BytePointer> params, boolean programmatic) {
    return new Launch(params, programmatic);
  }

  /** cuLaunchKernel, or cuLaunchKernelEx with programmatic stream serialization, over prepared parameters. */
  private static final class Launch implements CudaApi.KernelLaunch {
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

    Launch(PointerPointer<BytePointer> params, boolean programmatic) {
      this.params = params;
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

    @Override
    public boolean programmatic() {
      return config != null;
    }

    @Override
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
