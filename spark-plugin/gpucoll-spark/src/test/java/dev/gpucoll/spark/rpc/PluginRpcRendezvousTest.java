package dev.gpucoll.spark.rpc;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.CollectiveTimeoutException;
import dev.gpucoll.core.wait.CallBounds;
import dev.gpucoll.spark.rpc.RpcMessages.Arrive;
import dev.gpucoll.spark.rpc.RpcMessages.GiveUp;
import dev.gpucoll.spark.rpc.RpcMessages.Poll;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/** The driver-side service and the executor-side polling, wired directly (no Spark). */
class PluginRpcRendezvousTest {
  private final GroupCredential.Issuer issuer = new GroupCredential.Issuer();
  private final RendezvousService service = new RendezvousService(issuer, new Freshness.Guard(System::nanoTime));
  /** The credential the job of these tests' ranks carries. */
  private final GroupCredential job = issuer.nextJob();

  /** What the driver plugin does with a message: wire bytes in, wire bytes out. */
  private Object dispatch(byte[] wire) {
    return service.serve(RpcMessages.decode(wire));
  }

  private PluginRpcRendezvous rank(String group, int rank, int size) {
    return new PluginRpcRendezvous(this::dispatch, job, group, rank, size);
  }

  @Test
  void ranksOnThreadsGatherEveryPayloadInRankOrderOverSeveralRounds() throws Exception {
    int size = 4;
    ExecutorService pool = Executors.newFixedThreadPool(size);
    try {
      List<Future<List<String>>> results = new ArrayList<>();
      for (int r = 0; r < size; r++) {
        int rank = r;
        results.add(pool.submit(() -> {
          PluginRpcRendezvous rdv = rank("g", rank, size);
          List<String> seen = new ArrayList<>();
          for (int round = 0; round < 3; round++) {
            Thread.sleep(rank * 3L); // arrive in different orders
            for (byte[] p : rdv.allGather(("r" + rank + "/" + round).getBytes(StandardCharsets.UTF_8),
                Duration.ofSeconds(10))) {
              seen.add(new String(p, StandardCharsets.UTF_8));
            }
          }
          return seen;
        }));
      }
      for (Future<List<String>> f : results) {
        assertEquals(List.of("r0/0", "r1/0", "r2/0", "r3/0", "r0/1", "r1/1", "r2/1", "r3/1",
            "r0/2", "r1/2", "r2/2", "r3/2"), f.get());
      }
    } finally {
      pool.shutdownNow();
    }
    assertEquals(0, service.openRounds(), "finished rounds are dropped");
  }

  @Test
  void missingRankTimesOutNamingItAndTheLateRankFailsAtOnce() throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      List<Future<CollectiveTimeoutException>> waiting = new ArrayList<>();
      for (int r = 0; r < 2; r++) {
        int rank = r;
        waiting.add(pool.submit(() -> assertThrows(CollectiveTimeoutException.class,
            () -> rank("late", rank, 3).allGather(new byte[] {1}, Duration.ofMillis(300)))));
      }
      for (Future<CollectiveTimeoutException> f : waiting) {
        CollectiveTimeoutException e = f.get();
        assertEquals(List.of(2), e.missingRanks());
        assertTrue(e.getMessage().contains("ranks [2] did not arrive"), e.getMessage());
      }
    } finally {
      pool.shutdownNow();
    }
    long start = System.nanoTime();
    CollectiveTimeoutException late = assertThrows(CollectiveTimeoutException.class,
        () -> rank("late", 2, 3).allGather(new byte[] {1}, Duration.ofSeconds(30)));
    assertTrue(System.nanoTime() - start < 5_000_000_000L, "the late rank must not wait");
    assertTrue(late.getMessage().contains("arrived after the others stopped waiting for ranks [2]"),
        late.getMessage());
    assertEquals(List.of(2), late.missingRanks());
  }

  /** Spark cancels barrier tasks without interrupting them: the bound kill check ends the wait. */
  @Test
  void aKilledTaskStopsWaitingAtTheRendezvousLongBeforeTheTimeout() {
    long killAt = System.nanoTime() + 200_000_000L;
    CallBounds.bind(null, () -> System.nanoTime() > killAt ? "task killed (test)" : null);
    try {
      long t0 = System.nanoTime();
      CollectiveException e = assertThrows(CollectiveException.class,
          () -> rank("killed", 0, 2).allGather(new byte[1], Duration.ofSeconds(60)));
      long ms = (System.nanoTime() - t0) / 1_000_000;
      assertTrue(e.getMessage().contains("task killed (test)") && e.getMessage().contains("[1]"), e.getMessage());
      assertTrue(ms < 10_000, "the wait ended " + ms + " ms after it began, not soon after the kill");
    } finally {
      CallBounds.unbind();
    }
  }

  @Test
  void ranksDisagreeingOnTheGroupSizeFail() {
    assertEquals(null, service.arrive(job.id(), new Arrive("s", 0, 0, 2, new byte[1], 1000, false))
        .failure());
    String failure = service.arrive(job.id(), new Arrive("s", 0, 1, 3, new byte[1], 1000, false))
        .failure();
    assertTrue(failure.contains("rank 1 says group s has 3 ranks, rank 0 said 2"), failure);
    CollectiveException e = assertThrows(CollectiveException.class,
        () -> rank("s", 0, 2).allGather(new byte[1], Duration.ofSeconds(5)));
    assertTrue(e.getMessage().contains("has 3 ranks"), e.getMessage());
  }

  @Test
  void oversizedPayloadIsRefusedByTheRankBeforeAnyRpc() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> rank("big", 0, 2)
        .allGather(new byte[RendezvousService.MAX_PAYLOAD_BYTES + 1], Duration.ofSeconds(5)));
    assertTrue(e.getMessage().contains("exceeds the limit"), e.getMessage());
    assertEquals(0, service.openRounds());
  }

  @Test
  void anAnswerThatIsNotOurWireFormatIsAClearError() {
    PluginRpcRendezvous rdv = new PluginRpcRendezvous(m -> "hello", job, "foreign", 0, 1);
    CollectiveException e = assertThrows(CollectiveException.class,
        () -> rdv.allGather(new byte[1], Duration.ofSeconds(1)));
    assertTrue(e.getMessage().contains("java.lang.String"), e.getMessage());
    PluginRpcRendezvous old = new PluginRpcRendezvous(m -> {
      byte[] reply = RpcMessages.encode(new RpcMessages.RoundState(List.of(), List.of(), null));
      reply[7] = 1; // version 1
      return reply;
    }, job, "old", 0, 1);
    e = assertThrows(CollectiveException.class, () -> old.allGather(new byte[1], Duration.ofSeconds(1)));
    assertTrue(e.getMessage().contains("same gpucoll jar"), e.getMessage());
  }

  @Test
  void aRankCanContributeWithoutWaitingAndTheRoundIsStillDroppedAtTheEnd() throws Exception {
    ExecutorService pool = Executors.newSingleThreadExecutor();
    try {
      PluginRpcRendezvous r0 = rank("nowait", 0, 2);
      Future<List<byte[]>> waiter = pool.submit(
          () -> r0.allGather(new byte[] {1}, Duration.ofSeconds(10)));
      PluginRpcRendezvous contributor = rank("nowait", 1, 2);
      contributor.contribute(new byte[] {2}, Duration.ofSeconds(10));
      List<byte[]> seen = waiter.get();
      assertArrayEquals(new byte[] {2}, seen.get(1));
      // Both go on to round 1 (rank 0 without waiting this time, rank 1 waiting), then round 2.
      r0.contribute(new byte[] {0}, Duration.ofSeconds(10));
      assertArrayEquals(new byte[] {0},
          contributor.allGather(new byte[] {5}, Duration.ofSeconds(10)).get(0));
      Future<List<byte[]>> next = pool.submit(() -> r0.allGather(new byte[] {3}, Duration.ofSeconds(10)));
      assertArrayEquals(new byte[] {3}, contributor.allGather(new byte[] {4}, Duration.ofSeconds(10)).get(0));
      assertArrayEquals(new byte[] {4}, next.get().get(1));
    } finally {
      pool.shutdownNow();
    }
    assertEquals(0, service.openRounds(), "finished rounds are dropped");
  }

  @Test
  void singleRankGroupCompletesImmediately() {
    List<byte[]> all = rank("one", 0, 1).allGather(new byte[] {7}, Duration.ofSeconds(1));
    assertEquals(1, all.size());
    assertArrayEquals(new byte[] {7}, all.get(0));
  }
}
