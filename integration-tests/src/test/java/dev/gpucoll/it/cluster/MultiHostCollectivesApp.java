package dev.gpucoll.it.cluster;

import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.spark.GpuCollectives;
import dev.gpucoll.spark.GpuCollectivesPlugin;
import dev.gpucoll.spark.GroupReport;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.IntStream;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerTaskEnd;

/**
 * The application of {@code scripts/multihost/run.sh}: a standalone cluster whose Workers each run
 * in their own network, UTS and mount namespace (a "host" with its own address, hostname and
 * /dev/shm). Stage 1 runs every collective on every rank (checked on the driver against
 * {@link ClusterCollectivesApp#expected}) and requires the group report to name every host and
 * the cross-host path {@code host-ucx}. Stage 2 kills one executor with SIGKILL in the middle of
 * its collectives on the first attempt: every other rank's call must end with an error (its own
 * detection of the lost peer, or Spark's cancellation when that came first), and Spark's retry of
 * the barrier stage must complete. Prints {@link ClusterCollectivesApp#OK} or
 * {@link ClusterCollectivesApp#FAILED} lines and exits 0 or 1.
 *
 * <p>Usage: {@code MultiHostCollectivesApp <ranks> <hosts>}.
 */
public final class MultiHostCollectivesApp {
  private MultiHostCollectivesApp() {}

  public static void main(String[] args) {
    int ranks = Integer.parseInt(args[0]);
    int hosts = Integer.parseInt(args[1]);
    int exit = 1;
    SparkContext sc = null;
    List<String> failures = new CopyOnWriteArrayList<>();
    try {
      sc = new SparkContext(new SparkConf());
      sc.addSparkListener(new SparkListener() {
        @Override
        public void onTaskEnd(SparkListenerTaskEnd end) {
          if (!end.taskInfo().successful()) {
            // The reason's first line ("class: message"), not its toString (a case class whose stack
            // trace prints as [Ljava.lang.StackTraceElement;@...).
            failures.add(end.reason() instanceof org.apache.spark.TaskFailedReason r
                ? r.toErrorString().lines().findFirst().orElse("") : end.reason().toString());
          }
        }
      });
      JavaSparkContext jsc = new JavaSparkContext(sc);
      List<String> wrong = new ArrayList<>();

      // Stage 1: every collective, across the hosts.
      long t0 = System.nanoTime();
      List<String> lines = GpuCollectives.barrierMapPartitions(
          jsc.parallelize(IntStream.range(0, ranks).boxed().toList(), ranks),
          (comm, rows) -> {
            List<java.net.Socket> junk = junkConnections(listeningSockets());
            List<String> out = new ArrayList<>(ClusterCollectivesApp.runEveryCollective(comm));
            closeLater(junk); // still connected when the group closes
            out.add("host " + comm.rank() + " " + java.nio.file.Files.readString(java.nio.file.Path.of("/proc/sys/kernel/hostname")).strip()
                + " " + comm.backend());
            out.add("listen " + comm.rank() + " " + listeningSockets());
            return out.iterator();
          }).collect();
      wrong.addAll(ClusterCollectivesApp.wrongResults(lines, ranks));
      // While the group was open, its executor JVM listened on the executor's own address only (UCX's
      // workers too: not on loopback, not on every interface).
      lines.stream().filter(l -> l.startsWith("listen ")).forEach(l -> {
        for (String a : l.split(" ", 3)[2].split(",")) {
          if (a.startsWith("127.") || a.startsWith("0.0.0.0:") || a.startsWith("[::]") || a.startsWith("[::1]")) {
            wrong.add("rank " + l.split(" ")[1] + " listened on " + a + " (all: " + l.split(" ", 3)[2] + ")");
          }
        }
      });
      lines.stream().filter(l -> l.startsWith("listen ")).limit(1).forEach(l -> System.out.println("stage 1 " + l));
      Set<String> hostNames = new TreeSet<>();
      lines.stream().filter(l -> l.startsWith("host ")).forEach(l -> hostNames.add(l.split(" ")[2]));
      if (hostNames.size() != hosts) {
        wrong.add("expected ranks on " + hosts + " hostnames, got " + hostNames);
      }
      GroupReport report = awaitReport(1, 20_000);
      if (report == null) {
        wrong.add("no group report reached the driver");
      } else if (!report.backend().equals("host-ucx") || report.hosts().size() != hosts
          || report.distinctProcesses() != ranks) {
        wrong.add("unexpected group report: " + report.summaryLine());
      }
      System.out.printf("stage 1: every collective on %d ranks, %d hosts %s in %.1f s%n", ranks,
          hostNames.size(), hostNames, (System.nanoTime() - t0) / 1e9);
      if (report != null) {
        System.out.println("stage 1 report: " + report.summaryLine());
        report.otherFindings().stream().filter(f -> f.contains("cross-host")).limit(1)
            .forEach(f -> System.out.println("stage 1 path: " + f));
      }

      // Stage 2: a SIGKILL of one executor in the middle of its collectives, on the first attempt.
      int victim = ranks / 2;
      long t1 = System.nanoTime();
      List<String> sums = GpuCollectives.barrierMapPartitions(
          jsc.parallelize(IntStream.range(0, ranks).boxed().toList(), ranks),
          (comm, rows) -> killedOnceThenSum(comm, victim).iterator())
          // A shuffle after the barrier stage: Spark retries a failed barrier ShuffleMapStage, never
          // a ResultStage (its output may be committed already).
          .repartition(1).collect();
      double stage2 = (System.nanoTime() - t1) / 1e9;
      long want = (long) ranks * (ranks - 1) / 2;
      for (String s : sums) {
        if (!s.endsWith(" sum " + want + " attempt 1")) {
          wrong.add("stage 2 retry: " + s);
        }
      }
      List<String> bounded = failures.stream().filter(f -> f.contains("gpucoll") || f.contains("rank ")).toList();
      System.out.printf("stage 2: executor of rank %d killed with SIGKILL mid-collective; %d task failures,"
          + " the retried stage completed, %.1f s in all%n", victim, failures.size(), stage2);
      bounded.stream().limit(3).forEach(f -> System.out.println("stage 2 failure: "
          + f.substring(0, Math.min(400, f.length())).replace('\n', ' ')));
      // Spark learns of the lost executor as fast as the peers do (its driver connection resets), so
      // whether a peer's task fails with our error or is killed by Spark first is a race; what must
      // hold either way: the attempt's group report shows every surviving rank's call ended with an
      // error, and the victim never reported.
      GroupReport attempt0 = awaitFailedReport(report, 30_000);
      if (attempt0 == null) {
        wrong.add("stage 2: no report of the failed attempt reached the driver; task failures: " + failures);
      } else {
        int ownDetection = 0;
        for (GroupReport.Member m : attempt0.members()) {
          String why = m.failure().length() > 200 ? m.failure().substring(0, 200) + "..." : m.failure();
          System.out.println("stage 2 attempt 0, rank " + m.rank() + ": " + (m.failed() ? why : "completed"));
          if (m.rank() == victim) {
            if (m.pid() != -1) {
              wrong.add("stage 2: the killed rank " + victim + " reported: " + m);
            }
          } else if (!m.failed() || m.pid() == -1) {
            wrong.add("stage 2: rank " + m.rank() + "'s call did not end with an error: " + m);
          } else if (!m.failure().contains("Spark killed task") && !m.failure().contains("TaskKilled")) {
            ownDetection++;
          }
        }
        System.out.printf("stage 2: of %d surviving ranks, %d failed on the group's own detection, %d were"
            + " cancelled by Spark first%n", ranks - 1, ownDetection, ranks - 1 - ownDetection);
      }
      if (wrong.isEmpty()) {
        System.out.println(ClusterCollectivesApp.OK + " ranks=" + ranks + " hosts=" + hostNames);
        exit = 0;
      } else {
        System.out.println(ClusterCollectivesApp.FAILED + " " + wrong);
      }
    } catch (Throwable t) {
      System.out.println(ClusterCollectivesApp.FAILED + " " + t);
      t.printStackTrace(System.out);
    } finally {
      if (sc != null) {
        sc.stop();
      }
    }
    System.exit(exit);
  }

  /** Attempt 0: rank {@code victim}'s executor dies by SIGKILL between two allReduces; retry: all sum. */
  static List<String> killedOnceThenSum(Communicator comm, int victim) throws Exception {
    int attempt = TaskContext.get().stageAttemptNumber();
    long[] v = {comm.rank()};
    comm.allReduce(v, ReduceOp.SUM);
    if (attempt == 0) {
      float[] big = new float[1 << 18];
      for (int i = 0; i < 50; i++) {
        if (comm.rank() == victim && i == 20) {
          new ProcessBuilder("kill", "-9", String.valueOf(ProcessHandle.current().pid())).start().waitFor();
        }
        comm.allReduce(big, ReduceOp.SUM);
      }
    }
    return List.of("rank " + comm.rank() + " sum " + v[0] + " attempt " + attempt);
  }

  /** The first failed group report after {@code previous} (the failed attempt of stage 2), or null. */
  private static GroupReport awaitFailedReport(GroupReport previous, long timeoutMillis) throws InterruptedException {
    long deadline = System.currentTimeMillis() + timeoutMillis;
    do {
      List<GroupReport> reports = GpuCollectivesPlugin.driverReports();
      for (int i = reports.indexOf(previous) + 1; i < reports.size(); i++) {
        if (reports.get(i).failed()) {
          return reports.get(i);
        }
      }
      Thread.sleep(50);
    } while (System.currentTimeMillis() < deadline);
    return null;
  }

  private static GroupReport awaitReport(int count, long timeoutMillis) throws InterruptedException {
    long deadline = System.currentTimeMillis() + timeoutMillis;
    while (GpuCollectivesPlugin.driverReports().size() < count && System.currentTimeMillis() < deadline) {
      Thread.sleep(20);
    }
    List<GroupReport> reports = GpuCollectivesPlugin.driverReports();
    return reports.isEmpty() ? null : reports.get(reports.size() - 1);
  }

  /** This process's listening TCP sockets, "address:port" (IPv6 in brackets), from /proc. */
  static String listeningSockets() throws java.io.IOException {
    Set<String> inodes = new TreeSet<>();
    try (var fds = java.nio.file.Files.list(java.nio.file.Path.of("/proc/self/fd"))) {
      for (java.nio.file.Path fd : fds.toList()) {
        try {
          String target = java.nio.file.Files.readSymbolicLink(fd).toString();
          if (target.startsWith("socket:[")) {
            inodes.add(target.substring(8, target.length() - 1));
          }
        } catch (java.io.IOException gone) { // closed meanwhile
        }
      }
    }
    List<String> out = new ArrayList<>();
    for (String table : List.of("/proc/net/tcp", "/proc/net/tcp6")) {
      for (String row : java.nio.file.Files.readAllLines(java.nio.file.Path.of(table))) {
        String[] f = row.trim().split("\\s+");
        if (f.length > 9 && f[3].equals("0A") && inodes.contains(f[9])) { // 0A: LISTEN
          out.add(address(f[1]));
        }
      }
    }
    return String.join(",", out);
  }

  /** /proc/net/tcp's hex "address:port" (little-endian 32-bit words) as text. */
  private static String address(String hex) {
    String[] ap = hex.split(":");
    int port = Integer.parseInt(ap[1], 16);
    byte[] b = new byte[ap[0].length() / 2];
    for (int w = 0; w < b.length / 4; w++) {
      for (int i = 0; i < 4; i++) {
        b[w * 4 + i] = (byte) Integer.parseInt(ap[0].substring(w * 8 + (3 - i) * 2, w * 8 + (3 - i) * 2 + 2), 16);
      }
    }
    try {
      java.net.InetAddress a = java.net.InetAddress.getByAddress(b);
      return (b.length == 16 ? "[" + a.getHostAddress() + "]" : a.getHostAddress()) + ":" + port;
    } catch (java.net.UnknownHostException e) {
      return hex;
    }
  }

  /**
   * A stranger's connections to every listener of this process, each sent 64 KiB of random bytes
   * and left open while the collectives run: the group must not notice (listeners are the
   * executor's, UCX's among them).
   */
  static List<java.net.Socket> junkConnections(String listeners) throws java.io.IOException {
    List<java.net.Socket> out = new ArrayList<>();
    byte[] noise = new byte[64 * 1024];
    new java.util.Random(7).nextBytes(noise);
    for (String a : listeners.split(",")) {
      if (a.isEmpty()) {
        continue;
      }
      int colon = a.lastIndexOf(':');
      String host = a.substring(0, colon).replace("[", "").replace("]", "");
      java.net.Socket s = new java.net.Socket();
      try {
        s.connect(new java.net.InetSocketAddress(host, Integer.parseInt(a.substring(colon + 1))), 2000);
        s.getOutputStream().write(noise);
        out.add(s);
      } catch (java.io.IOException refusedOrReset) {
        s.close();
      }
    }
    return out;
  }

  /** Closes the sockets 3 s from now, on a thread of their own. */
  static void closeLater(List<java.net.Socket> sockets) {
    Thread t = new Thread(() -> {
      try {
        Thread.sleep(3000);
        for (java.net.Socket s : sockets) {
          s.close();
        }
      } catch (InterruptedException | java.io.IOException ignored) {
        // the executor is going away
      }
    }, "junk-connections");
    t.setDaemon(true);
    t.start();
  }
}
