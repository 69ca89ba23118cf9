package dev.gpucoll.cuda;

import java.util.Map;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.PointerPointer;

/**
 * The device operations the GPU backend uses, one method per CUDA call (see {@link CudaNative} for
 * what each does). {@link JavaCppCuda} is the real device; the project's tests install a simulated
 * one (device memory as host memory, copies done at once, no kernels) through
 * {@link CudaNative#install}, so that every path that needs no kernel of ours runs without a GPU.
 */
interface CudaApi {
  /** Whether this is a simulated device (reported in the device facts and the probe; never silent). */
  default boolean simulated() {
    return false;
  }

  void versions(int[] driver, int[] runtime, int[] devices);

  int currentDevice();

  void setDevice(int device);

  DeviceFacts deviceFacts(int device);

  boolean canAccessPeer(int device, int peer);

  void enablePeerAccess(int peer);

  /** The eligibility facts of {@code device}: P2P links, VMM, driver, NCCL version and environment. */
  Map<String, String> eligibilityFacts(int device);

  long malloc(long bytes);

  void free(long address);

  long hostAllocMapped(long bytes);

  long hostAlloc(long bytes);

  long hostDevicePointer(long host);

  void freeHost(long address);

  void memcpyAsync(long dst, long src, long bytes, long stream);

  void memsetAsync(long dst, int value, long bytes, long stream);

  void memsetD32Async(long dst, int value, long words, long stream);

  long streamCreateNonBlocking();

  void streamSynchronize(long stream);

  boolean streamIdle(long stream);

  void streamDestroy(long stream);

  long eventCreate();

  void eventRecord(long event, long stream);

  void eventSynchronize(long event);

  float eventElapsedMs(long start, long end);

  void eventDestroy(long event);

  boolean isCapturing(long stream);

  void beginCapture(long stream);

  long endCaptureAndInstantiate(long stream);

  void graphLaunch(long exec, long stream);

  void graphExecDestroy(long exec);

  byte[] ipcGetMemHandle(long devicePtr);

  long ipcOpenMemHandle(byte[] handle);

  void ipcCloseMemHandle(long devicePtr);

  long moduleLoadData(byte[] image);

  long moduleGetFunction(long module, String name);

  void functionLoad(long function, String name);

  /** Launches over prepared kernel parameters ({@link CudaNative.Launcher} owns their memory). */
  KernelLaunch kernelLaunch(PointerPointer<BytePointer> params, boolean programmatic);

  /** One prepared launch configuration. */
  interface KernelLaunch {
    boolean programmatic();

    void launch(long function, int gridX, int blockX, int sharedBytes, long stream);
  }
}
