package dev.gpucoll.cuda;

import dev.gpucoll.cuda.eligibility.FactKeys;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.PointerPointer;

/**
 * One simulated GPU for the project's tests on machines without one: device memory is host memory
 * (so a device address can be read back as the real one can), copies and memsets run at once on the
 * calling thread, streams are always idle, and a graph records the copies of its capture and runs
 * them again at each replay. It runs no kernels: a launch fails as a real launch of a missing
 * function does, so a path that needs our kernels fails loudly instead of passing untested.
 *
 * <p>It is strict where CUDA is: a copy or memset that runs past the end of an allocation it starts
 * in fails (on a GPU that writes someone else's memory, or faults), freeing what was not allocated
 * fails, synchronising a stream that is being captured fails and invalidates the capture, and the
 * legacy default stream cannot be captured. Memory the simulator did not allocate is pageable host
 * memory, which cudaMemcpyDefault accepts.
 *
 * <p>{@link #install()} puts it behind {@link CudaNative} (and the probe) for this process until the
 * returned handle is closed.
 */
public final class SimulatedDevice implements CudaApi {
  public static final String NAME = "simulated GPU (host memory, no kernels)";
  public static final String UUID = "GPU-51301a7e-0000-4000-8000-000000000000";
  private static final int CUDA_ERROR_INVALID_VALUE = 1;
  private static final int CUDA_ERROR_INVALID_DEVICE = 101;
  private static final int CUDA_ERROR_INVALID_RESOURCE_HANDLE = 400;
  private static final int CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900;
  private static final int CUDA_ERROR_STREAM_CAPTURE_INVALIDATED = 901;
  private static final int CUDA_ERROR_LAUNCH_FAILURE = 719;

  private enum Kind { DEVICE, PINNED }

  /** CUDA's allocations are at least this aligned (cudaMalloc's are in practice 2 MiB-aligned when large). */
  private static final long ALIGNMENT = 4096;

  /** One allocation; {@code base} is what the host allocator returned (the address is aligned up from it). */
  private record Allocation(long address, long bytes, Kind kind, long base) {
    boolean contains(long a) {
      return a >= address && a < address + bytes;
    }
  }

  /** Live allocations by address. */
  private final TreeMap<Long, Allocation> allocations = new TreeMap<>();
  private final AtomicLong handles = new AtomicLong(0x1000);
  private final Map<Long, Boolean> streams = new HashMap<>();
  /** Streams being captured, with what they recorded; a null list: the capture was invalidated. */
  private final Map<Long, List<Runnable>> capturing = new HashMap<>();
  private final Map<Long, List<Runnable>> graphs = new HashMap<>();
  private final Map<Long, Long> events = new HashMap<>();
  private final ThreadLocal<Integer> current = ThreadLocal.withInitial(() -> 0);
  /** Kernel launches refused so far (a test can assert that a path used none). */
  private final AtomicLong refusedLaunches = new AtomicLong();
  /** Kernel names by function handle, and every refused launch in order (what a path would have run). */
  private final Map<Long, String> functions = new java.util.concurrent.ConcurrentHashMap<>();
  private final List<Launch> launches = new java.util.concurrent.CopyOnWriteArrayList<>();

  /** A refused launch: the kernel, its grid and block, and a copy of its first parameter (GcArgs). */
  public record Launch(String kernel, int grid, int block, java.nio.ByteBuffer args) {}

  private SimulatedDevice() {}

  /** Installs a fresh simulated device for this process; close the handle to put the real one back. */
  public static Installed install() {
    SimulatedDevice d = new SimulatedDevice();
    return new Installed(d, CudaNative.install(d));
  }

  /** The installed device; closing it restores what was there before. */
  public static final class Installed implements AutoCloseable {
    private final SimulatedDevice device;
    private final CudaApi before;

    private Installed(SimulatedDevice device, CudaApi before) {
      this.device = device;
      this.before = before;
    }

    public SimulatedDevice device() {
      return device;
    }

    @Override
    public void close() {
      CudaNative.restore(before);
    }
  }

  /** Bytes of device and pinned memory still allocated (a test of leaks). */
  public synchronized long liveBytes() {
    return allocations.values().stream().mapToLong(Allocation::bytes).sum();
  }

  public long refusedLaunches() {
    return refusedLaunches.get();
  }

  /** The refused launches so far, in order. */
  public List<Launch> launches() {
    return List.copyOf(launches);
  }

  @Override
  public boolean simulated() {
    return true;
  }

  // ---- probe and devices ----

  @Override
  public void versions(int[] driver, int[] runtime, int[] devices) {
    driver[0] = CudaProbe.MIN_DRIVER_VERSION;
    runtime[0] = CudaProbe.MIN_RUNTIME_VERSION;
    devices[0] = 1;
  }

  @Override
  public int currentDevice() {
    return current.get();
  }

  @Override
  public void setDevice(int device) {
    if (device != 0) {
      throw new CudaException("cudaSetDevice(" + device + ")", CUDA_ERROR_INVALID_DEVICE,
          "cudaErrorInvalidDevice: the simulated machine has one GPU");
    }
    current.set(device);
  }

  @Override
  public DeviceFacts deviceFacts(int device) {
    setDevice(device);
    return new DeviceFacts(device, UUID, "0000:00:00.0", 90, 132, NAME);
  }

  @Override
  public boolean canAccessPeer(int device, int peer) {
    return false;
  }

  @Override
  public void enablePeerAccess(int peer) {
    throw new CudaException("cudaDeviceEnablePeerAccess(" + peer + ")", CUDA_ERROR_INVALID_DEVICE,
        "cudaErrorInvalidDevice: the simulated machine has one GPU");
  }

  @Override
  public Map<String, String> eligibilityFacts(int device) {
    Map<String, String> f = new HashMap<>();
    f.put(FactKeys.GPU_UUID, UUID);
    f.put(FactKeys.GPU_PCI_BUS_ID, "0000:00:00.0");
    f.put(FactKeys.GPU_ORDINAL, String.valueOf(device));
    f.put(FactKeys.GPU_COMPUTE_CAPABILITY, "90");
    f.put(FactKeys.GPU_VMM, "0");
    f.put(FactKeys.GPU_VISIBLE_COUNT, "1");
    f.put(FactKeys.GPU_PEERS, "");
    f.put(FactKeys.CUDA_DRIVER_VERSION, String.valueOf(CudaProbe.MIN_DRIVER_VERSION));
    f.put(FactKeys.NCCL_VERSION, "0");
    f.put(FactKeys.NCCL_PROBLEM, "NCCL unavailable: simulated device");
    f.put(FactKeys.OS_WSL, "0");
    return f;
  }

  // ---- memory ----

  private synchronized long allocate(long bytes, Kind kind, String call) {
    if (bytes < 0) {
      throw new CudaException(call, CUDA_ERROR_INVALID_VALUE, "cudaErrorInvalidValue: negative size");
    }
    Pointer p = Pointer.malloc(Math.max(1, bytes) + ALIGNMENT);
    if (p == null || p.isNull()) {
      throw new CudaException(call, 2, "cudaErrorMemoryAllocation: " + bytes + " B");
    }
    long address = (p.address() + ALIGNMENT - 1) & -ALIGNMENT;
    allocations.put(address, new Allocation(address, bytes, kind, p.address()));
    return address;
  }

  private synchronized void release(long address, Kind kind, String call) {
    if (address == 0) {
      return;
    }
    Allocation a = allocations.get(address);
    if (a == null || a.kind != kind) {
      throw new CudaException(call, CUDA_ERROR_INVALID_VALUE, "cudaErrorInvalidValue: 0x" + Long.toHexString(address)
          + " is not the start of a live " + kind.name().toLowerCase() + " allocation");
    }
    allocations.remove(address);
    Pointer.free(CudaNative.ptr(a.base));
  }

  /** Fails when [address, address + bytes) starts inside an allocation and runs past its end. */
  private synchronized void checkRange(long address, long bytes, String call) {
    Map.Entry<Long, Allocation> e = allocations.floorEntry(address);
    if (e != null && e.getValue().contains(address) && address + bytes > e.getValue().address + e.getValue().bytes) {
      Allocation a = e.getValue();
      throw new CudaException(call, CUDA_ERROR_INVALID_VALUE, "cudaErrorInvalidValue: " + bytes + " B at offset "
          + (address - a.address) + " run past the end of a " + a.bytes + " B " + a.kind.name().toLowerCase()
          + " allocation");
    }
    if (address == 0 && bytes > 0) {
      throw new CudaException(call, CUDA_ERROR_INVALID_VALUE, "cudaErrorInvalidValue: null pointer");
    }
  }

  @Override
  public long malloc(long bytes) {
    return allocate(bytes, Kind.DEVICE, "cudaMalloc(" + bytes + " B)");
  }

  @Override
  public void free(long address) {
    release(address, Kind.DEVICE, "cudaFree");
  }

  @Override
  public long hostAllocMapped(long bytes) {
    return allocate(bytes, Kind.PINNED, "cudaHostAlloc(mapped, " + bytes + " B)");
  }

  @Override
  public long hostAlloc(long bytes) {
    return allocate(bytes, Kind.PINNED, "cudaHostAlloc(" + bytes + " B)");
  }

  @Override
  public long hostDevicePointer(long host) {
    return host; // one address space, as under UVA
  }

  @Override
  public void freeHost(long address) {
    release(address, Kind.PINNED, "cudaFreeHost");
  }

  @Override
  public void memcpyAsync(long dst, long src, long bytes, long stream) {
    if (bytes <= 0) {
      return;
    }
    checkRange(dst, bytes, "cudaMemcpyAsync (destination)");
    checkRange(src, bytes, "cudaMemcpyAsync (source)");
    enqueue(stream, "cudaMemcpyAsync", () -> Pointer.memcpy(CudaNative.ptr(dst), CudaNative.ptr(src), bytes));
  }

  @Override
  public void memsetAsync(long dst, int value, long bytes, long stream) {
    if (bytes <= 0) {
      return;
    }
    checkRange(dst, bytes, "cudaMemsetAsync");
    enqueue(stream, "cudaMemsetAsync", () -> Pointer.memset(CudaNative.ptr(dst), value, bytes));
  }

  @Override
  public void memsetD32Async(long dst, int value, long words, long stream) {
    if (words <= 0) {
      return;
    }
    checkRange(dst, words * 4, "cuMemsetD32Async");
    enqueue(stream, "cuMemsetD32Async", () -> {
      java.nio.IntBuffer b = new BytePointer(CudaNative.ptr(dst)).capacity(words * 4).asByteBuffer()
          .order(java.nio.ByteOrder.nativeOrder()).asIntBuffer();
      for (int i = 0; i < words; i++) {
        b.put(i, value);
      }
    });
  }

  /** Runs {@code op} now, or records it when {@code stream} is being captured. */
  private void enqueue(long stream, String call, Runnable op) {
    List<Runnable> recording;
    synchronized (this) {
      checkStream(stream, call);
      if (!capturing.containsKey(stream)) {
        recording = null;
      } else {
        recording = capturing.get(stream);
        if (recording == null) {
          throw new CudaException(call, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
              "cudaErrorStreamCaptureInvalidated: the capture was invalidated by an earlier illegal call");
        }
      }
    }
    if (recording == null) {
      op.run();
    } else {
      recording.add(op);
    }
  }

  // ---- streams, events, graphs ----

  private void checkStream(long stream, String call) {
    if (stream != 0 && !streams.containsKey(stream)) {
      throw new CudaException(call, CUDA_ERROR_INVALID_RESOURCE_HANDLE,
          "cudaErrorInvalidResourceHandle: stream 0x" + Long.toHexString(stream) + " does not exist");
    }
  }

  @Override
  public synchronized long streamCreateNonBlocking() {
    long s = handles.incrementAndGet();
    streams.put(s, Boolean.TRUE);
    return s;
  }

  @Override
  public synchronized void streamSynchronize(long stream) {
    checkStream(stream, "cudaStreamSynchronize");
    refuseWhileCapturing(stream, "cudaStreamSynchronize");
  }

  @Override
  public synchronized boolean streamIdle(long stream) {
    checkStream(stream, "cudaStreamQuery");
    refuseWhileCapturing(stream, "cudaStreamQuery");
    return true;
  }

  /** As CUDA: a synchronising call on a capturing stream fails and invalidates the capture. */
  private void refuseWhileCapturing(long stream, String call) {
    if (capturing.containsKey(stream)) {
      capturing.put(stream, null);
      throw new CudaException(call, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
          "cudaErrorStreamCaptureUnsupported: operation not permitted when stream is capturing");
    }
  }

  @Override
  public synchronized void streamDestroy(long stream) {
    if (stream != 0 && streams.remove(stream) == null) {
      throw new CudaException("cudaStreamDestroy", CUDA_ERROR_INVALID_RESOURCE_HANDLE,
          "cudaErrorInvalidResourceHandle: stream 0x" + Long.toHexString(stream) + " does not exist");
    }
  }

  @Override
  public synchronized long eventCreate() {
    long e = handles.incrementAndGet();
    events.put(e, 0L);
    return e;
  }

  @Override
  public synchronized void eventRecord(long event, long stream) {
    checkStream(stream, "cudaEventRecord");
    events.put(event, System.nanoTime());
  }

  @Override
  public void eventSynchronize(long event) {}

  @Override
  public synchronized float eventElapsedMs(long start, long end) {
    return (events.getOrDefault(end, 0L) - events.getOrDefault(start, 0L)) / 1e6f;
  }

  @Override
  public synchronized void eventDestroy(long event) {
    events.remove(event);
  }

  @Override
  public synchronized boolean isCapturing(long stream) {
    return capturing.containsKey(stream);
  }

  @Override
  public synchronized void beginCapture(long stream) {
    if (stream == 0) {
      throw new CudaException("cudaStreamBeginCapture", CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
          "cudaErrorStreamCaptureUnsupported: the legacy stream cannot be captured");
    }
    checkStream(stream, "cudaStreamBeginCapture");
    capturing.put(stream, new ArrayList<>());
  }

  @Override
  public synchronized long endCaptureAndInstantiate(long stream) {
    if (!capturing.containsKey(stream)) {
      throw new CudaException("cudaStreamEndCapture", CUDA_ERROR_INVALID_VALUE, "cudaErrorIllegalState: not capturing");
    }
    List<Runnable> ops = capturing.remove(stream);
    if (ops == null) {
      throw new CudaException("cudaStreamEndCapture", CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
          "cudaErrorStreamCaptureInvalidated: the capture was invalidated");
    }
    long g = handles.incrementAndGet();
    graphs.put(g, List.copyOf(ops));
    return g;
  }

  @Override
  public void graphLaunch(long exec, long stream) {
    List<Runnable> ops;
    synchronized (this) {
      ops = graphs.get(exec);
      if (ops == null) {
        throw new CudaException("cudaGraphLaunch", CUDA_ERROR_INVALID_VALUE, "cudaErrorInvalidValue: no such graph");
      }
    }
    for (Runnable op : ops) {
      enqueue(stream, "cudaGraphLaunch", op);
    }
  }

  @Override
  public synchronized void graphExecDestroy(long exec) {
    if (exec != 0 && graphs.remove(exec) == null) {
      throw new CudaException("cudaGraphExecDestroy", CUDA_ERROR_INVALID_VALUE, "cudaErrorInvalidValue: no such graph");
    }
  }

  // ---- IPC: one process, so a handle is the address ----

  @Override
  public byte[] ipcGetMemHandle(long devicePtr) {
    byte[] h = new byte[64];
    java.nio.ByteBuffer.wrap(h).putLong(devicePtr);
    return h;
  }

  @Override
  public long ipcOpenMemHandle(byte[] handle) {
    return java.nio.ByteBuffer.wrap(handle).getLong();
  }

  @Override
  public void ipcCloseMemHandle(long devicePtr) {}

  // ---- modules: loaded and named, never run ----

  @Override
  public long moduleLoadData(byte[] image) {
    if (image.length == 0) {
      throw new CudaException("cuModuleLoadData", 200, "CUDA_ERROR_INVALID_IMAGE: empty image");
    }
    return handles.incrementAndGet();
  }

  @Override
  public long moduleGetFunction(long module, String name) {
    long f = handles.incrementAndGet();
    functions.put(f, name);
    return f;
  }

  @Override
  public void functionLoad(long function, String name) {}

  @Override
  public KernelLaunch kernelLaunch(PointerPointer<BytePointer> params, boolean programmatic) {
    return new KernelLaunch() {
      @Override
      public boolean programmatic() {
        return programmatic;
      }

      @Override
      public void launch(long function, int gridX, int blockX, int sharedBytes, long stream) {
        refusedLaunches.incrementAndGet();
        java.nio.ByteBuffer args = java.nio.ByteBuffer.allocate(KernelTable.ARGS_SIZE).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        args.put(params.get(BytePointer.class, 0).capacity(KernelTable.ARGS_SIZE).asByteBuffer()).flip();
        launches.add(new Launch(functions.get(function), gridX, blockX, args));
        throw new CudaException("cuLaunchKernel", CUDA_ERROR_LAUNCH_FAILURE,
            "the simulated device runs no kernels (" + gridX + " x " + blockX + " threads asked for)");
      }
    };
  }
}
