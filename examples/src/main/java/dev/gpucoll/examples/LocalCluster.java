package dev.gpucoll.examples;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;

/**
 * Spark {@code local-cluster[N,1,1024]} from a plain class path: a standalone master, N workers
 * and N executor JVMs on this machine, the way Spark's own suites cross process boundaries.
 *
 * <p>Needs {@code SPARK_HOME} (any writable folder; its {@code jars/} is filled here with links to
 * the jars of this JVM's class path) and {@code SPARK_SCALA_VERSION=2.13} in the environment of
 * this JVM, because the worker reads both when it launches executors.
 */
public final class LocalCluster {
  private LocalCluster() {}

  /** A SparkConf for {@code executors} executor JVMs of one core each, with gpucoll enabled. */
  public static SparkConf conf(String appName, int executors) {
    List<String> classPath = classPath();
    linkJars(sparkHome(), classPath);
    return new SparkConf()
        .setAppName(appName)
        .setMaster("local-cluster[" + executors + ",1,1024]")
        // Executors must load our classes (and the caller's lambdas) from absolute paths.
        .set("spark.executor.extraClassPath", String.join(File.pathSeparator, classPath))
        .set("spark.plugins", "dev.gpucoll.spark.GpuCollectivesPlugin")
        .set("spark.ui.enabled", "false")
        .set("spark.driver.host", "127.0.0.1")
        .set("spark.driver.bindAddress", "127.0.0.1");
  }

  /**
   * Waits until {@code executors} executors have registered: a barrier stage submitted earlier
   * fails Spark's slot check and is retried only after 15 s.
   */
  public static void awaitExecutors(SparkContext sc, int executors, Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (sc.statusTracker().getExecutorInfos().length - 1 < executors) { // minus the driver
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("only " + (sc.statusTracker().getExecutorInfos().length - 1)
            + " of " + executors + " executors registered within " + timeout
            + "; see " + sparkHome().resolve("work") + " for executor logs");
      }
      try {
        Thread.sleep(100);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted while waiting for executors", e);
      }
    }
  }

  static Path sparkHome() {
    String home = System.getenv("SPARK_HOME");
    if (home == null || home.isBlank()) {
      throw new IllegalStateException("local-cluster needs SPARK_HOME set before the JVM starts"
          + " (any writable folder, e.g. target/spark-home); scripts/demo.sh and the"
          + " integration-tests pom set it");
    }
    if (!"2.13".equals(System.getenv("SPARK_SCALA_VERSION"))) {
      throw new IllegalStateException("local-cluster needs SPARK_SCALA_VERSION=2.13 in the"
          + " environment, else executors fail with 'Cannot find any build directories'");
    }
    return Path.of(home).toAbsolutePath();
  }

  /** This JVM's class path as absolute entries (Surefire's real one when run under Surefire). */
  static List<String> classPath() {
    String cp = System.getProperty("surefire.test.class.path");
    if (cp == null || cp.isBlank()) {
      cp = System.getProperty("java.class.path");
    }
    Set<String> out = new LinkedHashSet<>();
    for (String entry : cp.split(File.pathSeparator)) {
      if (!entry.isBlank()) {
        out.add(Path.of(entry).toAbsolutePath().normalize().toString());
      }
    }
    return new ArrayList<>(out);
  }

  private static void linkJars(Path sparkHome, List<String> classPath) {
    Path jars = sparkHome.resolve("jars");
    try {
      Files.createDirectories(jars);
      Files.createDirectories(sparkHome.resolve("work"));
      for (String entry : classPath) {
        Path p = Path.of(entry);
        if (!entry.endsWith(".jar") || !Files.isRegularFile(p)) {
          continue;
        }
        Path link = jars.resolve(p.getFileName());
        if (Files.isSymbolicLink(link) || Files.exists(link)) {
          Files.delete(link);
        }
        Files.createSymbolicLink(link, p);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot prepare " + jars + " for local-cluster", e);
    }
  }
}
