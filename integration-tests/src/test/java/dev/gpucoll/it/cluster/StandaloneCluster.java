package dev.gpucoll.it.cluster;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.HttpURLConnection;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * A Spark standalone cluster on this machine, each part its own process started from Spark's
 * jars as {@code spark-class} would: a Master, Workers (which spawn the executors) and, per
 * application, {@code spark-submit} in client mode. Every process it starts is stopped by
 * {@link #close()}, with the processes they spawned.
 *
 * <p>Folders under {@link #dir()}: {@code spark-home/jars} (Spark's jars, what executors get),
 * {@code logs/} (one file per process), {@code work/} (executor folders, their stderr),
 * {@code eventlog/}.
 */
final class StandaloneCluster implements AutoCloseable {
  private static final String MASTER = "org.apache.spark.deploy.master.Master";
  private static final String WORKER = "org.apache.spark.deploy.worker.Worker";
  private static final String SUBMIT = "org.apache.spark.deploy.SparkSubmit";
  private static final String HISTORY = "org.apache.spark.deploy.history.HistoryServer";

  private final Path dir;
  private final List<String> sparkClassPath;
  private final List<String> jvmFlags;
  private final String scalaBinary;
  private final List<Process> started = new ArrayList<>();
  private final int masterPort;
  private final int masterUiPort;

  /** What one spark-submit did. */
  record Submission(int exitCode, String output, Path log) {}

  private StandaloneCluster(Path dir, List<String> sparkClassPath, List<String> jvmFlags, String scalaBinary)
      throws IOException {
    this.dir = dir;
    this.scalaBinary = scalaBinary;
    this.sparkClassPath = sparkClassPath;
    this.jvmFlags = jvmFlags;
    this.masterPort = freePort();
    this.masterUiPort = freePort();
    Path jars = Files.createDirectories(dir.resolve("spark-home/jars"));
    for (String entry : sparkClassPath) {
      Path p = Path.of(entry);
      if (entry.endsWith(".jar") && Files.isRegularFile(p)) {
        Files.createSymbolicLink(jars.resolve(p.getFileName()), p);
      }
    }
    Files.createDirectories(dir.resolve("logs"));
    Files.createDirectories(dir.resolve("work"));
    Files.createDirectories(eventLogDir());
  }

  /**
   * Starts a Master and {@code workers} Workers of one core each and waits until all are alive;
   * {@code scalaBinary} is the Scala binary of the Spark in {@code sparkClassPath} (2.12, 2.13).
   */
  static StandaloneCluster start(Path dir, List<String> sparkClassPath, List<String> jvmFlags,
      String scalaBinary, int workers, Duration timeout) throws IOException, InterruptedException {
    return start(dir, sparkClassPath, jvmFlags, scalaBinary, java.util.Collections.nCopies(workers, "127.0.0.1"),
        timeout);
  }

  /**
   * As above, Worker {@code w} bound to {@code workerHosts.get(w)}: Workers on different loopback
   * addresses (127.0.0.2, 127.0.0.3, ...) are different hosts to Spark, as on a cluster of machines.
   */
  static StandaloneCluster start(Path dir, List<String> sparkClassPath, List<String> jvmFlags,
      String scalaBinary, List<String> workerHosts, Duration timeout) throws IOException, InterruptedException {
    StandaloneCluster c = new StandaloneCluster(dir, sparkClassPath, jvmFlags, scalaBinary);
    try {
      c.launch("master", MASTER, "127.0.0.1", "--host", "127.0.0.1", "--port", String.valueOf(c.masterPort),
          "--webui-port", String.valueOf(c.masterUiPort));
      for (int w = 0; w < workerHosts.size(); w++) {
        String host = workerHosts.get(w);
        c.launch("worker-" + w, WORKER, host, "--host", host, "--cores", "1", "--memory", "1g",
            "--webui-port", String.valueOf(freePort()), "--work-dir", dir.resolve("work").toString(),
            c.masterUrl());
      }
      c.awaitAliveWorkers(workerHosts.size(), timeout);
      return c;
    } catch (IOException | InterruptedException | RuntimeException | Error e) {
      c.close();
      throw e;
    }
  }

  Path dir() {
    return dir;
  }

  String masterUrl() {
    return "spark://127.0.0.1:" + masterPort;
  }

  /** The Master's web UI (its /json/ lists workers and applications). */
  String masterUiUrl() {
    return "http://127.0.0.1:" + masterUiPort;
  }

  Path eventLogDir() {
    return dir.resolve("eventlog");
  }

  /**
   * Runs {@code spark-submit --master <this cluster> --properties-file <properties> [submitArgs]}
   * in client mode and waits for it, at most {@code timeout} (then it is killed and the exit code
   * is -1).
   */
  Submission submit(String name, Map<String, String> properties, List<String> submitArgs,
      Duration timeout) throws IOException, InterruptedException {
    Path props = dir.resolve(name + ".properties");
    StringBuilder text = new StringBuilder();
    properties.forEach((k, v) -> text.append(k).append(' ').append(v).append('\n'));
    Files.writeString(props, text);
    List<String> args = new ArrayList<>(List.of("--master", masterUrl(), "--deploy-mode", "client",
        "--name", name, "--properties-file", props.toString()));
    args.addAll(submitArgs);
    Process p = launch(name, SUBMIT, "127.0.0.1", args.toArray(String[]::new));
    int exit = -1;
    if (p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
      exit = p.exitValue();
    } else {
      stop(p);
    }
    Path log = dir.resolve("logs/" + name + ".log");
    return new Submission(exit, Files.readString(log), log);
  }

  /**
   * Starts a History Server on {@link #eventLogDir()} with {@code extraJars} on its class path (a
   * History Server plugin is found there, not through --jars) and returns its URL once its REST
   * API answers. {@link #close()} stops it with the rest.
   */
  String startHistoryServer(List<Path> extraJars, Duration timeout)
      throws IOException, InterruptedException {
    int port = freePort();
    List<String> classPath = new ArrayList<>(sparkClassPath);
    extraJars.forEach(j -> classPath.add(j.toString()));
    launchJava("history-server", List.of("-Xmx512m",
        "-Dspark.history.fs.logDirectory=" + eventLogDir().toUri(),
        "-Dspark.history.ui.port=" + port, "-Dspark.history.fs.update.interval=1s", HISTORY), classPath, "127.0.0.1");
    String url = "http://127.0.0.1:" + port;
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      try {
        fetch(url + "/api/v1/applications");
        return url;
      } catch (IOException notYet) {
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException("the History Server did not answer within " + timeout
              + ": " + notYet + diagnostics());
        }
      }
      Thread.sleep(250);
    }
  }

  /**
   * The body of an HTTP GET, for checks of the Master's, the driver's or a History Server's UI
   * and REST API; throws when the answer is not 200.
   */
  static String fetch(String url) throws IOException {
    HttpURLConnection c = (HttpURLConnection) URI.create(url).toURL().openConnection();
    c.setConnectTimeout(5_000);
    c.setReadTimeout(10_000);
    try {
      int status = c.getResponseCode();
      if (status != 200) {
        throw new IOException("GET " + url + " answered " + status);
      }
      return new String(c.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    } finally {
      c.disconnect();
    }
  }

  /** The last lines of every process log and executor stderr, for failure messages. */
  String diagnostics() {
    StringBuilder sb = new StringBuilder();
    try (Stream<Path> files = Files.walk(dir)) {
      for (Path f : files.filter(f -> Files.isRegularFile(f)
          && (f.toString().endsWith(".log") || f.getFileName().toString().equals("stderr"))).sorted().toList()) {
        List<String> lines = Files.readAllLines(f, StandardCharsets.UTF_8);
        // The first errors say why; the tail says how it ended.
        sb.append("\n==== ").append(dir.relativize(f)).append(": first errors\n");
        lines.stream().filter(l -> !l.startsWith("\tat ") && (l.contains("Exception")
            || l.contains("Error") || l.startsWith("Caused by"))).limit(15)
            .forEach(l -> sb.append(l, 0, Math.min(l.length(), 600)).append('\n'));
        sb.append("==== ").append(dir.relativize(f)).append(": last 25 lines\n");
        lines.subList(Math.max(0, lines.size() - 25), lines.size())
            .forEach(l -> sb.append(l, 0, Math.min(l.length(), 600)).append('\n'));
      }
    } catch (IOException e) {
      sb.append("\n(cannot read logs: ").append(e).append(")");
    }
    return sb.toString();
  }

  /**
   * The first line holding one of {@code needles} in the logs of application {@code appId}: its
   * driver's ({@code driverLog}), its executors' stderr and the History Server's; empty when none.
   */
  java.util.Optional<String> firstLogLine(String appId, Path driverLog, String... needles) {
    List<Path> logs = new ArrayList<>(List.of(driverLog, dir.resolve("logs/history-server.log")));
    try {
      Path executors = dir.resolve("work").resolve(appId);
      if (Files.isDirectory(executors)) {
        try (Stream<Path> files = Files.walk(executors)) {
          files.filter(f -> f.getFileName().toString().equals("stderr")).forEach(logs::add);
        }
      }
      for (Path f : logs) {
        if (Files.isRegularFile(f)) {
          for (String line : Files.readAllLines(f, StandardCharsets.UTF_8)) {
            for (String n : needles) {
              if (line.contains(n)) {
                return java.util.Optional.of(dir.relativize(f) + ": " + line);
              }
            }
          }
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return java.util.Optional.empty();
  }

  /** Stops every process this cluster started, newest first, each with what it spawned. */
  @Override
  public void close() {
    for (int i = started.size() - 1; i >= 0; i--) {
      stop(started.get(i));
    }
    started.clear();
  }

  /** {@code localIp}: the process's SPARK_LOCAL_IP (a Worker's executors inherit it). */
  private Process launch(String name, String mainClass, String localIp, String... args) throws IOException {
    List<String> cmd = new ArrayList<>(List.of(
        name.startsWith("master") || name.startsWith("worker") ? "-Xmx256m" : "-Xmx768m"));
    cmd.add(mainClass);
    cmd.addAll(List.of(args));
    return launchJava(name, cmd, sparkClassPath, localIp);
  }

  /** Starts {@code java <Spark's flags> -cp <classPath> <javaArgs>} with this cluster's environment. */
  private Process launchJava(String name, List<String> javaArgs, List<String> classPath, String localIp)
      throws IOException {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.addAll(jvmFlags);
    cmd.add("-cp");
    cmd.add(String.join(java.io.File.pathSeparator, classPath));
    cmd.addAll(javaArgs);
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true)
        .redirectOutput(dir.resolve("logs/" + name + ".log").toFile());
    Map<String, String> env = pb.environment();
    env.put("SPARK_HOME", dir.resolve("spark-home").toString());
    env.put("SPARK_SCALA_VERSION", scalaBinary);
    env.put("SPARK_LOCAL_IP", localIp);
    env.remove("SPARK_CONF_DIR");
    Process p = pb.start();
    started.add(p);
    return p;
  }

  /** SIGTERM to the process and its descendants, SIGKILL to whatever is left after 10 s. */
  private static void stop(Process p) {
    List<ProcessHandle> family = new ArrayList<>(p.descendants().toList());
    family.add(0, p.toHandle());
    family.forEach(ProcessHandle::destroy);
    long deadline = System.nanoTime() + 10_000_000_000L;
    for (ProcessHandle h : family) {
      try {
        h.onExit().get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
      } catch (Exception e) {
        h.destroyForcibly();
      }
    }
  }

  private void awaitAliveWorkers(int workers, Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    Pattern alive = Pattern.compile("\"aliveworkers\"\\s*:\\s*(\\d+)");
    String last = "(no answer)";
    while (System.nanoTime() < deadline) {
      try {
        last = fetch(masterUiUrl() + "/json/");
        Matcher m = alive.matcher(last);
        if (m.find() && Integer.parseInt(m.group(1)) >= workers) {
          return;
        }
      } catch (IOException notYet) {
        last = notYet.toString();
      }
      for (Process p : started) {
        if (!p.isAlive()) {
          throw new IllegalStateException("a cluster process exited with " + p.exitValue()
              + " during start-up:" + diagnostics());
        }
      }
      Thread.sleep(250);
    }
    throw new IllegalStateException(workers + " workers not alive within " + timeout
        + "; the master said: " + last + diagnostics());
  }

  static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  /** The active lines of a spark-defaults.conf file, as key -> value. */
  static Map<String, String> readSparkDefaults(Path file) {
    Map<String, String> out = new LinkedHashMap<>();
    try {
      for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
        String t = line.strip();
        if (t.isEmpty() || t.startsWith("#")) {
          continue;
        }
        String[] kv = t.split("\\s+", 2);
        out.put(kv[0], kv.length > 1 ? kv[1].strip() : "");
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out;
  }
}
