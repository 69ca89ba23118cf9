package dev.gpucoll.core.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Ranks as separate JVMs on this host, meeting through a FileRendezvous, as executors would. */
class HostProcessesTest {
  @TempDir
  Path tmp;

  private Path shmDir() throws IOException {
    Path base = Path.of("/dev/shm");
    Path dir = Files.isDirectory(base) && Files.isWritable(base)
        ? Files.createTempDirectory(base, "gpucoll-test-") : Files.createTempDirectory(tmp, "shm");
    dir.toFile().deleteOnExit();
    return dir;
  }

  private List<String> runRanks(int n, String scenario, Path shm) throws Exception {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    List<Process> procs = new ArrayList<>();
    for (int r = 0; r < n; r++) {
      ProcessBuilder pb = new ProcessBuilder(java, "-Xmx1g", "-cp", System.getProperty("java.class.path"),
          ChildRank.class.getName(), tmp.toString(), shm.toString(), Integer.toString(r), Integer.toString(n),
          scenario);
      pb.redirectErrorStream(true);
      procs.add(pb.start());
    }
    List<String> outputs = new ArrayList<>();
    for (int r = 0; r < n; r++) {
      Process p = procs.get(r);
      boolean done = p.waitFor(150, TimeUnit.SECONDS);
      if (!done) {
        procs.forEach(Process::destroyForcibly);
      }
      String out = new String(p.getInputStream().readAllBytes());
      assertTrue(done, "rank " + r + " hung: " + out);
      assertEquals(0, p.exitValue(), "rank " + r + " failed:\n" + out);
      outputs.add(out.trim());
    }
    return outputs;
  }

  @ParameterizedTest
  @ValueSource(ints = {2, 3})
  void collectivesAcrossProcessesAreCorrectAndBitIdentical(int n) throws Exception {
    Path shm = shmDir();
    List<String> out = runRanks(n, "collectives", shm);
    String first = out.get(0).lines().filter(l -> l.startsWith("DIGEST")).findFirst().orElseThrow();
    for (String o : out) {
      assertTrue(o.lines().anyMatch(first::equals), "digests differ: " + out);
    }
    try (var left = Files.list(shm)) {
      assertEquals(0, left.count(), "segment files left behind");
    }
    Files.delete(shm);
  }

  @org.junit.jupiter.api.Test
  void processThatDiesIsNamedByThePeers() throws Exception {
    Path shm = shmDir();
    int n = 3;
    List<String> out = runRanks(n, "missing", shm);
    for (int r = 0; r < n - 1; r++) {
      // Named at once (its process is gone), not after the 30 s timeout.
      String line = out.get(r).lines().filter(l -> l.startsWith("TIMEOUT")).findFirst().orElse(out.get(r));
      assertTrue(line.contains("rank " + r + ", allReduce: rank 2 is gone: its process (pid "), line);
      long ms = Long.parseLong(line.split(" ")[2]);
      assertTrue(ms < 5_000, "survivor failed after " + ms + " ms: " + line);
    }
    try (var left = Files.list(shm)) {
      assertEquals(0, left.count(), "a dead rank must not leak its segment");
    }
    Files.delete(shm);
  }

  /**
   * The group's leader (a child JVM) is killed with SIGKILL during segment setup, after it created
   * the segment and published its path. The other rank (this JVM) fails at once naming it, not after
   * the 30 s timeout, and no segment file is left behind.
   */
  @org.junit.jupiter.api.Test
  void leaderKilledDuringSetupIsNamedAtOnceAndLeaksNoSegment() throws Exception {
    Path shm = shmDir();
    String javaBin = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    Process leader = new ProcessBuilder(javaBin, "-Xmx256m", "-cp", System.getProperty("java.class.path"),
        ChildRank.class.getName(), tmp.toString(), shm.toString(), "0", "2", "collectives")
        .redirectErrorStream(true).start();
    java.util.concurrent.CountDownLatch leaderDead = new java.util.concurrent.CountDownLatch(1);
    dev.gpucoll.core.config.GpuCollConf conf = dev.gpucoll.core.config.GpuCollConf.of(java.util.Map.of(
        "spark.gpucoll.timeout", "30s", "spark.gpucoll.host.shmDir", shm.toString()));
    java.util.concurrent.atomic.AtomicReference<Throwable> outcome = new java.util.concurrent.atomic.AtomicReference<>();
    long[] failedAt = new long[1];
    Thread self = new Thread(() -> {
      try (dev.gpucoll.core.rendezvous.FileRendezvous files =
               new dev.gpucoll.core.rendezvous.FileRendezvous(tmp, "procs", 1, 2)) {
        // Pauses before its second round, the one in which the leader sends the segment path.
        dev.gpucoll.core.rendezvous.Rendezvous paused = new dev.gpucoll.core.rendezvous.Rendezvous() {
          int rounds;

          public String groupId() {
            return files.groupId();
          }

          public int rank() {
            return 1;
          }

          public int size() {
            return 2;
          }

          public String kind() {
            return files.kind();
          }

          public List<byte[]> allGather(byte[] payload, java.time.Duration timeout) {
            if (rounds++ == 1) {
              try {
                leaderDead.await();
              } catch (InterruptedException e) {
                throw new IllegalStateException(e);
              }
            }
            return files.allGather(payload, timeout);
          }
        };
        dev.gpucoll.core.CommunicatorFactory.create(paused, conf, "localhost").close();
      } catch (Throwable t) {
        failedAt[0] = System.nanoTime();
        outcome.set(t);
      }
    });
    self.start();
    long deadline = System.nanoTime() + 120_000_000_000L;
    while (true) {
      try (var files = Files.list(shm)) {
        if (files.anyMatch(f -> f.getFileName().toString().endsWith(".shm"))) {
          break;
        }
      }
      assertTrue(System.nanoTime() < deadline, "the leader never created its segment");
      Thread.sleep(5);
    }
    Thread.sleep(300); // the leader publishes the path, then waits for this rank
    leader.destroyForcibly(); // SIGKILL
    leader.waitFor();
    long killedAt = System.nanoTime();
    leaderDead.countDown();
    self.join(60_000);
    Throwable t = outcome.get();
    assertTrue(t instanceof dev.gpucoll.api.CollectiveTimeoutException, String.valueOf(t));
    assertTrue(t.getMessage().contains("rank 0 is gone: its process (pid " + leader.pid() + ") died"), t.getMessage());
    long ms = (failedAt[0] - killedAt) / 1_000_000;
    assertTrue(ms < 5_000, "failed " + ms + " ms after the kill");
    try (var left = Files.list(shm)) {
      assertEquals(List.of(), left.toList(), "a leader killed during setup must not leak its segment");
    }
    Files.delete(shm);
  }
}
