package dev.gpucoll.spark.rpc;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.spark.rpc.RpcMessages.Arrive;
import dev.gpucoll.spark.rpc.RpcMessages.Poll;
import dev.gpucoll.spark.rpc.RpcMessages.RoundState;
import dev.gpucoll.spark.rpc.RpcMessages.Sealed;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The group credential against an intruder who reaches the driver's endpoint: forged, replayed
 * and tampered messages are dropped and counted, and the real group still forms as if they had
 * never been sent.
 */
class GroupCredentialTest {
  private final GroupCredential.Issuer issuer = new GroupCredential.Issuer();
  private final RendezvousService service = new RendezvousService(issuer, new Freshness.Guard(System::nanoTime));
  private final GroupCredential job = issuer.nextJob();
  /** Every sealed request the real ranks sent, as an eavesdropper on plaintext RPC sees them. */
  private final List<byte[]> seen = java.util.Collections.synchronizedList(new ArrayList<>());

  private Object dispatch(byte[] wire) {
    seen.add(wire);
    return service.serve(RpcMessages.decode(wire));
  }

  /** What the driver answers an intruder's bytes. */
  private RoundState intrude(Object message) {
    Object reply = RpcMessages.decode(service.serve(RpcMessages.decode(RpcMessages.encode(message))));
    return (RoundState) reply;
  }

  private static Arrive arrive(String group, long round, int rank, int size, byte[] payload) {
    return new Arrive(group, round, rank, size, payload, 10_000, false);
  }

  /** Two real ranks of {@code group} gather their payloads; the result by rank. */
  private List<String> formRealGroup(String group) throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      List<Future<List<byte[]>>> results = new ArrayList<>();
      for (int r = 0; r < 2; r++) {
        PluginRpcRendezvous rdv = new PluginRpcRendezvous(this::dispatch, job, group, r, 2);
        byte[] payload = ("real" + r).getBytes(java.nio.charset.StandardCharsets.UTF_8);
        results.add(pool.submit(() -> rdv.allGather(payload, Duration.ofSeconds(10))));
      }
      List<String> out = new ArrayList<>();
      for (Future<List<byte[]>> f : results) {
        List<String> one = f.get().stream().map(b -> new String(b, java.nio.charset.StandardCharsets.UTF_8)).toList();
        assertEquals(List.of("real0", "real1"), one);
        out = one;
      }
      return out;
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void forgedArrivalsAreDroppedCountedAndNeverChangeTheRealGroup() throws Exception {
    String group = "app-1-stage4.0";
    // The forgeries that broke groups before: rank 0 of a 1-rank group, rank 1 of a 3-rank one.
    assertFailure(intrude(arrive(group, 0, 0, 1, new byte[] {9})), "failed the group credential");
    // Sealed, but with a key of the intruder's own under the real credential's id.
    GroupCredential guessed = new GroupCredential.Issuer().forId(job.id());
    assertFailure(intrude(RpcMessages.seal(arrive(group, 0, 1, 3, new byte[] {9}), guessed, Freshness.Stamp.NONE)), "does not verify");
    // Under an id no job has: the driver derives a key the intruder does not know.
    assertFailure(intrude(RpcMessages.seal(arrive(group, 0, 1, 3, new byte[] {9}),
        new GroupCredential.Issuer().forId("job999"), Freshness.Stamp.NONE)), "does not verify");
    assertFailure(intrude(new Poll(group, 0, 0)), "failed the group credential");
    assertEquals(4, service.credentialFailures());
    assertEquals(0, service.openRounds(), "no forged message opened a round");
    assertEquals(0, service.retainedBytes());

    assertEquals(List.of("real0", "real1"), formRealGroup(group));
    assertEquals(4, service.credentialFailures(), "the real ranks' messages all verified");
    assertEquals(0, service.openRounds());
  }

  @Test
  void aRealMessageReplayedIntoAnotherGroupOrRoundOrTamperedIsDropped() throws Exception {
    formRealGroup("app-1-stage4.0");
    Sealed real = null;
    for (byte[] w : seen) {
      if (RpcMessages.decode(w) instanceof Sealed s && RpcMessages.decode(s.body()) instanceof Arrive) {
        real = s;
        break;
      }
    }
    Arrive a = (Arrive) RpcMessages.decode(real.body());
    long before = service.credentialFailures();
    // The same MAC over the same arrival in another stage's group, in another round, with another payload.
    List<Arrive> moved = List.of(
        new Arrive("app-1-stage5.0", a.round(), a.rank(), a.size(), a.payload(), a.timeoutMillis(), a.noResult()),
        new Arrive(a.groupId(), a.round() + 1, a.rank(), a.size(), a.payload(), a.timeoutMillis(), a.noResult()),
        new Arrive(a.groupId(), a.round(), a.rank(), 1, a.payload(), a.timeoutMillis(), a.noResult()),
        new Arrive(a.groupId(), a.round(), a.rank(), a.size(), new byte[] {1, 2, 3}, a.timeoutMillis(), a.noResult()));
    for (Arrive m : moved) {
      assertFailure(intrude(new Sealed(real.credentialId(), real.stamp(), RpcMessages.encode(m), real.mac())),
          "does not verify");
    }
    byte[] flipped = real.body().clone();
    flipped[flipped.length - 10] ^= 1;
    assertFailure(intrude(new Sealed(real.credentialId(), real.stamp(), flipped, real.mac())), "does not verify");
    // A key for another job does not reach this job's rounds either.
    assertFailure(intrude(new Sealed(issuer.nextJob().id(), real.stamp(), real.body(), real.mac())), "does not verify");
    // The stamp is under the MAC: a copy renumbered to pass for a new message is a forgery.
    Freshness.Stamp st = real.stamp();
    assertFailure(intrude(new Sealed(real.credentialId(), new Freshness.Stamp(st.issuedNanos(), st.ticketMac(),
        st.sender(), st.seq() + 100), real.body(), real.mac())), "does not verify");
    assertEquals(before + 7, service.credentialFailures());
    assertEquals(0, service.openRounds());
    // The real group of the next stage forms regardless.
    assertEquals(List.of("real0", "real1"), formRealGroup("app-1-stage5.0"));
  }

  /**
   * Every sealed message of a real group sent again as it was, as someone who reads the traffic
   * can: within the group's rounds, after them, and once its ticket is stale. Each copy is dropped
   * and counted, none reopens a finished round or answers with its payloads, and a group formed
   * while copies arrive forms right.
   */
  @Test
  void aRealMessageSentAgainAsItWasIsDroppedAndCounted() throws Exception {
    AtomicLong now = new AtomicLong(1_000_000_000L);
    RendezvousService svc = new RendezvousService(issuer, new Freshness.Guard(now::get), now::get, 64L << 20);
    List<byte[]> sealed = java.util.Collections.synchronizedList(new ArrayList<>());
    AtomicLong replays = new AtomicLong();
    // Each sealed request is served, then served again at once (a copy within its round).
    PluginRpcRendezvous.RpcChannel copying = wire -> {
      Object reply = svc.serve(RpcMessages.decode(wire));
      if (RpcMessages.decode(wire) instanceof Sealed) {
        sealed.add(wire);
        RoundState copy = (RoundState) RpcMessages.decode(svc.serve(RpcMessages.decode(wire)));
        assertTrue(copy.failure() != null && copy.failure().contains("a replay"), String.valueOf(copy.failure()));
        replays.incrementAndGet();
      }
      return reply;
    };
    ExecutorService pool = Executors.newFixedThreadPool(3);
    try {
      List<Future<List<byte[]>>> results = new ArrayList<>();
      for (int r = 0; r < 3; r++) {
        PluginRpcRendezvous rdv = new PluginRpcRendezvous(copying, job, "app-1-stage9.0", r, 3);
        byte[] payload = {(byte) r};
        results.add(pool.submit(() -> {
          rdv.allGather(payload, Duration.ofSeconds(10));
          return rdv.allGather(payload, Duration.ofSeconds(10)); // a second round
        }));
      }
      for (int r = 0; r < 3; r++) {
        List<byte[]> got = results.get(r).get(30, java.util.concurrent.TimeUnit.SECONDS);
        assertEquals(3, got.size());
        for (int k = 0; k < 3; k++) {
          assertArrayEquals(new byte[] {(byte) k}, got.get(k));
        }
      }
    } finally {
      pool.shutdownNow();
    }
    assertEquals(replays.get(), svc.credentialFailures(), "each copy within its round dropped and counted");
    assertEquals(0, svc.openRounds());
    // After the rounds: no copy reopens one.
    for (byte[] wire : List.copyOf(sealed)) {
      RoundState copy = (RoundState) RpcMessages.decode(svc.serve(RpcMessages.decode(wire)));
      assertTrue(copy.failure() != null && copy.failure().contains("a replay") && copy.payloads() == null,
          String.valueOf(copy.failure()));
    }
    assertEquals(0, svc.openRounds(), "a copy reopened a finished round");
    assertEquals(replays.get() + sealed.size(), svc.credentialFailures());
    // Once the tickets are stale the driver forgets the senders; their copies are refused as stale.
    now.addAndGet(Freshness.TICKET_LIFE_NANOS + 2_000_000_000L);
    for (byte[] wire : List.copyOf(sealed)) {
      RoundState copy = (RoundState) RpcMessages.decode(svc.serve(RpcMessages.decode(wire)));
      assertTrue(copy.failure() != null && copy.failure().contains("stale"), String.valueOf(copy.failure()));
    }
    assertEquals(0, svc.openRounds());
    assertEquals(replays.get() + 2L * sealed.size(), svc.credentialFailures());
  }

  @Test
  void anotherJobsCredentialKeepsItsRoundsApartFromTheRealGroup() throws Exception {
    String group = "app-1-stage6.0";
    GroupCredential other = issuer.nextJob();
    Sealed request = RpcMessages.seal(arrive(group, 0, 0, 1, new byte[] {9}), other,
        new Tickets.Sender(new Tickets(this::dispatch)).next());
    RoundState answer = RpcMessages.openReply((Sealed) RpcMessages.decode(service.serve(request)), other, request.mac());
    assertTrue(answer.complete(), "its own 1-rank round");
    assertEquals(List.of("real0", "real1"), formRealGroup(group));
  }

  @Test
  void ranksBelieveOnlyAnswersSealedForTheirOwnRequest() {
    GroupCredential forged = new GroupCredential.Issuer().forId(job.id());
    RoundState complete = new RoundState(List.of(new byte[] {6}), List.of(), null);
    // Tickets come from the real driver; the answers from elsewhere.
    Tickets tickets = new Tickets(this::dispatch);
    PluginRpcRendezvous fooled = new PluginRpcRendezvous(
        m -> RpcMessages.sealReply(complete, forged, ((Sealed) RpcMessages.decode(m)).mac()),
        tickets, job, "g", 0, 1);
    CollectiveException e = assertThrows(CollectiveException.class, () -> fooled.allGather(new byte[1], Duration.ofSeconds(1)));
    assertTrue(e.getMessage().contains("fails this job's group credential"), e.getMessage());
    // A genuine answer to an earlier request, replayed.
    byte[] earlier = RpcMessages.sealReply(complete, job, new byte[GroupCredential.MAC_BYTES]);
    PluginRpcRendezvous replayed = new PluginRpcRendezvous(m -> earlier, tickets, job, "g", 0, 1);
    e = assertThrows(CollectiveException.class, () -> replayed.allGather(new byte[1], Duration.ofSeconds(1)));
    assertTrue(e.getMessage().contains("fails this job's group credential"), e.getMessage());
    // An unsealed answer counts only as the driver's refusal.
    PluginRpcRendezvous unsealed = new PluginRpcRendezvous(m -> RpcMessages.encode(complete), tickets, job, "g",
        0, 1);
    e = assertThrows(CollectiveException.class, () -> unsealed.allGather(new byte[1], Duration.ofSeconds(1)));
    assertTrue(e.getMessage().contains("not sealed with this job's group credential"), e.getMessage());
  }

  @Test
  void theLocalPropertyCarriesIdAndKeyAndEachJobGetsItsOwn() {
    GroupCredential back = GroupCredential.parse(job.property());
    assertEquals(job.id(), back.id());
    assertArrayEquals(job.mac(new byte[] {1}), back.mac(new byte[] {1}));
    GroupCredential next = issuer.nextJob();
    assertNotEquals(job.id(), next.id());
    assertNotEquals(java.util.Arrays.toString(job.mac(new byte[] {1})), java.util.Arrays.toString(next.mac(new byte[] {1})));
    assertArrayEquals(next.mac(new byte[] {1}), issuer.forId(next.id()).mac(new byte[] {1}), "the driver derives it again");
    assertTrue(GroupCredential.PROPERTY.contains("Secret"), "Spark's event log redacts keys naming a secret");
    assertNull(GroupCredential.parse(null));
    assertNull(GroupCredential.parse("job1"));
    assertNull(GroupCredential.parse("job1:AAAA"));
    assertNull(GroupCredential.parse("job1:not base64!"));
    assertNull(issuer.forId("a:b"));
  }

  private static void assertFailure(RoundState s, String expected) {
    assertTrue(s.failure() != null && s.failure().contains(expected), String.valueOf(s.failure()));
    assertTrue(!s.complete());
  }
}
