package dev.gpucoll.cuda;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.GpuCommunicator.CapturedGraph;

/**
 * CUDA graph capture of one GPU communicator's stream: {@link #capture}, and the refusal of what a
 * capture cannot record ({@link CaptureRules}), whether the capture is ours or the caller's own.
 */
final class CaptureGuard {
  private final int rank;
  private final DeviceStage stage;
  /** True while {@link #capture} records the communicator's stream. */
  private boolean capturing;

  CaptureGuard(int rank, DeviceStage stage) {
    this.rank = rank;
    this.stage = stage;
  }

  /** True while our own capture records the stream. */
  boolean capturing() {
    return capturing;
  }

  /** Refuses {@code method} (not a collective) while our capture records the stream. */
  void refuseWhileCapturing(String method) {
    if (capturing) {
      throw new CollectiveException(rank, null, method + "() " + CaptureRules.message(CaptureRules.refusal(method)));
    }
  }

  /**
   * Refuses a call that cannot be captured ({@code why}, null when it can) while a capture records
   * the stream: ours or the caller's own (cudaStreamBeginCapture on the stream it gave us). Asked of
   * CUDA only for the calls that would be refused, which wait on the host anyway, so capturable
   * calls pay nothing.
   */
  void refuse(Collective c, String why) {
    if (why != null && (capturing || CudaNative.isCapturing(stage.stream()))) {
      throw new CollectiveException(rank, c, CaptureRules.message(why));
    }
  }

  /** Captures what {@code step} enqueues into a graph; {@code ensureOpen} guards each replay. */
  CapturedGraph capture(Runnable step, Runnable ensureOpen) {
    refuseWhileCapturing("capture");
    long stream = stage.stream();
    if (stream == 0) {
      throw new CollectiveException(rank, null, CaptureRules.message("the legacy default stream (0) cannot be"
          + " captured; setStream() to a created stream"));
    }
    CudaNative.beginCapture(stream);
    capturing = true;
    long exec;
    try {
      step.run();
    } catch (RuntimeException | Error e) {
      capturing = false;
      try {
        CudaNative.graphExecDestroy(CudaNative.endCaptureAndInstantiate(stream));
      } catch (RuntimeException ended) {
        e.addSuppressed(ended); // an invalidated capture cannot be instantiated: nothing to free
      }
      throw e;
    }
    capturing = false;
    try {
      exec = CudaNative.endCaptureAndInstantiate(stream);
    } catch (CudaException e) {
      throw new CollectiveException(rank, null, "CUDA refused the captured graph: " + e.getMessage(), e);
    }
    return new CapturedGraph() {
      private long graph = exec;

      @Override
      public void replay() {
        if (graph == 0) {
          throw new IllegalStateException("this graph is closed");
        }
        ensureOpen.run();
        CudaNative.graphLaunch(graph, stage.stream());
      }

      @Override
      public void close() {
        long g = graph;
        graph = 0;
        CudaNative.graphExecDestroy(g);
      }
    };
  }
}
