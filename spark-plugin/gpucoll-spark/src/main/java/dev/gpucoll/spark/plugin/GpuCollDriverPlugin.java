package dev.gpucoll.spark.plugin;

import com.codahale.metrics.Counter;
import dev.gpucoll.core.config.GpuCollConf;
import dev.gpucoll.spark.BackendCheckEvent;
import dev.gpucoll.spark.FormingGroup;
import dev.gpucoll.spark.GroupReport;
import dev.gpucoll.spark.GroupReportEvent;
import dev.gpucoll.spark.barrier.BackendGate;
import dev.gpucoll.spark.metrics.DriverMetrics;
import dev.gpucoll.spark.metrics.ExecutorMetrics;
import dev.gpucoll.spark.report.ReportCollector;
import dev.gpucoll.spark.report.ReportVerifier;
import dev.gpucoll.spark.rpc.Freshness;
import dev.gpucoll.spark.rpc.GroupCredential;
import dev.gpucoll.spark.rpc.PluginName;
import dev.gpucoll.spark.rpc.RendezvousService;
import dev.gpucoll.spark.rpc.RpcMessages;
import dev.gpucoll.spark.rpc.RpcMessages.ExecutorCheckMessage;
import dev.gpucoll.spark.rpc.RpcMessages.RankReportMessage;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Locale;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.apache.spark.SparkContext;
import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.Tuple2;

/**
 * Driver part of {@code GpuCollectivesPlugin}: validates and ships the settings, serves the
 * rendezvous and admits jobs ({@link BackendGate}), verifies and collects the ranks' reports, posts
 * them for the tab and the event log, and sums the executors' metrics.
 *
 * <p>Internal: public for the other packages of gpucoll-spark, not for users.
 */
public final class GpuCollDriverPlugin implements DriverPlugin {
  private static final Logger LOG = LoggerFactory.getLogger(PluginName.CLASS);
  /** The driver plugin of the running SparkContext in this JVM, for driverReports(). */
  private static volatile GpuCollDriverPlugin active;

  private final GroupCredential.Issuer credentials = new GroupCredential.Issuer();
  private final Freshness.Guard freshness = new Freshness.Guard(System::nanoTime);
  private final RendezvousService rendezvous = new RendezvousService(credentials, freshness);
  private final ReportVerifier reportVerifier = new ReportVerifier(credentials, freshness);
  private final UndecodableMessages undecodable = new UndecodableMessages();
  private final BackendGate backendGate = new BackendGate(credentials);
  private volatile GpuCollConf conf = GpuCollConf.defaults();
  private volatile SparkContext sc;
  private volatile ReportCollector reports;
  private final Counter groupReports = new Counter();
  private final Counter contradictions = new Counter();
  private final DriverMetrics executorSums = new DriverMetrics();
  private volatile ScheduledExecutorService flusher;
  private volatile BarrierSlotWatch slotWatch;

  /** The driver plugin of the running SparkContext in this JVM, or null where none runs. */
  public static GpuCollDriverPlugin active() {
    return active;
  }

  @Override
  public Map<String, String> init(SparkContext sc, PluginContext ctx) {
    GpuCollConf conf = validatedConf(sc.getConf().getAll());
    this.conf = conf;
    this.sc = sc;
    // Init runs on the thread that creates the SparkContext: its jobs, and those of the threads it
    // starts later (local properties are inherited), carry the application's credential to stages
    // built on rdd.barrier() directly. Jobs of our API get their own at submission (BackendGate#checkJob).
    sc.setLocalProperty(GroupCredential.PROPERTY, credentials.application().property());
    // Spark's event log redacts a job's properties only under keys that the SparkConf holds too
    // (the key names a secret, so spark.redaction.regex matches it): a stand-in value there keeps
    // every credential out of the log. sc.conf is private[spark] in Scala, public in bytecode.
    sc.conf().set(GroupCredential.PROPERTY, "set per application by the gpucoll driver plugin");
    sc.conf().set(GroupCredential.JOB_PROPERTY, "set per job by the gpucoll driver plugin");
    String verbosity = conf.get(GpuCollConf.REPORT);
    reports = new ReportCollector(this::withDroppedMessages, report -> {
      if (report.failed()) {
        // Each rank's reason, whatever spark.gpucoll.report says; predictions and findings at verbose only.
        LOG.warn(verbosity.equals("verbose") ? report.verboseBlock() : report.failureBlock());
      } else {
        switch (verbosity) {
          case "summary" -> LOG.info(report.summaryLine());
          case "verbose" -> LOG.info(report.verboseBlock());
          default -> { }
        }
      }
      long refuted = report.contradictions();
      if (refuted > 0) {
        LOG.warn("gpucoll group {} ({}): {} predicted path(s) refuted by NCCL's own log: {}", report.groupId(),
            report.stage(), refuted, report.findings().stream().filter(f -> f.startsWith("CONTRADICTION")).toList());
      }
      groupReports.inc();
      contradictions.inc(refuted);
      // listenerBus is private[spark] in Scala, public in bytecode: the one way a plugin can post an
      // event that listeners and the event log see.
      sc.listenerBus().post(new GroupReportEvent(report, System.currentTimeMillis()));
    });
    // Failed groups whose other ranks never report are handed on after a grace period.
    flusher = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "gpucoll-report-flush");
      t.setDaemon(true);
      return t;
    });
    ReportCollector collector = reports;
    flusher.scheduleWithFixedDelay(() -> collector.flush(System.nanoTime()), 1, 1, TimeUnit.SECONDS);
    // The "GPU Collectives" tab of the Spark UI, fed by the GroupReportEvents posted above.
    attachUi(sc);
    try {
      slotWatch = BarrierSlotWatch.start(sc.getConf());
    } catch (LinkageError e) { // Spark logging through something other than log4j 2
      LOG.debug("gpucoll: not watching Spark's barrier slot check", e);
    }
    backendGate.open(conf);
    active = this;
    LOG.info("gpucoll driver plugin ready; settings {}", conf.asMap());
    return conf.asMap();
  }

  /**
   * Calls the Scala UI shim's {@code GpuCollUi.attachLive(sc)} by name: the Java sources of this
   * module name no Scala class of it, so they compile before the Scala ones (Scala 2.12's compiler
   * cannot read Java records, so the Scala 2.12 build compiles Java first), and javadoc, which
   * reads the Java sources alone, resolves them.
   */
  private static void attachUi(SparkContext sc) {
    try {
      Class.forName("org.apache.spark.gpucoll.GpuCollUi", true, GpuCollDriverPlugin.class.getClassLoader())
          .getMethod("attachLive", SparkContext.class).invoke(null, sc);
    } catch (java.lang.reflect.InvocationTargetException e) {
      Throwable cause = e.getCause();
      if (cause instanceof RuntimeException r) {
        throw r;
      }
      if (cause instanceof Error err) {
        throw err;
      }
      throw new IllegalStateException(cause);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("gpucoll's UI shim org.apache.spark.gpucoll.GpuCollUi is not"
          + " loadable with this jar: " + e, e);
    }
  }

  /**
   * Parses and checks every spark.gpucoll.* entry; a bad one fails SparkContext start with one
   * {@link dev.gpucoll.core.config.InvalidSettingException} (its message names the key, the value
   * and what is allowed; no cause chain repeating it).
   */
  static GpuCollConf validatedConf(Tuple2<String, String>[] sparkConf) {
    Map<String, String> settings = new HashMap<>();
    for (Tuple2<String, String> kv : sparkConf) {
      settings.put(kv._1(), kv._2());
    }
    return GpuCollConf.of(settings).validate();
  }

  @Override
  public Object receive(Object message) {
    // Runs on Spark's shared RPC dispatch threads: every branch answers without waiting.
    // Messages are RpcMessages wire bytes both ways, never our classes (see RpcMessages).
    // What is no message of ours is dropped and counted here: thrown, Spark would log each one's
    // stack trace, and a flood of junk would flood the driver's log.
    if (!(message instanceof byte[] wire)) {
      return undecodable.drop(message, "a " + (message == null ? "null" : message.getClass().getName())
          + " message; gpucoll executors send byte[]: are the driver and all executors on the same gpucoll jar?");
    }
    Object received;
    try {
      received = RpcMessages.decode(wire);
    } catch (IllegalArgumentException e) {
      return undecodable.drop(message, wire.length + " bytes: " + e.getMessage());
    }
    Object carried = received instanceof RpcMessages.Sealed s ? RpcMessages.unverifiedBody(s) : received;
    if (received instanceof ExecutorCheckMessage c) {
      if (reportVerifier.admitCheck(c, registeredExecutors(), conf.get(GpuCollConf.BACKEND))) {
        BackendCheckEvent check = new BackendCheckEvent(c.executorId(), c.host(), c.backend(),
            c.unavailableReason(), c.gpus(), c.environment());
        backendGate.add(check);
        sc.listenerBus().post(check); // for the tab, the event log and the History Server
      }
      return null; // sent one-way
    }
    if (!ReportVerifier.isReport(carried)) {
      return rendezvous.serve(received); // verified there before anything changes
    }
    Object m = reportVerifier.open(received); // null: dropped and counted there
    if (m == null) {
      return null; // sent one-way
    } else if (m instanceof RankReportMessage r) {
      reports.add(r);
      return null; // sent one-way
    } else if (m instanceof RpcMessages.ExecutorTotalsMessage t) {
      executorSums.update(t.executorId(), t.totals());
      return null; // sent one-way
    } else if (m instanceof RpcMessages.RankProgressMessage p) {
      reports.progress(p.report(), System.nanoTime());
      return null; // sent one-way
    }
    throw new IllegalArgumentException("gpucoll driver plugin cannot serve a "
        + m.getClass().getSimpleName() + " message");
  }

  @Override
  public void registerMetrics(String appId, PluginContext ctx) {
    ctx.metricRegistry().register("groupReports", groupReports);
    ctx.metricRegistry().register("pathContradictions", contradictions);
    ctx.metricRegistry().register("rendezvous.credentialFailures", new DriverMetrics.Sum(this::credentialFailures));
    ctx.metricRegistry().register("reports.credentialFailures", new DriverMetrics.Sum(this::reportFailures));
    ctx.metricRegistry().register("endpoint.undecodable", new DriverMetrics.Sum(this::undecodableMessages));
    executorSums.register(ctx.metricRegistry(), ExecutorMetrics.usablePaths(executorsMayUseGpus(sc.getConf())));
  }

  /**
   * Whether the executors may run the GPU backend, as the driver can tell at start (before any
   * executor reports): when spark.gpucoll.backend=gpu, or auto with GPUs scheduled for executors.
   */
  public static boolean executorsMayUseGpus(org.apache.spark.SparkConf conf) {
    String backend = conf.get(GpuCollConf.BACKEND.key(), "auto").trim();
    return backend.equals("gpu") || (backend.equals("auto")
        && !conf.get("spark.executor.resource.gpu.amount", "0").trim().matches("0*(\\.0*)?"));
  }

  /** {@link #credentialFailures}, {@link #reportFailures} and {@link #undecodableMessages} when the previous report was handed on. */
  private final long[] droppedAtLastReport = new long[3];

  /**
   * The report, with a finding when rendezvous messages that failed the group credential were
   * dropped since the previous report (a dropped message never reaches a round, so none changed a
   * group), and one when reports, progress, totals or backend checks were.
   */
  private synchronized GroupReport withDroppedMessages(GroupReport report) {
    GroupReport out = withDropped(report, 0, credentialFailures(), "rendezvous: %d message(s) that failed the group"
        + " credential", "rendezvous.credentialFailures", "no group");
    out = withDropped(out, 1, reportFailures(), "reports: %d rank report, progress, metrics or backend-check"
        + " message(s) that failed the driver's checks", "reports.credentialFailures", "no report, tab or metric");
    return withDropped(out, 2, undecodableMessages(), "endpoint: %d message(s) that are no gpucoll message",
        "endpoint.undecodable", "no group, report, tab or metric");
  }

  /** One count's finding: {@code what} (its %d the number since the previous report), were dropped ... */
  private GroupReport withDropped(GroupReport report, int count, long total, String what, String metric,
      String reachesNo) {
    long since = total - droppedAtLastReport[count];
    droppedAtLastReport[count] = total;
    return since == 0 ? report : report.withFinding(String.format(Locale.ROOT, what, since)
        + " were dropped since the previous group's report (" + total + " in this application, driver metric "
        + metric + "); a dropped message reaches " + reachesNo);
  }

  /** Rendezvous messages dropped because they failed the group credential. */
  public long credentialFailures() {
    return rendezvous.credentialFailures();
  }

  /** Rank reports, progress, metric totals and backend checks dropped by {@link ReportVerifier}. */
  public long reportFailures() {
    return reportVerifier.failures();
  }

  /** Messages to the plugin's endpoint dropped because they are no gpucoll message. */
  public long undecodableMessages() {
    return undecodable.count();
  }

  /** The executors Spark has registered (in local mode the one in this JVM). */
  @SuppressWarnings("deprecation") // JavaConverters, deprecated in Scala 2.13 only: one source for both Scala binaries
  private Set<String> registeredExecutors() {
    Set<String> ids = new HashSet<>(scala.collection.JavaConverters.seqAsJavaList(sc.getExecutorIds()));
    if (sc.isLocal()) {
      ids.add("driver");
    }
    return ids;
  }

  /** Every executor's backend check received so far, by executor id. */
  public List<BackendCheckEvent> backendChecks() {
    return backendGate.checks();
  }

  public DriverMetrics executorSums() {
    return executorSums;
  }

  public List<GroupReport> running() {
    ReportCollector r = reports;
    return r == null ? List.of() : r.running(System.nanoTime());
  }

  /**
   * The groups whose ranks are meeting at the rendezvous, some arrived and others not, for a stage
   * no rank has formed a group of yet (a formed group's later rounds, e.g. the relay's, are its calls).
   */
  public List<FormingGroup> forming() {
    ReportCollector r = reports;
    return rendezvous.waitingGroups().stream().filter(g -> r == null || !r.hasFormed(g.stage())).toList();
  }

  public List<GroupReport> reports() {
    ReportCollector r = reports;
    return r == null ? List.of() : r.reports();
  }

  @Override
  public void shutdown() {
    ScheduledExecutorService f = flusher;
    if (f != null) {
      f.shutdownNow();
    }
    BarrierSlotWatch w = slotWatch;
    if (w != null) {
      w.close();
    }
    backendGate.close();
    if (active == this) {
      active = null;
    }
  }
}
