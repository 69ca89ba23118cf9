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
}
