package dev.gpucoll.core.rendezvous;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.CollectiveTimeoutException;
import java.nio.file.Files;
import java.nio.file.Path;
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
    try (var files = Files.list(tmp.resolve("g_1"))) {
      assertTrue(files.count() <= 3, "old rounds are deleted");
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
    Files.write(tmp.resolve("c").resolve("r0-1"), new byte[] {1, 2, 3});
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
