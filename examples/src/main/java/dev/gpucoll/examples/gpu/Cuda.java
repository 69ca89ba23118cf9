package dev.gpucoll.examples.gpu;

import static org.bytedeco.cuda.global.cudart.cudaEventCreate;
import static org.bytedeco.cuda.global.cudart.cudaEventDestroy;
import static org.bytedeco.cuda.global.cudart.cudaEventElapsedTime;
import static org.bytedeco.cuda.global.cudart.cudaEventRecord;
import static org.bytedeco.cuda.global.cudart.cudaFree;
import static org.bytedeco.cuda.global.cudart.cudaGetErrorString;
import static org.bytedeco.cuda.global.cudart.cudaGraphDestroy;
import static org.bytedeco.cuda.global.cudart.cudaGraphExecDestroy;
import static org.bytedeco.cuda.global.cudart.cudaGraphInstantiate;
import static org.bytedeco.cuda.global.cudart.cudaGraphLaunch;
import static org.bytedeco.cuda.global.cudart.cudaMalloc;
import static org.bytedeco.cuda.global.cudart.cudaMemcpyAsync;
import static org.bytedeco.cuda.global.cudart.cudaMemcpyDefault;
import static org.bytedeco.cuda.global.cudart.cudaMemsetAsync;
import static org.bytedeco.cuda.global.cudart.cudaSetDevice;
import static org.bytedeco.cuda.global.cudart.cudaStreamBeginCapture;
import static org.bytedeco.cuda.global.cudart.cudaStreamCaptureModeThreadLocal;
import static org.bytedeco.cuda.global.cudart.cudaStreamEndCapture;
import static org.bytedeco.cuda.global.cudart.cudaStreamSynchronize;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.bytedeco.cuda.cudart.CUevent_st;
import org.bytedeco.cuda.cudart.CUgraphExec_st;
import org.bytedeco.cuda.cudart.CUgraph_st;
import org.bytedeco.cuda.cudart.CUstream_st;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.Pointer;

/**
 * The few CUDA runtime calls the GPU job makes itself (device buffers, copies on the
 * communicator's stream, events, graph capture), through the JavaCPP CUDA presets. Every failure
 * is an exception naming the call and CUDA's error string.
 */
final class Cuda {
  private Cuda() {}

  static void setDevice(int device) {
    check(cudaSetDevice(device), "cudaSetDevice(" + device + ")");
  }

  static long malloc(long bytes) {
    Pointer p = new Pointer();
    check(cudaMalloc(p, bytes), "cudaMalloc(" + bytes + " B)");
    return p.address();
  }

  static void free(long address) {
    if (address != 0) {
      check(cudaFree(ptr(address)), "cudaFree");
    }
  }

  /** Copies host bytes to the device on {@code stream} and waits for the copy to land. */
  static void upload(long device, ByteBuffer host, long bytes, long stream) {
    BytePointer staging = new BytePointer(bytes);
    try {
      ByteBuffer view = staging.asByteBuffer();
      ByteBuffer src = host.duplicate();
      src.position(0).limit((int) bytes);
      view.put(src);
      check(cudaMemcpyAsync(ptr(device), staging, bytes, cudaMemcpyDefault, stream(stream)), "cudaMemcpyAsync H2D");
      check(cudaStreamSynchronize(stream(stream)), "cudaStreamSynchronize after upload");
    } finally {
      staging.deallocate();
    }
  }

  /** Copies device bytes to a new native-order host buffer, ordered after the work on {@code stream}. */
  static ByteBuffer download(long device, long bytes, long stream) {
    BytePointer staging = new BytePointer(bytes);
    try {
      check(cudaMemcpyAsync(staging, ptr(device), bytes, cudaMemcpyDefault, stream(stream)), "cudaMemcpyAsync D2H");
      check(cudaStreamSynchronize(stream(stream)), "cudaStreamSynchronize after download");
      ByteBuffer out = ByteBuffer.allocate((int) bytes).order(ByteOrder.nativeOrder());
      out.put(staging.asByteBuffer());
      return out.flip();
    } finally {
      staging.deallocate();
    }
  }

  /** Fills device memory with one byte value (poisons an output before a collective writes it). */
  static void memset(long device, int value, long bytes, long stream) {
    check(cudaMemsetAsync(ptr(device), value, bytes, stream(stream)), "cudaMemsetAsync");
    check(cudaStreamSynchronize(stream(stream)), "cudaStreamSynchronize after memset");
  }

  static long eventCreate() {
    CUevent_st e = new CUevent_st();
    check(cudaEventCreate(e), "cudaEventCreate");
    return e.address();
  }

  static void eventRecord(long event, long stream) {
    check(cudaEventRecord(new CUevent_st(ptr(event)), stream(stream)), "cudaEventRecord");
  }

  static float elapsedMs(long start, long end) {
    float[] ms = new float[1];
    check(cudaEventElapsedTime(ms, new CUevent_st(ptr(start)), new CUevent_st(ptr(end))), "cudaEventElapsedTime");
    return ms[0];
  }

  static void eventDestroy(long event) {
    check(cudaEventDestroy(new CUevent_st(ptr(event))), "cudaEventDestroy");
  }

  static void beginCapture(long stream) {
    check(cudaStreamBeginCapture(stream(stream), cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  }

  /** Ends the capture on {@code stream} and instantiates the graph; returns the cudaGraphExec_t. */
  static long endCapture(long stream) {
    CUgraph_st graph = new CUgraph_st();
    check(cudaStreamEndCapture(stream(stream), graph), "cudaStreamEndCapture");
    CUgraphExec_st exec = new CUgraphExec_st();
    try {
      check(cudaGraphInstantiate(exec, graph, 0L), "cudaGraphInstantiate");
    } finally {
      cudaGraphDestroy(graph);
    }
    return exec.address();
  }

  static void graphLaunch(long exec, long stream) {
    check(cudaGraphLaunch(new CUgraphExec_st(ptr(exec)), stream(stream)), "cudaGraphLaunch");
  }

  static void graphDestroy(long exec) {
    check(cudaGraphExecDestroy(new CUgraphExec_st(ptr(exec))), "cudaGraphExecDestroy");
  }

  static void streamSynchronize(long stream) {
    check(cudaStreamSynchronize(stream(stream)), "cudaStreamSynchronize");
  }

  private static CUstream_st stream(long s) {
    return new CUstream_st(ptr(s));
  }

  /** A raw address as a JavaCPP pointer (a named subclass: Pointer's own field is called address). */
  private static Pointer ptr(long address) {
    return new Address(address);
  }

  private static final class Address extends Pointer {
    Address(long a) {
      this.address = a;
    }
  }

  private static void check(int rc, String call) {
    if (rc != 0) {
      throw new IllegalStateException(call + " failed: " + cudaGetErrorString(rc).getString() + " [" + rc + "]");
    }
  }
}
