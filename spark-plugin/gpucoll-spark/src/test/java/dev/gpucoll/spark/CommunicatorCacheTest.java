package dev.gpucoll.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.Communicator;
import dev.gpucoll.core.rendezvous.Rendezvous;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

class CommunicatorCacheTest {

  /** A communicator that only knows whether it was closed. */
  private static Communicator fake() {
    AtomicBoolean closed = new AtomicBoolean();
    return (Communicator) Proxy.newProxyInstance(Communicator.class.getClassLoader(),
        new Class<?>[] {Communicator.class}, (proxy, method, args) -> switch (method.getName()) {
          case "close" -> {
            closed.set(true);
            yield null;
          }
          case "isClosed" -> closed.get();
          case "toString" -> "fake";
          default -> throw new UnsupportedOperationException(method.getName());
        });
  }

  private static CommunicatorCache.Entry entry(String key) {
    Rendezvous rdv = new Rendezvous() {
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
    return new CommunicatorCache.Entry(key, fake(), rdv, new CollectiveMetrics(null), List.of());
  }

  @Test
  void lendsOneTaskAtATimeAndClosesTheLeastRecentlyUsedIdleEntriesBeyondTheLimit() {
    CommunicatorCache cache = new CommunicatorCache();
    CommunicatorCache.Entry busy = entry("busy");
    cache.putLent(busy); // stays lent throughout
    CommunicatorCache.Entry first = entry("k0");
    cache.putLent(first);
    cache.release(first);
    assertNull(cache.acquire("busy"), "lent to another task");
    assertSame(first, cache.acquire("k0"));
    cache.release(first);
    for (int i = 1; i <= CommunicatorCache.MAX_CACHED; i++) {
      CommunicatorCache.Entry e = entry("k" + i);
      cache.putLent(e);
      cache.release(e);
    }
    assertEquals(CommunicatorCache.MAX_CACHED, cache.size());
    assertTrue(first.communicator.isClosed(), "least recently used idle entry closed");
    assertFalse(busy.communicator.isClosed(), "an entry in use is never closed");
    assertNull(cache.acquire("k0"));
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
    assertNull(cache.acquire("k"));
    assertEquals(0, cache.size());
  }
}
