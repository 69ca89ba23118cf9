package dev.gpucoll.core.host;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.PathChoice;
import dev.gpucoll.core.Algorithm;
import dev.gpucoll.core.config.GpuCollConf;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;

/**
 * The one place that decides which path a host-backend call takes, and why: per (collective,
 * bytes, topology), in {@link Algorithm}'s names. Pure Java, built once per group from the ranks'
 * hosts and the group-wide settings, so every rank reaches the same answers; {@code explain()},
 * the path report and the calls all read it (as the GPU backend's {@code GroupRoute}).
 *
 * <p>Topologies: one host (shared memory: payloads in the step header (LL) or bulk chunks, one-shot
 * or two-shot allReduce);
 * several hosts over UCX (shared memory inside each host, leaders between hosts: one-shot or
 * two-shot allReduce, every other collective the leaders' pairwise exchange); several hosts over
 * the relay (every payload through the rendezvous).
 */
final class HostRoute {
  /** How the ranks of different hosts reach each other. */
  enum Between {
    /** Every rank on one host: shared memory only. */
    NONE,
    UCX,
    RELAY
  }

  private final Between between;
  private final int ranks;
  private final String[] hostNames;
  private final int[][] hostRanks;
  private final long segmentBytes;
  private final int llBytes;
  private final int bulkBytes;
  private final long oneShotMax;
  private final Optional<Algorithm> forced;
  private final String rendezvousKind;

  private HostRoute(Between between, String[] hostByRank, long segmentBytes, int llBytes, int bulkBytes,
      long oneShotMax, Optional<Algorithm> forced, String rendezvousKind) {
    this.between = between;
    this.ranks = hostByRank.length;
    HostTopology t = new HostTopology(hostByRank);
    this.hostNames = t.hostNames();
    this.hostRanks = t.hostRanks();
    this.segmentBytes = segmentBytes;
    this.llBytes = llBytes;
    this.bulkBytes = bulkBytes;
    this.oneShotMax = oneShotMax;
    this.forced = forced;
    this.rendezvousKind = rendezvousKind;
  }

  /** Ranks of one host on a segment of {@code segmentBytes}. */
  static HostRoute oneHost(int ranks, String host, long segmentBytes, int llBytes, int bulkBytes, GpuCollConf conf) {
    String[] hosts = new String[ranks];
    Arrays.fill(hosts, host);
    return new HostRoute(Between.NONE, hosts, segmentBytes, llBytes, bulkBytes,
        conf.get(GpuCollConf.HOST_ONE_SHOT_MAX_BYTES), conf.get(GpuCollConf.ALGORITHM), null);
  }

  /** Ranks on several hosts, leaders over UCX. */
  static HostRoute ucx(String[] hostByRank, GpuCollConf conf) {
    return new HostRoute(Between.UCX, hostByRank, 0, 0, 0, conf.get(GpuCollConf.HOST_ONE_SHOT_MAX_BYTES),
        conf.get(GpuCollConf.ALGORITHM), null);
  }

  /** Ranks on several hosts, every payload through the rendezvous of kind {@code rendezvousKind}. */
  static HostRoute relay(String[] hostByRank, String rendezvousKind, GpuCollConf conf) {
    return new HostRoute(Between.RELAY, hostByRank, 0, 0, 0, 0, conf.get(GpuCollConf.ALGORITHM), rendezvousKind);
  }

  /**
   * Refuses a forced algorithm this backend cannot run, on every rank alike (the setting is
   * group-wide): shared memory and UCX run host-oneshot and host-twoshot, the relay none.
   */
  static void checkForced(GpuCollConf conf, int rank, Between between, String backend, List<String> hosts) {
    Optional<Algorithm> a = conf.get(GpuCollConf.ALGORITHM);
    if (a.isEmpty()) {
      return;
    }
    if (between == Between.RELAY) {
      throw new CollectiveException(rank, null, GpuCollConf.ALGORITHM.key() + "=" + a.get() + " cannot run on "
          + backend + " (this group spans hosts " + hosts + "; the relay has one algorithm)");
    }
    if (a.get() != Algorithm.HOST_ONESHOT && a.get() != Algorithm.HOST_TWOSHOT) {
      throw new CollectiveException(rank, null, GpuCollConf.ALGORITHM.key() + "=" + a.get()
          + " cannot run on the host backend (" + backend + " runs auto, " + Algorithm.HOST_ONESHOT + ", "
          + Algorithm.HOST_TWOSHOT + ")");
    }
  }

  int hosts() {
    return hostRanks.length;
  }

  // ---- the decisions ----

  /** The allReduce of {@code bytes} (per rank). */
  Algorithm allReduce(long bytes) {
    return switch (between) {
      case RELAY -> Algorithm.HOST_RELAY;
      case UCX -> !twoShot(bytes) ? Algorithm.HOST_UCX_ONESHOT
          : halving(bytes) ? Algorithm.HOST_UCX_HALVING : Algorithm.HOST_UCX_TWOSHOT;
      case NONE -> twoShot(bytes) ? Algorithm.HOST_TWOSHOT
          : bytes <= llBytes ? Algorithm.HOST_LL_ONESHOT : Algorithm.HOST_ONESHOT;
    };
  }

  /** True when an allReduce of {@code bytes} runs two-shot (reduce-scatter, then all-gather). */
  boolean twoShot(long bytes) {
    if (between == Between.RELAY) {
      return false;
    }
    return forced.isPresent() ? forced.get() == Algorithm.HOST_TWOSHOT : bytes > oneShotMax;
  }

  /**
   * Smallest allReduce that halves across 2 hosts instead of pipelining its two-shot (see
   * {@link #halving}).
   */
  static final long HALVING_MIN_BYTES = 256 << 10;

  /**
   * True when a two-shot allReduce of {@code bytes} between the leaders of 2 hosts moves each half
   * as one message (Open MPI's recursive halving and doubling, which for 2 ranks is: exchange halves,
   * reduce, exchange back) rather than in pipelined chunks: over UCX's TCP transport every message
   * from 32 KiB up is a rendezvous, a round trip that waits for the receiving leader to progress, and
   * a pipelined half of 1 MiB is 4 of them per phase (measured in docs/bench-host.md). At 3 hosts and
   * more the pipeline stays: a leader's slice then comes from several leaders at once, and the
   * chunks overlap the reduction with their transfer. A forced two-shot stays pipelined.
   */
  boolean halving(long bytes) {
    return between == Between.UCX && hostRanks.length == 2 && forced.isEmpty() && bytes >= HALVING_MIN_BYTES;
  }

  /**
   * A data-moving step of {@code payloadBytes} (what one rank publishes in it): in the step header
   * or bulk chunks inside a host; the leaders' exchange across hosts; the relay.
   */
  Algorithm movement(long payloadBytes) {
    return switch (between) {
      case RELAY -> Algorithm.HOST_RELAY;
      case UCX -> Algorithm.HOST_UCX;
      case NONE -> llStep(payloadBytes) ? Algorithm.HOST_LL : Algorithm.HOST_BULK;
    };
  }

  /** True when a shared-memory step of {@code payloadBytes} rides in the step header (LL; else bulk). */
  boolean llStep(long payloadBytes) {
    return payloadBytes <= llBytes;
  }

  Algorithm barrier() {
    return switch (between) {
      case RELAY -> Algorithm.HOST_RELAY;
      case UCX -> Algorithm.HOST_UCX;
      case NONE -> Algorithm.HOST_FLAGS;
    };
  }

  /**
   * The algorithm of a call of {@code bytes} (as the listeners get them: allGather its received
   * bytes, reduceScatter and allToAll what a rank sends), for {@code explain()} and the report.
   */
  Algorithm algorithm(Collective c, long bytes) {
    return switch (c) {
      case ALL_REDUCE -> allReduce(bytes);
      case BARRIER -> barrier();
      default -> movement(payloadOf(c, bytes));
    };
  }

  private long payloadOf(Collective c, long bytes) {
    return c == Collective.ALL_GATHER ? bytes / ranks : bytes;
  }

  PathChoice explain(Collective c, long bytes) {
    Algorithm algo = algorithm(c, bytes);
    List<String> why = new ArrayList<>();
    switch (between) {
      case RELAY -> {
        why.add("group spans hosts " + List.of(hostNames) + ": no shared memory reaches every rank");
        why.add("data moves through the rendezvous (" + rendezvousKind + ") in rounds of "
            + RelaySteps.CHUNK_BYTES + " bytes per rank: correct but slow");
      }
      case UCX -> {
        why.add(ranks + " ranks on " + hostRanks.length + " hosts " + Arrays.toString(hostNames)
            + ": shared memory inside each host, the hosts' leaders (ranks " + leaders() + ") over UCX");
        if (c == Collective.ALL_REDUCE) {
          why.add(sizeRule(bytes));
          why.add(switch (algo) {
            case HOST_UCX_TWOSHOT ->
                "leader h reduces slice h from every rank's input in rank order, then the slices go to every leader";
            case HOST_UCX_HALVING -> "2 hosts, " + bytes + " bytes >= " + HALVING_MIN_BYTES + ": each leader sends the"
                + " other the other's half in one message, reduces its own half in rank order and sends it back";
            default -> "every leader gets every rank's input and reduces in rank order";
          });
        } else if (c == Collective.BARRIER) {
          why.add("headers only: local gather, leaders exchange, local release");
        } else {
          why.add("local gather into the leader, one message per pair of leaders, local broadcast of the host's part");
        }
      }
      case NONE -> {
        why.add(ranks + " ranks on host " + hostNames[0] + " share one memory segment (" + segmentBytes + " bytes)");
        if (c == Collective.ALL_REDUCE) {
          why.add(sizeRule(bytes));
          if (algo == Algorithm.HOST_LL_ONESHOT) {
            why.add("fits the step header (" + llBytes + " bytes): the payload shares the cache line of the"
                + " header's epoch flag, one line per peer");
          } else {
            why.add("moves in chunks of " + bulkBytes + " bytes through the bulk region, "
                + (algo == Algorithm.HOST_TWOSHOT ? "reduce-scatter then all-gather per chunk" : "one step per chunk"));
          }
        } else if (c == Collective.BARRIER) {
          why.add("one step of epoch flags, no payload");
        } else {
          long payload = payloadOf(c, bytes);
          boolean ll = llStep(payload);
          why.add("per-rank payload " + payload + " bytes " + (ll ? "<=" : ">") + " LL limit " + llBytes
              + (ll ? ": in the step header" : ": bulk copies in chunks of " + bulkBytes + " bytes"));
        }
      }
    }
    return new PathChoice(c, bytes, algo.id(), why);
  }

  /** Why an allReduce of {@code bytes} takes its algorithm: a forced one, or its size against host.oneShotMaxBytes. */
  private String sizeRule(long bytes) {
    return forced.isPresent() ? GpuCollConf.ALGORITHM.key() + "=" + forced.get() + " forces it"
        : bytes + " bytes " + (bytes > oneShotMax ? ">" : "<=") + " " + GpuCollConf.HOST_ONE_SHOT_MAX_BYTES.key()
            + " (" + oneShotMax + ")";
  }

  private List<Integer> leaders() {
    List<Integer> out = new ArrayList<>();
    for (int[] h : hostRanks) {
      out.add(h[0]);
    }
    return out;
  }
}
