package dev.gpucoll.cuda;

import dev.gpucoll.core.buffers.HostBuffers;
import dev.gpucoll.core.config.Durations;
import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.CollectiveTimeoutException;
import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.core.wait.CallBounds;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.bytedeco.javacpp.BytePointer;

/**
 * What every path of one gpu communicator shares: the stream calls are enqueued on, the control
 * block the kernels report errors through, device scratch and pinned host memory for staging host
 * buffers, the bounded wait for the stream, and whether the communicator is still usable.
 */
final class DeviceStage {
  private final int rank;
  private final Duration timeout;
  private final ControlBlock control = new ControlBlock();
  private final long ownStream;
  private long stream;
  /** Runs when a wait times out: NCCL calls waiting for a dead peer never return on their own. */
  private Runnable onTimeout = () -> { };
  private long scratchBytes;
  private long scratchDevice;
  /** Scratch blocks replaced by larger ones, freed at close (cudaFree would synchronise the device). */
  private final List<Long> retired = new ArrayList<>();
  private long hostStageBytes;
  private long hostStageHost;
  /** Set after a failed launch or kernel error: the workspace state is undefined (kernel_abi.h section 5). */
  private volatile String broken;

  DeviceStage(int rank, Duration timeout) {
    this.rank = rank;
    this.timeout = timeout;
    this.ownStream = CudaNative.streamCreateNonBlocking();
    this.stream = ownStream;
  }

  void onTimeout(Runnable r) {
    this.onTimeout = r;
  }

  long stream() {
    return stream;
  }

  void setStream(long cudaStream) {
    this.stream = cudaStream;
  }

  ControlBlock control() {
    return control;
  }

  /** Fails when an earlier call left the group unusable. */
  void checkUsable(Collective c) {
    if (broken != null) {
      throw new CollectiveException(rank, c, "communicator is unusable after an earlier failure (" + broken
          + "); close it and form a new group");
    }
    control.throwIfFailed(c);
  }

  void markBroken(String why) {
    broken = why;
  }

  // ---- host buffers through device scratch (kernels and NCCL alike) ----

  /** Device pointers of one call: the caller's, or device scratch holding staged host buffers. */
  record CallPointers(long send, long recv, boolean staged) {}

  CallPointers pointers(Collective c, CommBuffer send, long sendBytes, CommBuffer recv, long recvBytes) {
    if (send instanceof CommBuffer.Host || recv instanceof CommBuffer.Host) {
      ensureScratch(align(sendBytes) + recvBytes);
      copyIn(send, scratchDevice, sendBytes);
      if (writesPartOfRecv(c)) {
        copyIn(recv, scratchDevice + align(sendBytes), recvBytes);
      }
      return new CallPointers(scratchDevice, scratchDevice + align(sendBytes), true);
    }
    long sendPtr = send == null ? 0 : ((CommBuffer.Device) send).address();
    long recvPtr = recv == null ? 0 : ((CommBuffer.Device) recv).address();
    return new CallPointers(sendPtr, recvPtr, false);
  }

  /** Copies a staged result back to the host buffer and waits for it; nothing for device buffers. */
  void finish(Collective c, CallPointers p, CommBuffer recv, long recvBytes) {
    if (p.staged()) {
      copyOut(p.recv(), recv, recvBytes);
      waitStream(c);
    }
  }

  /** At least {@code bytes} of device scratch. */
  long scratch(long bytes) {
    ensureScratch(bytes);
    return scratchDevice;
  }

  /** Fails when device buffers overlap, but for allReduce and broadcast in place; host buffers are staged apart. */
  void checkAliasing(Collective c, CommBuffer sendBuffer, long sendBytes, CommBuffer recvBuffer, long recvBytes) {
    if (!(sendBuffer instanceof CommBuffer.Device sd) || !(recvBuffer instanceof CommBuffer.Device rd)) {
      return;
    }
    long send = sd.address();
    long recv = rd.address();
    boolean overlap = send < recv + recvBytes && recv < send + sendBytes && sendBytes > 0 && recvBytes > 0;
    boolean inPlaceAllowed = c == Collective.ALL_REDUCE || c == Collective.BROADCAST;
    if (overlap && !(inPlaceAllowed && send == recv)) {
      throw new CollectiveException(rank, c, "send and recv overlap; only allReduce and broadcast run in place"
          + " (with send == recv)");
    }
  }

  private void copyIn(CommBuffer src, long devicePtr, long bytes) {
    if (src instanceof CommBuffer.Device d) {
      CudaNative.memcpyAsync(devicePtr, d.address(), bytes, stream);
    } else if (bytes > 0) {
      ensureHostStage(bytes);
      hostView(hostStageHost, bytes).put(HostBuffers.bytes((CommBuffer.Host) src, bytes));
      CudaNative.memcpyAsync(devicePtr, hostStageHost, bytes, stream);
      waitStream(null); // the pinned stage is reused by copyOut
    }
  }

  private void copyOut(long devicePtr, CommBuffer dst, long bytes) {
    if (dst instanceof CommBuffer.Device d) {
      CudaNative.memcpyAsync(d.address(), devicePtr, bytes, stream);
    } else if (bytes > 0) {
      ensureHostStage(bytes);
      CudaNative.memcpyAsync(hostStageHost, devicePtr, bytes, stream);
      waitStream(null);
      HostBuffers.write((CommBuffer.Host) dst, hostView(hostStageHost, bytes));
    }
  }

  private void ensureScratch(long bytes) {
    if (bytes > scratchBytes) {
      retired.add(scratchDevice);
      scratchBytes = Math.max(bytes, 1 << 20);
      scratchDevice = CudaNative.malloc(scratchBytes);
    }
  }

  // ---- device buffers through pinned host memory (the staged path) ----

  /** Pinned host memory for a call's input then output; the views start at each part. */
  record HostStage(long inAddress, ByteBuffer in, long outAddress, ByteBuffer out) {}

  /**
   * Copies {@code send} into pinned host memory (waiting for the stream) and returns both views; the
   * output view holds {@code recv}'s bytes first when the call writes only part of it.
   */
  HostStage toHost(Collective c, CommBuffer send, long sendBytes, CommBuffer recv, long recvBytes) {
    ensureHostStage(align(sendBytes) + recvBytes + 1);
    ByteBuffer in = hostView(hostStageHost, Math.max(sendBytes, 1)).limit((int) sendBytes);
    ByteBuffer out = hostView(hostStageHost + align(sendBytes), Math.max(recvBytes, 1)).limit((int) recvBytes);
    if (send instanceof CommBuffer.Device d) {
      CudaNative.memcpyAsync(hostStageHost, d.address(), sendBytes, stream);
    } else if (sendBytes > 0) {
      in.duplicate().put(HostBuffers.bytes((CommBuffer.Host) send, sendBytes));
    }
    if (writesPartOfRecv(c) && recvBytes > 0) {
      if (recv instanceof CommBuffer.Device d) {
        CudaNative.memcpyAsync(hostStageHost + align(sendBytes), d.address(), recvBytes, stream);
      } else {
        out.duplicate().put(HostBuffers.bytes((CommBuffer.Host) recv, recvBytes));
      }
    }
    waitStream(c);
    return new HostStage(hostStageHost, in, hostStageHost + align(sendBytes), out);
  }

  /** Copies the staged result to {@code recv} and waits for it. */
  void fromHost(Collective c, HostStage stage, CommBuffer recv, long recvBytes) {
    if (recv instanceof CommBuffer.Device d) {
      CudaNative.memcpyAsync(d.address(), stage.outAddress(), recvBytes, stream);
    } else {
      HostBuffers.write((CommBuffer.Host) recv, stage.out().duplicate().limit((int) recvBytes));
    }
    waitStream(c);
  }

  private void ensureHostStage(long bytes) {
    if (bytes > hostStageBytes) {
      CudaNative.freeHost(hostStageHost);
      hostStageBytes = Math.max(bytes, 1 << 20);
      hostStageHost = CudaNative.hostAlloc(hostStageBytes);
    }
  }

  private static ByteBuffer hostView(long address, long bytes) {
    return new BytePointer(CudaNative.ptr(address)).capacity(bytes).asByteBuffer().order(ByteOrder.nativeOrder());
  }

  /**
   * allToAllv writes only its blocks of the recv span: staged, the span is copied in first, so that
   * what lies between the blocks comes back unchanged.
   */
  private static boolean writesPartOfRecv(Collective c) {
    return c == Collective.ALL_TO_ALLV;
  }

  static long align(long bytes) {
    return (bytes + 255) & ~255L;
  }

  // ---- waiting ----

  /**
   * Waits for the stream without blocking in the driver, so that a kernel that times out is seen
   * through the error record and a host-side deadline still holds if the kernel never returns. The
   * caller's {@link CallBounds} apply: its timeout, and its cancellation (an interrupt, Spark's task
   * kill), which aborts our kernels and NCCL at once instead of waiting for the timeout.
   */
  void waitStream(Collective c) {
    CallBounds bounds = CallBounds.current(timeout);
    long deadline = System.nanoTime() + bounds.timeoutNanos() + Duration.ofSeconds(5).toNanos();
    int spins = 0;
    while (!CudaNative.streamIdle(stream)) {
      if (control.failed()) {
        break;
      }
      if (System.nanoTime() > deadline) {
        control.abort();
        onTimeout.run();
        String why = "the GPU stream did not finish within " + Durations.format(bounds.timeout()) + " (+5 s); kernels aborted";
        markBroken(why);
        throw new CollectiveTimeoutException(rank, c, List.of(), why);
      }
      if (++spins > 1000) {
        Thread.onSpinWait();
        if (spins > 20000) {
          String cancelled = (spins & 255) == 0 ? bounds.cancellation() : null;
          if (cancelled != null) {
            control.abort();
            onTimeout.run();
            markBroken("cancelled: " + cancelled);
            throw new CollectiveException(rank, c, "cancelled while waiting for the GPU stream: " + cancelled
                + "; kernels aborted");
          }
          sleepBriefly();
        }
      }
    }
    control.throwIfFailed(c);
    control.throwIfNanRefused();
  }

  /** Why the group can no longer run collectives, or null. */
  String unusableReason() {
    return broken;
  }

  private static void sleepBriefly() {
    try {
      Thread.sleep(0, 50_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * Stops our kernels if the stream is still busy, destroys the stream, and returns the frees of
   * this stage's memory (run by {@link DeviceMemoryReaper} once no communicator on the device spins).
   */
  List<Runnable> close() {
    try {
      if (!CudaNative.streamIdle(stream)) {
        control.abort(); // peers may never come: make our kernels exit instead of waiting for the timeout
        CudaNative.streamSynchronize(stream);
      }
    } finally {
      CudaNative.streamDestroy(ownStream);
    }
    List<Long> scratch = new ArrayList<>(retired);
    scratch.add(scratchDevice);
    long stage = hostStageHost;
    return List.of(() -> scratch.forEach(CudaNative::free), () -> CudaNative.freeHost(stage), control::close);
  }

  /**
   * Abort word + error record in mapped host memory: the host reads what the kernels wrote. Every
   * record breaks the group but a pair kernel's NaN refusal (kernel_abi.h section 7): that call
   * completed on every rank, so the record is raised once, where the stream is idle
   * ({@link #waitStream}: synchronize(), a call on host buffers, barrier()), and the group stays
   * usable. Not at the next call's entry: a rank whose kernel has not reached the record yet would
   * launch that call while its peers refuse it, and wait for them until the timeout.
   */
  final class ControlBlock {
    private final long host;
    private final long dev;
    private final ByteBuffer view;
    /** The epoch of the last NaN refusal raised; its record stays until a later error replaces it. */
    private long nanRaised;

    ControlBlock() {
      host = CudaNative.hostAllocMapped(KernelAbi.CONTROL_BYTES);
      dev = CudaNative.hostDevicePointer(host);
      BytePointer p = new BytePointer(CudaNative.ptr(host)).capacity(KernelAbi.CONTROL_BYTES);
      p.fill(0);
      view = p.asByteBuffer().order(ByteOrder.LITTLE_ENDIAN);
    }

    long deviceAddress() {
      return dev;
    }

    long abortWordDevice() {
      return dev + KernelAbi.CONTROL_ABORT_OFFSET;
    }

    /** Whether a kernel recorded an error that breaks the group. */
    boolean failed() {
      int code = KernelAbi.errorCode(view);
      return code != 0 && code != KernelTable.ERR_NAN;
    }

    void abort() {
      KernelAbi.setAbort(view);
    }

    void throwIfFailed(Collective c) {
      if (failed()) {
        CollectiveException e = KernelAbi.toException(view, rank, c);
        broken = e.getMessage();
        throw e;
      }
    }

    /** Raises a NaN refusal not raised yet; only where the stream is idle (see above). */
    void throwIfNanRefused() {
      if (KernelAbi.errorCode(view) == KernelTable.ERR_NAN && KernelAbi.errorEpoch(view) > nanRaised) {
        nanRaised = KernelAbi.errorEpoch(view);
        throw KernelAbi.toException(view, rank, null);
      }
    }

    void close() {
      CudaNative.freeHost(host);
    }
  }
}
