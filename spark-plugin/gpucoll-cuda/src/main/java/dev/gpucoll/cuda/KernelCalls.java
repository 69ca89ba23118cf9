package dev.gpucoll.cuda;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.LocOp;
import dev.gpucoll.api.PairType;
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
  private final int size;
  private final DeviceStage stage;
  private final GpuWorkspace workspace;
  private final KernelImage image;
  /** Prepared once; every launch patches only the per-call fields of its argument block. */
  private CudaNative.Launcher launcher;
  /** The batch kernels' launch (GcArgs and GcBatch), prepared at the first grouped launch. */
  private CudaNative.Launcher batchLauncher;
  /** Fixed per communicator: written into the batch launcher's GcArgs too. */
  private final long timeoutNs;
  private final long[] peers;
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
    this.timeoutNs = timeout.toNanos();
    this.peers = workspace.peers();
    this.size = group.size();
    KernelAbi.writeGroup(launcher.args(), rank, size, timeoutNs, stage.control().abortWordDevice(),
        stage.control().deviceAddress(), peers);
  }

  /**
   * One launch of a batch kernel: calls {@code from .. from + n - 1} of the device pointer lists,
   * packed as {@code plan} says (kernel_abi.h section 6); {@code hash} is the recorded batch's.
   */
  void runBatch(LaunchPlan plan, long hash, long[] sends, long[] recvs, long[] counts, int from, int n, DataType type,
      ReduceOp op) {
    if (batchLauncher == null) {
      batchLauncher = new CudaNative.Launcher(KernelTable.ARGS_SIZE, KernelTable.BATCH_SIZE, launcher.programmatic());
      KernelAbi.writeGroup(batchLauncher.args(), rank, size, timeoutNs, stage.control().abortWordDevice(),
          stage.control().deviceAddress(), peers);
    }
    long fn = image.function(plan.kernel());
    KernelAbi.writeCall(batchLauncher.args(), epochs.next(), 0, 0, 0, type, op, 0, null);
    KernelAbi.writeBatch(batchLauncher.second(), hash, sends, recvs, counts, from, n, type);
    try {
      batchLauncher = launch(batchLauncher, fn, plan);
    } catch (CudaException e) {
      String why = "launch of " + plan.kernel() + " failed: " + e.getMessage();
      stage.markBroken(why);
      throw new CollectiveException(rank, Collective.ALL_REDUCE, why + "; the group's epochs now disagree: close it", e);
    }
  }

  String describe() {
    return workspace.describe() + (launcher.programmatic() ? "; launches with programmatic dependent launch"
        : "; plain launches");
  }

  /** The epoch of the most recent launch. */
  long epoch() {
    return epochs.last();
  }

  /** Stages host buffers through device scratch around one launch of {@code plan} for {@code k}. */
  void run(LaunchPlan plan, GpuCall k) {
    launchCall(plan, k.send(), k.sendBytes(), k.recv(), k.recvBytes(), k.count(), k.type().ordinal(), k.op().ordinal(),
        k.root(), k.a2av());
  }

  /** A pair kernel's launch (kernel_abi.h section 7): {@code plan.count()} pairs of {@code type}, host buffers staged alike. */
  void runPairs(LaunchPlan plan, CommBuffer send, CommBuffer recv, PairType type, LocOp op) {
    launchCall(plan, send, plan.bytes(), recv, plan.bytes(), plan.count(), type.ordinal(), op.ordinal(), 0, null);
  }

  private void launchCall(LaunchPlan plan, CommBuffer send, long sendBytes, CommBuffer recv, long recvBytes, long count,
      int typeCode, int opCode, int root, long[][] a2av) {
    DeviceStage.CallPointers p = stage.pointers(plan.collective(), send, sendBytes, recv, recvBytes);
    long fn;
    if (plan == lastPlan) {
      fn = lastFunction;
    } else {
      fn = image.function(plan.kernel());
      lastFunction = fn;
      lastPlan = plan;
    }
    KernelAbi.writeCall(launcher.args(), epochs.next(), p.send(), p.recv(), count, typeCode, opCode, root, a2av);
    try {
      launcher = launch(launcher, fn, plan);
    } catch (CudaException e) {
      String why = "launch of " + plan.kernel() + " failed: " + e.getMessage();
      stage.markBroken(why);
      throw new CollectiveException(rank, plan.collective(), why + "; the group's epochs now disagree: close it", e);
    }
    stage.finish(plan.collective(), p, recv, recvBytes);
  }

  /** Launches on {@code l}; returns the launcher to keep (a plain copy when the driver refused the attribute). */
  private CudaNative.Launcher launch(CudaNative.Launcher l, long fn, LaunchPlan plan) {
    CudaNative.Launcher used = l;
    try {
      l.launch(fn, plan.grid(), plan.block(), plan.sharedBytes(), stage.stream());
    } catch (CudaException e) {
      if (!firstLaunch || !l.programmatic()) {
        throw e;
      }
      // A driver that refuses the attribute refuses the first launch, before anything ran: go plain.
      used = plainCopy(l);
      used.launch(fn, plan.grid(), plan.block(), plan.sharedBytes(), stage.stream());
      if (l == batchLauncher) {
        launcher = plainCopy(launcher); // the first launch was a batch: the other launches go plain too
      }
    }
    firstLaunch = false;
    return used;
  }

  private static CudaNative.Launcher plainCopy(CudaNative.Launcher l) {
    int second = l.second() == null ? 0 : l.second().capacity();
    CudaNative.Launcher plain = new CudaNative.Launcher(KernelTable.ARGS_SIZE, second, false);
    plain.args().put(0, l.args(), 0, KernelTable.ARGS_SIZE);
    if (second > 0) {
      plain.second().put(0, l.second(), 0, second);
    }
    return plain;
  }

  void close() {
    workspace.close();
  }
}
