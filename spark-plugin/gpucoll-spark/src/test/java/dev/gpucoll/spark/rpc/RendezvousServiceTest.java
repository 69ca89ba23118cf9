package dev.gpucoll.spark.rpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.spark.plugin.GpuCollDriverPlugin;
import dev.gpucoll.spark.rpc.RpcMessages.Arrive;
import dev.gpucoll.spark.rpc.RpcMessages.GiveUp;
import dev.gpucoll.spark.rpc.RpcMessages.Poll;
import dev.gpucoll.spark.rpc.RpcMessages.RoundState;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The driver's rendezvous fed hostile requests: every one refused clearly, memory stays bounded. */
class RendezvousServiceTest {
  /** The credential id the rounds of these tests are kept under. */
  private static final String C = "job1";
  private final AtomicLong now = new AtomicLong();
  private final RendezvousService service = new RendezvousService(new GroupCredential.Issuer(), new Freshness.Guard(now::get), now::get, 8L << 20);

  private static Arrive arrive(String group, long round, int rank, int size, int payloadBytes) {
    return new Arrive(group, round, rank, size, new byte[payloadBytes], 10_000, false);
  }

  private static void assertFailure(RoundState s, String expected) {
    assertTrue(s.failure() != null && s.failure().contains(expected), String.valueOf(s.failure()));
  }

  @Test
  void hostileGroupSizesAreRefusedBeforeAnyAllocation() {
    assertFailure(service.arrive(C, arrive("g", 0, 0, Integer.MAX_VALUE, 1)),
        "claims group size 2147483647; the driver serves groups of 1 to 4096 ranks");
    assertFailure(service.arrive(C, arrive("g", 0, 0, 10_000_000, 1)), "claims group size 10000000");
    assertFailure(service.arrive(C, arrive("g", 0, 0, 0, 1)), "claims group size 0");
    assertFailure(service.arrive(C, arrive("g", 0, 4, 4, 1)), "outside the group's ranks 0..3");
    assertFailure(service.arrive(C, arrive("g", 0, -1, 4, 1)), "outside the group's ranks 0..3");
    assertFailure(service.arrive(C, arrive("g", -5, 0, 4, 1)), "rounds count up from 0");
    assertFailure(service.arrive(C, arrive("x".repeat(513), 0, 0, 4, 1)), "1 to 512 characters");
    assertFailure(service.arrive(C, new Arrive("g", 0, 0, 2, new byte[1], -1, false)), "timeout of -1 ms");
    // Outside the bounds validation puts on the setting, a refusal that names it.
    for (long millis : List.of(0L, 2 * 86_400_000L, 86_400_001L)) {
      assertFailure(service.arrive(C, new Arrive("g", 0, 0, 2, new byte[1], millis, false)),
          "timeout of " + millis + " ms; spark.gpucoll.timeout must be 1ms to 24h");
    }
    assertEquals(0, service.openRounds());
    assertEquals(0, service.retainedBytes());
  }

  @Test
  void theTimeoutsValidationLetsThroughAreServed() {
    for (long millis : List.of(1L, 86_400_000L)) {
      RoundState s = service.arrive(C, new Arrive("t" + millis, 0, 0, 1, new byte[1], millis, false));
      assertNull(s.failure());
      assertTrue(s.complete());
    }
  }

  @Test
  void payloadsAboveTheCoreLimitAreRefused() {
    assertFailure(service.arrive(C, arrive("g", 0, 0, 2, 16 << 20)),
        "payload of 16777216 bytes; limit 1048576 bytes");
    assertFailure(service.arrive(C, new Arrive("g", 0, 0, 2, null, 1000, false)), "payload of null");
    assertEquals(0, service.openRounds());
  }

  @Test
  void aRoundCarryingMoreThanItsLimitFailsForEveryRank() {
    RendezvousService big = new RendezvousService(new GroupCredential.Issuer(), new Freshness.Guard(now::get), now::get, 1L << 30);
    int per = RendezvousService.MAX_PAYLOAD_BYTES;
    int fit = (int) (RendezvousService.MAX_ROUND_BYTES / per);
    for (int r = 0; r < fit; r++) {
      assertNull(big.arrive(C, arrive("wide", 0, r, 100, per)).failure());
    }
    assertFailure(big.arrive(C, arrive("wide", 0, fit, 100, per)), "limit 67108864 bytes per round");
    assertFailure(big.poll(C, new Poll("wide", 0, 0)), "bytes per round");
    assertTrue(big.retainedBytes() < 1 << 20, "a failed round frees its payloads: " + big.retainedBytes());
  }

  @Test
  void abandonedRoundsAreBoundedByTheRetainedBudgetAndEvictedPastTheirTimeout() {
    int mib = 1 << 20;
    int accepted = 0;
    RoundState refused = null;
    for (int g = 0; g < 200 && refused == null; g++) {
      RoundState s = service.arrive(C, arrive("abandoned-" + g, 0, 0, 2, mib));
      if (s.failure() == null) {
        accepted++;
      } else {
        refused = s;
      }
    }
    assertTrue(refused != null, "an 8 MiB budget cannot hold 200 rounds of 1 MiB");
    assertFailure(refused, "already holds");
    assertFailure(refused, "limit 8388608 bytes");
    assertTrue(accepted >= 6 && accepted <= 8, "accepted " + accepted);
    assertTrue(service.retainedBytes() <= 8L << 20, "retained " + service.retainedBytes());
    // Past their timeout (10 s) the abandoned rounds make room for new ones.
    now.addAndGet(11_000_000_000L);
    assertNull(service.arrive(C, arrive("fresh", 0, 0, 2, mib)).failure());
    assertTrue(service.openRounds() <= 2, "open rounds " + service.openRounds());
    assertFailure(service.poll(C, new Poll("abandoned-0", 0, 0)), "unknown to the driver");
    // Without memory pressure, the periodic sweep drops them too.
    now.addAndGet(120_000_000_000L);
    service.arrive(C, arrive("other", 0, 0, 1, 1));
    assertEquals(0, service.openRounds());
    assertEquals(0, service.retainedBytes());
  }

  /**
   * The driver's budget (256 MiB) filled with 1 MiB payloads costs at most 300 MiB of heap, measured
   * after a full GC in a JVM with a driver's small heap (G1 regions of 1 and 2 MiB). Held as one
   * array each, 1 MiB payloads are humongous objects that take 2 MiB each, and the same budget cost
   * over 500 MiB.
   */
  @Test
  void theRetainedBudgetIsWhatThePayloadsCostOnTheHeap() throws Exception {
    long mib = 1 << 20;
    for (String region : List.of("1m", "2m")) {
      Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
          "-Xmx1g", "-XX:+UseG1GC", "-XX:G1HeapRegionSize=" + region, "-cp", System.getProperty("java.class.path"),
          RendezvousHeapProbe.class.getName()).redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes()).trim();
      assertEquals(0, p.waitFor(), out);
      String[] f = out.substring(out.lastIndexOf("HEAP ")).split(" ");
      long used = Long.parseLong(f[1]);
      long charged = Long.parseLong(f[2]);
      System.out.println("driver rendezvous, G1 regions of " + region + ": " + f[3] + " payloads of 1 MiB, "
          + charged / mib + " MiB charged of " + RendezvousService.MAX_RETAINED_BYTES / mib + " MiB, "
          + used / mib + " MiB of heap");
      assertTrue(charged > RendezvousService.MAX_RETAINED_BYTES - 2 * mib, "budget filled: " + out);
      assertTrue(used <= 300 * mib, "regions of " + region + ": the 256 MiB budget holds " + used / mib
          + " MiB of heap");
    }
  }

  @Test
  void completedRoundsReturnEveryChargedByte() {
    assertNull(service.arrive(C, arrive("ok", 0, 0, 2, 1000)).failure());
    assertTrue(service.arrive(C, arrive("ok", 0, 1, 2, 1000)).complete());
    assertTrue(service.poll(C, new Poll("ok", 0, 0)).complete());
    assertEquals(0, service.openRounds());
    assertEquals(0, service.retainedBytes());
  }

  @Test
  void pollsAndGiveUpsFromOutsideTheGroupAreRefused() {
    assertNull(service.arrive(C, arrive("g", 0, 0, 2, 1)).failure());
    assertFailure(service.poll(C, new Poll("g", 0, 7)), "rank 7 polls round 0 of group g without having arrived");
    assertFailure(service.poll(C, new Poll("g", 0, -1)), "without having arrived");
    assertFailure(service.giveUp(C, new GiveUp("g", 0, 9, 5)), "which has 2 ranks");
    assertFailure(service.poll(C, new Poll(null, 0, 0)), "unknown to the driver");
    assertNull(service.poll(C, new Poll("g", 0, 0)).failure(), "the round itself is unharmed");
  }

  /**
   * What is no wire bytes of ours is dropped and counted, answered with the reason (an executor on
   * another gpucoll jar raises it), never thrown: Spark would log each one's stack trace.
   */
  @Test
  void theDriverPluginAcceptsOnlyWireBytes() {
    GpuCollDriverPlugin driver = new GpuCollDriverPlugin();
    assertFailure((RoundState) RpcMessages.decode((byte[]) driver.receive(new Poll("g", 0, 0))),
        "gpucoll executors send byte[]");
    assertFailure((RoundState) RpcMessages.decode((byte[]) driver.receive(new byte[] {1, 2})), "truncated");
    byte[] older = RpcMessages.encode(arrive("g", 0, 0, 5_000, 1));
    older[7] = 4;
    assertFailure((RoundState) RpcMessages.decode((byte[]) driver.receive(older)), "same gpucoll jar");
    assertEquals(3, driver.undecodableMessages());
    Object reply = driver.receive(RpcMessages.encode(arrive("g", 0, 0, 5_000, 1)));
    assertTrue(reply instanceof byte[], "replies are wire bytes too");
    assertFailure((RoundState) RpcMessages.decode((byte[]) reply), "failed the group credential");
  }
}
