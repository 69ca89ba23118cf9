package dev.gpucoll.cuda;

import dev.gpucoll.core.buffers.HostBuffers;
import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.CollectiveListener;
import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.GpuCommunicator;
import dev.gpucoll.api.LocOp;
import dev.gpucoll.api.PairType;
import dev.gpucoll.api.PathChoice;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.core.Algorithm;
import dev.gpucoll.core.UnexpectedError;
import dev.gpucoll.core.batch.GroupAgreement;
import dev.gpucoll.core.batch.RecordedBatch;
import dev.gpucoll.core.pairs.PairFold;
import dev.gpucoll.core.spi.AllToAllvLayout;
import dev.gpucoll.core.config.GpuCollConf;
import dev.gpucoll.core.report.RankReport;
import dev.gpucoll.core.report.ReportingCommunicator;
import dev.gpucoll.core.spi.GroupContext;
import dev.gpucoll.core.spi.MemberInfo;
import dev.gpucoll.core.spi.SplitOrder;
import dev.gpucoll.cuda.GroupRoute.Route;
import dev.gpucoll.cuda.eligibility.BufferRegistration;
import dev.gpucoll.cuda.eligibility.GroupFacts;
import dev.gpucoll.cuda.nccl.PathProof;
import dev.gpucoll.cuda.select.GpuPathReport;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * One rank of a GPU group. Each call asks the group's {@link GroupRoute} which path it takes and
 * runs it on {@link CallPaths}: our kernels ({@link KernelCalls}), NCCL ({@link NcclCalls}) or the
 * non-spinning staged path ({@link StagedCalls}). Device buffers are enqueued on {@link #stream()};
 * host buffers are staged through device scratch and complete before the call returns
 * ({@link DeviceStage}). This class validates calls and owns the lifecycle; {@link CallLedger}
 * counts what ran for the report, {@link CaptureGuard} keeps the capture rules.
 */
final class CudaCommunicator implements GpuCommunicator, ReportingCommunicator {
  private final GroupContext group;
  private final int rank;
  private final int size;
  private final int device;
  private final DeviceFacts facts;
  private final Duration timeout;
  private final GroupRoute route;
  private final DeviceStage stage;
  /** The paths the route runs calls on, formed with the group. */
  private final CallPaths paths;
  /** Null when our kernels are off for this group. */
  private final KernelCalls kernels;
  /** Null when the group has no NCCL communicator. */
  private final NcclCalls nccl;
  private final List<String> findings = new ArrayList<>();
  private final CallLedger ledger = new CallLedger();
  private final CaptureGuard capture;
  private int splits;
  private boolean closed;
  /** True while a {@link #group} body records its batch. */
  private boolean recording;

  private CudaCommunicator(GroupContext group) {
    this.group = group;
    this.rank = group.rank();
    this.size = group.size();
    this.device = CudaNative.currentDevice();
    CudaNative.setDevice(device);
    this.facts = CudaNative.deviceFacts(device);
    this.timeout = group.conf().get(GpuCollConf.TIMEOUT);
    this.route = new GroupRoute(rank, group.members(), group.conf());
    findings.addAll(route.findings());
    this.stage = new DeviceStage(rank, timeout);
    this.capture = new CaptureGuard(rank, stage);
    this.paths = CallPaths.form(group, route, device, facts, timeout, stage, findings);
    this.kernels = paths.kernels();
    this.nccl = paths.nccl();
  }

  static CudaCommunicator create(GroupContext group) {
    return new CudaCommunicator(group);
  }

  // ---- GpuCommunicator ----

  @Override
  public int device() {
    return device;
  }

  @Override
  public long stream() {
    return stage.stream();
  }

  @Override
  public void setStream(long cudaStream) {
    ensureOpen(null);
    capture.refuseWhileCapturing("setStream");
    stage.setStream(cudaStream);
  }

  @Override
  public void synchronize() {
    ensureOpen(null);
    capture.refuseWhileCapturing("synchronize");
    stage.waitStream(null);
    if (nccl != null) {
      nccl.communicator().checkAsyncError();
    }
  }

  @Override
  public long ncclComm() {
    return nccl == null ? 0 : nccl.communicator().address();
  }

  @Override
  public SymmetricMemory allocSymmetric(long bytes) {
    if (bytes <= 0) {
      throw new IllegalArgumentException("symmetric memory size must be positive, got " + bytes + " bytes");
    }
    ensureOpen(null);
    capture.refuseWhileCapturing("allocSymmetric");
    if (nccl == null) {
      String why = findings.stream().filter(f -> f.startsWith("no NCCL communicator")).findFirst()
          .orElse("no NCCL communicator");
      throw new CollectiveException(rank, null, "symmetric memory needs the group's NCCL communicator: " + why);
    }
    return nccl.allocSymmetric(bytes);
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
  public String unusableReason() {
    return stage.unusableReason();
  }

  @Override
  public String backend() {
    return GpuBackend.NAME;
  }

  /** The epoch of the most recent kernel launch (for tests and reports). */
  long epoch() {
    return kernels == null ? 0 : kernels.epoch();
  }

  // ---- collectives ----

  @Override
  public void allReduce(CommBuffer send, CommBuffer recv, long count, DataType type, ReduceOp op) {
    run(Collective.ALL_REDUCE, send, count, recv, count, count, type, op, 0);
  }

  /**
   * MAXLOC / MINLOC, as {@link GroupRoute#pairRoute} says: on the pair kernel, enqueued like any
   * kernel call (capturable on device buffers), whose NaN refusal is recorded on every rank and
   * raised where the host next waits for the stream ({@link DeviceStage.ControlBlock}); or through
   * the host ({@link #allReduceThroughHost}). The checks are the same on both paths.
   */
  @Override
  public void allReduce(CommBuffer send, CommBuffer recv, long count, PairType type, LocOp op) {
    Collective c = Collective.ALL_REDUCE;
    ensureOpen(c);
    if (type == null || op == null) {
      throw new CollectiveException(rank, c, type == null ? "pair type is null" : "MAXLOC/MINLOC op is null");
    }
    if (count < 0 || count > Integer.MAX_VALUE / size / type.byteSize()) {
      throw new CollectiveException(rank, c, "count " + count + " is out of range (0 to "
          + Integer.MAX_VALUE / size / type.byteSize() + " pairs per rank)");
    }
    int bytes = (int) count * type.byteSize();
    requireCapacity(c, "send", send, bytes);
    requireCapacity(c, "recv", recv, bytes);
    for (String why : new String[] {PairFold.hostBufferProblem(send, "send"), PairFold.hostBufferProblem(recv, "recv")}) {
      if (why != null) {
        throw new CollectiveException(rank, c, why);
      }
    }
    stage.checkAliasing(c, send, bytes, recv, bytes);
    GroupRoute.PairRoute r = count == 0 ? null : kernels == null
        ? new GroupRoute.PairRoute(type, op, count, null, "our kernels are off") : route.pairRoute(type, op, count);
    // As refuseUncapturable: CUDA is asked only for a call that would be refused.
    String uncapturable = r == null ? null : r.plan() == null ? "MAXLOC/MINLOC fold the gathered pairs on the host"
        + " here (" + r.throughHost() + "); call them outside the capture"
        : CaptureRules.refusal(c, send, recv, GroupRoute.Kind.KERNEL);
    capture.refuse(c, uncapturable);
    long start = System.nanoTime();
    if (count == 0) {
      ledger.count(c, Algorithm.NOOP_EMPTY);
      ledger.tell(c, op, Algorithm.NOOP_EMPTY, 0, start);
      return;
    }
    if (r.plan() == null) {
      allReduceThroughHost(send, recv, (int) count, type, op, bytes, start);
      return;
    }
    try {
      kernels.runPairs(r.plan(), send, recv, type, op);
    } catch (Throwable t) {
      throw failure(c, t);
    }
    ledger.count(c, r.plan().algorithm());
    ledger.tell(c, op, r.plan().algorithm(), bytes, start);
  }

  /**
   * MAXLOC / MINLOC through the host, where the pair kernel cannot run: this rank's pairs are copied
   * to the host (waiting for the stream), gathered with this group's allGather on host buffers (its
   * own route, counted as that allGather), folded by {@link PairFold} as on the host backend, and
   * the result copied to recv (waiting again). Not capturable.
   */
  private void allReduceThroughHost(CommBuffer send, CommBuffer recv, int count, PairType type, LocOp op, int bytes,
      long start) {
    Collective c = Collective.ALL_REDUCE;
    java.nio.ByteBuffer mine = java.nio.ByteBuffer.allocate(bytes).order(java.nio.ByteOrder.nativeOrder());
    try {
      mine.put(stage.toHost(c, send, bytes, null, 0).in().duplicate()).clear();
    } catch (Throwable t) {
      throw failure(c, t);
    }
    java.nio.ByteBuffer gathered = java.nio.ByteBuffer.allocate(bytes * size).order(java.nio.ByteOrder.nativeOrder());
    Algorithm gather = ledger.pairGather(op, () -> allGather(CommBuffer.of(mine), CommBuffer.of(gathered), bytes,
        DataType.UINT8));
    String nan = PairFold.nanProblem(gathered, size, count, type, op);
    if (nan != null) {
      throw new CollectiveException(rank, c, nan);
    }
    java.nio.ByteBuffer result = java.nio.ByteBuffer.allocate(bytes).order(java.nio.ByteOrder.nativeOrder());
    PairFold.fold(gathered, size, count, type, op, result);
    try {
      if (recv instanceof CommBuffer.Host h) {
        HostBuffers.write(h, result);
      } else {
        DeviceStage.HostStage back = stage.toHost(c, CommBuffer.of(result.duplicate()), bytes, null, bytes);
        back.out().duplicate().put(result.duplicate());
        stage.fromHost(c, back, recv, bytes);
      }
    } catch (Throwable t) {
      throw failure(c, t);
    }
    ledger.tell(c, op, gather, (long) bytes * size, start);
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
    if (type == null) {
      throw new CollectiveException(rank, c, "data type is null");
    }
    AllToAllvPlan.check(rank, size, sendCounts, sendDispls, recvCounts, recvDispls);
    long e = type.byteSize();
    long sendBytes = AllToAllvLayout.extent(sendCounts, sendDispls) * e;
    long recvBytes = AllToAllvLayout.extent(recvCounts, recvDispls) * e;
    requireCapacity(c, "send", send, sendBytes);
    requireCapacity(c, "recv", recv, recvBytes);
    stage.checkAliasing(c, send, sendBytes, recv, recvBytes);
    Route r = route.route(c, AllToAllvPlan.maxBlock(sendCounts, recvCounts), type, ReduceOp.SUM,
        BufferRegistration.UNKNOWN);
    capture.refuse(c, CaptureRules.refusal(c, send, recv, r.kind()));
    if (r.kind() == GroupRoute.Kind.ONE_RANK && sendCounts[0] != recvCounts[0]) {
      throw new CollectiveException(rank, c, "one rank sends " + sendCounts[0] + " elements to itself but expects "
          + recvCounts[0]);
    }
    GpuCall call = new GpuCall(c, send, sendBytes, recv, recvBytes, 0, type, ReduceOp.SUM, 0,
        new long[][] {sendCounts.clone(), sendDispls.clone(), recvCounts.clone(), recvDispls.clone()});
    execute(new Checked(call, r));
  }

  @Override
  public void broadcast(CommBuffer send, CommBuffer recv, long count, DataType type, int root) {
    run(Collective.BROADCAST, send, count, recv, count, count, type, ReduceOp.SUM, root);
  }

  @Override
  public void barrier() {
    if (capture.capturing()) {
      throw new CollectiveException(rank, Collective.BARRIER,
          CaptureRules.message(CaptureRules.refusal(Collective.BARRIER, null, null, GroupRoute.Kind.KERNEL)));
    }
    run(Collective.BARRIER, null, 0, null, 0, 0, DataType.INT32, ReduceOp.SUM, 0);
    stage.waitStream(Collective.BARRIER);
  }

  /** Checks one call, asks the route, and runs it. */
  private void run(Collective c, CommBuffer send, long sendElems, CommBuffer recv, long recvElems, long count,
      DataType type, ReduceOp op, int root) {
    execute(check(c, send, sendElems, recv, recvElems, count, type, op, root));
  }

  /** One call whose every check passed, and its route (null: an empty call, nothing to run). */
  record Checked(GpuCall call, Route route) {}

  /**
   * Every check of one call that needs no device work, in one place: the communicator open, count,
   * type and op present, buffers large enough and not overlapping, the root, the route's refusals
   * (type, op, a forced protocol's capacity) and the capture rules. Nothing is enqueued here, so a
   * batch checks all its calls before any runs.
   *
   * @param sendElems elements read from send; recvElems elements written to recv
   */
  private Checked check(Collective c, CommBuffer send, long sendElems, CommBuffer recv, long recvElems, long count,
      DataType type, ReduceOp op, int root) {
    ensureOpen(c);
    if (count < 0) {
      throw new CollectiveException(rank, c, "count is negative: " + count);
    }
    if (type == null) {
      throw new CollectiveException(rank, c, "data type is null");
    }
    if (op == null) {
      throw new CollectiveException(rank, c, "reduction op is null");
    }
    if (c == Collective.BROADCAST && (root < 0 || root >= size)) {
      throw new CollectiveException(rank, c, "root " + root + " is not a rank of this group of " + size);
    }
    long sendBytes = sendElems * type.byteSize();
    long recvBytes = recvElems * type.byteSize();
    if (c != Collective.BARRIER) {
      requireCapacity(c, "send", send, sendBytes);
      requireCapacity(c, "recv", recv, recvBytes);
      stage.checkAliasing(c, send, sendBytes, recv, recvBytes);
    }
    GpuCall call = GpuCall.of(c, send, sendBytes, recv, recvBytes, count, type, op, root);
    if (count == 0 && c != Collective.BARRIER) {
      // Every rank passes the same count, so every rank skips: epochs stay in step.
      return new Checked(call, null);
    }
    Route r = route.route(c, count, type, op, paths.registration(send, sendBytes, recv, recvBytes));
    capture.refuse(c, CaptureRules.refusal(c, send, recv, r.kind()));
    return new Checked(call, r);
  }

  /** Runs a checked call on its route. */
  private void execute(Checked checked) {
    GpuCall k = checked.call();
    Collective c = k.collective();
    long start = System.nanoTime();
    Route r = checked.route();
    if (r == null) {
      ledger.observed(c, Algorithm.NOOP_EMPTY, 0, start);
      return;
    }
    try {
      paths.run(k, r);
    } catch (Throwable t) {
      throw failure(c, t);
    }
    ledger.observed(c, r.algorithm(), r.kind() == GroupRoute.Kind.KERNEL ? r.plan().bytes()
        : Math.max(k.sendBytes(), k.recvBytes()), start);
  }

  // ---- grouped calls and graph capture ----

  /**
   * Records the batch and checks every call as its own method would; every rank then agrees through
   * {@link GroupAgreement} (one small allGather over the {@link HostGroup}, on every path): a body
   * that threw, a refused call or a batch that differs on one rank fails every rank at once, before
   * anything is enqueued, and the group stays usable. Then it enqueues the batch as
   * {@link GroupRoute#group} plans it (the one place that decides which calls fuse): each fused run
   * is one {@link KernelCalls#runBatch} launch, every other call runs on its own route, inside the
   * NCCL group when the group has NCCL; a batch with a host buffer, and the staged path, run call
   * by call. What is fused: {@link GpuCommunicator#group}.
   */
  @Override
  public void group(java.util.function.Consumer<dev.gpucoll.api.CollectiveBatch> calls) {
    ensureOpen(null);
    List<Checked> checked = new ArrayList<>();
    GroupAgreement.Proposal mine = GroupAgreement.propose(
        () -> GroupAgreement.recordBetween(calls, () -> recording = true, () -> recording = false), call -> {
          try {
            checked.add(check(call.collective(), call.send(), call.sendCount(size), call.recv(), call.recvCount(size),
                call.count(), call.type(), call.op(), call.root()));
            return null;
          } catch (CollectiveException e) {
            return e;
          }
        });
    GroupAgreement.agree(rank, mine, paths.agreement(), t -> failure(null, t));
    RecordedBatch batch = mine.batch();
    List<RecordedBatch.Call> list = batch.calls();
    if (list.isEmpty()) {
      return;
    }
    boolean host = list.stream().anyMatch(c -> c.send() instanceof CommBuffer.Host || c.recv() instanceof CommBuffer.Host);
    List<GroupRoute.GroupStep> steps = kernels == null || paths.staged() || host ? null
        : route.group(list, c -> paths.registration(c.send(), c.sendCount(size) * c.type().byteSize(), c.recv(),
            c.recvCount(size) * c.type().byteSize()));
    if (nccl == null || host) {
      runGroupCalls(batch, checked, steps);
    } else {
      nccl.communicator().group(() -> runGroupCalls(batch, checked, steps));
    }
  }

  /** The batch's steps in order: fused runs through the batch kernel, every other call (all, when {@code steps} is null) alone. */
  private void runGroupCalls(RecordedBatch batch, List<Checked> checked, List<GroupRoute.GroupStep> steps) {
    if (steps == null) {
      checked.forEach(this::execute);
      return;
    }
    List<RecordedBatch.Call> list = batch.calls();
    long[] sig = batch.signature();
    long hash = sig[1] ^ (sig[0] * 0x9E3779B97F4A7C15L);
    for (GroupRoute.GroupStep step : steps) {
      if (step.fused()) {
        runFused(list, step, hash);
      } else {
        execute(checked.get(step.first()));
      }
    }
  }

  /** One run of checked allReduces as one batch-kernel launch. */
  private void runFused(List<RecordedBatch.Call> list, GroupRoute.GroupStep step, long hash) {
    Collective c = Collective.ALL_REDUCE;
    long start = System.nanoTime();
    try {
      paths.runFused(list, step, hash);
    } catch (Throwable t) {
      throw failure(c, t);
    }
    for (int i = 0; i < step.calls(); i++) {
      RecordedBatch.Call call = list.get(step.first() + i);
      ledger.observed(c, Algorithm.GPU_LL_ONESHOT, call.count() * call.type().byteSize(), start);
    }
  }

  @Override
  public CapturedGraph capture(Runnable step) {
    if (step == null) {
      throw new IllegalArgumentException("capture step is null");
    }
    ensureOpen(null);
    return capture.capture(step, () -> ensureOpen(null));
  }

  /**
   * A CollectiveException as it is; any other error (a CUDA error, an OutOfMemoryError, a bug)
   * leaves the group's state unknown: the communicator refuses later calls and the caller gets a
   * CollectiveException with the cause, never a raw Error (Spark ends the executor JVM on one).
   */
  private CollectiveException failure(Collective c, Throwable t) {
    if (t instanceof CollectiveException e) {
      return e;
    }
    stage.markBroken("unexpected " + t);
    return new CollectiveException(rank, c, "unexpected " + t + "; the communicator is unusable",
        UnexpectedError.causeFor(t));
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

  // ---- reports ----

  @Override
  public PathChoice explain(Collective collective, long bytes) {
    return route.explain(collective, bytes);
  }

  @Override
  public List<String> observedPaths() {
    return RankReport.observedPaths(ledger.counts(true));
  }

  @Override
  public void addListener(CollectiveListener listener) {
    ledger.addListener(listener);
  }

  /**
   * Predicted path per collective and size (the route's own {@link #explain}), what ran (our
   * kernels' and the staged path's call counts, and the NCCL paths NCCL's own log confirms), and
   * findings: topology, the Zero-CTA verdict with every reason, and any prediction the log contradicts.
   */
  @Override
  public RankReport report() {
    GroupFacts groupFacts = GroupFacts.of(group.members());
    if (nccl != null) {
      nccl.communicator().proveFromLog(groupFacts);
    }
    PathProof proof = nccl == null ? null : nccl.communicator().pathProof();
    List<String> f = new ArrayList<>(findings);
    f.add("device " + device + ": " + facts.name() + " " + facts.uuid() + " (" + facts.pciBusId() + ", sm_"
        + facts.computeCapability() + ")");
    // NCCL calls are counted by the proof (confirmed by NCCL's log, or "nccl-unconfirmed"), not twice.
    RankReport r = GpuPathReport.build(group.rendezvous().groupId(), rank, group.self().host(),
        group.rendezvous().kind(), groupFacts, this::explain, route.ctaPolicy(), f, ledger.counts(proof == null), proof);
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
    capture.refuseWhileCapturing("split");
    int[] members = SplitOrder.members(group.rendezvous().allGather(SplitOrder.payload(color, key), timeout), color);
    int split = ++splits;
    SplitRendezvous child = new SplitRendezvous(group.rendezvous(),
        group.rendezvous().groupId() + "/split" + split + "(" + color + ")", members);
    CudaCommunicator out = null;
    try {
      if (color >= 0) {
        List<MemberInfo> childMembers = new ArrayList<>();
        for (int i = 0; i < members.length; i++) {
          MemberInfo m = group.members().get(members[i]);
          childMembers.add(new MemberInfo(i, m.host(), m.processId(), m.facts()));
        }
        CudaNative.setDevice(device);
        out = new CudaCommunicator(new GroupContext(child, childMembers, group.conf()));
        for (CollectiveListener l : ledger.listeners()) {
          CollectiveListener of = l.onSplit(split);
          if (of != null) {
            out.addListener(of);
          }
        }
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
    if (recording) {
      throw new CollectiveException(rank, c, "called on the communicator inside group(): record the call on the"
          + " batch the group's body receives");
    }
    stage.checkUsable(c);
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    paths.close();
  }
}
