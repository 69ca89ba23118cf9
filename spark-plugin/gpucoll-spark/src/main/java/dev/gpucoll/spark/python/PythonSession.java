package dev.gpucoll.spark.python;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.InvalidArgumentException;
import dev.gpucoll.api.LocOp;
import dev.gpucoll.api.PairType;
import dev.gpucoll.api.PathChoice;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.core.config.GpuCollConf;
import dev.gpucoll.core.report.RankReport;
import dev.gpucoll.core.report.ReportingCommunicator;
import dev.gpucoll.core.spi.DeviceRoutes;
import dev.gpucoll.core.spi.MemberInfo;
import dev.gpucoll.core.spi.RefusingCommunicator;
import dev.gpucoll.core.wait.CallBounds;
import dev.gpucoll.spark.barrier.BackendCheckedRDD;
import dev.gpucoll.spark.barrier.RankReports;
import dev.gpucoll.spark.barrier.TaskCommunicators;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import org.apache.spark.TaskContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One Python task's member of its group, served on a thread of the executor: the task's
 * communicator is the one a Java task of the same stage gets ({@link TaskCommunicators#of}),
 * so the rendezvous, the route, the report, the tab and the metrics are the same; the Python side
 * only moves its arrays in and out of the {@link PythonMailbox}. The socket carries the hello and
 * wake bytes; its end (the Python worker gone) ends the session.
 */
final class PythonSession implements Runnable {
  private static final Logger LOG = LoggerFactory.getLogger(PythonSession.class);

  static final int OP_FORM = PythonWire.OP_FORM;
  static final int OP_CALLS = PythonWire.OP_CALLS;
  static final int OP_SPLIT = PythonWire.OP_SPLIT;
  static final int OP_EXPLAIN = PythonWire.OP_EXPLAIN;
  static final int OP_REPORT = PythonWire.OP_REPORT;
  static final int OP_CLOSE = PythonWire.OP_CLOSE;
  static final int OP_GROW = PythonWire.OP_GROW;
  /** The Python process's GPU joins: its facts and workspace handle gathered, the group's routes made. */
  static final int OP_DEVICE_FORM = PythonWire.OP_DEVICE_FORM;
  /** The route of one call on the Python process's GPU: a0 = collective | type << 8 | op << 16, a1 = count. */
  static final int OP_DEVICE_ROUTE = PythonWire.OP_DEVICE_ROUTE;
  /** A kernel error record the Python process found: the GPU communicator's exception for it. */
  static final int OP_DEVICE_ERROR = PythonWire.OP_DEVICE_ERROR;
  /** The kernels' layout (key=value lines in the data area, r0 bytes), before the workspace is made. */
  static final int OP_DEVICE_ABI = PythonWire.OP_DEVICE_ABI;
  /** Bytes each rank contributes to the device group's exchange (its facts and handle as key=value lines). */
  static final int DEVICE_RECORD_BYTES = 16384;
  /** The error record's size the Python side sends (the kernel table's GcErrorRecord fits in it). */
  static final int ERROR_RECORD_BYTES = 64;
  /** The collective code of MAXLOC / MINLOC in a call record (after {@link Collective}'s ordinals). */
  static final int LOC_ALL_REDUCE = PythonWire.LOC_ALL_REDUCE;
  static final int FLAG_REFUSED = PythonWire.FLAG_REFUSED;
  static final int FLAG_GROUP = PythonWire.FLAG_GROUP;
  /** Threads that wait per Python rank: its process, and this session running the call. */
  static final int WAITERS_PER_RANK = 2;
  /** Data area of a new session's mailbox; a larger call grows it. */
  static final long INITIAL_DATA_BYTES = 1 << 20;
  /** Spin on the request word before yielding: a Python loop's next call comes within microseconds. */
  private static final long SPIN_NANOS = 20_000;
  /** Yield before blocking on the socket: a Python training step between calls takes milliseconds. */
  private static final long YIELD_NANOS = 5_000_000;

  // The enums' values() clone an array at every call: once here, for the per-call decoding.
  private static final Collective[] COLLECTIVES = Collective.values();
  private static final DataType[] DATA_TYPES = DataType.values();
  private static final ReduceOp[] REDUCE_OPS = ReduceOp.values();
  private static final PairType[] PAIR_TYPES = PairType.values();
  private static final LocOp[] LOC_OPS = LocOp.values();

  private final SocketChannel socket;
  /** Where wake bytes land; their content does not matter. */
  private final ByteBuffer wake = ByteBuffer.allocate(64);
  private final TaskContext task;
  private final Path shmDir;
  private final String name;
  /** Whether waits spin before yielding: see {@link #spins}. */
  private boolean spin;
  private final Map<Integer, Communicator> comms = new HashMap<>();
  /** The device routes of communicators whose Python process launches kernels on its own GPU arrays. */
  private final Map<Integer, DeviceRoutes.Group> deviceGroups = new HashMap<>();
  private int nextComm = 1;
  private int generation;
  private PythonMailbox box;
  private final Runnable onEnd;

  PythonSession(SocketChannel socket, TaskContext task, Path shmDir, String name, Runnable onEnd) {
    this.socket = socket;
    this.task = task;
    this.shmDir = shmDir;
    this.name = name;
    this.onEnd = onEnd;
  }

  /** The first mailbox, made before the hello's answer so that a failure is the hello's error. */
  PythonMailbox open() throws IOException {
    box = PythonMailbox.create(shmDir, name + "-0", INITIAL_DATA_BYTES);
    return box;
  }

  @Override
  public void run() {
    long seen = 0;
    try {
      while (true) {
        long seq = await(seen);
        if (seq < 0) {
          return; // the Python side is gone
        }
        seen = seq;
        box.unlink(); // mapped by the Python side, since it wrote to it
        PythonMailbox answered = box;
        try {
          serve();
        } catch (Throwable t) { // never the executor's end: every failure is the Python call's error
          answered.respond(1, errorRank(t), errorCollective(t), 0, errorKind(t) + "\n" + RankReports.failureReason(t));
        }
        answered.publish(seq);
        if (answered != box) {
          seen = 0; // a grown mailbox counts from 0
        }
      }
    } catch (Throwable t) {
      if (closedUnderIt(t)) {
        // The executor's channel closed the socket (spark.stop(), executor shutdown) or Spark
        // interrupted the task: the session's normal end, not a failure.
        LOG.debug("gpucoll: the Python session of task {} ended with its socket: {}", task.taskAttemptId(), t.toString());
      } else {
        LOG.warn("gpucoll: the Python session of task {} failed", task.taskAttemptId(), t);
      }
    } finally {
      end();
    }
  }

  /** Whether {@code t} is the socket closed under a waiting session, the end of a job rather than a failure. */
  static boolean closedUnderIt(Throwable t) {
    return t instanceof ClosedChannelException;
  }

  /** Waits for the next request after {@code seen}: spin, yield, then sleep on the socket; -1 at its end. */
  private long await(long seen) throws IOException {
    long start = System.nanoTime();
    while (true) {
      long seq = box.reqSeq();
      if (seq != seen) {
        return seq;
      }
      long waited = System.nanoTime() - start;
      if (spin && waited < SPIN_NANOS) {
        Thread.onSpinWait();
      } else if (waited < YIELD_NANOS) {
        Thread.yield();
      } else {
        box.sleeping(true);
        // A volatile store then a volatile load: the Python side's store of reqSeq before its load
        // of the sleeping word cannot both be missed (it then sends a wake byte).
        if (box.reqSeq() == seen) {
          wake.clear();
          if (socket.read(wake) < 0) {
            return -1;
          }
        }
        box.sleeping(false);
        start = System.nanoTime();
      }
    }
  }

  private void serve() throws IOException {
    int op = box.requestInt(0);
    int commId = box.requestInt(1);
    switch (op) {
      case OP_FORM -> {
        Communicator c = form();
        comms.put(0, c);
        spin = spins(task);
        box.respond(0, c.rank(), c.size(), spin ? 1 : 0, c.backend());
      }
      case OP_CALLS -> {
        Communicator c = comm(commId);
        int records = box.requestInt(2);
        if (records < 1 || (long) records * PythonMailbox.RECORD_BYTES > box.dataBytes) {
          throw new IllegalArgumentException(records + " call records do not fit the mailbox");
        }
        if ((box.requestInt(3) & FLAG_GROUP) != 0) {
          c.group(batch -> {
            for (int i = 0; i < records; i++) {
              call(c, batch, i);
            }
          });
        } else {
          call(c, null, 0);
        }
        box.respond(0, 0, 0, 0, "");
      }
      case OP_SPLIT -> {
        Communicator sub = comm(commId).split((int) box.requestLong(0), (int) box.requestLong(1));
        if (sub == null) {
          box.respond(0, -1, -1, 0, "");
        } else {
          int id = nextComm++;
          comms.put(id, sub);
          box.respond(0, id, sub.rank(), sub.size(), sub.backend());
        }
      }
      case OP_EXPLAIN -> {
        PathChoice p = comm(commId).explain(COLLECTIVES[(int) box.requestLong(0)], box.requestLong(1));
        box.respond(0, p.bytes(), 0, 0, p.algorithm() + "\n" + String.join("\n", p.reasons()));
      }
      case OP_REPORT -> {
        byte[] bytes = reportJson(comm(commId)).getBytes(StandardCharsets.UTF_8);
        ByteBuffer out = box.data(0, bytes.length);
        if (out == null) { // the Python side grows the mailbox to r1 bytes and asks again
          box.respond(0, -1, bytes.length, 0, "");
        } else {
          out.put(bytes);
          box.respond(0, bytes.length, 0, 0, "");
        }
      }
      case OP_CLOSE -> {
        deviceGroups.remove(commId);
        Communicator c = comms.remove(commId);
        if (c != null && commId != 0) {
          c.close(); // the task's own communicator belongs to the plugin's cache
        }
        box.respond(0, 0, 0, 0, "");
      }
      case OP_GROW -> {
        long bytes = box.requestLong(0);
        PythonMailbox grown = PythonMailbox.create(shmDir, name + "-" + (++generation), bytes);
        box.respond(0, grown.dataBytes, 0, 0, grown.path.toString());
        PythonMailbox old = box;
        box = grown;
        old.close();
      }
      case OP_DEVICE_ABI -> {
        StringBuilder out = new StringBuilder();
        deviceRoutes().abi().forEach((k, v) -> out.append(k).append('=').append(v).append('\n'));
        respondText(out, "the kernels' layout");
      }
      case OP_DEVICE_FORM -> deviceForm(commId);
      case OP_DEVICE_ROUTE -> {
        DeviceRoutes.Group g = deviceGroups.get(commId);
        if (g == null) {
          throw new IllegalStateException("communicator " + commId + " of this task has no device group");
        }
        long key = box.requestLong(0);
        DeviceRoutes.Launch l = g.route(COLLECTIVES[(int) (key & 0xFF)], box.requestLong(1),
            DATA_TYPES[(int) (key >> 8 & 0xFF)], REDUCE_OPS[(int) (key >> 16 & 0xFF)]);
        box.respond(0, l.kind().ordinal(), l.grid(), l.block(), l.kernel() + "\n" + l.algorithm());
      }
      case OP_DEVICE_ERROR -> {
        DeviceRoutes.Group g = deviceGroups.get(commId);
        ByteBuffer rec = box.data(0, ERROR_RECORD_BYTES);
        if (g == null || rec == null) {
          throw new IllegalStateException("communicator " + commId + " of this task has no device group");
        }
        byte[] bytes = new byte[ERROR_RECORD_BYTES];
        rec.get(bytes);
        long c = box.requestLong(0);
        throw g.error(bytes, c >= 0 && c < COLLECTIVES.length ? COLLECTIVES[(int) c] : null);
      }
      default -> throw new IllegalArgumentException("unknown request " + op + " from the Python side");
    }
  }

  /**
   * The task's communicator, as a Java task of the stage gets it. A job without the group
   * credential was submitted from a Python thread that Spark's local properties did not reach: the
   * advice is PySpark's (a plain threading.Thread starts a JVM thread of its own under PySpark's
   * pinned threads).
   */
  private Communicator form() {
    try {
      return TaskCommunicators.of(task, Map.of(
          GpuCollConf.INTERNAL_WAITERS_PER_RANK.key(), String.valueOf(WAITERS_PER_RANK)));
    } catch (CollectiveException e) {
      if (BackendCheckedRDD.credentialOf(task) != null) {
        throw e;
      }
      throw new CollectiveException(task.partitionId(), null, "the job of stage " + task.stageId() + " carries no"
          + " group credential (the local property the driver plugin sets): submit the PySpark job from the thread"
          + " that created the SparkContext or from a pyspark.InheritableThread (a plain threading.Thread does"
          + " not pass Spark's local properties on)", e);
    }
  }

  /**
   * The Python process's GPU joins communicator {@code commId}: every rank's facts and workspace
   * handle (key=value lines the Python side wrote at the data area's start, a0 bytes) gathered over
   * the communicator, this executor's host added, and the group's routes made from them by the GPU
   * backend's {@link DeviceRoutes}: the route the Java communicator of such a group would take. The
   * answer (key=value lines in the data area, r0 bytes): the kernels' layout, the timeout, the
   * kernel image's file, every peer's handle and the route's findings.
   */
  private void deviceForm(int commId) throws IOException {
    Communicator c = comm(commId);
    DeviceRoutes routes = deviceRoutes();
    long n = box.requestLong(0);
    ByteBuffer mine = box.data(0, n);
    if (mine == null || n <= 0) {
      throw new IllegalArgumentException("the device facts lie outside the mailbox");
    }
    String host = task instanceof org.apache.spark.BarrierTaskContext b
        ? TaskCommunicators.rankHost(b.getTaskInfos()[task.partitionId()]) : "localhost";
    byte[] own = (StandardCharsets.UTF_8.decode(mine) + "host=" + host + "\n").getBytes(StandardCharsets.UTF_8);
    if (own.length > DEVICE_RECORD_BYTES) {
      throw new IllegalArgumentException("the device facts take " + own.length + " bytes; at most "
          + DEVICE_RECORD_BYTES + " fit");
    }
    ByteBuffer send = ByteBuffer.allocate(DEVICE_RECORD_BYTES).put(own).clear();
    ByteBuffer all = ByteBuffer.allocate(DEVICE_RECORD_BYTES * c.size());
    c.allGather(new CommBuffer.Host(send), new CommBuffer.Host(all), DEVICE_RECORD_BYTES, DataType.UINT8);
    List<Map<String, String>> records = new ArrayList<>();
    List<MemberInfo> members = new ArrayList<>();
    for (int r = 0; r < c.size(); r++) {
      Map<String, String> rec = keyValues(all, r * DEVICE_RECORD_BYTES);
      records.add(rec);
      Map<String, String> facts = new HashMap<>(rec);
      facts.keySet().removeIf(k -> !k.contains("."));
      members.add(new MemberInfo(r, rec.get("host"), rec.get("pid") + "@" + rec.get("host"), facts));
    }
    GpuCollConf conf = TaskCommunicators.settingsOf(task);
    DeviceRoutes.Group g = routes.group(c.rank(), members, conf);
    deviceGroups.put(commId, g);
    PythonMailbox.PrivateFile file = PythonMailbox.createPrivate(shmDir, name + "-kernels-" + commId);
    Path image = file.path();
    try (java.nio.channels.FileChannel ch = file.channel()) {
      ByteBuffer bytes = ByteBuffer.wrap(routes.kernelImage());
      while (bytes.hasRemaining()) {
        ch.write(bytes); // the Python side reads it once and unlinks it
      }
    }
    StringBuilder out = new StringBuilder();
    out.append("timeoutNs=").append(conf.get(GpuCollConf.TIMEOUT).toNanos()).append('\n');
    out.append("kernels=").append(g.kernelsOn() ? 1 : 0).append('\n');
    out.append("nccl=").append(g.formsNccl() ? 1 : 0).append('\n');
    out.append("ncclCtaPolicy=").append(g.ncclCtaPolicy()).append('\n');
    out.append("image=").append(image).append('\n');
    for (int r = 0; r < records.size(); r++) {
      for (String k : List.of("pid", "ipc", "nonce")) {
        out.append("peer.").append(r).append('.').append(k).append('=').append(records.get(r).get(k)).append('\n');
      }
    }
    for (String f : g.findings()) {
      out.append("finding=").append(f.replace('\n', ' ')).append('\n');
    }
    respondText(out, "the device group's answer");
  }

  /** Answers with {@code text} at the data area's start, r0 its length in bytes. */
  private void respondText(CharSequence text, String what) {
    byte[] bytes = text.toString().getBytes(StandardCharsets.UTF_8);
    ByteBuffer dst = box.data(0, bytes.length);
    if (dst == null) {
      throw new IllegalStateException(what + " (" + bytes.length + " bytes) does not fit the mailbox");
    }
    dst.put(bytes);
    box.respond(0, bytes.length, 0, 0, "");
  }

  private static DeviceRoutes deviceRoutes() {
    return ServiceLoader.load(DeviceRoutes.class, PythonSession.class.getClassLoader()).findFirst()
        .orElseThrow(() -> new IllegalStateException("GPU arrays need the GPU backend (gpucoll-cuda) on the executor's"
            + " class path; it is not there"));
  }

  /** The key=value lines of a NUL-padded record at {@code offset}. */
  private static Map<String, String> keyValues(ByteBuffer all, int offset) {
    byte[] b = new byte[DEVICE_RECORD_BYTES];
    all.get(offset, b);
    int end = 0;
    while (end < b.length && b[end] != 0) {
      end++;
    }
    Map<String, String> out = new HashMap<>();
    for (String line : new String(b, 0, end, StandardCharsets.UTF_8).split("\n")) {
      int eq = line.indexOf('=');
      if (eq > 0) {
        out.put(line.substring(0, eq), line.substring(eq + 1));
      }
    }
    return out;
  }

  /**
   * Spin only where every busy waiter of this host has a core of its own: each rank here is two
   * (its Python process and its session thread), as the group's own waits count them
   * ({@code spark.gpucoll.internal.waitersPerRank}). Otherwise a spinning waiter takes the very core
   * the one it waits for needs, and every call costs scheduler time slices.
   */
  static boolean spins(TaskContext task) {
    int here = 1;
    if (task instanceof org.apache.spark.BarrierTaskContext barrier) {
      org.apache.spark.BarrierTaskInfo[] infos = barrier.getTaskInfos();
      String host = TaskCommunicators.hostOf(infos[task.partitionId()].address());
      here = 0;
      for (org.apache.spark.BarrierTaskInfo info : infos) {
        here += TaskCommunicators.hostOf(info.address()).equals(host) ? 1 : 0;
      }
    }
    return !dev.gpucoll.core.wait.HostCores.oversubscribed(WAITERS_PER_RANK * Math.max(1, here),
        dev.gpucoll.core.wait.HostCores.online());
  }

  private Communicator comm(int id) {
    Communicator c = comms.get(id);
    if (c == null) {
      throw new IllegalStateException(id == 0 ? "the group has not formed in this task"
          : "communicator " + id + " of this task was closed");
    }
    return c;
  }

  /** Runs call record {@code i} on {@code c}, or records it on {@code batch} inside a group. */
  private void call(Communicator c, dev.gpucoll.api.CollectiveBatch batch, int i) {
    int coll = (int) box.recordLong(i, 0);
    int type = (int) box.recordLong(i, 1);
    int op = (int) box.recordLong(i, 2);
    if ((box.recordLong(i, 3) & FLAG_REFUSED) != 0) {
      refuse(c, batch, coll, i);
      return;
    }
    long count = box.recordLong(i, 4);
    int root = (int) box.recordLong(i, 5);
    CommBuffer recv = buffer(i, 8, "recv");
    long sendOff = box.recordLong(i, 6);
    CommBuffer send = sendOff < 0 ? recv : buffer(i, 6, "send");
    if (coll == LOC_ALL_REDUCE) {
      c.allReduce(send, recv, count, PAIR_TYPES[type], LOC_OPS[op]);
      return;
    }
    Collective collective = COLLECTIVES[coll];
    DataType dt = DATA_TYPES[type];
    ReduceOp rop = REDUCE_OPS[op];
    if (batch != null) {
      switch (collective) {
        case ALL_REDUCE -> batch.allReduce(send, recv, count, dt, rop);
        case ALL_GATHER -> batch.allGather(send, recv, count, dt);
        case REDUCE_SCATTER -> batch.reduceScatter(send, recv, count, dt, rop);
        case ALL_TO_ALL -> batch.allToAll(send, recv, count, dt);
        case BROADCAST -> batch.broadcast(send, recv, count, dt, root);
        default -> throw new IllegalArgumentException(collective.apiName() + " cannot be part of a group");
      }
      return;
    }
    switch (collective) {
      case ALL_REDUCE -> c.allReduce(send, recv, count, dt, rop);
      case ALL_GATHER -> c.allGather(send, recv, count, dt);
      case REDUCE_SCATTER -> c.reduceScatter(send, recv, count, dt, rop);
      case ALL_TO_ALL -> c.allToAll(send, recv, count, dt);
      case BROADCAST -> c.broadcast(send, recv, count, dt, root);
      case BARRIER -> c.barrier();
      case ALL_TO_ALLV -> {
        int n = c.size();
        long[][] v = new long[4][n];
        ByteBuffer counts = box.data(box.recordLong(i, 10), 32L * n);
        if (counts == null) {
          throw new IllegalArgumentException("allToAllv's counts lie outside the mailbox");
        }
        for (int k = 0; k < 4; k++) {
          for (int r = 0; r < n; r++) {
            v[k][r] = counts.getLong(8 * (k * n + r));
          }
        }
        c.allToAllv(send, v[0], v[1], recv, v[2], v[3], dt);
      }
    }
  }

  /**
   * Call record {@code i}, which the Python side refused itself (its reason, UTF-8, in place of its
   * send buffer): it goes out refused, so the peers fail at once, told that this rank refused its
   * call and why; inside a group the group's body fails with it (the peers are told so). A
   * communicator that cannot carry a refusal fails this rank alone.
   */
  private void refuse(Communicator c, dev.gpucoll.api.CollectiveBatch batch, int coll, int i) {
    ByteBuffer text = box.data(box.recordLong(i, 6), box.recordLong(i, 7));
    String reason = text == null ? "the Python side refused the call"
        : StandardCharsets.UTF_8.decode(text).toString();
    if (batch != null) {
      throw new IllegalArgumentException(reason);
    }
    boolean pairs = coll == LOC_ALL_REDUCE;
    Collective collective = pairs ? Collective.ALL_REDUCE : COLLECTIVES[coll];
    if (c instanceof RefusingCommunicator r) {
      r.refuse(collective, pairs, reason);
    }
    throw new InvalidArgumentException(c.rank(), collective, reason);
  }

  private CommBuffer buffer(int record, int field, String role) {
    ByteBuffer b = box.data(box.recordLong(record, field), box.recordLong(record, field + 1));
    if (b == null) {
      throw new IllegalArgumentException("the " + role + " buffer lies outside the mailbox");
    }
    return new CommBuffer.Host(b);
  }

  /** The rank's report as JSON, RankReport's form: what {@code path_report()} returns in Python. */
  private static String reportJson(Communicator c) {
    if (c instanceof ReportingCommunicator rc) {
      return rc.report().toJson();
    }
    List<PathChoice> predicted = new ArrayList<>();
    for (Collective coll : Collective.values()) {
      for (long bytes : RankReport.PREDICTED_SIZES) {
        predicted.add(c.explain(coll, bytes));
      }
    }
    Map<String, Long> observed = new HashMap<>();
    for (String p : c.observedPaths()) {
      int eq = p.lastIndexOf('=');
      observed.put(p.substring(0, eq), Long.parseLong(p.substring(eq + 1)));
    }
    return new RankReport("", c.rank(), c.size(), "", c.backend(), "", predicted, observed, List.of()).toJson();
  }

  private static String errorKind(Throwable t) {
    return t.getClass().getSimpleName();
  }

  private static long errorRank(Throwable t) {
    return t instanceof CollectiveException ce ? ce.rank() : -1;
  }

  private static long errorCollective(Throwable t) {
    return t instanceof CollectiveException ce && ce.collective() != null ? ce.collective().ordinal() : -1;
  }

  private void end() {
    for (Map.Entry<Integer, Communicator> e : comms.entrySet()) {
      if (e.getKey() != 0) {
        try {
          e.getValue().close();
        } catch (RuntimeException ex) {
          LOG.debug("gpucoll: closing a Python task's sub-communicator failed", ex);
        }
      }
    }
    comms.clear();
    CallBounds.unbind();
    if (box != null) {
      box.close();
    }
    try {
      socket.close();
    } catch (IOException e) {
      // nothing left to tell the Python side
    }
    onEnd.run();
  }
}
