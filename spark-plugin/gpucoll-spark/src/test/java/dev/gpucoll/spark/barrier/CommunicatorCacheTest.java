package dev.gpucoll.spark.barrier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.Communicator;
import dev.gpucoll.core.rendezvous.Rendezvous;
import dev.gpucoll.core.report.ReportingCommunicator;
import dev.gpucoll.spark.metrics.CollectiveMetrics;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

class CommunicatorCacheTest {

  /** Why the next fakes are unusable (null: usable); set by a test. */
  private final AtomicReference<String> unusable = new AtomicReference<>();

  /** A communicator that only knows whether it was closed and whether it is broken. */
  private Communicator fake() {
    AtomicBoolean closed = new AtomicBoolean();
    return (Communicator) Proxy.newProxyInstance(Communicator.class.getClassLoader(),
        new Class<?>[] {Communicator.class, ReportingCommunicator.class}, (proxy, method, args) -> switch (method.getName()) {
          case "close" -> {
            closed.set(true);
            yield null;
          }
          case "isClosed" -> closed.get();
          case "unusableReason" -> unusable.get();
          case "toString" -> "fake";
          default -> throw new UnsupportedOperationException(method.getName());
        });
  }

  private CommunicatorCache.Entry entry(String key) {
    return entry(key, Map.of());
  }

  private static Rendezvous rendezvous(String key) {
    return new Rendezvous() {
      public String groupId() {
        return "group-" + key;
      }

      public int rank() {
        return 0;
      }

      public int size() {
        return 1;
      }

      public List<byte[]> allGather(byte[] payload, Duration timeout) {
        return List.of(payload);
      }

      public String kind() {
        return "test";
      }
    };
  }

  private CommunicatorCache.Entry entry(String key, Map<String, String> formedWith) {
    Rendezvous rdv = rendezvous(key);
    return new CommunicatorCache.Entry(key, fake(), rdv, new CollectiveMetrics(null), List.of(), formedWith, "stage 0.0");
  }

  @Test
  void lendsOneTaskAtATimeAndClosesTheLeastRecentlyUsedIdleEntriesBeyondTheLimit() {
    CommunicatorCache cache = new CommunicatorCache();
    CommunicatorCache.Entry busy = entry("busy");
    cache.putLent(busy); // stays lent throughout
    CommunicatorCache.Entry first = entry("k0");
    cache.putLent(first);
    cache.release(first);
    assertNull(cache.acquire("busy", Map.of()), "lent to another task");
    assertSame(first, cache.acquire("k0", Map.of()));
    cache.release(first);
    for (int i = 1; i <= CommunicatorCache.MAX_CACHED; i++) {
      CommunicatorCache.Entry e = entry("k" + i);
      cache.putLent(e);
      cache.release(e);
    }
    assertEquals(CommunicatorCache.MAX_CACHED, cache.size());
    assertTrue(first.communicator.isClosed(), "least recently used idle entry closed");
    assertFalse(busy.communicator.isClosed(), "an entry in use is never closed");
    assertNull(cache.acquire("k0", Map.of()));
    cache.evict(busy);
    assertTrue(busy.communicator.isClosed());
    cache.closeAll();
    assertEquals(0, cache.size());
  }

  @Test
  void aClosedCommunicatorIsNotLentAgain() {
    CommunicatorCache cache = new CommunicatorCache();
    CommunicatorCache.Entry e = entry("k");
    cache.putLent(e);
    e.communicator.close(); // the user closed it
    cache.release(e);
    assertNull(cache.acquire("k", Map.of()));
    assertEquals(0, cache.size());
  }

  @Test
  void aCommunicatorBrokenByAFailureIsNeverLentAgain() {
    CommunicatorCache cache = new CommunicatorCache();
    CommunicatorCache.Entry e = entry("k");
    cache.putLent(e);
    cache.release(e);
    unusable.set("rank 2 did not arrive within 30 s"); // a timeout, and the task caught it
    assertNull(cache.acquire("k", Map.of()));
    assertTrue(e.communicator.isClosed(), "the broken communicator is closed, not kept");
    assertEquals(0, cache.size());
  }

  @Test
  void aCommunicatorFormedWithOtherProtocolSettingsIsNotLent() {
    CommunicatorCache cache = new CommunicatorCache();
    CommunicatorCache.Entry e = entry("k", Map.of("spark.gpucoll.algorithm", "oneshot"));
    cache.putLent(e);
    cache.release(e);
    assertNull(cache.acquire("k", Map.of("spark.gpucoll.algorithm", "twoshot")));
    assertTrue(e.communicator.isClosed());
    CommunicatorCache.Entry same = entry("k", Map.of("spark.gpucoll.algorithm", "twoshot"));
    cache.putLent(same);
    cache.release(same);
    assertSame(same, cache.acquire("k", Map.of("spark.gpucoll.algorithm", "twoshot")));
  }
}
