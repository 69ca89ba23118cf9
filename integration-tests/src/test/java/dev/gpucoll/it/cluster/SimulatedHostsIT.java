package dev.gpucoll.it.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Two Workers bound to 127.0.0.2 and 127.0.0.3 are two hosts to Spark, so a group of one rank on
 * each spans two hosts: every rank must be told its executor's host, not the address the driver saw
 * its executor connect from (127.0.0.1 for both). The GPU acceptance simulates hosts the same way.
 */
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class SimulatedHostsIT {
  static final List<String> HOSTS = List.of("127.0.0.2", "127.0.0.3");

  @Test
  void aGroupOfWorkersOnTwoLoopbackAddressesSpansTwoHosts() throws Exception {
    Path dir = Files.createTempDirectory("gpucoll-hosts");
    List<String> sparkClassPath = Arrays.stream(Files.readString(
            Path.of(StandaloneClusterIT.property("gpucoll.spark.classpath"))).strip().split(java.io.File.pathSeparator))
        .filter(s -> !s.isBlank()).toList();
    List<String> jvmFlags = Arrays.stream(StandaloneClusterIT.property("gpucoll.jvm.flags").split("\\s+"))
        .filter(s -> !s.isBlank()).toList();
    Path appJar = StandaloneClusterIT.appJar(dir.resolve("gpucoll-cluster-app.jar"));
    try (StandaloneCluster cluster = StandaloneCluster.start(dir, sparkClassPath, jvmFlags,
        StandaloneClusterIT.property("gpucoll.scala.binary"), HOSTS, Duration.ofSeconds(120))) {
      Map<String, String> conf = new LinkedHashMap<>(StandaloneCluster.readSparkDefaults(
          Path.of(StandaloneClusterIT.property("gpucoll.conf.template"))));
      conf.put("spark.cores.max", String.valueOf(HOSTS.size()));
      conf.put("spark.executor.cores", "1");
      conf.put("spark.executor.memory", "512m");
      conf.put("spark.driver.host", "127.0.0.1");
      conf.put("spark.driver.bindAddress", "127.0.0.1");
      conf.put("spark.ui.enabled", "false");
      conf.put("spark.task.maxFailures", "1");
      conf.put("spark.gpucoll.backend", "host");
      conf.put("spark.gpucoll.timeout", "60s");
      conf.put("spark.gpucoll.report", "summary");
      StandaloneCluster.Submission s = cluster.submit("hosts", conf, List.of("--class",
          ClusterCollectivesApp.class.getName(), "--jars", StandaloneClusterIT.property("gpucoll.dist.jar"),
          appJar.toString(), String.valueOf(HOSTS.size())), Duration.ofSeconds(240));
      assertEquals(0, s.exitCode(), () -> "spark-submit failed (exit " + s.exitCode() + "):\n" + s.output()
          + cluster.diagnostics());
      Matcher ok = Pattern.compile(ClusterCollectivesApp.OK + " .* ranks on hosts \\[([^\\]]*)]")
          .matcher(s.output());
      assertTrue(ok.find(), () -> "no success line in the driver output:\n" + s.output());
      assertEquals(Set.copyOf(HOSTS), Set.of(ok.group(1).split(", ")),
          () -> "the group's hosts, by rank: " + ok.group(1));
    } finally {
      if (!Boolean.getBoolean("gpucoll.cluster.keep")) { // -Dgpucoll.cluster.keep=true to debug
        try (Stream<Path> files = Files.walk(dir)) { // links are removed, never followed
          files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
        }
      }
    }
  }
}
