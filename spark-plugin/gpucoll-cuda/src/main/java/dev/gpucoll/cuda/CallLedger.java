package dev.gpucoll.cuda;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CollectiveListener;
import dev.gpucoll.api.LocOp;
import dev.gpucoll.core.Algorithm;
import dev.gpucoll.core.report.RankReport;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;

/** What one GPU communicator ran, for its report, and its listeners, told of each completed call. */
final class CallLedger {
  /**
   * Calls that ran, by collective and algorithm ordinal: counted without building a "collective/algorithm"
   * key or boxing per call; the reports build the keyed map on demand.
   */
  private final long[][] observed = new long[Collective.values().length][Algorithm.values().length];
  private final List<CollectiveListener> listeners = new CopyOnWriteArrayList<>();
  /**
   * The MAXLOC / MINLOC call in progress, or null: its gather is counted as the allGather it is but
   * tells the listeners nothing (the pair call tells them once it is done), its algorithm kept here.
   */
  private LocOp pairCall;
  private Algorithm pairGather;

  void addListener(CollectiveListener listener) {
    listeners.add(listener);
  }

  List<CollectiveListener> listeners() {
    return listeners;
  }

  /** Counts a completed call and tells the listeners (unless it is a pair call's gather). */
  void observed(Collective c, Algorithm algorithm, long bytes, long startNanos) {
    count(c, algorithm);
    if (pairCall != null) {
      pairGather = algorithm; // the pair call tells the listeners
    } else {
      tell(c, null, algorithm, bytes, startNanos);
    }
  }

  void count(Collective c, Algorithm algorithm) {
    observed[c.ordinal()][algorithm.ordinal()]++;
  }

  /** Runs {@code gather}, the allGather of MAXLOC / MINLOC {@code op}'s pairs, and returns the algorithm it took. */
  Algorithm pairGather(LocOp op, Runnable gather) {
    pairCall = op;
    try {
      gather.run();
    } finally {
      pairCall = null;
    }
    return pairGather;
  }

  /** Tells the listeners of a completed call; a MAXLOC / MINLOC one ({@code loc}) as such. */
  void tell(Collective c, LocOp loc, Algorithm algorithm, long bytes, long startNanos) {
    if (!listeners.isEmpty()) {
      long nanos = System.nanoTime() - startNanos;
      for (CollectiveListener l : listeners) {
        if (loc == null) {
          l.onCollective(c, algorithm.id(), bytes, nanos);
        } else {
          l.onLocCollective(loc, algorithm.id(), bytes, nanos);
        }
      }
    }
  }

  /** The observed calls keyed as {@link RankReport#pathKey}, zero counts left out, NCCL's only {@code withNccl}. */
  Map<String, Long> counts(boolean withNccl) {
    Map<String, Long> out = new TreeMap<>();
    for (Collective c : Collective.values()) {
      for (Algorithm a : Algorithm.values()) {
        long n = observed[c.ordinal()][a.ordinal()];
        if (n > 0 && (withNccl || !a.isNccl())) {
          out.put(RankReport.pathKey(c, a.id()), n);
        }
      }
    }
    return out;
  }
}
