package dev.gpucoll.core.rendezvous;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.CollectiveTimeoutException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.IntFunction;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class RendezvousTest {
  @TempDir
  Path tmp;

  private static int groups;

  private List<List<byte[]>> rounds(int n, int rounds, IntFunction<Rendezvous> make) throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(n);
    try {
      List<Future<List<byte[]>>> fs = new ArrayList<>();
      for (int r = 0; r < n; r++) {
        int rank = r;
        fs.add(pool.submit(() -> {
          try (Rendezvous rv = make.apply(rank)) {
            List<byte[]> last = null;
            for (int k = 0; k < rounds; k++) {
              last = rv.allGather(new byte[] {(byte) rank, (byte) k}, Duration.ofSeconds(10));
              for (int p = 0; p < n; p++) {
                assertArrayEquals(new byte[] {(byte) p, (byte) k}, last.get(p), "round " + k);
              }
            }
            return last;
          }
        }));
      }
      List<List<byte[]>> out = new ArrayList<>();
      for (Future<List<byte[]>> f : fs) {
        out.add(f.get());
      }
      return out;
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void localRoundsMatchByNumber() throws Exception {
    String id = "rv-local-" + (++groups);
    rounds(3, 50, r -> LocalRendezvous.join(id, r, 3));
    // freed once every rank closed: the id can form a new group
    rounds(2, 2, r -> LocalRendezvous.join(id, r, 2));
  }

  @Test
  void fileRoundsMatchByNumberAndCleanUp() throws Exception {
    rounds(3, 20, r -> new FileRendezvous(tmp, "g/1", r, 3));
    try (var files = Files.list(tmp)) {
      assertEquals(List.of(), files.toList(), "every round, claim and the folder are deleted at close");
    }
  }

  /** A directory and group id can be used again, also after a group whose process died in it. */
  @Test
  void fileDirectoryAndIdCanBeReusedAfterACleanAndADeadGroup() throws Exception {
    rounds(2, 3, r -> new FileRendezvous(tmp, "again", r, 2));
    rounds(2, 3, r -> new FileRendezvous(tmp, "again", r, 2));
    // A rank of an earlier group left its claim and round 0 behind, then its process died.
    FileRendezvous abandoned = new FileRendezvous(tmp, "again", 1, 2);
    assertThrows(CollectiveTimeoutException.class, () -> abandoned.allGather(new byte[] {9, 9}, Duration.ofMillis(50)));
    Process gone = new ProcessBuilder("true").start();
    gone.waitFor();
    Path folder = tmp.resolve(FileRendezvous.folderName("again"));
    Files.write(folder.resolve("claim-1"), java.nio.ByteBuffer.allocate(16).putLong(42).putLong(gone.pid()).array());
    assertTrue(Files.exists(folder.resolve("r0-1")));
    rounds(2, 3, r -> new FileRendezvous(tmp, "again", r, 2)); // asserts no rank read the stale {9, 9}
    try (var files = Files.list(tmp)) {
      assertEquals(List.of(), files.toList());
    }
  }

  /** Two live groups with one id never pair up: the second fails at once, naming the holder. */
  @Test
  void fileConcurrentGroupsWithOneIdFailClearly() {
    try (FileRendezvous first = new FileRendezvous(tmp, "same", 0, 2)) {
      IllegalStateException e = assertThrows(IllegalStateException.class, () -> new FileRendezvous(tmp, "same", 0, 2));
      assertTrue(e.getMessage().contains("rank 0 is already taken by live process " + ProcessHandle.current().pid()),
          e.getMessage());
    }
  }

  @Test
  void fileGroupIdsCannotCollideOrEscapeAndFilesArePrivate() throws Exception {
    assertNotEquals(FileRendezvous.folderName("a/b"), FileRendezvous.folderName("a_b"));
    assertNotEquals(FileRendezvous.folderName("a.b"), FileRendezvous.folderName("a_2eb"));
    for (String id : List.of("..", ".", "../x", "/etc", "a/../../b")) {
      Path f = tmp.resolve(FileRendezvous.folderName(id)).normalize();
      assertEquals(tmp, f.getParent(), id);
    }
    String longA = "x".repeat(300) + "a";
    String longB = "x".repeat(300) + "b";
    assertNotEquals(FileRendezvous.folderName(longA), FileRendezvous.folderName(longB));
    assertTrue(FileRendezvous.folderName(longA).length() <= 160);
    try (FileRendezvous one = new FileRendezvous(tmp, "p/..", 0, 1)) {
      Path folder = tmp.resolve(FileRendezvous.folderName("p/.."));
      assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(folder)));
      one.allGather(new byte[] {1}, Duration.ofSeconds(5));
      try (var files = Files.list(folder)) {
        for (Path p : files.toList()) {
          assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(p)), p.toString());
        }
      }
    }
  }

  /**
   * A FIFO, or a link, planted under a claim or payload name is refused at once: opening a FIFO
   * for reading would block both ranks until a writer came, past every timeout.
   */
  @Test
  void plantedFifosAndLinksAreRefusedNotOpened() throws Exception {
    Path folder = tmp.resolve(FileRendezvous.folderName("planted"));
    FileRendezvous peer = new FileRendezvous(tmp, "planted", 1, 3); // claims rank 1, never calls
    try (FileRendezvous r0 = new FileRendezvous(tmp, "planted", 0, 3)) {
      mkfifo(folder.resolve("r0-1")); // rank 1's round-0 payload
      Files.createSymbolicLink(folder.resolve("claim-2"), Files.writeString(tmp.resolve("elsewhere"), "x"));
      String fifo = failureWithin(() -> r0.allGather(new byte[] {1}, Duration.ofSeconds(3)));
      assertTrue(fifo.contains("r0-1 is a FIFO, socket or device, not a regular file; refusing to open it"), fifo);
      Files.delete(folder.resolve("r0-1"));
      String link = failureWithin(() -> r0.allGather(new byte[] {1}, Duration.ofSeconds(3)));
      assertTrue(link.contains("claim-2 is a symbolic link, not a regular file"), link);
      Files.delete(folder.resolve("claim-2"));
      mkfifo(folder.resolve("claim-2"));
      String claim = failureWithin(() -> r0.allGather(new byte[] {1}, Duration.ofSeconds(3)));
      assertTrue(claim.contains("claim-2 is a FIFO"), claim);
      Files.delete(folder.resolve("claim-2"));
    } finally {
      peer.close();
    }
  }

  private static void mkfifo(Path p) throws Exception {
    assertEquals(0, new ProcessBuilder("mkfifo", p.toString()).inheritIO().start().waitFor());
  }

  /** The message of what {@code call} throws, which must come within 2 s (not after a timeout). */
  private static String failureWithin(java.util.concurrent.Callable<?> call) throws Exception {
    ExecutorService one = Executors.newSingleThreadExecutor();
    try {
      Future<?> f = one.submit(call);
      try {
        f.get(2, java.util.concurrent.TimeUnit.SECONDS);
        throw new AssertionError("no error");
      } catch (java.util.concurrent.ExecutionException e) {
        return e.getCause().getMessage();
      }
    } finally {
      one.shutdownNow();
    }
  }

  /**
   * A rank waiting for a missing peer sleeps between looks (little CPU), and its wait ends
   * within a fraction of a second when its thread is interrupted or its task is killed (the
   * bound check), not at the timeout.
   */
  @Test
  void fileWaitsParkAndHonourInterruptAndTheTaskKill() throws Exception {
    java.lang.management.ThreadMXBean cpu = java.lang.management.ManagementFactory.getThreadMXBean();
    java.util.concurrent.atomic.AtomicBoolean killed = new java.util.concurrent.atomic.AtomicBoolean();
    for (String how : List.of("interrupt", "kill")) {
      java.util.concurrent.atomic.AtomicReference<String> outcome = new java.util.concurrent.atomic.AtomicReference<>();
      java.util.concurrent.atomic.AtomicLong endedAt = new java.util.concurrent.atomic.AtomicLong();
      Thread waiter = new Thread(() -> {
        if (how.equals("kill")) {
          dev.gpucoll.core.wait.CallBounds.bind(null, () -> killed.get() ? "the task was killed" : null);
        }
        try (FileRendezvous r0 = new FileRendezvous(tmp, "alone-" + how, 0, 2)) {
          r0.allGather(new byte[] {1}, Duration.ofSeconds(60));
          outcome.set("returned");
        } catch (RuntimeException e) {
          outcome.set(e.getMessage());
        } finally {
          endedAt.set(System.nanoTime());
        }
      });
      waiter.start();
      Thread.sleep(300); // formed, inside the wait
      long cpu0 = cpu.getThreadCpuTime(waiter.getId());
      long t0 = System.nanoTime();
      Thread.sleep(1500);
      long usedMs = (cpu.getThreadCpuTime(waiter.getId()) - cpu0) / 1_000_000;
      long wallMs = (System.nanoTime() - t0) / 1_000_000;
      assertTrue(usedMs < wallMs / 10, "the waiting rank used " + usedMs + " ms of CPU in " + wallMs + " ms");
      long cancelled = System.nanoTime();
      if (how.equals("interrupt")) {
        waiter.interrupt();
      } else {
        killed.set(true);
      }
      waiter.join(10_000);
      long tookMs = (endedAt.get() - cancelled) / 1_000_000;
      assertTrue(endedAt.get() != 0 && tookMs < 500, how + ": the wait ended " + tookMs + " ms later: " + outcome.get());
      String expected = how.equals("interrupt") ? "was interrupted" : "the task was killed";
      assertTrue(outcome.get() != null && outcome.get().contains("cancelled") && outcome.get().contains(expected),
          outcome.get());
    }
  }

  @Test
  void localTimeoutNamesMissingRanks() {
    String id = "rv-timeout-" + (++groups);
    LocalRendezvous r0 = LocalRendezvous.join(id, 0, 3);
    LocalRendezvous.join(id, 2, 3);
    long t0 = System.nanoTime();
    CollectiveTimeoutException e = assertThrows(CollectiveTimeoutException.class,
        () -> r0.allGather(new byte[1], Duration.ofMillis(300)));
    assertTrue(System.nanoTime() - t0 < 3_000_000_000L);
    assertEquals(List.of(1, 2), e.missingRanks());
    assertTrue(e.getMessage().contains("ranks [1, 2] did not arrive"), e.getMessage());
  }

  @Test
  void fileTimeoutNamesMissingRanks() {
    FileRendezvous r1 = new FileRendezvous(tmp, "t", 1, 2);
    CollectiveTimeoutException e = assertThrows(CollectiveTimeoutException.class,
        () -> r1.allGather(new byte[1], Duration.ofMillis(300)));
    assertEquals(List.of(0), e.missingRanks());
    assertEquals(1, e.rank());
  }

  @Test
  void payloadsAreSizeChecked() throws Exception {
    byte[] huge = new byte[RendezvousLimits.MAX_PAYLOAD_BYTES + 1];
    LocalRendezvous r = LocalRendezvous.join("rv-size-" + (++groups), 0, 1);
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> r.allGather(huge, Duration.ofSeconds(1)));
    assertTrue(e.getMessage().contains("exceeds the limit"), e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> new FileRendezvous(tmp, "s", 0, 1)
        .allGather(huge, Duration.ofSeconds(1)));
    // a corrupted file is rejected, not read as data
    FileRendezvous f0 = new FileRendezvous(tmp, "c", 0, 2);
    FileRendezvous f1 = new FileRendezvous(tmp, "c", 1, 2);
    Files.write(tmp.resolve(FileRendezvous.folderName("c")).resolve("r0-1"), new byte[] {1, 2, 3});
    IllegalStateException bad = assertThrows(IllegalStateException.class,
        () -> f0.allGather(new byte[1], Duration.ofSeconds(1)));
    assertTrue(bad.getMessage().contains("rank 1's round 0 file is not a gpucoll rendezvous file"), bad.getMessage());
  }

  @Test
  void localRejectsWrongSizeAndDuplicateRank() {
    String id = "rv-dup-" + (++groups);
    LocalRendezvous.join(id, 0, 2);
    assertThrows(IllegalArgumentException.class, () -> LocalRendezvous.join(id, 0, 2));
    assertThrows(IllegalArgumentException.class, () -> LocalRendezvous.join(id, 1, 3));
  }
}
