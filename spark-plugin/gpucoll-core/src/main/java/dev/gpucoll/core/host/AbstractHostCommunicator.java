package dev.gpucoll.core.host;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.CollectiveListener;
import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.LocOp;
import dev.gpucoll.api.PairType;
import dev.gpucoll.api.PathChoice;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.core.Algorithm;
import dev.gpucoll.core.UnexpectedError;
import dev.gpucoll.core.config.GpuCollConf;
import dev.gpucoll.core.report.RankReport;
import dev.gpucoll.core.spi.RefusingCommunicator;
import dev.gpucoll.api.InvalidArgumentException;
import dev.gpucoll.core.spi.SplitOrder;
import dev.gpucoll.core.report.ReportingCommunicator;
import dev.gpucoll.core.wait.CallBounds;
import dev.gpucoll.api.CollectiveBatch;
import dev.gpucoll.core.batch.GroupAgreement;
import dev.gpucoll.core.batch.RecordedBatch;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.Buffer;
import java.nio.LongBuffer;
import java.util.function.Consumer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

/**
 * What the host communicators share: argument checks, bookkeeping of the paths that ran, listeners
 * and the report. A rank whose own arguments are bad does not just throw: it hands the problem to
 * the transport, which publishes it so that every peer fails too instead of waiting.
 */
abstract class AbstractHostCommunicator implements Communicator, ReportingCommunicator, RefusingCommunicator {
  protected final int rank;
  protected final int size;
  protected final String groupId;
  protected final String host;
  protected final String rendezvousKind;
  protected final GpuCollConf conf;
  /** The timeout of the job that formed the group; a call takes its thread's bound one first. */
  protected final Duration timeout;
  /** Bounds of the call in progress (set by {@link #begin}; read only by the calling thread). */
  protected CallBounds bounds;
  protected final Reducer reducer = new Reducer();

  private volatile CollectiveListener[] listeners = new CollectiveListener[0];
  /** The listeners of the call in progress (set by {@link #begin}; read only by the calling thread). */
  private CollectiveListener[] heard;
  /**
   * Calls per collective and algorithm. The map changes under its lock; a counter is bumped by the
   * calling thread alone with a release store (no lock per call) and read with an acquire load.
   */
  private final Map<Collective, Map<String, long[]>> observed = new EnumMap<>(Collective.class);
  private static final VarHandle COUNT = MethodHandles.arrayElementVarHandle(long[].class);
  private Collective lastCollective;
  private String lastAlgorithm;
  private long[] lastCounter;
  private volatile boolean closed;
  /**
   * The thread inside a call, or null. A call enters only by setting it from null, so a second
   * thread (or a call after close) fails without touching the running call's state.
   */
  private final AtomicReference<Thread> caller = new AtomicReference<>();
  private final AtomicBoolean released = new AtomicBoolean();
  /** Set when the group can no longer run collectives (timeout, a peer gone); then every call fails. */
  protected volatile String brokenReason;
  /** The caller's calls on this communicator so far, this one included: what errors name (not protocol steps). */
  private long calls;
  /** The splits of this communicator so far (its listeners number them, {@link CollectiveListener#onSplit}). */
  private int splits;
  /** True while a group() body records its batch (only the calling thread reads it). */
  private boolean recording;

  AbstractHostCommunicator(int rank, int size, String groupId, String host, String rendezvousKind,
      GpuCollConf conf) {
    this.rank = rank;
    this.size = size;
    this.groupId = groupId;
    this.host = host;
    this.rendezvousKind = rendezvousKind;
    this.conf = conf;
    this.timeout = conf.get(GpuCollConf.TIMEOUT);
  }

  @Override
  public final int rank() {
    return rank;
  }

  @Override
  public final int size() {
    return size;
  }

  // ---- what a transport implements; each returns the algorithm that ran ----

  abstract Algorithm runAllReduce(Signature sig, String problem, Buffer send, Buffer recv, int count,
      DataType type, ReduceOp op);

  abstract Algorithm runAllGather(Signature sig, String problem, Buffer send, Buffer recv, int count,
      DataType type);

  abstract Algorithm runReduceScatter(Signature sig, String problem, Buffer send, Buffer recv, int count,
      DataType type, ReduceOp op);

  abstract Algorithm runAllToAll(Signature sig, String problem, Buffer send, Buffer recv, int count,
      DataType type);

  abstract Algorithm runAllToAllv(Signature sig, String problem, Buffer send, int[] sendCounts,
      int[] sendDispls, Buffer recv, int[] recvCounts, int[] recvDispls, DataType type);

  abstract Algorithm runBroadcast(Signature sig, String problem, Buffer send, Buffer recv, int count,
      DataType type, int root);

  abstract Algorithm runBarrier(Signature sig);

  abstract void closeTransport();

  /** This rank's part of {@link #split}: the new group of its color, or null for a negative color. */
  abstract Communicator splitGroup(int color, int key);

  /** The group's route: which algorithm each call takes, and why ({@link #explain}, the report). */
  abstract HostRoute route();

  @Override
  public final PathChoice explain(Collective collective, long bytes) {
    return route().explain(collective, bytes);
  }

  // ---- the API ----

  @Override
  public final Communicator split(int color, int key) {
    begin(null);
    try {
      int split = ++splits;
      Communicator child = splitGroup(color, key);
      if (child != null) {
        for (CollectiveListener l : listeners) {
          CollectiveListener of = l.onSplit(split);
          if (of != null) {
            child.addListener(of);
          }
        }
      }
      return child;
    } catch (Throwable t) {
      throw failure(null, t);
    } finally {
      exit();
    }
  }

  /** A collective's part of {@link #call}: checks its arguments into {@code a}, runs, returns the algorithm. */
  @FunctionalInterface
  private interface CallBody {
    Algorithm run(CallArgs a);
  }

  /**
   * The one frame of every collective: enter, check the arguments (a problem goes out with the call
   * so every rank fails alike), run, count the path and tell the listeners, leave; anything escaping
   * is {@link #failure}'s.
   */
  private void call(Collective c, DataType type, long count, CallBody body) {
    long t0 = begin(c);
    try {
      CallArgs a = args(type, count);
      Algorithm algo = body.run(a);
      finish(c, algo.id(), a.bytes(a.reported), t0);
    } catch (Throwable t) {
      throw failure(c, t);
    } finally {
      exit();
    }
  }

  /** MAXLOC / MINLOC: an allGather of the pairs, then the same fold on every rank ({@link PairCall}). */
  @Override
  public final void allReduce(CommBuffer send, CommBuffer recv, long count, PairType type, LocOp op) {
    Collective c = Collective.ALL_REDUCE;
    long t0 = begin(c);
    try {
      PairCall call = new PairCall(send, recv, count, type, op, size);
      Algorithm algo;
      try {
        algo = runAllGather(Signature.loc(count, type, op), call.problem, call.send, call.gathered,
            call.gatherBytes(), DataType.UINT8);
      } catch (CollectiveException e) {
        throw PairCall.asAllReduce(e);
      }
      String nan = call.fold();
      if (nan != null) {
        throw new CollectiveException(rank, c, nan);
      }
      finish(c, algo.id(), (long) call.gatherBytes() * size, t0, op);
    } catch (Throwable t) {
      throw failure(c, t);
    } finally {
      exit();
    }
  }

  @Override
  public final void allReduce(CommBuffer send, CommBuffer recv, long count, DataType type, ReduceOp op) {
    Collective c = Collective.ALL_REDUCE;
    call(c, type, count, a -> {
      a.recordable(c, send, recv, op, -1);
      return runAllReduce(Signature.of(c, count, type, op, -1), a.problem, a.send, a.recv, a.count(), type, op);
    });
  }

  @Override
  public final void allGather(CommBuffer send, CommBuffer recv, long count, DataType type) {
    Collective c = Collective.ALL_GATHER;
    call(c, type, count, a -> {
      a.recordable(c, send, recv, null, -1);
      return runAllGather(Signature.of(c, count, type, null, -1), a.problem, a.send, a.recv, a.count(), type);
    });
  }

  @Override
  public final void reduceScatter(CommBuffer send, CommBuffer recv, long count, DataType type, ReduceOp op) {
    Collective c = Collective.REDUCE_SCATTER;
    call(c, type, count, a -> {
      a.recordable(c, send, recv, op, -1);
      return runReduceScatter(Signature.of(c, count, type, op, -1), a.problem, a.send, a.recv, a.count(), type,
          op);
    });
  }

  @Override
  public final void allToAll(CommBuffer send, CommBuffer recv, long count, DataType type) {
    Collective c = Collective.ALL_TO_ALL;
    call(c, type, count, a -> {
      a.recordable(c, send, recv, null, -1);
      return runAllToAll(Signature.of(c, count, type, null, -1), a.problem, a.send, a.recv, a.count(), type);
    });
  }

  @Override
  public final void allToAllv(CommBuffer send, long[] sendCounts, long[] sendDispls, CommBuffer recv,
      long[] recvCounts, long[] recvDispls, DataType type) {
    Collective c = Collective.ALL_TO_ALLV;
    call(c, type, 0, a -> {
      int[] sc = a.counts(sendCounts, "sendCounts");
      int[] sd = a.displs(sendDispls, sc, "sendDispls");
      int[] rc = a.counts(recvCounts, "recvCounts");
      int[] rd = a.displs(recvDispls, rc, "recvDispls");
      a.disjoint(rc, rd);
      Buffer s = a.buffer(send, "send", a.extent(sendCounts, sendDispls));
      Buffer r = a.buffer(recv, "recv", a.extent(recvCounts, recvDispls));
      if (sc != null) {
        for (int v : sc) {
          a.reported += v;
        }
      }
      return runAllToAllv(Signature.of(c, 0, type, null, -1), a.problem, s, sc, sd, r, rc, rd, type);
    });
  }

  @Override
  public final void broadcast(CommBuffer send, CommBuffer recv, long count, DataType type, int root) {
    Collective c = Collective.BROADCAST;
    call(c, type, count, a -> {
      a.recordable(c, send, recv, null, root);
      return runBroadcast(Signature.of(c, count, type, null, root), a.problem, a.send, a.recv, a.count(), type,
          root);
    });
  }

  /**
   * The call goes out refused for {@code reason}, through the same step as one this communicator's
   * own checks refuse (MAXLOC / MINLOC's is an allGather of the pairs), so the peers are told that
   * this rank refused its call and why.
   */
  @Override
  public final void refuse(Collective c, boolean pairs, String reason) {
    if (pairs) {
      begin(c);
      try {
        try {
          runAllGather(Signature.loc(0, null, null), reason, null, null, 0, DataType.UINT8);
        } catch (CollectiveException e) {
          throw PairCall.asAllReduce(e);
        }
        throw new IllegalStateException("unreachable: a refused step throws");
      } catch (Throwable t) {
        throw failure(c, t);
      } finally {
        exit();
      }
    }
    call(c, DataType.INT8, 0, a -> {
      a.fail(reason);
      Signature sig = Signature.of(c, 0, null, null, -1);
      return switch (c) {
        case ALL_REDUCE -> runAllReduce(sig, a.problem, null, null, 0, DataType.INT8, ReduceOp.SUM);
        case ALL_GATHER -> runAllGather(sig, a.problem, null, null, 0, DataType.INT8);
        case REDUCE_SCATTER -> runReduceScatter(sig, a.problem, null, null, 0, DataType.INT8, ReduceOp.SUM);
        case ALL_TO_ALL -> runAllToAll(sig, a.problem, null, null, 0, DataType.INT8);
        case ALL_TO_ALLV -> runAllToAllv(sig, a.problem, null, null, null, null, null, null, DataType.INT8);
        case BROADCAST -> runBroadcast(sig, a.problem, null, null, 0, DataType.INT8, 0);
        case BARRIER -> throw new IllegalArgumentException("a barrier has no arguments to refuse");
      };
    });
  }

  /**
   * Records the batch, checks every call's arguments as its own method would, and agrees on both
   * with every rank through {@link GroupAgreement} (one allGather of every rank's words, not counted
   * as a call of its own): a batch that differs between ranks, that any rank refuses, or whose body
   * threw on any rank fails on every rank before any data moves, and the group stays usable. Then
   * the calls run one by one: on shared memory each call is a few flag round trips, so there is no
   * launch to fuse.
   */
  @Override
  public final void group(Consumer<CollectiveBatch> calls) {
    begin(null);
    RecordedBatch batch;
    try {
      GroupAgreement.Proposal mine = GroupAgreement.propose(
          () -> GroupAgreement.recordBetween(calls, () -> recording = true, () -> recording = false),
          this::argumentProblem);
      GroupAgreement.agree(rank, mine, words -> {
        long[] gathered = new long[GroupAgreement.WORDS * size];
        runAllGather(Signature.group(), null, LongBuffer.wrap(words), LongBuffer.wrap(gathered), GroupAgreement.WORDS,
            DataType.INT64);
        return gathered;
      }, t -> failure(null, t));
      batch = mine.batch();
    } finally {
      exit();
    }
    batch.runEach(this);
  }

  /** Why this rank refuses a recorded call (its method's own checks), or null. */
  private CollectiveException argumentProblem(RecordedBatch.Call call) {
    CallArgs a = args(call.type(), call.count());
    a.recordable(call.collective(), call.send(), call.recv(), call.op(), call.root());
    return a.problem == null ? null : new InvalidArgumentException(rank, call.collective(), a.problem);
  }

  @Override
  public final void barrier() {
    Collective c = Collective.BARRIER;
    call(c, DataType.INT8, 0, a -> runBarrier(Signature.of(c, 0, null, null, -1)));
  }

  @Override
  public final synchronized void addListener(CollectiveListener listener) {
    CollectiveListener[] more = java.util.Arrays.copyOf(listeners, listeners.length + 1);
    more[more.length - 1] = listener;
    listeners = more;
  }

  @Override
  public final boolean isClosed() {
    return closed;
  }

  /**
   * Closes the communicator. Safe from another thread while a call runs there: that call fails at
   * its next wait, telling the peers this rank closed, and the memory is released when it leaves,
   * never under it.
   */
  @Override
  public final void close() {
    if (!closed) {
      // closed is written before caller is read, and begin() does the reverse, so either the call
      // sees the close or close() sees the call and leaves the release to exit().
      closed = true;
      if (caller.get() == null) {
        release();
      }
    }
  }

  private void release() {
    if (released.compareAndSet(false, true)) {
      closeTransport();
    }
  }

  @Override
  public final List<String> observedPaths() {
    return RankReport.observedPaths(observedCounts());
  }

  /** Calls per "collective/algorithm", for the report. */
  final Map<String, Long> observedCounts() {
    Map<String, Long> out = new LinkedHashMap<>();
    synchronized (observed) {
      observed.forEach((c, m) -> m.forEach((algo, n) -> out.put(RankReport.pathKey(c, algo),
          (long) COUNT.getAcquire(n, 0))));
    }
    return out;
  }

  final List<PathChoice> predictedPaths() {
    List<PathChoice> out = new ArrayList<>();
    for (Collective c : Collective.values()) {
      if (c == Collective.BARRIER) {
        out.add(explain(c, 0));
      } else {
        for (long b : RankReport.PREDICTED_SIZES) {
          out.add(explain(c, b));
        }
      }
    }
    return out;
  }

  abstract List<String> findings();

  /**
   * The parent ranks of this rank's new group, ordered by key then parent rank (MPI_Comm_split),
   * from every rank's (color, key) payload; empty for a negative color.
   */
  static int[] splitMembers(List<byte[]> colorKeys, int color) {
    return SplitOrder.members(colorKeys, color);
  }

  @Override
  public final String unusableReason() {
    return brokenReason;
  }

  @Override
  public final RankReport report() {
    return new RankReport(groupId, rank, size, host, backend(), rendezvousKind, predictedPaths(),
        observedCounts(), findings());
  }

  // ---- helpers ----

  /**
   * Enters a call; every call that returns from here ends with {@link #exit()}. Fails at once, and
   * without touching any state, while another thread is inside a call; fails on a closed or broken
   * communicator.
   */
  /** "call N", the caller's Nth call on this communicator (collectives, group, split): how errors name the call. */
  final String callLabel() {
    return "call " + calls;
  }

  final long begin(Collective c) {
    if (recording) {
      throw new CollectiveException(rank, c, "called on the communicator inside group(): record the call on the"
          + " batch the group's body receives");
    }
    // Closed first: once close() returned, every call on every thread says so, also while the call
    // that close() interrupted is still on its way out.
    if (closed) {
      throw new CollectiveException(rank, c, "the communicator is closed");
    }
    Thread me = Thread.currentThread();
    if (!caller.compareAndSet(null, me)) {
      Thread other = caller.get();
      throw new CollectiveException(rank, c, other == me
          ? "a collective was started while this thread was already inside one on this communicator"
          : "thread '" + (other == null ? "?" : other.getName()) + "' is inside a call on this"
              + " communicator; a communicator serves one thread at a time");
    }
    if (closed) {
      exit();
      throw new CollectiveException(rank, c, "the communicator is closed");
    }
    calls++;
    String broken = brokenReason;
    if (broken != null) {
      exit();
      throw new CollectiveException(rank, c, "the communicator is unusable after an earlier failure: "
          + broken);
    }
    bounds = CallBounds.current(timeout);
    // The clock is read only for listeners (a call reads it twice; on a VM each read costs tens of
    // ns, a third of a small call): those of this call are the ones there were when it began.
    heard = listeners;
    return heard.length == 0 ? 0 : System.nanoTime();
  }

  /** Leaves a call; releases the transport if close() came in meanwhile. */
  final void exit() {
    caller.set(null);
    if (closed) {
      release();
    }
  }

  private void finish(Collective c, String algorithm, long bytes, long t0) {
    finish(c, algorithm, bytes, t0, null);
  }

  /** Counts the call's path and tells the listeners; a MAXLOC / MINLOC call ({@code loc}) as such. */
  private void finish(Collective c, String algorithm, long bytes, long t0, LocOp loc) {
    // Algorithm names are constants: the same call as last time hits the cached counter.
    if (c != lastCollective || algorithm != lastAlgorithm) {
      synchronized (observed) {
        lastCounter = observed.computeIfAbsent(c, k -> new LinkedHashMap<>())
            .computeIfAbsent(algorithm, k -> new long[1]);
      }
      lastCollective = c;
      lastAlgorithm = algorithm;
    }
    COUNT.setRelease(lastCounter, 0, lastCounter[0] + 1);
    if (heard.length > 0) {
      long nanos = System.nanoTime() - t0;
      for (CollectiveListener l : heard) {
        if (loc == null) {
          l.onCollective(c, algorithm, bytes, nanos);
        } else {
          l.onLocCollective(loc, algorithm, bytes, nanos);
        }
      }
    }
  }

  /**
   * What the caller of a collective gets for {@code t}: a CollectiveException as it is; anything
   * else (an InternalError from a memory fault under the call, an OutOfMemoryError, a bug, also in
   * a listener) leaves the group in an unknown state, so the group is marked failed for every rank
   * before the caller gets a CollectiveException with the cause. No raw Error reaches the caller:
   * Spark ends the executor JVM when one escapes a task. (The JVM raises a memory fault in compiled
   * code at its next safepoint, possibly after the faulting copy's call has returned: no point of
   * a call is known to be past its risk.)
   */
  final CollectiveException failure(Collective c, Throwable t) {
    if (t instanceof CollectiveException e) {
      return e;
    }
    String why = "unexpected " + t;
    markBroken(why);
    try {
      abandonGroup(why);
    } catch (Throwable again) {
      t.addSuppressed(again);
    }
    return new CollectiveException(rank, c, why + "; the group is marked failed on every rank",
        UnexpectedError.causeFor(t));
  }

  /**
   * Most bytes one call may gather in one buffer, counted as count x ranks x element size; past it
   * every rank refuses the call alike (before anything moves).
   */
  long maxCallBytes() {
    return Long.MAX_VALUE;
  }

  /** The checks of one call's arguments on this rank. */
  private CallArgs args(DataType type, long count) {
    return new CallArgs(rank, size, maxCallBytes(), backend(), type, count);
  }

  /** Tells the peers that this rank gave up on the group, so they fail instead of waiting for it. */
  abstract void abandonGroup(String reason);

  final void markBroken(String reason) {
    if (brokenReason == null) {
      brokenReason = reason;
    }
  }
}
