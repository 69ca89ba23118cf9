package dev.gpucoll.cuda;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.CollectiveListener;
import dev.gpucoll.api.CollectiveTimeoutException;
import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.GpuCommunicator;
import dev.gpucoll.api.PathChoice;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.core.CommunicatorFactory;
import dev.gpucoll.core.config.GpuCollConf;
import dev.gpucoll.core.report.RankReport;
import dev.gpucoll.core.report.ReportingCommunicator;
import dev.gpucoll.core.spi.CommunicatorBackend;
import dev.gpucoll.core.spi.GroupContext;
import dev.gpucoll.core.spi.MemberInfo;
import dev.gpucoll.cuda.eligibility.BufferRegistration;
import dev.gpucoll.cuda.eligibility.GroupFacts;
import dev.gpucoll.cuda.nccl.NcclCommunicator;
import dev.gpucoll.cuda.nccl.PathProof;
import dev.gpucoll.cuda.select.AlgorithmSelector;
import dev.gpucoll.cuda.select.GpuPathReport;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.bytedeco.javacpp.BytePointer;

/**
 * One rank of a GPU group. Device buffers are enqueued on {@link #stream()} with our barrier-free
 * kernels (see native-kernels/include/gpucoll/kernel_abi.h); host buffers are staged through device
 * scratch and complete before the call returns.
 *
 * <p>Per communicator: one peer-visible workspace (cudaMalloc, exchanged as a raw pointer with
 * ranks of this process and as a cudaIpcMemHandle with other processes), one control block in
 * mapped host memory (abort word + error record the kernels write on timeout), and the epoch,
 * which only grows across calls: the kernels derive slot parity and flag values from it.
 *
 * <p>Groups in which two processes share a GPU never run spin kernels (they would time-slice):
 * they take the "gpu-staged-host" path, which copies to pinned host memory and runs the host
 * backend's collective, and the report says so.
 */
final class CudaCommunicator implements GpuCommunicator, ReportingCommunicator {
  static final String STAGED_PATH = "gpu-staged-host";

  private final GroupContext group;
  private final KernelVariant forced;
  private int splits;
  private final int rank;
  private final int size;
  private final int device;
  private final DeviceFacts facts;
  private final GroupTopology topology;
  private final Duration timeout;
  private final KernelImage image;
  private final LaunchPlanner planner;
  private final List<String> findings = new ArrayList<>();
  private final Map<String, Long> observed = new TreeMap<>();
  private final List<CollectiveListener> listeners = new CopyOnWriteArrayList<>();

  private final long ownStream;
  private long stream;
  private final GpuWorkspace workspace;
  private final ControlBlock control;
  private final CudaNative.Launcher launcher;
  /** Host backend communicator for the non-spinning path; null when the group may spin. */
  private final Communicator staged;
  /** Decides NCCL vs our kernels per collective and size (dev.gpucoll.cuda.select); null if it cannot be built. */
  private final AlgorithmSelector selector;
  /** NCCL for large messages; null when NCCL is not loadable everywhere or two ranks share a GPU. */
  private final NcclCommunicator nccl;
  /** True when our kernels cannot serve the group (several hosts, > 16 ranks) or NCCL is forced. */
  private final boolean ncclOnly;
  /** spark.gpucoll.algorithm names an NCCL algorithm: a call it cannot run is an error, not a fallback. */
  private final boolean ncclForced;
  private final EpochCounter epochs = new EpochCounter();
  private long hostStageBytes;
  private long hostStageHost;
  private long scratchBytes;
  private long scratchDevice;
  private boolean closed;
  /** Set after a failed launch or kernel error: the workspace state is undefined (kernel_abi.h section 5). */
  private String broken;

  private CudaCommunicator(GroupContext group, KernelVariant forced) {
    this.group = group;
    this.forced = forced;
    this.rank = group.rank();
    this.size = group.size();
    this.device = CudaNative.currentDevice();
    CudaNative.setDevice(device);
    this.facts = CudaNative.deviceFacts(device);
    this.topology = new GroupTopology(group.members());
    this.timeout = group.conf().get(GpuCollConf.TIMEOUT);
    if (!topology.problems().isEmpty()) {
      throw new CollectiveException(rank, null, "the gpu backend cannot serve this group: " + topology.problems());
    }
    boolean ncclEverywhere = group.members().stream()
        .allMatch(m -> parseInt(m.facts().get("nccl.version")) > 0);
    boolean distinctGpus = topology.gpuCount() == size;
    String algorithm = group.conf().get(GpuCollConf.ALGORITHM);
    boolean ncclForced = forced == null && algorithm.startsWith("nccl");
    // Our kernels serve up to 16 ranks of one host; larger or multi-host groups, and spark.gpucoll.algorithm
    // set to an NCCL algorithm, run every collective on NCCL.
    String kernelsOff = !topology.singleHost()
        ? "the group spans hosts " + group.members().stream().map(m -> m.host()).distinct().toList()
            + " and our kernels serve ranks of one host"
        : size > KernelAbi.MAX_RANKS ? "our kernels serve at most " + KernelAbi.MAX_RANKS + " ranks; this group has "
            + size
        : ncclForced ? GpuCollConf.ALGORITHM.key() + "=" + algorithm : null;
    if (kernelsOff != null && (!ncclEverywhere || !distinctGpus || forced != null)) {
      throw new CollectiveException(rank, null, "the gpu backend cannot serve this group: " + kernelsOff + ", and "
          + (forced != null ? "kernel variant " + forced.abiName() + " is forced"
          : !ncclEverywhere ? "NCCL is not loadable on every rank" : "ranks share a GPU (NCCL refuses that)"));
    }
    this.ncclOnly = kernelsOff != null;
    this.ncclForced = ncclForced;
    if (forced == null && !ncclOnly && !algorithm.equals("auto") && LaunchPlanner.fromAlgorithmSetting(algorithm) == null) {
      throw new CollectiveException(rank, null, GpuCollConf.ALGORITHM.key() + "=" + algorithm
          + " is not served by the gpu backend in this build (it runs auto, oneshot, twoshot, ll128, nccl,"
          + " nccl-symmetric, nccl-zero-cta)");
    }
    int ll128MinRanks = group.conf().get(GpuCollConf.GPU_LL128_MIN_RANKS);
    boolean acrossGpus = size > 1 && topology.gpuCount() == size;
    if (acrossGpus) {
      findings.add("data movement over LL slots up to " + LaunchPlanner.LL_MOVEMENT_MAX_ACROSS_GPUS
          + " B per peer, the credit pipe above (LL measured slower from 64 KB per peer across GPUs)");
    }
    if (topology.gpuCount() < size) {
      // Measured on one H200 (docs/gpu-results.md): with ranks sharing a GPU the LL128-atomic kernel is
      // slower than one-shot LL at every size, so it is chosen only when each rank has its own GPU.
      findings.add("LL128-atomic not chosen by size: ranks share a GPU (" + topology.gpuCount() + " GPUs for " + size
          + " ranks)");
      ll128MinRanks = Integer.MAX_VALUE;
    }
    this.planner = ncclOnly ? null : new LaunchPlanner(rank, size,
        forced != null ? forced : LaunchPlanner.fromAlgorithmSetting(algorithm),
        group.conf().get(GpuCollConf.GPU_ONE_SHOT_MAX_BYTES), group.conf().get(GpuCollConf.GPU_TWO_SHOT_MAX_BYTES),
        ll128MinRanks, acrossGpus ? LaunchPlanner.LL_MOVEMENT_MAX_ACROSS_GPUS : KernelAbi.LL_MAX_BYTES);
    this.ownStream = CudaNative.streamCreateNonBlocking();
    this.stream = ownStream;
    this.image = ncclOnly ? null : KernelImage.forDevice(device);
    this.launcher = new CudaNative.Launcher(KernelAbi.ARGS_SIZE);
    this.control = new ControlBlock();
    findings.add("topology: " + topology.describe());
    if (topology.mustNotSpin()) {
      findings.add("spin kernels disabled: " + String.join("; ", topology.crossProcessSharedGpus())
          + " (kernels of different processes on one GPU time-slice); collectives take " + STAGED_PATH);
    }
    if (ncclOnly) {
      this.workspace = null;
      findings.add("our kernels are off: " + kernelsOff + "; every collective runs on NCCL");
    } else {
      // Every rank maps every peer's workspace, also on the staged path: the handle exchange is checked either way.
      this.workspace = GpuWorkspace.exchange(group, topology, device, timeout, ownStream);
      findings.add("workspace: " + workspace.describe());
      KernelAbi.writeGroup(launcher.args(), rank, size, timeout.toNanos(), control.abortWordDevice(),
          control.deviceAddress(), workspace.peers());
    }
    this.staged = topology.mustNotSpin() ? hostCommunicator(group) : null;
    AlgorithmSelector sel = null;
    try {
      sel = new AlgorithmSelector(GroupFacts.of(group.members()), group.conf(), ncclEverywhere && distinctGpus,
          AlgorithmSelector.DEFAULT_KERNEL_COLLECTIVES);
    } catch (RuntimeException e) {
      findings.add("algorithm selector unavailable (" + e.getMessage() + "): our kernels serve every size");
    }
    this.selector = sel;
    if (sel != null && staged == null) {
      sel.summary().forEach(line -> findings.add("selector: " + line));
    }
    if (ncclOnly || (staged == null && sel != null && ncclEverywhere && distinctGpus && forced == null)) {
      // Every rank reaches this from the same gathered facts, so all create NCCL or none does.
      this.nccl = NcclCommunicator.create(group.rendezvous(), device, sel != null ? sel.ctaPolicy() : 0,
          group.conf().get(GpuCollConf.NCCL_BLOCKING), timeout);
      findings.add("NCCL communicator formed for large messages (CTA policy " + sel.ctaPolicy() + ")");
    } else {
      this.nccl = null;
      findings.add("no NCCL communicator: " + (!ncclEverywhere ? "NCCL is not loadable on every rank"
          : !distinctGpus ? "ranks share a GPU (NCCL refuses that); our kernels serve every size"
          : staged != null ? "staged path" : forced != null ? "kernel variant forced to " + forced.abiName()
          : "no selector"));
    }
    DeviceMemoryReaper.opened(device);
  }

  private static int parseInt(String s) {
    try {
      return s == null ? 0 : Integer.parseInt(s.trim());
    } catch (NumberFormatException e) {
      return 0;
    }
  }

  /** Selector answers by collective and size: explain() builds its reasons, too slow for every call. */
  private final Map<Long, String> ncclChoices = new java.util.HashMap<>();
  private static final String KERNELS = "";

  /** The NCCL algorithm the selector picks for this call, or null when our kernels run it. */
  private String ncclChoice(Collective c, long bytes) {
    return ncclChoice(c, bytes, BufferRegistration.UNKNOWN);
  }

  /** As above, for buffers whose NCCL window registration is known (the name then says the real path). */
  private String ncclChoice(Collective c, long bytes, BufferRegistration buffers) {
    if (nccl == null || selector == null || c == Collective.BARRIER) {
      return null;
    }
    long key = (bytes * 8 + c.ordinal()) * 8 + buffers.ordinal();
    String a = ncclChoices.get(key);
    if (a == null) {
      try {
        String alg = selector.explain(c, bytes, buffers).algorithm();
        a = alg.startsWith("nccl") ? alg : KERNELS;
      } catch (IllegalArgumentException e) {
        if (ncclForced) {
          throw new CollectiveException(rank, c, e.getMessage());
        }
        a = KERNELS;
      }
      if (ncclChoices.size() > 4096) {
        ncclChoices.clear();
      }
      ncclChoices.put(key, a);
    }
    return a.isEmpty() ? null : a;
  }

  /** @param forced a kernel variant for every collective (tests, benchmarks), or null to choose by size */
  static CudaCommunicator create(GroupContext group, KernelVariant forced) {
    return new CudaCommunicator(group, forced);
  }

  private static Communicator hostCommunicator(GroupContext group) {
    CommunicatorBackend host = CommunicatorFactory.backends().get("host");
    if (host == null || host.unavailableReason().isPresent()) {
      throw new CollectiveException(group.rank(), null, "two processes share a GPU, so the group needs the "
          + "non-spinning staged path, but the host backend is not usable: "
          + (host == null ? "not on the class path" : host.unavailableReason().get()));
    }
    return host.create(group);
  }

  // ---- GpuCommunicator ----

  @Override
  public int device() {
    return device;
  }

  @Override
  public long stream() {
    return stream;
  }

  @Override
  public void setStream(long cudaStream) {
    ensureOpen(null);
    this.stream = cudaStream;
  }

  @Override
  public void synchronize() {
    ensureOpen(null);
    waitStream(null);
    if (nccl != null) {
      nccl.checkAsyncError();
    }
  }

  @Override
  public long ncclComm() {
    return nccl == null ? 0 : nccl.address();
  }

  @Override
  public SymmetricMemory allocSymmetric(long bytes) {
    if (bytes <= 0) {
      throw new IllegalArgumentException("symmetric memory size must be positive, got " + bytes + " bytes");
    }
    ensureOpen(null);
    if (nccl == null) {
      String why = findings.stream().filter(f -> f.startsWith("no NCCL communicator")).findFirst()
          .orElse("no NCCL communicator");
      throw new CollectiveException(rank, null, "symmetric memory needs the group's NCCL communicator: " + why);
    }
    NcclCommunicator.SymmetricBuffer window = nccl.allocSymmetric(bytes);
    CommBuffer.Device buffer = new CommBuffer.Device(window.address(), window.bytes());
    return new SymmetricMemory() {
      @Override
      public CommBuffer.Device buffer() {
        return buffer;
      }

      @Override
      public void close() {
        window.close();
      }
    };
  }

  @Override
  public int rank() {
    return rank;
  }

  @Override
  public int size() {
    return size;
  }

  @Override
  public String backend() {
    return GpuBackend.NAME;
  }

  /** The epoch the next kernel collective runs in (for tests and reports). */
  long epoch() {
    return epochs.last();
  }

  // ---- collectives ----

  @Override
  public void allReduce(CommBuffer send, CommBuffer recv, long count, DataType type, ReduceOp op) {
    run(Collective.ALL_REDUCE, send, count, recv, count, count, type, op, 0);
  }

  @Override
  public void allGather(CommBuffer send, CommBuffer recv, long count, DataType type) {
    run(Collective.ALL_GATHER, send, count, recv, count * size, count, type, ReduceOp.SUM, 0);
  }

  @Override
  public void reduceScatter(CommBuffer send, CommBuffer recv, long count, DataType type, ReduceOp op) {
    run(Collective.REDUCE_SCATTER, send, count * size, recv, count, count, type, op, 0);
  }

  @Override
  public void allToAll(CommBuffer send, CommBuffer recv, long count, DataType type) {
    run(Collective.ALL_TO_ALL, send, count * size, recv, count * size, count, type, ReduceOp.SUM, 0);
  }

  @Override
  public void allToAllv(CommBuffer send, long[] sendCounts, long[] sendDispls, CommBuffer recv, long[] recvCounts,
      long[] recvDispls, DataType type) {
    Collective c = Collective.ALL_TO_ALLV;
    ensureOpen(c);
    control.throwIfFailed(rank, c);
    AllToAllvPlan.check(rank, size, sendCounts, sendDispls, recvCounts, recvDispls);
    long e = type.byteSize();
    long sendBytes = AllToAllvPlan.extent(sendCounts, sendDispls) * e;
    long recvBytes = AllToAllvPlan.extent(recvCounts, recvDispls) * e;
    requireCapacity(c, "send", send, sendBytes);
    requireCapacity(c, "recv", recv, recvBytes);
    long[][] table = {sendCounts.clone(), sendDispls.clone(), recvCounts.clone(), recvDispls.clone()};
    if (staged != null) {
      long start = System.nanoTime();
      ensureHostStage(align(sendBytes) + recvBytes + 1);
      ByteBuffer in = hostView(hostStageHost, Math.max(sendBytes, 1)).limit((int) sendBytes);
      ByteBuffer out = hostView(hostStageHost + align(sendBytes), Math.max(recvBytes, 1)).limit((int) recvBytes);
      copyToHost(send, hostStageHost, in, sendBytes);
      waitStream(c);
      staged.allToAllv(CommBuffer.of(in), sendCounts, sendDispls, CommBuffer.of(out), recvCounts, recvDispls, type);
      copyFromHost(hostStageHost + align(sendBytes), out, recv, recvBytes);
      waitStream(c);
      observed(c, STAGED_PATH, Math.max(sendBytes, recvBytes), start);
      return;
    }
    if (ncclOnly) {
      if (!(send instanceof CommBuffer.Device sd) || !(recv instanceof CommBuffer.Device rd)) {
        throw new CollectiveException(rank, c, "allToAllv over NCCL takes device buffers");
      }
      long start = System.nanoTime();
      nccl.allToAllv(sd.address(), sendCounts, sendDispls, rd.address(), recvCounts, recvDispls, type, stream);
      observed(c, "nccl", Math.max(sendBytes, recvBytes), start);
      return;
    }
    LaunchPlan plan = planner.planAllToAllv(type, sendCounts, recvCounts);
    runKernel(c, plan, send, sendBytes, recv, recvBytes, 0, type, ReduceOp.SUM, 0, table);
  }

  @Override
  public void broadcast(CommBuffer send, CommBuffer recv, long count, DataType type, int root) {
    if (root < 0 || root >= size) {
      throw new CollectiveException(rank, Collective.BROADCAST, "root " + root + " is not a rank of this group of " + size);
    }
    run(Collective.BROADCAST, send, count, recv, count, count, type, ReduceOp.SUM, root);
  }

  @Override
  public void barrier() {
    run(Collective.BARRIER, null, 0, null, 0, 0, DataType.INT32, ReduceOp.SUM, 0);
    waitStream(Collective.BARRIER);
  }

  /**
   * Validates, stages host buffers, and enqueues one collective.
   *
   * @param sendElems elements read from send; recvElems elements written to recv; count the per-rank count
   */
  private void run(Collective c, CommBuffer send, long sendElems, CommBuffer recv, long recvElems, long count,
      DataType type, ReduceOp op, int root) {
    ensureOpen(c);
    control.throwIfFailed(rank, c);
    if (count < 0) {
      throw new CollectiveException(rank, c, "count is negative: " + count);
    }
    long sendBytes = sendElems * type.byteSize();
    long recvBytes = recvElems * type.byteSize();
    if (c != Collective.BARRIER) {
      requireCapacity(c, "send", send, sendBytes);
      requireCapacity(c, "recv", recv, recvBytes);
    }
    long start = System.nanoTime();
    String algorithm;
    if (count == 0 && c != Collective.BARRIER) {
      // Every rank passes the same count, so every rank skips: epochs stay in step.
      observed(c, "noop-empty", 0, start);
      return;
    }
    if (staged != null) {
      algorithm = STAGED_PATH;
      runStaged(c, send, sendBytes, recv, recvBytes, count, type, op, root);
    } else {
      String viaNccl = nccl == null ? null : ncclChoice(c, count * type.byteSize(), registration(send, sendBytes,
          recv, recvBytes));
      if (ncclOnly) {
        if (c == Collective.BARRIER) {
          ncclBarrier();
          observed(c, "nccl-barrier", 0, start);
          return;
        }
        viaNccl = viaNccl == null ? "nccl" : viaNccl;
      }
      if (viaNccl != null) {
        runNccl(c, viaNccl, send, sendBytes, recv, recvBytes, count, type, op, root);
        return;
      }
      LaunchPlan plan = planner.plan(c, type, op, count);
      runKernel(c, plan, send, sendBytes, recv, recvBytes, count, type, op, root, null);
      return;
    }
    observed(c, algorithm, Math.max(sendBytes, recvBytes), start);
  }

  private void observed(Collective c, String algorithm, long bytes, long startNanos) {
    observed.merge(algorithm, 1L, Long::sum);
    if (!listeners.isEmpty()) {
      long nanos = System.nanoTime() - startNanos;
      for (CollectiveListener l : listeners) {
        l.onCollective(c, algorithm, bytes, nanos);
      }
    }
  }

  /** Stages host buffers through device scratch around one kernel launch. */
  private void runKernel(Collective c, LaunchPlan plan, CommBuffer send, long sendBytes, CommBuffer recv,
      long recvBytes, long count, DataType type, ReduceOp op, int root, long[][] a2av) {
    long start = System.nanoTime();
    CallPointers p = pointers(c, send, sendBytes, recv, recvBytes);
    enqueue(plan, p.send(), p.recv(), count, type, op, root, a2av);
    finishStaged(c, p, recv, recvBytes);
    observed(c, plan.algorithm(), plan.bytes(), start);
  }

  /** A barrier on NCCL alone: a 1-element allReduce, then wait. */
  private void ncclBarrier() {
    ensureScratch(8);
    nccl.allReduce(scratchDevice, scratchDevice, 1, DataType.INT32, ReduceOp.SUM, stream);
    waitStream(Collective.BARRIER);
  }

  private BufferRegistration registration(CommBuffer send, long sendBytes, CommBuffer recv, long recvBytes) {
    if (send instanceof CommBuffer.Device s && recv instanceof CommBuffer.Device r) {
      return nccl.registrationOf(s.address(), sendBytes, r.address(), recvBytes);
    }
    return BufferRegistration.NONE; // host buffers are staged through unregistered scratch
  }

  /** One collective through NCCL on this communicator's stream (host buffers staged like the kernels'). */
  private void runNccl(Collective c, String algorithm, CommBuffer send, long sendBytes, CommBuffer recv,
      long recvBytes, long count, DataType type, ReduceOp op, int root) {
    long start = System.nanoTime();
    CallPointers p = pointers(c, send, sendBytes, recv, recvBytes);
    long sendPtr = p.send();
    long recvPtr = p.recv();
    switch (c) {
      case ALL_REDUCE -> nccl.allReduce(sendPtr, recvPtr, count, type, op, stream);
      case ALL_GATHER -> nccl.allGather(sendPtr, recvPtr, count, type, stream);
      case REDUCE_SCATTER -> nccl.reduceScatter(sendPtr, recvPtr, count, type, op, stream);
      case ALL_TO_ALL -> nccl.allToAll(sendPtr, recvPtr, count, type, stream);
      case BROADCAST -> nccl.broadcast(sendPtr, recvPtr, count, type, root, stream);
      default -> throw new CollectiveException(rank, c, "not routed to NCCL");
    }
    finishStaged(c, p, recv, recvBytes);
    observed(c, algorithm, Math.max(sendBytes, recvBytes), start);
  }

  /** Device pointers of one call: the caller's, or device scratch holding staged host buffers. */
  private record CallPointers(long send, long recv, boolean staged) {}

  /** Host buffers are copied into device scratch (one way for kernels and NCCL alike). */
  private CallPointers pointers(Collective c, CommBuffer send, long sendBytes, CommBuffer recv, long recvBytes) {
    if (send instanceof CommBuffer.Host || recv instanceof CommBuffer.Host) {
      ensureScratch(align(sendBytes) + recvBytes);
      copyIn(send, scratchDevice, sendBytes);
      return new CallPointers(scratchDevice, scratchDevice + align(sendBytes), true);
    }
    long sendPtr = send == null ? 0 : ((CommBuffer.Device) send).address();
    long recvPtr = recv == null ? 0 : ((CommBuffer.Device) recv).address();
    checkAliasing(c, sendPtr, sendBytes, recvPtr, recvBytes);
    return new CallPointers(sendPtr, recvPtr, false);
  }

  /** Copies a staged result back to the host buffer and waits for it; nothing for device buffers. */
  private void finishStaged(Collective c, CallPointers p, CommBuffer recv, long recvBytes) {
    if (p.staged()) {
      copyOut(p.recv(), recv, recvBytes);
      waitStream(c);
    }
  }

  private void checkAliasing(Collective c, long send, long sendBytes, long recv, long recvBytes) {
    boolean overlap = send < recv + recvBytes && recv < send + sendBytes && sendBytes > 0 && recvBytes > 0;
    boolean inPlaceAllowed = c == Collective.ALL_REDUCE || c == Collective.BROADCAST;
    if (overlap && !(inPlaceAllowed && send == recv)) {
      throw new CollectiveException(rank, c, "send and recv overlap; only allReduce and broadcast run in place"
          + " (with send == recv)");
    }
  }

  private void enqueue(LaunchPlan plan, long sendPtr, long recvPtr, long count, DataType type, ReduceOp op, int root,
      long[][] a2av) {
    long fn = image.function(plan.kernel());
    KernelAbi.writeCall(launcher.args(), epochs.next(), sendPtr, recvPtr, count, type, op, root, a2av);
    try {
      launcher.launch(fn, plan.grid(), plan.block(), plan.sharedBytes(), stream);
    } catch (CudaException e) {
      broken = "launch of " + plan.kernel() + " failed: " + e.getMessage();
      throw new CollectiveException(rank, plan.collective(), broken + "; the group's epochs now disagree: close it", e);
    }
  }

  /** The non-spinning path: device -> pinned host -> host backend -> device, all before returning. */
  private void runStaged(Collective c, CommBuffer send, long sendBytes, CommBuffer recv, long recvBytes, long count,
      DataType type, ReduceOp op, int root) {
    if (c == Collective.BARRIER) {
      staged.barrier();
      return;
    }
    ensureHostStage(sendBytes + recvBytes);
    ByteBuffer in = hostView(hostStageHost, sendBytes);
    ByteBuffer out = hostView(hostStageHost + align(sendBytes), recvBytes);
    copyToHost(send, hostStageHost, in, sendBytes);
    waitStream(c);
    CommBuffer hin = CommBuffer.of(in);
    CommBuffer hout = CommBuffer.of(out);
    switch (c) {
      case ALL_REDUCE -> staged.allReduce(hin, hout, count, type, op);
      case ALL_GATHER -> staged.allGather(hin, hout, count, type);
      case REDUCE_SCATTER -> staged.reduceScatter(hin, hout, count, type, op);
      case ALL_TO_ALL -> staged.allToAll(hin, hout, count, type);
      case BROADCAST -> staged.broadcast(hin, hout, count, type, root);
      default -> throw new CollectiveException(rank, c, "not supported on " + STAGED_PATH);
    }
    copyFromHost(hostStageHost + align(sendBytes), out, recv, recvBytes);
    waitStream(c);
  }

  private static ByteBuffer hostView(long address, long bytes) {
    return new BytePointer(CudaNative.ptr(address)).capacity(bytes).asByteBuffer().order(ByteOrder.nativeOrder());
  }

  private void copyToHost(CommBuffer src, long hostAddr, ByteBuffer hostView, long bytes) {
    if (src instanceof CommBuffer.Device d) {
      CudaNative.memcpyAsync(hostAddr, d.address(), bytes, stream);
    } else {
      ByteBuffer b = HostBuffers.bytes((CommBuffer.Host) src, bytes);
      hostView.duplicate().put(b);
    }
  }

  private void copyFromHost(long hostAddr, ByteBuffer hostView, CommBuffer dst, long bytes) {
    if (dst instanceof CommBuffer.Device d) {
      CudaNative.memcpyAsync(d.address(), hostAddr, bytes, stream);
    } else {
      HostBuffers.write((CommBuffer.Host) dst, hostView.duplicate().limit((int) bytes));
    }
  }

  private void copyIn(CommBuffer src, long devicePtr, long bytes) {
    if (src instanceof CommBuffer.Device d) {
      CudaNative.memcpyAsync(devicePtr, d.address(), bytes, stream);
    } else if (bytes > 0) {
      ensureHostStage(bytes);
      ByteBuffer view = hostView(hostStageHost, bytes);
      view.put(HostBuffers.bytes((CommBuffer.Host) src, bytes));
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
      // cudaFree would synchronise the device while peers may be spinning: keep the old block until close.
      retired.add(scratchDevice);
      scratchDevice = CudaNative.malloc(Math.max(bytes, 1 << 20));
      scratchBytes = Math.max(bytes, 1 << 20);
    }
  }

  private final List<Long> retired = new ArrayList<>();

  private void ensureHostStage(long bytes) {
    if (bytes > hostStageBytes) {
      CudaNative.freeHost(hostStageHost);
      hostStageBytes = Math.max(bytes, 1 << 20);
      hostStageHost = CudaNative.hostAlloc(hostStageBytes);
    }
  }

  static long align(long bytes) {
    return (bytes + 255) & ~255L;
  }

  private void requireCapacity(Collective c, String which, CommBuffer b, long bytes) {
    if (b == null) {
      throw new CollectiveException(rank, c, which + " buffer is null");
    }
    if (b.byteCapacity() < bytes) {
      throw new CollectiveException(rank, c, which + " buffer holds " + b.byteCapacity() + " bytes; this call needs "
          + bytes);
    }
  }

  /**
   * Waits for the stream without blocking in the driver, so that a kernel that times out is seen
   * through the error record and a host-side deadline still holds if the kernel never returns.
   */
  private void waitStream(Collective c) {
    long deadline = System.nanoTime() + timeout.toNanos() + Duration.ofSeconds(5).toNanos();
    int spins = 0;
    while (!CudaNative.streamIdle(stream)) {
      if (control.failed()) {
        break;
      }
      if (System.nanoTime() > deadline) {
        control.abort();
        if (nccl != null) {
          nccl.abort(); // an NCCL call waiting for a dead peer never returns on its own
          broken = "NCCL aborted after a timeout";
        }
        throw new CollectiveTimeoutException(rank, c, List.of(), "the GPU stream did not finish within "
            + timeout + " (+5 s); kernels aborted");
      }
      if (++spins > 1000) {
        Thread.onSpinWait();
        if (spins > 20000) {
          sleepBriefly();
        }
      }
    }
    control.throwIfFailed(rank, c);
  }

  private static void sleepBriefly() {
    try {
      Thread.sleep(0, 50_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  // ---- reports ----

  @Override
  public PathChoice explain(Collective collective, long bytes) {
    if (staged != null) {
      return new PathChoice(collective, bytes, STAGED_PATH, List.of(String.join("; ", topology.crossProcessSharedGpus()),
          "spin kernels of different processes on one GPU time-slice: copy to host and run the host backend"));
    }
    String viaNccl = ncclChoice(collective, bytes);
    if (viaNccl != null) {
      return selector.explain(collective, bytes);
    }
    if (ncclOnly) {
      return new PathChoice(collective, bytes, "nccl", List.of(findings.stream()
          .filter(f -> f.startsWith("our kernels are off")).findFirst().orElse("our kernels are off")));
    }
    return planner.explain(collective, bytes);
  }

  @Override
  public List<String> observedPaths() {
    List<String> out = new ArrayList<>();
    observed.forEach((k, v) -> out.add(k + " x" + v));
    return out;
  }

  @Override
  public void addListener(CollectiveListener listener) {
    listeners.add(listener);
  }

  /**
   * Predicted path per collective and size (this communicator's own {@link #explain}), what ran (our
   * kernels' call counts, and the NCCL paths NCCL's own log confirms), and findings: topology, the
   * Zero-CTA verdict with every reason, and any prediction the log contradicts.
   */
  @Override
  public RankReport report() {
    GroupFacts groupFacts = GroupFacts.of(group.members());
    PathProof proof = null;
    if (nccl != null) {
      nccl.proveFromLog(groupFacts);
      proof = nccl.pathProof();
    }
    List<String> f = new ArrayList<>(findings);
    f.add("device " + device + ": " + facts.name() + " " + facts.uuid() + " (" + facts.pciBusId() + ", sm_"
        + facts.computeCapability() + ")");
    RankReport r = GpuPathReport.build(group.rendezvous().groupId(), rank, group.self().host(),
        group.rendezvous().kind(), groupFacts, this::explain, selector != null ? selector.ctaPolicy() : 0, f,
        observed, proof);
    return new RankReport(r.groupId(), r.rank(), r.size(), r.host(), backend(), r.rendezvous(), r.predicted(),
        r.observed(), r.findings());
  }

  /**
   * Like ncclCommSplit: one round of the parent's rendezvous gathers every rank's (color, key); each
   * color forms a new gpu communicator (own workspace, IPC exchange, NCCL when eligible) over a
   * {@link SplitRendezvous}; a negative color returns null. The children's formation rounds share the
   * parent's rendezvous, so a child cannot be split again.
   */
  @Override
  public GpuCommunicator split(int color, int key) {
    ensureOpen(null);
    List<byte[]> all = group.rendezvous().allGather(ByteBuffer.allocate(8).putInt(color).putInt(key).array(),
        timeout);
    List<int[]> mine = new ArrayList<>(); // {key, parent rank}
    for (int r = 0; r < all.size(); r++) {
      ByteBuffer b = ByteBuffer.wrap(all.get(r));
      int c = b.getInt();
      int k = b.getInt();
      if (color >= 0 && c == color) {
        mine.add(new int[] {k, r});
      }
    }
    mine.sort((x, y) -> x[0] != y[0] ? Integer.compare(x[0], y[0]) : Integer.compare(x[1], y[1]));
    int[] members = mine.stream().mapToInt(x -> x[1]).toArray();
    splits++;
    SplitRendezvous child = new SplitRendezvous(group.rendezvous(),
        group.rendezvous().groupId() + "/split" + splits + "(" + color + ")", members);
    CudaCommunicator out = null;
    try {
      if (color >= 0) {
        List<MemberInfo> childMembers = new ArrayList<>();
        for (int i = 0; i < members.length; i++) {
          MemberInfo m = group.members().get(members[i]);
          childMembers.add(new MemberInfo(i, m.host(), m.processId(), m.facts()));
        }
        CudaNative.setDevice(device);
        out = new CudaCommunicator(new GroupContext(child, childMembers, group.conf()), forced);
      }
    } finally {
      child.finish(timeout); // also when forming failed, so the other colors are not left waiting
    }
    return out;
  }

  @Override
  public boolean isClosed() {
    return closed;
  }

  private void ensureOpen(Collective c) {
    if (closed) {
      throw new CollectiveException(rank, c, "communicator is closed");
    }
    if (broken != null) {
      throw new CollectiveException(rank, c, "communicator is unusable after an earlier failure (" + broken
          + "); close it and form a new group");
    }
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    try {
      if (!CudaNative.streamIdle(stream)) {
        control.abort(); // peers may never come: make our kernels exit instead of waiting for the timeout
        CudaNative.streamSynchronize(stream);
      }
    } finally {
      if (staged != null) {
        staged.close();
      }
      if (nccl != null) {
        nccl.close();
      }
      CudaNative.streamDestroy(ownStream);
      List<Long> scratch = new ArrayList<>(retired);
      scratch.add(scratchDevice);
      long stage = hostStageHost;
      GpuWorkspace ws = workspace;
      DeviceMemoryReaper.closed(device, List.of(() -> {
        if (ws != null) {
          ws.close();
        }
      }, () -> scratch.forEach(CudaNative::free), () -> CudaNative.freeHost(stage), control::close));
    }
  }

  /** Abort word + error record in mapped host memory: the host reads what the kernels wrote. */
  final class ControlBlock {
    private final long host;
    private final long dev;
    private final ByteBuffer view;

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

    boolean failed() {
      return KernelAbi.errorCode(view) != 0;
    }

    void abort() {
      KernelAbi.setAbort(view);
    }

    void throwIfFailed(int rank, Collective c) {
      if (failed()) {
        CollectiveException e = KernelAbi.toException(view, rank, c);
        broken = e.getMessage();
        throw e;
      }
    }

    void close() {
      CudaNative.freeHost(host);
    }
  }
}
