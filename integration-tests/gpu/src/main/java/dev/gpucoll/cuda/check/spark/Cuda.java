package dev.gpucoll.cuda.check.spark;

import dev.gpucoll.cuda.CudaNative;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.bytedeco.javacpp.BytePointer;

/**
 * The few CUDA calls the GPU job makes itself (device buffers, copies on the communicator's
 * stream, events, graph capture), through the GPU backend's published {@link CudaNative}, so that
 * the job runs on a simulated device too. Every failure is an exception naming the call and CUDA's
 * error string.
 */
final class Cuda {
  private Cuda() {}

  static void setDevice(int device) {
    CudaNative.setDevice(device);
  }

  static long malloc(long bytes) {
    return CudaNative.malloc(bytes);
  }

  static void free(long address) {
    CudaNative.free(address);
  }

  /** Copies host bytes to the device on {@code stream} and waits for the copy to land. */
  static void upload(long device, ByteBuffer host, long bytes, long stream) {
    if (bytes == 0) {
      return;
    }
    BytePointer staging = new BytePointer(bytes);
    try {
      ByteBuffer view = staging.asByteBuffer();
      ByteBuffer src = host.duplicate();
      src.position(0).limit((int) bytes);
      view.put(src);
      CudaNative.memcpyAsync(device, staging.address(), bytes, stream);
      CudaNative.streamSynchronize(stream);
    } finally {
      staging.deallocate();
    }
  }

  /** Copies device bytes to a new native-order host buffer, ordered after the work on {@code stream}. */
  static ByteBuffer download(long device, long bytes, long stream) {
    if (bytes == 0) {
      // JavaCPP views a pointer of no elements as a buffer of one, which overflows the empty result.
      CudaNative.streamSynchronize(stream);
      return ByteBuffer.allocate(0).order(ByteOrder.nativeOrder());
    }
    BytePointer staging = new BytePointer(bytes);
    try {
      CudaNative.memcpyAsync(staging.address(), device, bytes, stream);
      CudaNative.streamSynchronize(stream);
      ByteBuffer out = ByteBuffer.allocate((int) bytes).order(ByteOrder.nativeOrder());
      out.put(staging.asByteBuffer());
      return out.flip();
    } finally {
      staging.deallocate();
    }
  }

  /** Fills device memory with one byte value (poisons an output before a collective writes it). */
  static void memset(long device, int value, long bytes, long stream) {
    CudaNative.memsetAsync(device, value, bytes, stream);
    CudaNative.streamSynchronize(stream);
  }

  static long eventCreate() {
    return CudaNative.eventCreate();
  }

  static void eventRecord(long event, long stream) {
    CudaNative.eventRecord(event, stream);
  }

  static float elapsedMs(long start, long end) {
    return CudaNative.eventElapsedMs(start, end);
  }

  static void eventDestroy(long event) {
    CudaNative.eventDestroy(event);
  }

  static void beginCapture(long stream) {
    CudaNative.beginCapture(stream);
  }

  /** Ends the capture on {@code stream} and instantiates the graph; returns the cudaGraphExec_t. */
  static long endCapture(long stream) {
    return CudaNative.endCaptureAndInstantiate(stream);
  }

  static void graphLaunch(long exec, long stream) {
    CudaNative.graphLaunch(exec, stream);
  }

  static void graphDestroy(long exec) {
    CudaNative.graphExecDestroy(exec);
  }

  static void streamSynchronize(long stream) {
    CudaNative.streamSynchronize(stream);
  }
}
