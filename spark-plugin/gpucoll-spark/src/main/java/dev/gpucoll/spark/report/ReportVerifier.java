package dev.gpucoll.spark.report;

import dev.gpucoll.spark.rpc.Freshness;
import dev.gpucoll.spark.rpc.GroupCredential;
import dev.gpucoll.spark.rpc.PluginName;
import dev.gpucoll.spark.rpc.RpcMessages;
import dev.gpucoll.spark.rpc.RpcMessages.ExecutorCheckMessage;
import dev.gpucoll.spark.rpc.RpcMessages.ExecutorTotalsMessage;
import dev.gpucoll.spark.rpc.RpcMessages.RankProgressMessage;
import dev.gpucoll.spark.rpc.RpcMessages.RankReportMessage;
import dev.gpucoll.spark.rpc.RpcMessages.Sealed;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Driver side: decides which of the executors' one-way messages reach the reports, the tab, the
 * metrics and the event log, so that a process outside the application cannot feed them.
 *
 * <p>Rank reports, progress and metric totals come sealed with a job's {@link GroupCredential},
 * as rendezvous requests do ({@link RpcMessages#seal}); one that is unsealed or does not verify is
 * dropped and counted ({@link #failures}), and so is one that verifies but is no fresh one ({@link
 * Freshness}: a copy of a real one, which would count twice). A backend check is sent at executor start, before any
 * task has brought a credential, so it cannot carry one: it is admitted only as the first check
 * of an executor that Spark has registered, and anything else is dropped and counted alike.
 *
 * <p>Internal: public for the other packages of gpucoll-spark, not for users.
 */
public final class ReportVerifier {
  private static final Logger LOG = LoggerFactory.getLogger(PluginName.CLASS);

  private final GroupCredential.Issuer credentials;
  private final Freshness.Guard freshness;
  private final AtomicLong failures = new AtomicLong();
  private final Set<String> checkedExecutors = ConcurrentHashMap.newKeySet();

  public ReportVerifier(GroupCredential.Issuer credentials, Freshness.Guard freshness) {
    this.credentials = credentials;
    this.freshness = freshness;
  }

  /** Whether {@code m} (a decoded message, or the unverified body of a sealed one) is a report this class opens. */
  public static boolean isReport(Object m) {
    return m instanceof RankReportMessage || m instanceof RankProgressMessage || m instanceof ExecutorTotalsMessage;
  }

  /**
   * The rank report, progress or totals that {@code message} carries sealed with a credential that
   * verifies; null when it does not (the message is then dropped and counted).
   */
  public Object open(Object message) {
    if (message instanceof Sealed s) {
      GroupCredential credential = credentials.forId(s.credentialId());
      Object inner = null;
      try {
        inner = credential == null ? null : RpcMessages.open(s, credential);
      } catch (IllegalArgumentException e) {
        // sealed with a real credential but not a message of ours: dropped as any forgery
      }
      if (isReport(inner)) {
        String stale = freshness.admit(s.stamp());
        if (stale == null) {
          return inner;
        }
        drop(RpcMessages.describeStale(s, stale));
        return null;
      }
    }
    drop(message instanceof ExecutorCheckMessage c ? describeCheck(c) : RpcMessages.describeDropped(message));
    return null;
  }

  /**
   * Whether the backend check {@code c} counts: the first one from an executor in {@code
   * registered} (Spark's executors now), of the backend the driver's settings require. Executors
   * get their settings from the driver and check only a required backend, once, at their plugin's
   * start, after Spark registered them: a check of another backend (any, when none is required),
   * for another executor, or a second one, is dropped and counted.
   */
  public boolean admitCheck(ExecutorCheckMessage c, Set<String> registered, String requiredBackend) {
    if (!requiredBackend.equals("auto") && c.backend().equals(requiredBackend)
        && registered.contains(c.executorId()) && checkedExecutors.add(c.executorId())) {
      return true;
    }
    drop(describeCheck(c));
    return false;
  }

  private static String describeCheck(ExecutorCheckMessage c) {
    return "a backend check (" + c.backend() + ") for executor '" + c.executorId() + "', which Spark has not"
        + " registered, has sent one already or does not check that backend";
  }

  /** Messages dropped so far. */
  public long failures() {
    return failures.get();
  }

  private void drop(String what) {
    long n = failures.incrementAndGet();
    // The first, then at each power of two: a flood must not flood the log.
    if (Long.bitCount(n) == 1) {
      LOG.warn("gpucoll: dropped {} report, progress, metrics or backend-check message(s) that failed the"
          + " driver's checks (latest: {}); some process that is no task of this application reaches the"
          + " driver's plugin endpoint", n, what);
    }
  }
}
