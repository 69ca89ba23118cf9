package dev.gpucoll.core;

import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.CollectiveMismatchException;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.core.config.GpuCollConf;
import dev.gpucoll.core.rendezvous.Rendezvous;
import dev.gpucoll.core.spi.CommunicatorBackend;
import dev.gpucoll.core.spi.GroupContext;
import dev.gpucoll.core.spi.MemberInfo;
import dev.gpucoll.core.spi.MemberInfoCodec;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.ServiceLoader;
import java.util.concurrent.ConcurrentHashMap;
import java.util.logging.Logger;

/**
 * Forms one rank's communicator: one rendezvous round to learn the members (host, process, backend
 * facts), then the backend chosen by {@code spark.gpucoll.backend} builds the communicator.
 */
public final class CommunicatorFactory {
  private static final Logger LOG = Logger.getLogger(CommunicatorFactory.class.getName());
  /** Fact key listing the backends usable in the member's process, comma-separated. */
  public static final String FACT_BACKENDS = "backends";
  /**
   * Fact key prefix: {@code unusable.gpu} holds why the member cannot use the gpu backend, so the
   * error and the report on every rank (and the driver) name each rank's reason.
   */
  public static final String FACT_UNUSABLE_PREFIX = "unusable.";
  /** Fact key prefix of the settings every member must agree on ({@link GpuCollConf#groupWideSettings}). */
  static final String FACT_SETTING = "setting:";
  private static final Map<String, Boolean> SAID_UNAVAILABLE = new ConcurrentHashMap<>();

  private CommunicatorFactory() {}

  /**
   * Makes device {@code ordinal} current for this thread in every usable backend that has devices
   * (the gpu backend builds its communicator on the calling thread's current CUDA device).
   */
  public static void useDevice(int ordinal) {
    usableBackends(new LinkedHashMap<>()).values().forEach(b -> b.useDevice(ordinal));
  }

  /**
   * Whether backend {@code name} can run in this process and what its environment is, checked
   * without forming a group (the Spark layer runs it at executor start when the settings require
   * a backend).
   *
   * @param unavailableReason why it cannot run here; empty when it can
   * @param environment       the backend's {@link CommunicatorBackend#environment()}
   */
  public record BackendCheck(String backend, Optional<String> unavailableReason, Map<String, String> environment) {
    public BackendCheck {
      environment = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(environment));
    }
  }

  /** The {@link BackendCheck} of backend {@code name} in this process. */
  public static BackendCheck check(String name) {
    CommunicatorBackend b = backends().get(name);
    if (b == null) {
      return new BackendCheck(name, Optional.of("no '" + name + "' backend on the class path (is the"
          + " gpucoll-cuda jar missing?)"), Map.of());
    }
    Optional<String> why;
    try {
      why = b.unavailableReason();
    } catch (RuntimeException | LinkageError e) {
      why = Optional.of("checking the backend failed: " + e);
    }
    Map<String, String> environment;
    try {
      environment = b.environment();
    } catch (RuntimeException | LinkageError e) {
      environment = Map.of("environment", "could not be read: " + e);
    }
    return new BackendCheck(name, why, environment);
  }

  /** Backends on the class path, by name. */
  public static Map<String, CommunicatorBackend> backends() {
    Map<String, CommunicatorBackend> out = new LinkedHashMap<>();
    for (CommunicatorBackend b : ServiceLoader.load(CommunicatorBackend.class,
        CommunicatorFactory.class.getClassLoader())) {
      out.putIfAbsent(b.name(), b);
    }
    return out;
  }

  /**
   * Usable backends in this process; the reason each other backend is not goes into
   * {@code unusableReasons} (and the log, once per process).
   */
  static Map<String, CommunicatorBackend> usableBackends(Map<String, String> unusableReasons) {
    Map<String, CommunicatorBackend> usable = new LinkedHashMap<>();
    backends().forEach((name, b) -> {
      Optional<String> why = b.unavailableReason();
      if (why.isEmpty()) {
        usable.put(name, b);
      } else {
        unusableReasons.put(name, why.get());
        if (SAID_UNAVAILABLE.putIfAbsent(name, true) == null) {
          LOG.info("gpucoll backend '" + name + "' is not usable in this process: " + why.get());
        }
      }
    });
    return usable;
  }

  /**
   * A rank's communicator and what the factory found while choosing its backend (why a preferred
   * backend was skipped, per rank), for the path report.
   *
   * @param meetNanos how long the member-facts round took: the wait until every rank had arrived
   */
  public record Formed(Communicator communicator, List<String> findings, long meetNanos) {
    public Formed {
      findings = List.copyOf(findings);
    }
  }

  public static Communicator create(Rendezvous rendezvous, GpuCollConf conf, String host) {
    return form(rendezvous, conf, host).communicator();
  }

  /**
   * As {@link #create}, with the backend choice's findings. Whatever fails reaches the caller as a
   * CollectiveException (with the cause), never as a raw Error: Spark ends the executor JVM on one.
   */
  public static Formed form(Rendezvous rendezvous, GpuCollConf conf, String host) {
    try {
      return formGroup(rendezvous, conf, host);
    } catch (CollectiveException e) {
      throw e;
    } catch (Throwable t) {
      throw new CollectiveException(rendezvous.rank(), null, "forming the group failed: " + t,
          UnexpectedError.causeFor(t));
    }
  }

  private static Formed formGroup(Rendezvous rendezvous, GpuCollConf conf, String host) {
    Map<String, String> unusable = new LinkedHashMap<>();
    Map<String, CommunicatorBackend> usable = usableBackends(unusable);
    Map<String, String> facts = new HashMap<>();
    usable.values().forEach(b -> facts.putAll(b.localFacts()));
    facts.put(FACT_BACKENDS, String.join(",", usable.keySet()));
    unusable.forEach((name, why) -> facts.put(FACT_UNUSABLE_PREFIX + name, clip(why)));
    conf.groupWideSettings().forEach((k, v) -> facts.put(FACT_SETTING + k, v));
    MemberInfo self = new MemberInfo(rendezvous.rank(), host, processId(host), facts);

    long meetStart = System.nanoTime();
    List<byte[]> payloads = rendezvous.allGather(MemberInfoCodec.encode(self), conf.get(GpuCollConf.TIMEOUT));
    long meetNanos = System.nanoTime() - meetStart;
    List<MemberInfo> members = new ArrayList<>(payloads.size());
    for (byte[] p : payloads) {
      members.add(MemberInfoCodec.decode(p));
    }
    for (int r = 0; r < members.size(); r++) {
      if (members.get(r).rank() != r) {
        throw new CollectiveException(rendezvous.rank(), null,
            "rendezvous returned rank " + members.get(r).rank() + "'s info in slot " + r);
      }
    }
    checkSameSettings(members, rendezvous.rank());
    Choice chosen = chooseBackend(conf.get(GpuCollConf.BACKEND), members, rendezvous.rank());
    CommunicatorBackend backend = usable.get(chosen.backend());
    return new Formed(backend.create(new GroupContext(rendezvous, members, conf)), chosen.skipped(), meetNanos);
  }

  /** The backend to use and why each backend preferred to it was not. */
  record Choice(String backend, List<String> skipped) {}

  /**
   * Fails on every rank alike, before any data moves, when members hold different values of a
   * setting that changes the protocol: they would run different protocols for one call.
   */
  static void checkSameSettings(List<MemberInfo> members, int rank) {
    List<String> differences = new ArrayList<>();
    Map<String, String> first = members.get(0).facts();
    for (MemberInfo m : members) {
      Map<String, String> facts = m.facts();
      java.util.Set<String> keys = new java.util.TreeSet<>();
      first.keySet().stream().filter(k -> k.startsWith(FACT_SETTING)).forEach(keys::add);
      facts.keySet().stream().filter(k -> k.startsWith(FACT_SETTING)).forEach(keys::add);
      for (String k : keys) {
        String a = first.get(k);
        String b = facts.get(k);
        if (!java.util.Objects.equals(a, b)) {
          differences.add(k.substring(FACT_SETTING.length()) + " is " + (a == null ? "unknown" : "'" + a + "'")
              + " on rank 0 but " + (b == null ? "unknown" : "'" + b + "'") + " on rank " + m.rank());
        }
      }
    }
    if (!differences.isEmpty()) {
      throw new CollectiveMismatchException(rank, null, "the ranks' settings disagree on how collectives"
          + " run, so no group is formed: " + String.join("; ", differences)
          + " (set them alike on every executor, e.g. in spark-defaults.conf or as the job's local properties)");
    }
  }

  /**
   * The backend every member can run. Computed from the gathered facts alone, so every rank
   * reaches the same answer without another exchange.
   */
  static Choice chooseBackend(String requested, List<MemberInfo> members, int rank) {
    List<String> order = requested.equals("auto") ? List.of("gpu", "host") : List.of(requested);
    List<String> problems = new ArrayList<>();
    for (String name : order) {
      List<Integer> lacking = new ArrayList<>();
      Map<String, List<Integer>> ranksByReason = new LinkedHashMap<>();
      for (MemberInfo m : members) {
        if (!List.of(m.facts().getOrDefault(FACT_BACKENDS, "").split(",")).contains(name)) {
          lacking.add(m.rank());
          String why = m.facts().getOrDefault(FACT_UNUSABLE_PREFIX + name,
              "no '" + name + "' backend on its class path");
          ranksByReason.computeIfAbsent(why, k -> new ArrayList<>()).add(m.rank());
        }
      }
      if (lacking.isEmpty()) {
        return new Choice(name, problems);
      }
      List<String> reasons = new ArrayList<>();
      ranksByReason.forEach((why, ranks) ->
          reasons.add((ranks.size() == 1 ? "rank " + ranks.get(0) : "ranks " + ranks) + ": " + why));
      problems.add("backend '" + name + "' is not usable on ranks " + lacking + " ("
          + String.join("; ", reasons) + ")");
    }
    throw new CollectiveException(rank, null, "no backend can serve this group ("
        + String.join("; ", problems) + "); spark.gpucoll.backend=" + requested);
  }

  /** Keeps a reason within the member info's size limit (a backend may quote a long error). */
  private static String clip(String why) {
    return why.length() <= MAX_REASON_CHARS ? why : why.substring(0, MAX_REASON_CHARS) + "...";
  }

  private static final int MAX_REASON_CHARS = 1000;

  static String processId(String host) {
    return ProcessHandle.current().pid() + "@" + host + "/" + ManagementFactory.getRuntimeMXBean().getStartTime();
  }
}
