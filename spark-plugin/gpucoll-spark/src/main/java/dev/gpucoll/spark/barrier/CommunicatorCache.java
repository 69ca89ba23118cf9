package dev.gpucoll.spark.barrier;

import dev.gpucoll.api.Communicator;
import dev.gpucoll.core.rendezvous.Rendezvous;
import dev.gpucoll.core.report.ReportingCommunicator;
import dev.gpucoll.spark.metrics.CollectiveMetrics;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Communicators of this executor JVM, kept between stages so a group that meets again skips
 * setup. Keyed by the group's signature (every rank's executor address, in rank order) and the
 * rank; an entry is lent to one task at a time.
 *
 * <p>Internal: public for the other packages of gpucoll-spark, not for users.
 */
public final class CommunicatorCache {
  private static final Logger LOG = LoggerFactory.getLogger(CommunicatorCache.class);
  /** This executor's cache: the executor plugin closes what it holds at shutdown ({@link #closeAll}). */
  public static final CommunicatorCache INSTANCE = new CommunicatorCache();

  /** A communicator with what was used to build it. */
  static final class Entry {
    final String key;
    final Communicator communicator;
    final Rendezvous rendezvous;
    final CollectiveMetrics metrics;
    /** What the factory found while choosing the backend, for the path report. */
    final List<String> formationFindings;
    /** The settings that chose its protocols (GpuCollConf.groupWideSettings of the forming job). */
    final Map<String, String> formedWith;
    boolean inUse;
    boolean cached;
    /** Set when the current task's rendezvous agreed to reuse this cached communicator. */
    boolean reusedByTask;
    /** The stage whose task formed it ("stage 0.0"), for reports of stages that reuse it. */
    final String formedIn;
    /** How long building it took once every rank had arrived (backend setup). */
    long formationNanos;

    Entry(String key, Communicator communicator, Rendezvous rendezvous, CollectiveMetrics metrics,
        List<String> formationFindings, Map<String, String> formedWith, String formedIn) {
      this.formedIn = formedIn;
      this.key = key;
      this.communicator = communicator;
      this.rendezvous = rendezvous;
      this.metrics = metrics;
      this.formationFindings = List.copyOf(formationFindings);
      this.formedWith = Map.copyOf(formedWith);
    }

    int rank() {
      return communicator.rank();
    }

    /** Why the entry must not be lent again, or null. */
    String unusableReason() {
      if (communicator.isClosed()) {
        return "closed";
      }
      return communicator instanceof ReportingCommunicator r ? r.unusableReason() : null;
    }

    /** Identifies the communicator: equal on all its ranks, different for every new group. */
    String id() {
      return rendezvous.groupId();
    }
  }

  /**
   * Idle communicators kept per executor. Each holds shared memory (or GPU buffers); groups whose
   * ranks land on other executors in later stages form new keys, so the least recently used idle
   * ones are closed beyond this many.
   */
  static final int MAX_CACHED = 8;

  /** In access order: the first idle entry is the least recently used. */
  private final Map<String, Entry> entries = new LinkedHashMap<>(16, 0.75f, true);

  /**
   * The idle cached entry for {@code key}, now lent to the caller; null if none. An entry that is
   * closed or broken (an earlier timeout or failure), or that was formed with other protocol
   * settings than the caller's job uses ({@code settings}), is dropped and closed instead.
   */
  synchronized Entry acquire(String key, Map<String, String> settings) {
    Entry e = entries.get(key);
    if (e == null || e.inUse) {
      return null;
    }
    String unusable = e.unusableReason();
    if (unusable == null && !e.formedWith.equals(settings)) {
      unusable = "formed with other settings " + e.formedWith + " than this job's " + settings;
    }
    if (unusable != null) {
      LOG.info("gpucoll: not reusing cached communicator {}: {}", e.id(), unusable);
      entries.remove(key);
      e.cached = false;
      closeQuietly(e);
      return null;
    }
    e.inUse = true;
    e.reusedByTask = false;
    return e;
  }

  /** Keeps a new entry (lent to the caller) unless another task holds one under the same key. */
  synchronized void putLent(Entry e) {
    e.inUse = true;
    Entry old = entries.get(e.key);
    if (old != null && old.inUse) {
      return; // a concurrent job has the same group: the new one lives only for this task
    }
    if (old != null) {
      closeQuietly(old);
    }
    entries.put(e.key, e);
    e.cached = true;
    Iterator<Entry> lru = entries.values().iterator();
    while (entries.size() > MAX_CACHED && lru.hasNext()) {
      Entry idle = lru.next();
      if (!idle.inUse) {
        lru.remove();
        idle.cached = false;
        closeQuietly(idle);
      }
    }
  }

  synchronized int size() {
    return entries.size();
  }

  /** The task is done with the entry; an uncached one is closed. */
  synchronized void release(Entry e) {
    e.inUse = false;
    if (!e.cached || e.unusableReason() != null) {
      evict(e);
    }
  }

  /** Drops and closes the entry (failed task, or the group did not agree to reuse it). */
  synchronized void evict(Entry e) {
    e.inUse = false;
    entries.remove(e.key, e);
    e.cached = false;
    closeQuietly(e);
  }

  /**
   * How long a task that failed by its own exception keeps its communicator open. Closing it at
   * once fails the peers waiting in a collective with "rank r closed its communicator", and their
   * failure can reach the scheduler before the failing task's own (its status is sent after the
   * task's listeners ran), making a peer's error the job's. Open, the peers wait until Spark kills
   * them for the failed barrier stage, so the user's exception is the job's error; the close after
   * this delay still releases peers that no kill reached.
   */
  static final Duration FAILED_TASK_CLOSE_DELAY = Duration.ofSeconds(3);

  /** Entries dropped from the cache whose close is deferred ({@link #evictLater}). */
  private final java.util.Set<Entry> closing = new java.util.HashSet<>();
  private java.util.concurrent.ScheduledExecutorService closer;

  /** Drops the entry now and closes it after {@code delay}, or at {@link #closeAll}, whichever comes first. */
  synchronized void evictLater(Entry e, Duration delay) {
    e.inUse = false;
    entries.remove(e.key, e);
    e.cached = false;
    if (closer == null) {
      closer = java.util.concurrent.Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "gpucoll-deferred-close");
        t.setDaemon(true);
        return t;
      });
    }
    closing.add(e);
    closer.schedule(() -> {
      synchronized (this) {
        if (!closing.remove(e)) {
          return; // closeAll closed it
        }
      }
      closeQuietly(e);
    }, delay.toNanos(), java.util.concurrent.TimeUnit.NANOSECONDS);
  }

  public synchronized void closeAll() {
    List<Entry> all = new ArrayList<>(entries.values());
    entries.clear();
    all.addAll(closing);
    closing.clear();
    all.forEach(CommunicatorCache::closeQuietly);
  }

  private static void closeQuietly(Entry e) {
    try {
      e.communicator.close();
      e.rendezvous.close();
    } catch (Throwable ex) { // runs in task listeners: an Error here must not end the executor
      LOG.warn("closing gpucoll communicator {} failed", e.id(), ex);
    }
  }
}
