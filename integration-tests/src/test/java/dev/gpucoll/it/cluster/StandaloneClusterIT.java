package dev.gpucoll.it.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The one jar deployed as a Spark user deploys it: a standalone Master and two Workers as their
 * own processes, {@code spark-submit --jars gpucoll-dist_<Scala binary>-<version>.jar} with the keys of
 * {@code conf/spark-defaults.conf.template}, an application in its own jar, and no
 * {@code spark.executor.extraClassPath}: executors see Spark's jars and what Spark fetched for
 * them, nothing else.
 *
 * <p>Further checks against this cluster (driver UI, History Server pages, metrics sinks) pass
 * their properties to {@link #submit} (e.g. their own {@code spark.ui.port}, a sink), start a
 * History Server with {@link StandaloneCluster#startHistoryServer} and fetch pages with
 * {@link #awaitBody} or {@link StandaloneCluster#fetch}.
 */
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class StandaloneClusterIT {
  static final int WORKERS = 2;
  static Path dir;
  static StandaloneCluster cluster;
  static Path appJar;
  static Path eventLogDir;

  @BeforeAll
  static void startCluster() throws Exception {
    dir = Files.createTempDirectory("gpucoll-standalone");
    List<String> sparkClassPath = Arrays.stream(
        Files.readString(Path.of(property("gpucoll.spark.classpath"))).strip().split(java.io.File.pathSeparator))
        .filter(s -> !s.isBlank()).toList();
    List<String> jvmFlags = Arrays.stream(property("gpucoll.jvm.flags").split("\\s+"))
        .filter(s -> !s.isBlank()).toList();
    appJar = appJar(dir.resolve("gpucoll-cluster-app.jar"));
    cluster = StandaloneCluster.start(dir, sparkClassPath, jvmFlags, property("gpucoll.scala.binary"),
        WORKERS, Duration.ofSeconds(120));
    eventLogDir = cluster.eventLogDir();
  }

  @AfterAll
  static void stopCluster() throws IOException {
    if (cluster != null) {
      cluster.close();
    }
    if (dir != null && !Boolean.getBoolean("gpucoll.cluster.keep")) { // -Dgpucoll.cluster.keep=true to debug
      try (Stream<Path> files = Files.walk(dir)) { // links are removed, never followed
        files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
      }
    }
  }

  @Test
  void everyCollectiveRunsOnTwoWorkersWithTheOneJarOnJarsOnly() throws Exception {
    Path dist = Path.of(property("gpucoll.dist.jar"));
    assertTrue(Files.isRegularFile(dist), dist + " is missing: build it with mvn package (it is spark-plugin/gpucoll-dist's jar)");
    StandaloneCluster.Submission s = submit("collectives", Map.of(), List.of(
        "--class", ClusterCollectivesApp.class.getName(), "--jars", dist.toString(),
        appJar.toString(), String.valueOf(WORKERS), "--check-ui-tab"), Duration.ofSeconds(240));
    assertEquals(0, s.exitCode(), () -> "spark-submit failed (exit " + s.exitCode() + "):\n"
        + s.output() + cluster.diagnostics());
    Matcher ok = Pattern.compile(ClusterCollectivesApp.OK + " ranks=2 pids=\\[\\d+, \\d+] group=(\\S+)")
        .matcher(s.output());
    assertTrue(ok.find(), () -> "no success line in the driver output:\n" + s.output());
    assertFalse(s.output().contains("ClassNotFoundException"), s::output);
    String groupId = ok.group(1);
    assertTrue(eventLogContains("dev.gpucoll.spark.GroupReportEvent", groupId),
        () -> "the event log in " + eventLogDir + " lacks the report of group " + groupId);

    // The event log as a History Server replays it, with the one jar on its class path.
    String appId = groupId.substring(0, groupId.indexOf("-stage"));
    String history = cluster.startHistoryServer(List.of(dist), Duration.ofSeconds(90));
    String apps = awaitBody(history + "/api/v1/applications", appId, Duration.ofSeconds(60));
    assertTrue(Pattern.compile("\"completed\"\\s*:\\s*true").matcher(apps).find(), apps);
    // The History Server's GPU Collectives page of that application, drawn from the replayed reports.
    String page = awaitBody(history + "/history/" + appId + "/gpucoll/", groupId, Duration.ofSeconds(60));
    assertTrue(page.contains("GPU Collectives") && page.contains("spark-plugin-rpc"), page);
    // What a Spark line lacks must degrade with a message, never a linkage error at task time.
    java.util.Optional<String> linkage = cluster.firstLogLine(appId, s.log(), "NoSuchMethodError",
        "NoClassDefFoundError", "AbstractMethodError", "IncompatibleClassChangeError");
    assertTrue(linkage.isEmpty(), () -> "a linkage error: " + linkage.get() + cluster.diagnostics());
  }

  /** Fetches {@code url} until its body contains {@code needle}. */
  static String awaitBody(String url, String needle, Duration timeout) throws Exception {
    long deadline = System.nanoTime() + timeout.toNanos();
    String last = "";
    while (System.nanoTime() < deadline) {
      try {
        last = StandaloneCluster.fetch(url);
        if (last.contains(needle)) {
          return last;
        }
      } catch (IOException notYet) {
        last = notYet.toString();
      }
      Thread.sleep(500);
    }
    throw new AssertionError(url + " did not show " + needle + " within " + timeout + "; last: " + last
        + cluster.diagnostics());
  }

  @Test
  void theThinJarAloneFailsNamingWhatIsMissing() throws Exception {
    Path thin = Path.of(property("gpucoll.thin.jar"));
    assertTrue(Files.isRegularFile(thin), thin + " is missing");
    StandaloneCluster.Submission s = submit("thin-jar", Map.of(), List.of(
        "--class", ClusterCollectivesApp.class.getName(), "--jars", thin.toString(),
        appJar.toString(), String.valueOf(WORKERS)), Duration.ofSeconds(120));
    assertNotEquals(0, s.exitCode(), s::output);
    for (String named : List.of("gpucoll cannot start on the driver: the class path lacks",
        "gpucoll-core (dev.gpucoll.core.CommunicatorFactory)", "JavaCPP (org.bytedeco.javacpp.Loader)",
        "gpucoll_kernels.fatbin", "gpucoll-dist_" + property("gpucoll.scala.binary") + "-<version>.jar on --jars")) {
      assertTrue(s.output().contains(named), () -> "'" + named + "' not in:\n" + s.output());
    }
  }

  @Test
  void theConfTemplateEnablesThePluginAndWaitsForAllExecutors() {
    Map<String, String> template = StandaloneCluster.readSparkDefaults(Path.of(property("gpucoll.conf.template")));
    assertEquals("dev.gpucoll.spark.GpuCollectivesPlugin", template.get("spark.plugins"));
    assertEquals("1.0", template.get("spark.scheduler.minRegisteredResourcesRatio"));
    assertFalse(template.containsKey("spark.executor.extraClassPath"));
  }

  /**
   * Submits to the cluster with the active keys of conf/spark-defaults.conf.template, this
   * test's settings, then {@code extra} (a later check's sink or UI settings).
   */
  static StandaloneCluster.Submission submit(String name, Map<String, String> extra,
      List<String> args, Duration timeout) throws Exception {
    Map<String, String> conf = new LinkedHashMap<>(
        StandaloneCluster.readSparkDefaults(Path.of(property("gpucoll.conf.template"))));
    conf.put("spark.cores.max", String.valueOf(WORKERS)); // with minRegisteredResourcesRatio=1.0: wait for all
    conf.put("spark.executor.cores", "1");
    conf.put("spark.executor.memory", "512m");
    conf.put("spark.driver.host", "127.0.0.1");
    conf.put("spark.driver.bindAddress", "127.0.0.1");
    conf.put("spark.ui.port", String.valueOf(StandaloneCluster.freePort()));
    conf.put("spark.ui.showConsoleProgress", "false");
    conf.put("spark.eventLog.enabled", "true");
    conf.put("spark.eventLog.compress", "false");
    conf.put("spark.eventLog.dir", eventLogDir.toUri().toString());
    conf.put("spark.task.maxFailures", "1");
    conf.put("spark.gpucoll.backend", "host");
    conf.put("spark.gpucoll.timeout", "60s");
    conf.put("spark.gpucoll.report", "summary");
    conf.putAll(extra);
    return cluster.submit(name, conf, args, timeout);
  }

  static boolean eventLogContains(String... needles) throws IOException {
    try (Stream<Path> files = Files.walk(eventLogDir)) {
      for (Path f : files.filter(Files::isRegularFile).toList()) {
        String text = Files.readString(f);
        if (Arrays.stream(needles).allMatch(text::contains)) {
          return true;
        }
      }
    }
    return false;
  }

  static String property(String name) {
    String v = System.getProperty(name);
    if (v == null || v.isBlank()) {
      throw new IllegalStateException(name + " is not set; integration-tests/pom.xml sets it for this test");
    }
    return v;
  }

  /** The application's own jar: its classes from this module's test output, nothing of gpucoll. */
  static Path appJar(Path jar) throws Exception {
    Path classes = Path.of(ClusterCollectivesApp.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    String pkg = ClusterCollectivesApp.class.getPackageName().replace('.', '/');
    String prefix = ClusterCollectivesApp.class.getSimpleName();
    try (JarOutputStream out = new JarOutputStream(Files.newOutputStream(jar));
        Stream<Path> files = Files.list(classes.resolve(pkg))) {
      for (Path f : files.filter(f -> f.getFileName().toString().startsWith(prefix)).toList()) {
        out.putNextEntry(new JarEntry(pkg + "/" + f.getFileName()));
        out.write(Files.readAllBytes(f));
        out.closeEntry();
      }
    }
    return jar;
  }
}
