package dev.gpucoll.cuda;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.core.batch.GroupAgreement;
import dev.gpucoll.core.batch.RecordedBatch;
import dev.gpucoll.core.buffers.HostBuffers;
import dev.gpucoll.cuda.GroupRoute.Route;
import dev.gpucoll.cuda.eligibility.BufferRegistration;
import dev.gpucoll.cuda.nccl.NcclCommunicator;
import dev.gpucoll.core.spi.GroupContext;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * The run paths one GPU group formed as its {@link GroupRoute} says (our kernels, NCCL, the staged
 * path, and the {@link HostGroup} that group()'s agreement and the staged path use), formed and
 * released together, and the one place that sends a checked call to the path its route names.
 */
final class CallPaths {
  private final int device;
  private final DeviceStage stage;
  /** Null when our kernels are off for this group. */
  private final KernelCalls kernels;
  /** Null when the group has no NCCL communicator. */
  private final NcclCalls nccl;
  /** Null unless ranks share a GPU and must not spin. */
  private final StagedCalls staged;
  /** Null for a group of one rank. */
  private final HostGroup hostGroup;

  private CallPaths(int device, DeviceStage stage, KernelCalls kernels, NcclCalls nccl, StagedCalls staged,
      HostGroup hostGroup) {
    this.device = device;
    this.stage = stage;
    this.kernels = kernels;
    this.nccl = nccl;
    this.staged = staged;
    this.hostGroup = hostGroup;
  }

  /**
   * Forms the paths {@code route} needs, in the same order on every rank (each forms through the
   * rendezvous); what was formed is released when a later one fails.
   *
   * @param findings where the kernels' workspace is described
   */
  static CallPaths form(GroupContext group, GroupRoute route, int device, DeviceFacts facts, Duration timeout,
      DeviceStage stage, List<String> findings) {
    DeviceMemoryReaper.opened(device); // balanced by release(), also when forming fails below
    KernelCalls k = null;
    NcclCalls n = null;
    StagedCalls s = null;
    HostGroup h = null;
    try {
      if (route.kernelsOn()) {
        // Every rank maps every peer's workspace, also on the staged path: the handle exchange is checked either way.
        // Programmatic dependent launch needs sm_90; the kernels' griddepcontrol.wait makes it safe.
        k = new KernelCalls(group, route.topology(), device, timeout, stage, facts.computeCapability() >= 90);
        findings.add("workspace: " + k.describe());
      }
      if (group.size() > 1) {
        // Rendezvous rounds only (no device call): where the staged path needs them anyway.
        h = HostGroup.form(group, route.staged(), route.staged() ? "ranks share a GPU, so the group needs the"
            + " non-spinning staged path" : "group() agrees across ranks through the host backend");
      }
      if (route.staged()) {
        s = new StagedCalls(group.rank(), stage, h.communicator());
      }
      if (route.formsNccl()) {
        // Every rank reaches this from the same gathered facts, so all create NCCL or none does.
        NcclCommunicator c = NcclCommunicator.create(group.rendezvous(), device, route.ctaPolicy(), timeout);
        n = new NcclCalls(group.rank(), stage, c);
        stage.onTimeout(() -> {
          c.abort(); // an NCCL call waiting for a dead peer never returns on its own
          stage.markBroken("NCCL aborted after a timeout");
        });
      }
    } catch (RuntimeException e) {
      release(device, k, h, n, stage.close());
      throw e;
    }
    return new CallPaths(device, stage, k, n, s, h);
  }

  /** Null when our kernels are off for this group. */
  KernelCalls kernels() {
    return kernels;
  }

  /** Null when the group has no NCCL communicator. */
  NcclCalls nccl() {
    return nccl;
  }

  /** True when every call is staged through the host backend. */
  boolean staged() {
    return staged != null;
  }

  /** The exchange of group()'s agreement: over the host group, or with itself for one rank. */
  GroupAgreement.Exchange agreement() {
    return hostGroup == null ? words -> words : hostGroup;
  }

  /** What the call's buffers are as far as NCCL windows go (UNKNOWN without NCCL). */
  BufferRegistration registration(CommBuffer send, long sendBytes, CommBuffer recv, long recvBytes) {
    return nccl == null ? BufferRegistration.UNKNOWN : nccl.registration(send, sendBytes, recv, recvBytes);
  }

  /** Runs {@code k} on the path {@code r} names. */
  void run(GpuCall k, Route r) {
    switch (r.kind()) {
      case ONE_RANK -> copyOneRank(k);
      case STAGED -> staged.run(k);
      case NCCL -> nccl.run(k);
      case KERNEL -> kernels.run(r.plan(), k);
    }
  }

  /** Calls {@code step.first() ..} of the batch as one launch of the batch kernel. */
  void runFused(List<RecordedBatch.Call> list, GroupRoute.GroupStep step, long hash) {
    Collective c = Collective.ALL_REDUCE;
    int n = step.calls();
    long[] sends = new long[n];
    long[] recvs = new long[n];
    long[] counts = new long[n];
    RecordedBatch.Call head = list.get(step.first());
    for (int i = 0; i < n; i++) {
      RecordedBatch.Call call = list.get(step.first() + i);
      long bytes = call.count() * call.type().byteSize();
      DeviceStage.CallPointers p = stage.pointers(c, call.send(), bytes, call.recv(), bytes);
      sends[i] = p.send();
      recvs[i] = p.recv();
      counts[i] = call.count();
    }
    kernels.runBatch(step.plan(), hash, sends, recvs, counts, 0, n, head.type(), head.op());
  }

  /**
   * A collective of a one-rank group: its result is its input, so one copy on the stream (nothing
   * when in place). Host buffers on both sides are copied in Java; a mix goes through device scratch.
   */
  private void copyOneRank(GpuCall k) {
    Collective c = k.collective();
    long e = k.type().byteSize();
    long srcOffset = k.a2av() == null ? 0 : k.sendDispls()[0] * e;
    long dstOffset = k.a2av() == null ? 0 : k.recvDispls()[0] * e;
    long bytes = k.a2av() == null ? k.count() * e : k.sendCounts()[0] * e;
    CommBuffer send = k.send();
    CommBuffer recv = k.recv();
    if (c == Collective.BARRIER || bytes == 0) {
      return;
    }
    if (send instanceof CommBuffer.Host hs && recv instanceof CommBuffer.Host hr) {
      java.nio.ByteBuffer out = HostBuffers.bytes(hr, k.recvBytes());
      out.put((int) dstOffset, HostBuffers.bytes(hs, srcOffset + bytes), (int) srcOffset, (int) bytes);
      HostBuffers.write(hr, out);
      return;
    }
    DeviceStage.CallPointers p = stage.pointers(c, send, srcOffset + bytes, recv, k.recvBytes());
    if (p.send() + srcOffset != p.recv() + dstOffset) {
      CudaNative.memcpyAsync(p.recv() + dstOffset, p.send() + srcOffset, bytes, stage.stream());
    }
    stage.finish(c, p, recv, k.recvBytes());
  }

  /** Releases every path and the stage's memory. */
  void close() {
    release(device, kernels, hostGroup, nccl, stage.close());
  }

  /** Closes what was formed; device memory is freed once no communicator on the device spins. */
  private static void release(int device, KernelCalls k, HostGroup h, NcclCalls n, List<Runnable> stageFrees) {
    try {
      if (h != null) {
        h.close();
      }
      if (n != null) {
        n.communicator().close();
      }
    } finally {
      List<Runnable> frees = new ArrayList<>();
      if (k != null) {
        frees.add(k::close);
      }
      frees.addAll(stageFrees);
      DeviceMemoryReaper.closed(device, frees);
    }
  }
}
