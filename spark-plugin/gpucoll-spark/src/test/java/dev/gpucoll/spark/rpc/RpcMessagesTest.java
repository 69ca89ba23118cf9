package dev.gpucoll.spark.rpc;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.spark.metrics.LatencyHistogram;
import dev.gpucoll.spark.rpc.RpcMessages.Arrive;
import dev.gpucoll.spark.rpc.RpcMessages.ExecutorCheckMessage;
import dev.gpucoll.spark.rpc.RpcMessages.GiveUp;
import dev.gpucoll.spark.rpc.RpcMessages.Poll;
import dev.gpucoll.spark.rpc.RpcMessages.RankReportMessage;
import dev.gpucoll.spark.rpc.RpcMessages.RoundState;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The wire form of the plugin's RPC messages: round trips and every kind of bad input. */
class RpcMessagesTest {

  private static Object roundTrip(Object m) {
    byte[] wire = RpcMessages.encode(m);
    return RpcMessages.decode(wire);
  }

  @Test
  void requestsRoundTrip() {
    Arrive a = (Arrive) roundTrip(new Arrive("stage7.1-g", 3, 2, 4, new byte[] {1, 2, 3}, 120_000, true));
    assertEquals("stage7.1-g", a.groupId());
    assertEquals(3, a.round());
    assertEquals(2, a.rank());
    assertEquals(4, a.size());
    assertArrayEquals(new byte[] {1, 2, 3}, a.payload());
    assertEquals(120_000, a.timeoutMillis());
    assertTrue(a.noResult());
    assertEquals(new Poll("gé", Long.MAX_VALUE, 0), roundTrip(new Poll("gé", Long.MAX_VALUE, 0)));
    assertEquals(new GiveUp("g", 1, 5, 999), roundTrip(new GiveUp("g", 1, 5, 999)));
    GroupCredential job = new GroupCredential.Issuer().nextJob();
    Freshness.Stamp stamp = new Freshness.Stamp(5, new byte[] {4, 2}, -7, 9);
    RpcMessages.Sealed sealed = (RpcMessages.Sealed) roundTrip(RpcMessages.seal(new Poll("g", 2, 1), job, stamp));
    assertEquals(job.id(), sealed.credentialId());
    assertArrayEquals(stamp.bytes(), sealed.stamp().bytes());
    assertEquals(-7, sealed.stamp().sender());
    assertEquals(9, sealed.stamp().seq());
    Freshness.Ticket ticket = (Freshness.Ticket) roundTrip(new Freshness.Ticket(11, new byte[] {1}));
    assertEquals(11, ticket.issuedNanos());
    assertTrue(roundTrip(new RpcMessages.TicketRequest()) instanceof RpcMessages.TicketRequest);
    assertEquals(GroupCredential.MAC_BYTES, sealed.mac().length);
    assertEquals(new Poll("g", 2, 1), RpcMessages.open(sealed, job));
  }

  @Test
  void roundStatesRoundTripInAllThreeForms() {
    RoundState complete = (RoundState) roundTrip(
        new RoundState(List.of(new byte[] {9}, new byte[0]), List.of(), null));
    assertTrue(complete.complete());
    assertEquals(2, complete.payloads().size());
    assertArrayEquals(new byte[] {9}, complete.payloads().get(0));
    assertArrayEquals(new byte[0], complete.payloads().get(1));
    RoundState waiting = (RoundState) roundTrip(new RoundState(null, List.of(1, 3), null));
    assertNull(waiting.payloads());
    assertEquals(List.of(1, 3), waiting.missingRanks());
    assertNull(waiting.failure());
    RoundState failed = (RoundState) roundTrip(new RoundState(null, List.of(2), "rank 0 gave up"));
    assertEquals("rank 0 gave up", failed.failure());
    assertEquals(List.of(2), failed.missingRanks());
  }

  @Test
  void rankReportsRoundTrip() {
    LatencyHistogram h = new LatencyHistogram();
    h.record("allReduce", 256, 12_000);
    h.record("allReduce", 256, 14_000);
    h.record("allReduce", 1 << 20, 900_000);
    h.record("barrier", 0, 3_000);
    RankReportMessage m = new RankReportMessage("g", "stage 3.0", 1, 2, "host-a", "7", 4242L,
        "host", "spark-plugin-rpc", Map.of("allReduce", Map.of("host-oneshot", 3L, "host-twoshot", 1L)),
        List.of("allReduce 4096 B -> host-oneshot"), List.of(), "stage 1.0", true, 2_000_000, 0,
        "rank 0 did not arrive within 2.0 min", List.of("allReduce 256 B -> host-oneshot"), h.cells());
    RankReportMessage back = (RankReportMessage) roundTrip(m);
    assertEquals(m, back);
    assertEquals(3, back.latency().size());
    assertTrue(back.failed());
  }

  @Test
  void progressOfARunningRankRoundTripsAsItsOwnKind() {
    LatencyHistogram h = new LatencyHistogram();
    h.record("allReduce", 256, 12_000);
    RankReportMessage m = new RankReportMessage("g", "stage 3.0", 1, 2, "host-a", "7", 4242L, "host",
        "spark-plugin-rpc", Map.of("allReduce", Map.of("host-oneshot", 3L)), List.of(), List.of(), "", false,
        2_000_000, 1_000, "", List.of(), h.cells());
    Object back = roundTrip(new RpcMessages.RankProgressMessage(m));
    assertEquals(new RpcMessages.RankProgressMessage(m), back);
    assertTrue(roundTrip(m) instanceof RankReportMessage, "a final report stays a final report");
  }

  @Test
  void executorTotalsRoundTripAndTooManyAreRefused() {
    Map<String, Long> totals = new java.util.LinkedHashMap<>();
    totals.put("collective.allReduce.calls", 7L);
    totals.put("path.host-oneshot.bytes", 1L << 40);
    assertEquals(new RpcMessages.ExecutorTotalsMessage("3", totals),
        roundTrip(new RpcMessages.ExecutorTotalsMessage("3", totals)));
    Map<String, Long> tooMany = new java.util.HashMap<>();
    for (int i = 0; i <= RpcMessages.MAX_TOTALS; i++) {
      tooMany.put("m" + i, 1L);
    }
    assertThrows(IllegalArgumentException.class,
        () -> RpcMessages.encode(new RpcMessages.ExecutorTotalsMessage("3", tooMany)));
  }

  @Test
  void rankReportsOfAnOlderVersionAreRefusedClearly() {
    byte[] wire = RpcMessages.encode(new RankReportMessage("g", "s", 0, 1, "h", "e", 1, "host", "r", Map.of(),
        List.of(), List.of(), "", false, 0, 0, "", List.of(), List.of()));
    ByteBuffer.wrap(wire).putInt(4, 2);
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> RpcMessages.decode(wire));
    assertTrue(e.getMessage().contains("version 2, this side speaks " + RpcMessages.VERSION), e.getMessage());
  }

  @Test
  void latencyCellsOutsideTheBucketLayoutAreRefused() {
    byte[] wire = RpcMessages.encode(new RankReportMessage("g", "s", 0, 1, "h", "e", 1, "host", "r", Map.of(),
        List.of(), List.of(), "", false, 0, 0, "", List.of(),
        List.of(new LatencyHistogram.Cell("allReduce", 3, 10, Map.of(5, 1L)))));
    // The cell's last bucket index sits 12 bytes before the end: make it one past the layout.
    ByteBuffer.wrap(wire).putInt(wire.length - 12, LatencyHistogram.LATENCY_BUCKETS);
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> RpcMessages.decode(wire));
    assertTrue(e.getMessage().contains("bucket " + LatencyHistogram.LATENCY_BUCKETS), e.getMessage());
    List<LatencyHistogram.Cell> tooMany = new java.util.ArrayList<>();
    for (int i = 0; i <= RpcMessages.MAX_LATENCY_CELLS; i++) {
      tooMany.add(new LatencyHistogram.Cell("c" + i, 0, 1, Map.of(1, 1L)));
    }
    e = assertThrows(IllegalArgumentException.class, () -> RpcMessages.encode(new RankReportMessage("g", "s", 0, 1,
        "h", "e", 1, "host", "r", Map.of(), List.of(), List.of(), "", false, 0, 0, "", List.of(), tooMany)));
    assertTrue(e.getMessage().contains("at most " + RpcMessages.MAX_LATENCY_CELLS), e.getMessage());
  }

  @Test
  void executorChecksRoundTripKeepingTheEnvironmentsOrder() {
    Map<String, String> env = new java.util.LinkedHashMap<>();
    env.put("CUDA driver", "none");
    env.put("CUDA runtime", "none");
    env.put("NCCL", "not loadable: CUDA is not usable");
    ExecutorCheckMessage m = new ExecutorCheckMessage("3", "host-b", "gpu",
        "CUDA libraries cannot be loaded: libcuda.so.1: cannot open shared object file", List.of("0"), env);
    ExecutorCheckMessage back = (ExecutorCheckMessage) roundTrip(m);
    assertEquals(m, back);
    assertEquals(List.copyOf(env.keySet()), List.copyOf(back.environment().keySet()));
    assertEquals(true, new ExecutorCheckMessage("1", "h", "gpu", "", List.of(), Map.of()).usable());
  }

  @Test
  void anotherVersionIsRefusedNamingBothVersions() {
    byte[] wire = RpcMessages.encode(new Poll("g", 0, 0));
    ByteBuffer.wrap(wire).putInt(4, 1);
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> RpcMessages.decode(wire));
    assertTrue(e.getMessage().contains("version 1, this side speaks " + RpcMessages.VERSION), e.getMessage());
    assertTrue(e.getMessage().contains("same gpucoll jar"), e.getMessage());
  }

  @Test
  void foreignBytesAreRefused() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> RpcMessages.decode(new byte[] {(byte) 0xac, (byte) 0xed, 0, 5, 1, 2, 3, 4, 5}));
    assertTrue(e.getMessage().contains("not a gpucoll RPC message"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> RpcMessages.decode(null));
    assertTrue(e.getMessage().contains("null"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> RpcMessages.encode("a string"));
    assertTrue(e.getMessage().contains("java.lang.String"), e.getMessage());
  }

  @Test
  void everyTruncationIsAClearErrorNeverAnotherException() {
    byte[] wire = RpcMessages.encode(new RankReportMessage("g", "s", 0, 1, "h", "e", 1, "host",
        "r", Map.of("allGather", Map.of("host-ll", 1L)), List.of("p"), List.of("f"), "stage 0.0", true, 5, 6,
        "why", List.of("u"), List.of(new LatencyHistogram.Cell("allGather", 4, 99, Map.of(20, 2L, 30, 1L)))));
    for (int len = 0; len < wire.length; len++) {
      byte[] cut = Arrays.copyOf(wire, len);
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> RpcMessages.decode(cut), "length " + len);
      assertTrue(e.getMessage().contains("truncated") || e.getMessage().contains("not a gpucoll"),
          len + ": " + e.getMessage());
    }
  }

  @Test
  void trailingBytesAndUnknownTypesAreRefused() {
    byte[] wire = RpcMessages.encode(new Poll("g", 0, 0));
    byte[] longer = Arrays.copyOf(wire, wire.length + 3);
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> RpcMessages.decode(longer));
    assertTrue(e.getMessage().contains("3 bytes after its end"), e.getMessage());
    wire[8] = 42;
    e = assertThrows(IllegalArgumentException.class, () -> RpcMessages.decode(wire));
    assertTrue(e.getMessage().contains("unknown type 42"), e.getMessage());
  }

  @Test
  void aHugeAnnouncedLengthIsRefusedWithoutAllocatingIt() {
    byte[] wire = RpcMessages.encode(new Arrive("g", 0, 0, 1, new byte[4], 1000, false));
    // The payload length sits after magic, version, type, group id (4 + 1) , round, rank, size.
    int payloadLengthAt = 4 + 4 + 1 + 4 + 1 + 8 + 4 + 4;
    assertEquals(4, ByteBuffer.wrap(wire).getInt(payloadLengthAt));
    ByteBuffer.wrap(wire).putInt(payloadLengthAt, Integer.MAX_VALUE);
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> RpcMessages.decode(wire));
    assertTrue(e.getMessage().contains(Integer.MAX_VALUE + " elements announced"), e.getMessage());
    ByteBuffer.wrap(wire).putInt(payloadLengthAt, -1);
    e = assertThrows(IllegalArgumentException.class, () -> RpcMessages.decode(wire));
    assertTrue(e.getMessage().contains("-1 elements announced"), e.getMessage());
  }
}
