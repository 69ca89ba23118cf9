package dev.gpucoll.spark.plugin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.spark.BackendCheckEvent;
import dev.gpucoll.spark.GpuCollectives;
import dev.gpucoll.spark.GpuCollectivesPlugin;
import dev.gpucoll.spark.GroupReport;
import dev.gpucoll.spark.LocalSpark;
import dev.gpucoll.spark.metrics.DriverMetrics;
import dev.gpucoll.spark.rpc.Freshness;
import dev.gpucoll.spark.rpc.GroupCredential;
import dev.gpucoll.spark.rpc.PluginRpcRendezvous;
import dev.gpucoll.spark.rpc.RpcMessages;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.spark.SecurityManager;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkException;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.internal.plugin.PluginMessage;
import org.apache.spark.rpc.RpcEndpointRef;
import org.apache.spark.rpc.RpcEnv;
import org.junit.jupiter.api.Test;
import scala.reflect.ClassTag$;

/**
 * A process that knows the driver's address (spark.authenticate off) floods the plugin endpoint
 * with the arrivals that used to break groups, over its own RPC connection, while real barrier
 * jobs form groups: they form and compute right, and the driver counts what it dropped.
 */
class IntruderTest {
  private static final String ENDPOINT = "org.apache.spark.internal.plugin.PluginEndpoint";

  @Test
  void forgedArrivalsOverTheEndpointNeverBreakRealGroups(@org.junit.jupiter.api.io.TempDir java.nio.file.Path logs)
      throws Exception {
    JavaSparkContext sc = new JavaSparkContext(LocalSpark.withPlugin("intruder", "local[3]")
        .set("spark.eventLog.enabled", "true").set("spark.eventLog.dir", logs.toUri().toString())
        .set("spark.eventLog.compress", "false").set("spark.eventLog.rolling.enabled", "false"));
    String appCredential = sc.getLocalProperty(GroupCredential.PROPERTY);
    AtomicBoolean stop = new AtomicBoolean();
    AtomicLong sent = new AtomicLong();
    java.util.concurrent.CountDownLatch firstSweep = new java.util.concurrent.CountDownLatch(1);
    AtomicReference<Throwable> intruderError = new AtomicReference<>();
    SparkConf alone = new SparkConf();
    RpcEnv outside = RpcEnv.create("intruder", "127.0.0.1", 0, alone,
        new SecurityManager(alone, scala.Option.empty(), org.apache.spark.SecurityManager$.MODULE$.$lessinit$greater$default$3()), true);
    Thread intruder = new Thread(() -> {
      try {
        RpcEndpointRef driver = outside.setupEndpointRef(sc.sc().env().rpcEnv().address(), ENDPOINT);
        String app = sc.sc().applicationId().replaceAll("[^A-Za-z0-9._-]", "_");
        GroupCredential guessed = new GroupCredential.Issuer().forId(GroupCredential.Issuer.APPLICATION_ID);
        while (!stop.get()) {
          for (int stage = 0; stage < 8; stage++) {
            String group = app + "-stage" + stage + ".0";
            for (long round = 0; round < 3; round++) {
              byte[] unsealed = RpcMessages.encode(new RpcMessages.Arrive(group, round, 0, 1, new byte[] {9}, 60_000, false));
              byte[] forged = RpcMessages.encode(RpcMessages.seal(
                  new RpcMessages.Arrive(group, round, 1, 5, new byte[] {9}, 60_000, false), guessed, Freshness.Stamp.NONE));
              for (byte[] m : List.of(unsealed, forged)) {
                driver.askSync(new PluginMessage(GpuCollectivesPlugin.class.getName(), m), ClassTag$.MODULE$.Any());
                sent.incrementAndGet();
              }
            }
          }
          firstSweep.countDown();
        }
      } catch (Throwable t) {
        firstSweep.countDown();
        intruderError.set(t);
      }
    }, "intruder");
    try {
      intruder.start();
      // Every group's first rounds are already claimed, by forgeries, before any real rank arrives.
      assertTrue(firstSweep.await(60, java.util.concurrent.TimeUnit.SECONDS));
      JavaRDD<Integer> rows = sc.parallelize(List.of(1, 2, 3, 4, 5, 6), 3);
      for (int job = 0; job < 2; job++) {
        // Through our API (a credential of its own) and on rdd.barrier() directly (the application's).
        List<Double> viaApi = GpuCollectives.barrierMapPartitions(rows, IntruderTest::sum).collect();
        List<Double> direct = direct(rows);
        assertEquals(List.of(21.0, 21.0, 21.0), viaApi);
        assertEquals(List.of(21.0, 21.0, 21.0), direct);
      }
      stop.set(true);
      intruder.join(30_000);
      assertEquals(null, intruderError.get());
      assertTrue(sent.get() > 0);
      assertEquals(sent.get(), GpuCollDriverPlugin.active().credentialFailures(), "every forged message dropped");
      // The group reports say so, and together count every one.
      long reported = 0;
      for (GroupReport r : GpuCollectivesPlugin.driverReports()) {
        for (String f : r.findings()) {
          java.util.regex.Matcher m = java.util.regex.Pattern.compile("^rendezvous: (\\d+) message\\(s\\) that failed"
              + " the group credential were dropped").matcher(f);
          if (m.find()) {
            reported += Long.parseLong(m.group(1));
          }
        }
      }
      assertTrue(reported > 0 && reported <= sent.get(), "reported " + reported + " of " + sent.get());

      // A job from a thread that never had the credential: its ranks say how to give it one.
      AtomicReference<Throwable> bare = new AtomicReference<>();
      Thread other = new Thread(() -> {
        sc.setLocalProperty(GroupCredential.PROPERTY, null);
        try {
          direct(rows);
        } catch (Throwable t) {
          bare.set(t);
        }
      });
      other.start();
      other.join(120_000);
      assertTrue(bare.get() instanceof SparkException, String.valueOf(bare.get()));
      assertTrue(bare.get().getMessage().contains("carries no group credential"), bare.get().getMessage());
    } finally {
      stop.set(true);
      intruder.join(30_000);
      outside.shutdown();
      sc.stop();
    }
    // The event log holds every job's properties: the credentials' keys only as redacted.
    String key = appCredential.substring(appCredential.indexOf(':') + 1);
    StringBuilder log = new StringBuilder();
    try (java.util.stream.Stream<java.nio.file.Path> files = java.nio.file.Files.walk(logs)) {
      for (java.nio.file.Path f : files.filter(java.nio.file.Files::isRegularFile).toList()) {
        log.append(java.nio.file.Files.readString(f));
      }
    }
    assertTrue(log.indexOf("SparkListenerJobStart") >= 0 && log.indexOf(GroupCredential.PROPERTY) >= 0, "jobs were logged");
    assertEquals(-1, log.indexOf(key), "the application's credential is in the event log");
    assertTrue(log.indexOf(GroupCredential.JOB_PROPERTY) >= 0, "jobs of our API were logged");
    java.util.regex.Matcher jobCredential = java.util.regex.Pattern.compile(
        java.util.regex.Pattern.quote(GroupCredential.JOB_PROPERTY) + "\":\"[0-9]+/job").matcher(log);
    assertTrue(!jobCredential.find(), "a job's credential is in the event log");
  }

  /**
   * The same intruder sends forged rank reports, progress, metric totals and backend checks,
   * unsealed or sealed with a key of its own, naming the real groups and executor: the driver drops
   * and counts every one, and the tab, the metrics and the checks show the real ranks' alone.
   */
  @Test
  void forgedReportsProgressTotalsAndChecksNeverReachTheDriversView() throws Exception {
    JavaSparkContext sc = new JavaSparkContext(LocalSpark.withPlugin("intruder-reports", "local[3]")
        .set("spark.gpucoll.backend", "host"));
    SparkConf alone = new SparkConf();
    RpcEnv outside = RpcEnv.create("intruder", "127.0.0.1", 0, alone,
        new SecurityManager(alone, scala.Option.empty(), org.apache.spark.SecurityManager$.MODULE$.$lessinit$greater$default$3()), true);
    try {
      RpcEndpointRef driver = outside.setupEndpointRef(sc.sc().env().rpcEnv().address(), ENDPOINT);
      String app = sc.sc().applicationId().replaceAll("[^A-Za-z0-9._-]", "_");
      List<GroupCredential> guessed = List.of(new GroupCredential.Issuer().forId(GroupCredential.Issuer.APPLICATION_ID),
          new GroupCredential.Issuer().forId("job1"), new GroupCredential.Issuer().forId("job2"));
      List<Object> forgeries = new ArrayList<>();
      for (int stage = 0; stage < 8; stage++) {
        for (int rank = 0; rank < 3; rank++) {
          RpcMessages.RankReportMessage report = forgedReport(app + "-stage" + stage + ".0", "stage " + stage + ".0", rank);
          forgeries.add(report);
          forgeries.add(new RpcMessages.RankProgressMessage(report));
          for (GroupCredential key : guessed) {
            forgeries.add(RpcMessages.seal(report, key, Freshness.Stamp.NONE));
            forgeries.add(RpcMessages.seal(new RpcMessages.RankProgressMessage(report), key, Freshness.Stamp.NONE));
          }
        }
      }
      RpcMessages.ExecutorTotalsMessage totals = new RpcMessages.ExecutorTotalsMessage("driver",
          java.util.Map.of("collective.allReduce.calls", 1_000_000L));
      forgeries.add(totals);
      forgeries.add(RpcMessages.seal(totals, guessed.get(0), Freshness.Stamp.NONE));
      for (String executor : List.of("driver", "7", "intruder")) {
        for (String backend : List.of("host", "gpu")) {
          forgeries.add(new RpcMessages.ExecutorCheckMessage(executor, "intruder-host", backend, "forged",
              List.of(), java.util.Map.of()));
        }
      }
      for (Object m : forgeries) {
        driver.askSync(new PluginMessage(GpuCollectivesPlugin.class.getName(), RpcMessages.encode(m)), ClassTag$.MODULE$.Any());
      }
      assertEquals(forgeries.size(), GpuCollDriverPlugin.active().reportFailures(), "every forged message dropped");
      assertEquals(0, GpuCollDriverPlugin.active().credentialFailures(), "none was taken for a rendezvous message");
      assertEquals(List.of(), GpuCollDriverPlugin.active().running(), "forged progress shows a running group");

      JavaRDD<Integer> rows = sc.parallelize(List.of(1, 2, 3, 4, 5, 6), 3);
      for (int job = 0; job < 2; job++) {
        assertEquals(List.of(21.0, 21.0, 21.0), GpuCollectives.barrierMapPartitions(rows, IntruderTest::sum).collect());
        assertEquals(List.of(21.0, 21.0, 21.0), direct(rows));
      }
      long deadline = System.nanoTime() + 30_000_000_000L;
      while (GpuCollectivesPlugin.driverReports().size() < 4 && System.nanoTime() < deadline) {
        Thread.sleep(20);
      }
      // The real ranks' reports, each group whole and none failed or from the intruder's host.
      List<GroupReport> reports = GpuCollectivesPlugin.driverReports();
      assertEquals(4, reports.size(), String.valueOf(reports));
      for (GroupReport r : reports) {
        assertEquals(3, r.size());
        assertTrue(!r.failed() && !r.hosts().contains("intruder-host"), r.verboseBlock());
      }
      // The reports say how many were dropped, and together count every one.
      long reported = 0;
      for (GroupReport r : reports) {
        for (String f : r.findings()) {
          java.util.regex.Matcher m = java.util.regex.Pattern.compile("^reports: (\\d+) rank report, progress, metrics"
              + " or backend-check message\\(s\\) that failed the driver's checks were dropped").matcher(f);
          if (m.find()) {
            reported += Long.parseLong(m.group(1));
          }
        }
      }
      assertEquals(forgeries.size(), reported);
      // The real executor's totals and check, not the forged ones.
      DriverMetrics sums = GpuCollDriverPlugin.active().executorSums();
      while (sums.sum("collective.allReduce.calls") < 12 && System.nanoTime() < deadline) {
        Thread.sleep(20);
      }
      assertEquals(12, sums.sum("collective.allReduce.calls"), "4 groups of 3 ranks, one allReduce each");
      List<BackendCheckEvent> checks = GpuCollectivesPlugin.driverBackendChecks();
      assertEquals(1, checks.size(), String.valueOf(checks));
      assertTrue(checks.get(0).executorId().equals("driver") && checks.get(0).usable(), String.valueOf(checks));
      assertEquals(forgeries.size(), GpuCollDriverPlugin.active().reportFailures(), "a real message was dropped");
    } finally {
      outside.shutdown();
      sc.stop();
    }
  }

  /**
   * With spark.authenticate on, a stranger without the secret is refused by Spark before any message
   * reaches the plugin. One with a wrong secret, in this JVM with the driver, was seen to get its
   * message through to the plugin's endpoint: there the group credential drops and counts it. Either
   * way the jobs run and nothing of the stranger's is taken for a rank's.
   */
  @Test
  void withSparkAuthenticationAStrangerIsRefusedOrDropped() throws Exception {
    JavaSparkContext sc = new JavaSparkContext(LocalSpark.withPlugin("intruder-auth", "local[3]")
        .set("spark.authenticate", "true").set("spark.authenticate.secret", "secret-" + System.nanoTime()));
    try {
      String group = sc.sc().applicationId().replaceAll("[^A-Za-z0-9._-]", "_") + "-stage0.0";
      byte[] arrival = RpcMessages.encode(new RpcMessages.Arrive(group, 0, 0, 1, new byte[] {9}, 60_000, false));
      SparkConf none = new SparkConf();
      SparkConf wrong = new SparkConf().set("spark.authenticate", "true").set("spark.authenticate.secret", "guess");
      long delivered = 0;
      for (SparkConf c : List.of(none, wrong)) {
        c.set("spark.rpc.lookupTimeout", "10s").set("spark.rpc.askTimeout", "10s");
        RpcEnv outside = RpcEnv.create("intruder", "127.0.0.1", 0, c,
            new SecurityManager(c, scala.Option.empty(), org.apache.spark.SecurityManager$.MODULE$.$lessinit$greater$default$3()),
            true);
        boolean refused = false;
        try {
          RpcEndpointRef driver = outside.setupEndpointRef(sc.sc().env().rpcEnv().address(), ENDPOINT);
          driver.askSync(new PluginMessage(GpuCollectivesPlugin.class.getName(), arrival), ClassTag$.MODULE$.Any());
          delivered++;
        } catch (Exception e) { // Spark's SparkException, thrown from Scala without a throws clause
          refused = true;
        } finally {
          outside.shutdown();
        }
        if (c == none) {
          assertTrue(refused, "a stranger without the secret reached the plugin endpoint");
        }
      }
      assertEquals(delivered, GpuCollDriverPlugin.active().credentialFailures(), "what got through is dropped and counted");
      JavaRDD<Integer> rows = sc.parallelize(List.of(1, 2, 3, 4, 5, 6), 3);
      assertEquals(List.of(21.0, 21.0, 21.0), GpuCollectives.barrierMapPartitions(rows, IntruderTest::sum).collect());
      assertEquals(List.of(21.0, 21.0, 21.0), direct(rows));
      assertEquals(delivered, GpuCollDriverPlugin.active().credentialFailures(), "the real ranks' messages all verify");
    } finally {
      sc.stop();
    }
  }

  /**
   * Someone who reads the loopback traffic sends every sealed message of the real ranks again,
   * byte for byte, over their own connection: each at once while its job runs (within its round),
   * all of them after the jobs, and all of them again during a later job. No job breaks, every copy
   * is dropped and counted, and no group is reported twice.
   */
  @Test
  void realMessagesSentAgainAreDroppedAndCountedAndBreakNoJob() throws Exception {
    Recording.clear();
    JavaSparkContext sc = new JavaSparkContext(LocalSpark.withPlugin("intruder-replay", "local[3]")
        .set("spark.plugins", Recording.class.getName()));
    SparkConf alone = new SparkConf();
    RpcEnv outside = RpcEnv.create("intruder", "127.0.0.1", 0, alone,
        new SecurityManager(alone, scala.Option.empty(), org.apache.spark.SecurityManager$.MODULE$.$lessinit$greater$default$3()), true);
    AtomicBoolean stop = new AtomicBoolean();
    AtomicLong replayed = new AtomicLong();
    AtomicReference<Throwable> replayError = new AtomicReference<>();
    RpcEndpointRef driver = outside.setupEndpointRef(sc.sc().env().rpcEnv().address(), ENDPOINT);
    java.util.function.Consumer<byte[]> replay = wire -> {
      driver.askSync(new PluginMessage(Recording.class.getName(), wire), ClassTag$.MODULE$.Any());
      replayed.incrementAndGet();
    };
    Thread replayer = new Thread(() -> {
      try {
        int next = 0;
        while (!stop.get()) {
          List<byte[]> seen = Recording.sealed();
          if (next == seen.size()) {
            Thread.sleep(1);
          }
          for (; next < seen.size(); next++) {
            replay.accept(seen.get(next));
          }
        }
      } catch (Throwable t) {
        replayError.set(t);
      }
    }, "replayer");
    try {
      replayer.start();
      JavaRDD<Integer> rows = sc.parallelize(List.of(1, 2, 3, 4, 5, 6), 3);
      for (int job = 0; job < 2; job++) {
        assertEquals(List.of(21.0, 21.0, 21.0), GpuCollectives.barrierMapPartitions(rows, IntruderTest::sum).collect());
        assertEquals(List.of(21.0, 21.0, 21.0), direct(rows));
      }
      stop.set(true);
      replayer.join(60_000);
      assertEquals(null, replayError.get());
      List<byte[]> earlier = Recording.sealed();
      assertTrue(earlier.size() > 0 && replayed.get() > 0, "nothing was recorded");
      earlier.forEach(replay); // after their rounds
      Thread later = new Thread(() -> earlier.forEach(replay), "replayer-later");
      later.start(); // during a later job
      assertEquals(List.of(21.0, 21.0, 21.0), GpuCollectives.barrierMapPartitions(rows, IntruderTest::sum).collect());
      assertEquals(List.of(21.0, 21.0, 21.0), direct(rows));
      later.join(120_000);
      long deadline = System.nanoTime() + 30_000_000_000L;
      while (GpuCollectivesPlugin.driverReports().size() < 6 && System.nanoTime() < deadline) {
        Thread.sleep(20);
      }
      Thread.sleep(500); // a report counted twice would show by now
      assertEquals(6, GpuCollectivesPlugin.driverReports().size(), "one report per group");
      GpuCollDriverPlugin plugin = GpuCollDriverPlugin.active();
      assertEquals(replayed.get(), plugin.credentialFailures() + plugin.reportFailures(),
          "copies sent: " + replayed.get() + "; dropped: " + plugin.credentialFailures() + " rendezvous, "
              + plugin.reportFailures() + " reports");
    } finally {
      stop.set(true);
      replayer.join(30_000);
      outside.shutdown();
      sc.stop();
    }
  }

  /**
   * The plugin under another name, its driver side recording every sealed message it receives (as
   * an eavesdropper on the loopback sees them), each once.
   */
  public static final class Recording implements org.apache.spark.api.plugin.SparkPlugin {
    private static final List<byte[]> SEALED = java.util.Collections.synchronizedList(new ArrayList<>());
    private static final java.util.Set<String> KNOWN = java.util.concurrent.ConcurrentHashMap.newKeySet();

    static void clear() {
      SEALED.clear();
      KNOWN.clear();
    }

    static List<byte[]> sealed() {
      synchronized (SEALED) {
        return List.copyOf(SEALED);
      }
    }

    @Override
    public org.apache.spark.api.plugin.DriverPlugin driverPlugin() {
      org.apache.spark.api.plugin.DriverPlugin real = new GpuCollectivesPlugin().driverPlugin();
      return new org.apache.spark.api.plugin.DriverPlugin() {
        @Override
        public java.util.Map<String, String> init(org.apache.spark.SparkContext sc,
            org.apache.spark.api.plugin.PluginContext ctx) {
          return real.init(sc, ctx);
        }

        @Override
        public void registerMetrics(String appId, org.apache.spark.api.plugin.PluginContext ctx) {
          real.registerMetrics(appId, ctx);
        }

        @Override
        public Object receive(Object message) throws Exception {
          Object reply = real.receive(message);
          if (message instanceof byte[] wire && RpcMessages.decode(wire) instanceof RpcMessages.Sealed
              && KNOWN.add(java.util.Base64.getEncoder().encodeToString(wire))) {
            SEALED.add(wire);
          }
          return reply;
        }

        @Override
        public void shutdown() {
          real.shutdown();
        }
      };
    }

    @Override
    public org.apache.spark.api.plugin.ExecutorPlugin executorPlugin() {
      return new GpuCollectivesPlugin().executorPlugin();
    }
  }

  /**
   * Junk to the plugin endpoint (random bytes, a truncated or other-version message, an object that
   * is no byte[]) is dropped and counted; the driver's log gets a line at the first and at each
   * power of two, no stack trace, however many arrive, and the jobs run.
   */
  @Test
  void aFloodOfJunkIsCountedAndLeavesTheLogSmall() throws Exception {
    JavaSparkContext sc = new JavaSparkContext(LocalSpark.withPlugin("intruder-junk", "local[3]"));
    SparkConf alone = new SparkConf();
    RpcEnv outside = RpcEnv.create("intruder", "127.0.0.1", 0, alone,
        new SecurityManager(alone, scala.Option.empty(), org.apache.spark.SecurityManager$.MODULE$.$lessinit$greater$default$3()), true);
    LogLines lines = new LogLines();
    try {
      RpcEndpointRef driver = outside.setupEndpointRef(sc.sc().env().rpcEnv().address(), ENDPOINT);
      java.util.Random random = new java.util.Random(7);
      byte[] real = RpcMessages.encode(new RpcMessages.Poll("g", 0, 0));
      byte[] otherVersion = real.clone();
      otherVersion[7] = 4;
      lines.start();
      int sent = 0;
      for (int i = 0; i < 3000; i++) {
        byte[] junk = new byte[1 + random.nextInt(64)];
        random.nextBytes(junk);
        Object m = switch (i % 5) {
          case 0 -> junk;
          case 1 -> java.util.Arrays.copyOf(real, 1 + random.nextInt(real.length - 1));
          case 2 -> otherVersion;
          case 3 -> "not a gpucoll message " + i;
          default -> new byte[0];
        };
        try {
          driver.askSync(new PluginMessage(GpuCollectivesPlugin.class.getName(), m), ClassTag$.MODULE$.Any());
        } catch (Exception e) { // the answer of a driver that threw
          // counted below all the same
        }
        sent++;
      }
      lines.stop();
      assertEquals(sent, GpuCollDriverPlugin.active().undecodableMessages(), "every junk message counted");
      assertEquals(0, lines.traces.get(), "a stack trace was logged: " + lines.first.get());
      assertTrue(lines.lines.get() <= 2 * 13, lines.lines.get() + " lines logged for " + sent + " junk messages; first: "
          + lines.first.get());
      JavaRDD<Integer> rows = sc.parallelize(List.of(1, 2, 3, 4, 5, 6), 3);
      assertEquals(List.of(21.0, 21.0, 21.0), GpuCollectives.barrierMapPartitions(rows, IntruderTest::sum).collect());
      assertEquals(List.of(21.0, 21.0, 21.0), direct(rows));
      assertEquals(sent, GpuCollDriverPlugin.active().undecodableMessages(), "a real message was taken for junk");
    } finally {
      lines.stop();
      outside.shutdown();
      sc.stop();
    }
  }

  /** Counts the log's lines at WARN and above (a stack trace's frames included) while started. */
  private static final class LogLines extends org.apache.logging.log4j.core.appender.AbstractAppender {
    final AtomicLong lines = new AtomicLong();
    final AtomicLong traces = new AtomicLong();
    final AtomicReference<String> first = new AtomicReference<>();

    LogLines() {
      super("junk-lines", null, null, true, org.apache.logging.log4j.core.config.Property.EMPTY_ARRAY);
    }

    @Override
    public void append(org.apache.logging.log4j.core.LogEvent e) {
      if (!e.getLevel().isMoreSpecificThan(org.apache.logging.log4j.Level.WARN)) {
        return;
      }
      first.compareAndSet(null, e.getLoggerName() + ": " + e.getMessage().getFormattedMessage());
      lines.incrementAndGet();
      if (e.getThrown() != null) {
        traces.incrementAndGet();
        lines.addAndGet(e.getThrown().getStackTrace().length);
      }
    }

    @Override
    public void start() {
      super.start();
      org.apache.logging.log4j.core.LoggerContext ctx =
          (org.apache.logging.log4j.core.LoggerContext) org.apache.logging.log4j.LogManager.getContext(false);
      ctx.getConfiguration().getRootLogger().addAppender(this, null, null);
      ctx.updateLoggers();
    }

    @Override
    public void stop() {
      org.apache.logging.log4j.core.LoggerContext ctx =
          (org.apache.logging.log4j.core.LoggerContext) org.apache.logging.log4j.LogManager.getContext(false);
      ctx.getConfiguration().getRootLogger().removeAppender(getName());
      ctx.updateLoggers();
      super.stop();
    }
  }

  private static RpcMessages.RankReportMessage forgedReport(String groupId, String stage, int rank) {
    return new RpcMessages.RankReportMessage(groupId, stage, rank, 3, "intruder-host", "driver", 1, "host",
        PluginRpcRendezvous.KIND, java.util.Map.of("allReduce", java.util.Map.of("forged", 99L)), List.of(),
        List.of("forged"), "", false, 1, 1, "forged failure", List.of(), List.of());
  }

  /** The sum as a stage on rdd.barrier() directly, as a user without our API writes it. */
  private static List<Double> direct(JavaRDD<Integer> rows) {
    scala.reflect.ClassTag<Double> tag = ClassTag$.MODULE$.apply(Double.class);
    return new JavaRDD<>(rows.rdd().barrier().mapPartitions(new DirectSum(), false, tag), tag).collect();
  }

  private static final class DirectSum
      extends scala.runtime.AbstractFunction1<scala.collection.Iterator<Integer>, scala.collection.Iterator<Double>>
      implements java.io.Serializable {
    private static final long serialVersionUID = 1L;

    @Override
    public scala.collection.Iterator<Double> apply(scala.collection.Iterator<Integer> rows) {
      return scala.jdk.javaapi.CollectionConverters.asScala(
          sum(GpuCollectives.communicator(), scala.jdk.javaapi.CollectionConverters.asJava(rows)));
    }
  }

  private static Iterator<Double> sum(Communicator comm, Iterator<Integer> rows) {
    double local = 0;
    while (rows.hasNext()) {
      local += rows.next();
    }
    double[] total = {local};
    comm.allReduce(total, ReduceOp.SUM);
    List<Double> out = new ArrayList<>();
    out.add(total[0]);
    return out.iterator();
  }
}
