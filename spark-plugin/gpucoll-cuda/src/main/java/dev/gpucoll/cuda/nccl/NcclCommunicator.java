package dev.gpucoll.cuda.nccl;

import dev.gpucoll.core.config.Durations;
import static org.bytedeco.cuda.global.nccl.NCCL_SPLIT_NOCOLOR;
import static org.bytedeco.cuda.global.nccl.NCCL_WIN_COLL_SYMMETRIC;
import static org.bytedeco.cuda.global.nccl.ncclInProgress;
import static org.bytedeco.cuda.global.nccl.ncclSuccess;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.CollectiveTimeoutException;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.core.rendezvous.Rendezvous;
import dev.gpucoll.core.wait.CallBounds;
import dev.gpucoll.cuda.eligibility.BufferRegistration;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import java.util.function.IntSupplier;
import org.bytedeco.cuda.cudart.CUstream_st;
import org.bytedeco.cuda.global.cudart;
import org.bytedeco.cuda.global.nccl;
import org.bytedeco.cuda.nccl.ncclComm;
import org.bytedeco.cuda.nccl.ncclConfig_t;
import org.bytedeco.cuda.nccl.ncclUniqueId;
import org.bytedeco.cuda.nccl.ncclWindow_vidmem;
import org.bytedeco.javacpp.IntPointer;
import org.bytedeco.javacpp.Loader;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.PointerPointer;

/**
 * One rank's NCCL communicator, through the JavaCPP presets: created from a unique id that rank 0
 * makes and the {@link Rendezvous} spreads, with a CTA policy in its config; split into
 * sub-communicators (rows and columns of a process grid); collectives on device buffers on a
 * stream; symmetric windows for Zero-CTA and NCCL's symmetric kernels; and the raw
 * {@code ncclComm_t} for libraries that take one (cuSOLVERMp, cuFFTMp).
 *
 * <p>The communicator is blocking (config.blocking = 1, NCCL's cheapest enqueue path; NCCL 2.28.3
 * also deregisters symmetric windows only on blocking communicators). Every call that can wait for
 * peers runs under the process's {@link NcclWatchdog}, as PyTorch's ProcessGroupNCCL does: past
 * its {@link CallBounds} timeout, or when its caller is cancelled (interrupt, Spark task kill), the
 * watchdog thread calls ncclCommAbort, the call returns, and it fails with a
 * {@link CollectiveException} naming the rank, the call and the reason instead of hanging.
 * ncclCommInitRankConfig itself cannot be watched (no handle exists until it returns): it relies on
 * the rendezvous round just before it. Functions newer than the loaded libnccl are never called
 * ({@link NcclLibrary}). Not thread-safe, like NCCL communicators.
 */
public final class NcclCommunicator implements AutoCloseable {
  private static final int UNIQUE_ID_BYTES = 128;
  private static final int CONFIG_MAGIC = 0xcafebeef;
  private static final int UNDEF = Integer.MIN_VALUE;

  private final NcclLibrary lib;
  private final ncclComm comm;
  private final int rank;
  private final int size;
  private final int device;
  private final int ctaPolicy;
  private final Duration timeout;
  private final PathProof proof;
  private final List<Window> windows = new ArrayList<>();
  private final List<String> deregisterFailures = new ArrayList<>();
  /** Per collective, the weakest buffer registration any call used (what the proof predicts with). */
  private final java.util.Map<Collective, BufferRegistration> callBuffers = new java.util.EnumMap<>(Collective.class);
  /** Per collective, the element types and reductions used (symmetric kernels depend on them). */
  private final java.util.Map<Collective, java.util.Set<DataType>> callTypes = new java.util.EnumMap<>(Collective.class);
  private final java.util.Map<Collective, java.util.Set<ReduceOp>> callOps = new java.util.EnumMap<>(Collective.class);
  /** Set once by close() or abort() (the latter possibly from the watchdog thread). */
  private final AtomicBoolean ended = new AtomicBoolean();

  /** A buffer range registered as an NCCL window. */
  public record Window(long address, long bytes, long handle) {
    boolean contains(long ptr, long len) {
      return ptr >= address && len >= 0 && ptr + len <= address + bytes;
    }
  }

  /** Memory from ncclMemAlloc registered as a symmetric window; close() deregisters and frees it. */
  public final class SymmetricBuffer implements AutoCloseable {
    private final Window window;
    private boolean freed;

    private SymmetricBuffer(Window window) {
      this.window = window;
    }

    public long address() {
      return window.address();
    }

    public long bytes() {
      return window.bytes();
    }

    @Override
    public void close() {
      if (!freed) {
        freed = true;
        deregister(window);
        nccl.ncclMemFree(ptr(window.address()));
      }
    }
  }

  private NcclCommunicator(NcclLibrary lib, ncclComm comm, int rank, int size, int device, int ctaPolicy,
      Duration timeout, String groupId) {
    this.lib = lib;
    this.comm = comm;
    this.rank = rank;
    this.size = size;
    this.device = device;
    this.ctaPolicy = ctaPolicy;
    this.timeout = timeout;
    this.proof = new PathProof(groupId, rank);
  }

  /** The loaded NCCL, or {@link NcclUnavailableException} "NCCL unavailable: why". */
  public static NcclLibrary requireLibrary() {
    return NcclLibrary.get();
  }

  /**
   * Creates this rank's communicator: rank 0 makes the unique id, one rendezvous round gives it to
   * every rank, then ncclCommInitRankConfig with {@code ctaPolicy} (NCCL_CTA_POLICY_* bits), a
   * blocking communicator whose waits the watchdog bounds.
   *
   * @throws NcclUnavailableException when NCCL cannot be loaded here
   * @throws CollectiveException      naming the rank when NCCL fails or peers do not come in time
   */
  public static NcclCommunicator create(Rendezvous rendezvous, int device, int ctaPolicy, Duration timeout) {
    NcclLibrary lib = requireLibrary();
    int rank = rendezvous.rank();
    int size = rendezvous.size();
    byte[] mine = new byte[0];
    if (rank == 0) {
      ncclUniqueId id = new ncclUniqueId();
      check(rank, null, nccl.ncclGetUniqueId(id), "ncclGetUniqueId");
      mine = new byte[UNIQUE_ID_BYTES];
      id.internal().get(mine);
    }
    byte[] idBytes = rendezvous.allGather(mine, timeout).get(0);
    if (idBytes == null || idBytes.length != UNIQUE_ID_BYTES) {
      throw new CollectiveException(rank, null, "rank 0 sent an NCCL unique id of "
          + (idBytes == null ? "null" : idBytes.length + " bytes") + ", expected " + UNIQUE_ID_BYTES);
    }
    ncclUniqueId id = new ncclUniqueId();
    id.internal().put(idBytes);
    checkCuda(rank, cudart.cudaSetDevice(device), "cudaSetDevice(" + device + ")");
    ncclConfig_t config = config(lib, ctaPolicy);
    PointerPointer<ncclComm> out = new PointerPointer<>(1);
    int rc = nccl.ncclCommInitRankConfig(out, size, id, rank, config);
    check(rank, null, rc, "ncclCommInitRankConfig(" + size + " ranks, CTA policy " + ctaPolicy + ")");
    return new NcclCommunicator(lib, new ncclComm(out.get(0)), rank, size, device, ctaPolicy, timeout,
        rendezvous.groupId());
  }

  /** ncclConfig_t as NCCL_CONFIG_INITIALIZER builds it, blocking, with the CTA policy. */
  private static ncclConfig_t config(NcclLibrary lib, int ctaPolicy) {
    ncclConfig_t c = new ncclConfig_t();
    // The bindings' struct is 2.29's; NCCL copies min(size, its own sizeof) bytes, so an older
    // library simply ignores the fields it does not know.
    c.size(Loader.sizeof(ncclConfig_t.class)).magic(CONFIG_MAGIC).version(lib.version())
        .blocking(1).cgaClusterSize(UNDEF).minCTAs(UNDEF).maxCTAs(UNDEF).netName(null).splitShare(UNDEF)
        .trafficClass(UNDEF).commName(null).collnetEnable(UNDEF).CTAPolicy(UNDEF).shrinkShare(UNDEF)
        .nvlsCTAs(UNDEF).nChannelsPerNetPeer(UNDEF).nvlinkCentricSched(UNDEF).graphUsageMode(UNDEF)
        .numRmaCtx(UNDEF);
    if (lib.has(NcclCapability.CTA_POLICY)) {
      c.CTAPolicy(ctaPolicy);
    } else if (ctaPolicy != 0) {
      throw new UnsupportedOperationException("CTA policy " + ctaPolicy + " needs NCCL >= 2.27.3; loaded "
          + lib.versionText());
    }
    return c;
  }

  /**
   * ncclCommSplit: ranks with the same color form a new communicator ordered by key; a negative color
   * takes no part and gets null. Every rank of this communicator must call it.
   */
  public NcclCommunicator split(int color, int key) {
    ensureOpen(null);
    lib.require(NcclCapability.COMM_SPLIT);
    checkCuda(rank, cudart.cudaSetDevice(device), "cudaSetDevice(" + device + ")");
    PointerPointer<ncclComm> out = new PointerPointer<>(1);
    String what = "ncclCommSplit(color " + color + ", key " + key + ")";
    int rc = blockingCall(what, null,
        () -> nccl.ncclCommSplit(comm, color < 0 ? NCCL_SPLIT_NOCOLOR : color, key, out, config(lib, ctaPolicy)));
    check(rc, what, null);
    if (color < 0) {
      return null;
    }
    ncclComm sub = new ncclComm(out.get(0));
    int[] n = new int[1];
    int[] r = new int[1];
    check(rank, null, nccl.ncclCommCount(sub, n), "ncclCommCount");
    check(rank, null, nccl.ncclCommUserRank(sub, r), "ncclCommUserRank");
    return new NcclCommunicator(lib, sub, r[0], n[0], device, ctaPolicy, timeout,
        "split(" + color + "," + key + ") of rank " + rank);
  }

  // ---------------------------------------------------------------- collectives (device pointers)

  public void allReduce(long send, long recv, long count, DataType type, ReduceOp op, long stream) {
    ensureOpen(Collective.ALL_REDUCE);
    noteBuffers(Collective.ALL_REDUCE, type, op, send, count * type.byteSize(), recv, count * type.byteSize());
    int t = ncclType(type);
    int o = ncclOp(op);
    finish("ncclAllReduce", Collective.ALL_REDUCE,
        () -> nccl.ncclAllReduce(ptr(send), ptr(recv), count, t, o, comm, stream(stream)));
  }

  public void allGather(long send, long recv, long count, DataType type, long stream) {
    ensureOpen(Collective.ALL_GATHER);
    noteBuffers(Collective.ALL_GATHER, type, null, send, count * type.byteSize(), recv, count * type.byteSize() * size);
    int t = ncclType(type);
    finish("ncclAllGather", Collective.ALL_GATHER,
        () -> nccl.ncclAllGather(ptr(send), ptr(recv), count, t, comm, stream(stream)));
  }

  public void reduceScatter(long send, long recv, long count, DataType type, ReduceOp op, long stream) {
    ensureOpen(Collective.REDUCE_SCATTER);
    noteBuffers(Collective.REDUCE_SCATTER, type, op, send, count * type.byteSize() * size, recv, count * type.byteSize());
    int t = ncclType(type);
    int o = ncclOp(op);
    finish("ncclReduceScatter", Collective.REDUCE_SCATTER,
        () -> nccl.ncclReduceScatter(ptr(send), ptr(recv), count, t, o, comm, stream(stream)));
  }

  public void broadcast(long send, long recv, long count, DataType type, int root, long stream) {
    ensureOpen(Collective.BROADCAST);
    if (root < 0 || root >= size) {
      throw new CollectiveException(rank, Collective.BROADCAST, "root " + root + " is not a rank of " + size);
    }
    noteBuffers(Collective.BROADCAST, type, null, send, count * type.byteSize(), recv, count * type.byteSize());
    int t = ncclType(type);
    finish("ncclBroadcast", Collective.BROADCAST,
        () -> nccl.ncclBroadcast(ptr(send), ptr(recv), count, t, root, comm, stream(stream)));
  }

  /** recv[r*count..] = send of rank r [rank*count..]: ncclAlltoAll (2.28+) or grouped send/recv. */
  public void allToAll(long send, long recv, long count, DataType type, long stream) {
    ensureOpen(Collective.ALL_TO_ALL);
    noteBuffers(Collective.ALL_TO_ALL, type, null, send, count * type.byteSize() * size, recv, count * type.byteSize() * size);
    if (lib.has(NcclCapability.ALL_TO_ALL)) {
      int t = ncclType(type);
      finish("ncclAlltoAll", Collective.ALL_TO_ALL,
          () -> nccl.ncclAlltoAll(ptr(send), ptr(recv), count, t, comm, stream(stream)));
      return;
    }
    long[] counts = new long[size];
    long[] displs = new long[size];
    for (int p = 0; p < size; p++) {
      counts[p] = count;
      displs[p] = p * count;
    }
    sendRecv(send, counts, displs, recv, counts, displs, type, stream, Collective.ALL_TO_ALL);
  }

  /** MPI_Alltoallv over grouped ncclSend/ncclRecv; counts and displacements in elements. */
  public void allToAllv(long send, long[] sendCounts, long[] sendDispls, long recv, long[] recvCounts,
      long[] recvDispls, DataType type, long stream) {
    ensureOpen(Collective.ALL_TO_ALLV);
    for (long[] a : new long[][] {sendCounts, sendDispls, recvCounts, recvDispls}) {
      if (a == null || a.length != size) {
        throw new CollectiveException(rank, Collective.ALL_TO_ALLV, "counts and displacements need "
            + size + " entries, got " + (a == null ? "null" : a.length));
      }
    }
    for (int p = 0; p < size; p++) {
      if (sendCounts[p] < 0 || recvCounts[p] < 0 || sendDispls[p] < 0 || recvDispls[p] < 0) {
        throw new CollectiveException(rank, Collective.ALL_TO_ALLV, "negative count or displacement for peer " + p);
      }
    }
    sendRecv(send, sendCounts, sendDispls, recv, recvCounts, recvDispls, type, stream, Collective.ALL_TO_ALLV);
  }

  private void sendRecv(long send, long[] sc, long[] sd, long recv, long[] rc, long[] rd, DataType type,
      long stream, Collective c) {
    long unit = type.byteSize();
    int t = ncclType(type);
    CUstream_st s = stream(stream);
    // The sends and receives only queue up; ncclGroupEnd launches them and is what may wait.
    finish("grouped ncclSend/ncclRecv", c, () -> {
      int status = nccl.ncclGroupStart();
      for (int p = 0; p < size && status == ncclSuccess; p++) {
        if (sc[p] > 0) {
          status = nccl.ncclSend(ptr(send + sd[p] * unit), sc[p], t, p, comm, s);
        }
        if (status == ncclSuccess && rc[p] > 0) {
          status = nccl.ncclRecv(ptr(recv + rd[p] * unit), rc[p], t, p, comm, s);
        }
      }
      int end = nccl.ncclGroupEnd();
      return status != ncclSuccess ? status : end;
    });
  }

  /**
   * Runs {@code calls} between ncclGroupStart and ncclGroupEnd: the collectives they issue on this
   * communicator only queue up, and ncclGroupEnd launches them together (what may wait, so it runs
   * under the watchdog). The group is ended also when {@code calls} throws.
   */
  public void group(Runnable calls) {
    ensureOpen(null);
    check(nccl.ncclGroupStart(), "ncclGroupStart", null);
    int end;
    try {
      calls.run();
    } finally {
      end = blockingCall("ncclGroupEnd", null, nccl::ncclGroupEnd);
    }
    check(end, "ncclGroupEnd", null);
  }

  // ---------------------------------------------------------------- symmetric windows

  /**
   * ncclMemAlloc + ncclCommWindowRegister(NCCL_WIN_COLL_SYMMETRIC). Collective: every rank calls it
   * with the same size, in the same order.
   */
  public SymmetricBuffer allocSymmetric(long bytes) {
    ensureOpen(null);
    lib.require(NcclCapability.MEM_ALLOC);
    lib.require(NcclCapability.WINDOW_REGISTER);
    checkCuda(rank, cudart.cudaSetDevice(device), "cudaSetDevice(" + device + ")");
    PointerPointer<Pointer> out = new PointerPointer<>(1);
    check(rank, null, nccl.ncclMemAlloc(out, bytes), "ncclMemAlloc(" + bytes + ")");
    long address = out.get(0).address();
    Registration reg = register(address, bytes);
    if (reg.window().isEmpty()) {
      nccl.ncclMemFree(ptr(address));
      throw new CollectiveException(rank, null, "ncclMemAlloc memory could not be registered: " + reg.refusal().orElse("?"));
    }
    return new SymmetricBuffer(reg.window().get());
  }

  /** A window, or why there is none. */
  public record Registration(Optional<Window> window, Optional<String> refusal) {}

  /**
   * Registers a user buffer as a symmetric window. Collective. Plain cudaMalloc memory is refused
   * before NCCL sees it: NCCL 2.28.3 fails to register it and the communicator then fails every
   * collective (recorded on two H200s, docs/zero-cta.md). A refusal is returned, not thrown, so the
   * caller reports it and carries on without the window.
   */
  public Registration register(long address, long bytes) {
    ensureOpen(null);
    if (!lib.has(NcclCapability.WINDOW_REGISTER)) {
      return new Registration(Optional.empty(), Optional.of("NCCL " + lib.versionText()
          + " has no ncclCommWindowRegister (2.27.3+)"));
    }
    Optional<String> notVmm = vmmProblem(address);
    if (notVmm.isPresent()) {
      return new Registration(Optional.empty(), notVmm);
    }
    checkCuda(rank, cudart.cudaSetDevice(device), "cudaSetDevice(" + device + ")");
    PointerPointer<Pointer> win = new PointerPointer<>(1);
    String what = "ncclCommWindowRegister(" + bytes + " B)";
    check(blockingCall(what, null,
        () -> nccl.ncclCommWindowRegister(comm, ptr(address), bytes, win, NCCL_WIN_COLL_SYMMETRIC)), what, null);
    long handle = win.get(0) == null ? 0 : win.get(0).address();
    if (handle == 0) {
      return new Registration(Optional.empty(), Optional.of("NCCL returned no window (unsupported here)"));
    }
    Window w = new Window(address, bytes, handle);
    windows.add(w);
    return new Registration(Optional.of(w), Optional.empty());
  }

  /** Why {@code address} cannot go into a window (it is cudaMalloc memory, or not device memory). */
  public static Optional<String> vmmProblem(long address) {
    IntPointer legacy = new IntPointer(1);
    int rc = cudart.cuPointerGetAttribute(legacy, cudart.CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, address);
    if (rc != 0) {
      return Optional.of("cuPointerGetAttribute failed (" + rc + "): not CUDA device memory?");
    }
    if (legacy.get() != 0) {
      return Optional.of("plain cudaMalloc memory (legacy CUDA IPC capable), not a cuMem/ncclMemAlloc"
          + " allocation; NCCL 2.28.3 fails to register it and then fails every collective");
    }
    return Optional.empty();
  }

  private void deregister(Window w) {
    if (windows.remove(w) && !ended.get()) {
      int rc = blockingCall("ncclCommWindowDeregister", null,
          () -> nccl.ncclCommWindowDeregister(comm, new ncclWindow_vidmem(ptr(w.handle()))));
      if (rc != ncclSuccess) {
        // The communicator stays usable; destroying it releases the window anyway. Say so, once.
        deregisterFailures.add("ncclCommWindowDeregister(window 0x" + Long.toHexString(w.handle()) + " at 0x"
            + Long.toHexString(w.address()) + "): " + nccl.ncclGetErrorString(rc).getString() + " [" + rc + "]");
      }
    }
  }

  /** Window deregistrations NCCL refused (the windows go with the communicator). */
  public List<String> deregisterFailures() {
    return List.copyOf(deregisterFailures);
  }

  private void noteBuffers(Collective c, DataType type, ReduceOp op, long send, long sendBytes, long recv,
      long recvBytes) {
    BufferRegistration now = windows.isEmpty() ? BufferRegistration.NONE
        : registrationOf(send, sendBytes, recv, recvBytes);
    // Keep the least registered: NONE < RECV_ONLY < SEND_AND_RECV.
    callBuffers.merge(c, now, (a, b) -> a.ordinal() <= b.ordinal() ? a : b);
    callTypes.computeIfAbsent(c, k -> java.util.EnumSet.noneOf(DataType.class)).add(type);
    if (op != null) {
      callOps.computeIfAbsent(c, k -> java.util.EnumSet.noneOf(ReduceOp.class)).add(op);
    }
  }

  /**
   * The runtime proof for every collective that ran on this communicator: predictions from the
   * detector over {@code facts} with the buffers the calls really used, observations from this
   * process's NCCL log. Returns the proof's findings (also in {@link #pathProof()}); a contradiction
   * is logged as a WARNING and counted. Call it after the collectives completed.
   */
  public List<String> proveFromLog(dev.gpucoll.cuda.eligibility.GroupFacts facts) {
    synchronized (proof) {
      callBuffers.forEach((c, buffers) -> {
        java.util.Set<DataType> types = callTypes.getOrDefault(c, java.util.Set.of());
        java.util.Set<ReduceOp> ops = callOps.getOrDefault(c, java.util.Set.of());
        // One type and one op: the prediction can say which kernel; mixed calls leave it unverified.
        DataType t = types.size() == 1 ? types.iterator().next() : null;
        ReduceOp o = ops.size() == 1 ? ops.iterator().next() : null;
        proof.predict(c, dev.gpucoll.cuda.eligibility.ZeroCtaDetector.evaluate(facts, ctaPolicy, c, buffers, t, o)
            .predicted());
      });
    }
    proof.checkLog(System.getenv(), ProcessHandle.current().pid(), rank == 0);
    return proof.findings();
  }

  /** What the detector needs to know about a call's buffers. */
  public BufferRegistration registrationOf(long send, long sendBytes, long recv, long recvBytes) {
    // Plain loops: this runs on every call, and a stream per lookup allocates.
    boolean s = false;
    boolean r = false;
    for (int i = 0, n = windows.size(); i < n; i++) {
      Window w = windows.get(i);
      s |= w.contains(send, sendBytes);
      r |= w.contains(recv, recvBytes);
    }
    return s && r ? BufferRegistration.SEND_AND_RECV : r ? BufferRegistration.RECV_ONLY : BufferRegistration.NONE;
  }

  // ---------------------------------------------------------------- state

  public int rank() {
    return rank;
  }

  public int size() {
    return size;
  }

  public int device() {
    return device;
  }

  public int ctaPolicy() {
    return ctaPolicy;
  }

  public NcclLibrary library() {
    return lib;
  }

  /** The raw ncclComm_t, owned by this object: do not destroy it. 0 once closed. */
  public long address() {
    return ended.get() ? 0 : comm.address();
  }

  /** Calls and the NCCL log's verdict on the paths they took. */
  public PathProof pathProof() {
    return proof;
  }

  /**
   * Waits until {@code stream} has drained, watching NCCL meanwhile: an asynchronous NCCL error, or
   * the stream still busy after the timeout (a peer that never joined a collective), aborts the
   * communicator (ncclCommAbort also ends the stuck kernels) and throws naming the rank.
   */
  public void synchronize(long stream, Collective pending) {
    ensureOpen(pending);
    CUstream_st s = stream(stream);
    CallBounds bounds = CallBounds.current(timeout);
    long deadline = System.nanoTime() + bounds.timeoutNanos();
    int[] state = new int[1];
    for (int spins = 0; ; spins++) {
      int q = cudart.cudaStreamQuery(s);
      if (q == cudart.cudaSuccess) {
        return;
      }
      if (q != cudart.cudaErrorNotReady) {
        abort();
        throw new CollectiveException(rank, pending, "CUDA error while waiting for the stream: "
            + cudart.cudaGetErrorString(q).getString() + "; communicator aborted");
      }
      nccl.ncclCommGetAsyncError(comm, state);
      if (state[0] != ncclSuccess && state[0] != ncclInProgress) {
        String why = describe(state[0]);
        abort();
        throw new CollectiveException(rank, pending, "NCCL asynchronous error: " + why + "; communicator aborted");
      }
      if (System.nanoTime() > deadline) {
        abort();
        throw new CollectiveTimeoutException(rank, pending, List.of(), "stream still busy after "
            + Durations.format(bounds.timeout()) + ": a peer did not join the collective; communicator aborted");
      }
      if (spins > 1000) {
        String cancelled = bounds.cancellation();
        if (cancelled != null) {
          abort();
          throw new CollectiveException(rank, pending, "cancelled while waiting for the stream: " + cancelled
              + "; communicator aborted");
        }
        LockSupport.parkNanos(20_000);
      }
    }
  }

  /** Throws (after aborting) when NCCL reported an asynchronous error, e.g. a peer that died. */
  public void checkAsyncError() {
    ensureOpen(null);
    int[] state = new int[1];
    nccl.ncclCommGetAsyncError(comm, state);
    if (state[0] != ncclSuccess && state[0] != ncclInProgress) {
      String why = describe(state[0]);
      abort();
      throw new CollectiveException(rank, null, "NCCL asynchronous error: " + why + "; communicator aborted");
    }
  }

  /**
   * ncclCommAbort: frees the communicator at once, ending any operation in flight (also one blocked
   * on another thread: the watchdog calls this). Idempotent.
   */
  public void abort() {
    if (ended.compareAndSet(false, true)) {
      nccl.ncclCommAbort(comm);
    }
  }

  /** Deregisters windows, then ncclCommFinalize + ncclCommDestroy; aborts when that does not finish in time. */
  @Override
  public void close() {
    if (ended.get()) {
      return;
    }
    try {
      cudart.cudaSetDevice(device);
      for (Window w : new ArrayList<>(windows)) {
        deregister(w);
      }
      check(blockingCall("ncclCommFinalize", null, () -> nccl.ncclCommFinalize(comm)), "ncclCommFinalize", null);
      if (ended.compareAndSet(false, true)) {
        nccl.ncclCommDestroy(comm);
      }
    } catch (RuntimeException e) {
      abort();
      throw e;
    }
  }

  public boolean isClosed() {
    return ended.get();
  }

  // ---------------------------------------------------------------- helpers

  private void ensureOpen(Collective c) {
    if (ended.get()) {
      throw new CollectiveException(rank, c, "the NCCL communicator is closed");
    }
  }

  private void finish(String what, Collective c, IntSupplier call) {
    check(blockingCall(what, c, call), what, c);
    proof.recordCall(c);
  }

  /**
   * Runs a blocking NCCL call under the process's watchdog with the caller's bounds; when the
   * watchdog aborted the communicator (timeout or cancellation) the call fails saying so.
   */
  private int blockingCall(String what, Collective c, IntSupplier call) {
    int rc;
    NcclWatchdog.Watch watch = NcclWatchdog.PROCESS.watch("rank " + rank + " " + what, CallBounds.current(timeout),
        this::abort);
    try {
      rc = call.getAsInt();
    } finally {
      watch.close();
    }
    String why = watch.abortReason();
    if (why != null) {
      throw watch.timedOut()
          ? new CollectiveTimeoutException(rank, c, List.of(), why + " (a peer missing?); communicator aborted")
          : new CollectiveException(rank, c, why + "; communicator aborted");
    }
    return rc;
  }

  /** An NCCL error code other than success aborts the communicator and throws. */
  private void check(int rc, String what, Collective c) {
    if (rc != ncclSuccess) {
      String why = describe(rc);
      abort();
      throw new CollectiveException(rank, c, what + " failed: " + why + "; communicator aborted");
    }
  }

  private String describe(int rc) {
    String s = nccl.ncclGetErrorString(rc).getString();
    if (lib.has(NcclCapability.GET_LAST_ERROR) && !ended.get()) {
      String last = nccl.ncclGetLastError(comm).getString();
      if (last != null && !last.isBlank()) {
        s += " (" + last.trim() + ")";
      }
    }
    return s + " [" + rc + "]";
  }

  private static void check(int rank, Collective c, int rc, String what) {
    if (rc != ncclSuccess) {
      throw new CollectiveException(rank, c, what + " failed: " + nccl.ncclGetErrorString(rc).getString()
          + " [" + rc + "]");
    }
  }

  private static void checkCuda(int rank, int rc, String what) {
    if (rc != 0) {
      throw new CollectiveException(rank, null, what + " failed: " + cudart.cudaGetErrorString(rc).getString());
    }
  }

  static Pointer ptr(long a) {
    return new Pointer() {
      {
        address = a;
      }
    };
  }

  private static CUstream_st stream(long s) {
    return new CUstream_st(ptr(s));
  }

  int ncclType(DataType t) {
    return switch (t) {
      case FLOAT32 -> nccl.ncclFloat32;
      case FLOAT64 -> nccl.ncclFloat64;
      case FLOAT16 -> nccl.ncclFloat16;
      case BFLOAT16 -> {
        lib.require(NcclCapability.BFLOAT16);
        yield nccl.ncclBfloat16;
      }
      case INT32 -> nccl.ncclInt32;
      case INT64 -> nccl.ncclInt64;
      case INT8 -> nccl.ncclInt8;
      case UINT8 -> nccl.ncclUint8;
    };
  }

  int ncclOp(ReduceOp op) {
    return switch (op) {
      case SUM -> nccl.ncclSum;
      case PROD -> nccl.ncclProd;
      case MIN -> nccl.ncclMin;
      case MAX -> nccl.ncclMax;
      case AVG -> {
        lib.require(NcclCapability.AVG_OP);
        yield nccl.ncclAvg;
      }
    };
  }
}
