package dev.gpucoll.cuda;

import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.core.spi.GroupContext;
import java.time.Duration;

/**
 * Runs a call on our kernels: one peer-visible workspace per rank (exchanged as a raw pointer with
 * ranks of this process and as a cudaIpcMemHandle with other processes), the fatbin loaded once per
 * device, and the epoch, which only grows across calls: the kernels derive slot parity and flag
 * values from it (kernel_abi.h section 3).
 */
final class KernelCalls {
  private final int rank;
  private final DeviceStage stage;
  private final GpuWorkspace workspace;
  private final KernelImage image;
  /** Prepared once; every launch patches only the per-call fields of its argument block. */
  private CudaNative.Launcher launcher;
  /** No launch has succeeded yet (a refused programmatic launch then falls back to a plain one). */
  private boolean firstLaunch = true;
  private final EpochCounter epochs = new EpochCounter();
  /** The last plan's function: the route hands back the same plan for repeated calls, so no name lookup. */
  private LaunchPlan lastPlan;
  private long lastFunction;

  /** Maps every peer's workspace (a rendezvous round) and loads the fatbin on {@code device}. */
  KernelCalls(GroupContext group, GroupTopology topology, int device, Duration timeout, DeviceStage stage,
      boolean programmatic) {
    this.rank = group.rank();
    this.stage = stage;
    this.launcher = new CudaNative.Launcher(KernelTable.ARGS_SIZE, programmatic);
    this.workspace = GpuWorkspace.exchange(group, topology, device, timeout, stage.stream());
    this.image = KernelImage.forDevice(device);
    KernelAbi.writeGroup(launcher.args(), rank, group.size(), timeout.toNanos(), stage.control().abortWordDevice(),
        stage.control().deviceAddress(), workspace.peers());
  }

  String describe() {
    return workspace.describe() + (launcher.programmatic() ? "; launches with programmatic dependent launch"
        : "; plain launches");
  }

  /** The epoch of the most recent launch. */
  long epoch() {
    return epochs.last();
  }

  /**
   * Stages host buffers through device scratch around one launch.
   *
   * @param a2av allToAllv's {sendCounts, sendDispls, recvCounts, recvDispls}, else null
   */
  void run(LaunchPlan plan, CommBuffer send, long sendBytes, CommBuffer recv, long recvBytes, long count,
      DataType type, ReduceOp op, int root, long[][] a2av) {
    DeviceStage.CallPointers p = stage.pointers(plan.collective(), send, sendBytes, recv, recvBytes);
    long fn;
    if (plan == lastPlan) {
      fn = lastFunction;
    } else {
      fn = image.function(plan.kernel());
      lastFunction = fn;
      lastPlan = plan;
    }
    KernelAbi.writeCall(launcher.args(), epochs.next(), p.send(), p.recv(), count, type, op, root, a2av);
    try {
      launch(fn, plan);
    } catch (CudaException e) {
      String why = "launch of " + plan.kernel() + " failed: " + e.getMessage();
      stage.markBroken(why);
      throw new CollectiveException(rank, plan.collective(), why + "; the group's epochs now disagree: close it", e);
    }
    stage.finish(plan.collective(), p, recv, recvBytes);
  }

  private void launch(long fn, LaunchPlan plan) {
    try {
      launcher.launch(fn, plan.grid(), plan.block(), plan.sharedBytes(), stage.stream());
    } catch (CudaException e) {
      if (!firstLaunch || !launcher.programmatic()) {
        throw e;
      }
      // A driver that refuses the attribute refuses the first launch, before anything ran: go plain.
      CudaNative.Launcher plain = new CudaNative.Launcher(KernelTable.ARGS_SIZE, false);
      plain.args().put(0, launcher.args(), 0, KernelTable.ARGS_SIZE);
      launcher = plain;
      launcher.launch(fn, plan.grid(), plan.block(), plan.sharedBytes(), stage.stream());
    }
    firstLaunch = false;
  }

  void close() {
    workspace.close();
  }
}
