package dev.gpucoll.cuda.check;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Ranks as processes, without a GPU: what comes back from ranks that finish, fail and hang. */
class ProcessRanksTest {

  /** One rank: prints its RESULT line, its environment's RANK_NOTE and then does as args[0] says. */
  public static void main(String[] args) throws Exception {
    System.out.println("RESULT rank " + args[1] + " " + System.getenv("RANK_NOTE"));
    switch (args[0]) {
      case "fail" -> {
        System.out.println("what went wrong");
        System.exit(3);
      }
      case "hang" -> Thread.sleep(60_000);
      default -> System.exit(0);
    }
  }

  @Test
  void resultLinesComeBackInRankOrderWithEachRanksEnvironment() throws Exception {
    List<String> out = ProcessRanks.run(ProcessRanksTest.class, 3, Duration.ofSeconds(60),
        r -> List.of("ok", Integer.toString(r)), r -> Map.of("RANK_NOTE", "host-" + r));
    assertEquals(List.of("rank 0 host-0", "rank 1 host-1", "rank 2 host-2"), out);
  }

  @Test
  void aRankThatFailsIsNamedWithItsOutput() throws Exception {
    List<String> out = ProcessRanks.run(ProcessRanksTest.class, 2, Duration.ofSeconds(60),
        r -> List.of(r == 1 ? "fail" : "ok", Integer.toString(r)), r -> Map.of());
    assertEquals(List.of("rank 0 null", "FAIL process rank 1 exited with 3", "rank 1 null",
        "FAIL rank 1 output: what went wrong"), out);
  }

  @Test
  void aRankPastTheDeadlineIsKilledAndNamed() throws Exception {
    long t0 = System.nanoTime();
    List<String> out = ProcessRanks.run(ProcessRanksTest.class, 2, Duration.ofSeconds(8),
        r -> List.of(r == 0 ? "hang" : "ok", Integer.toString(r)), r -> Map.of());
    assertTrue(out.contains("FAIL process rank 0 did not finish within 8 s"), out.toString());
    assertTrue(out.contains("rank 1 null"), out.toString());
    assertTrue(System.nanoTime() - t0 < 40_000_000_000L, "bounded by the deadline, not by the hanging rank");
  }
}
