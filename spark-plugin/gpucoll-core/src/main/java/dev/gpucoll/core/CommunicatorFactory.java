package dev.gpucoll.core;

import dev.gpucoll.api.CollectiveException;
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
  private static final Map<String, Boolean> SAID_UNAVAILABLE = new ConcurrentHashMap<>();

  private CommunicatorFactory() {}

  /**
   * Makes device {@code ordinal} current for this thread in every usable backend that has devices
   * (the gpu backend builds its communicator on the calling thread's current CUDA device).
   */
  public static void useDevice(int ordinal) {
    usableBackends().values().forEach(b -> b.useDevice(ordinal));
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

  /** Usable backends in this process; the reason a backend is not is logged once per process. */
  static Map<String, CommunicatorBackend> usableBackends() {
    Map<String, CommunicatorBackend> usable = new LinkedHashMap<>();
    backends().forEach((name, b) -> {
      Optional<String> why = b.unavailableReason();
      if (why.isEmpty()) {
        usable.put(name, b);
      } else if (SAID_UNAVAILABLE.putIfAbsent(name, true) == null) {
        LOG.info("gpucoll backend '" + name + "' is not usable in this process: " + why.get());
      }
    });
    return usable;
  }

  public static Communicator create(Rendezvous rendezvous, GpuCollConf conf, String host) {
    Map<String, CommunicatorBackend> usable = usableBackends();
    Map<String, String> facts = new HashMap<>();
    usable.values().forEach(b -> facts.putAll(b.localFacts()));
    facts.put(FACT_BACKENDS, String.join(",", usable.keySet()));
    MemberInfo self = new MemberInfo(rendezvous.rank(), host, processId(host), facts);

    List<byte[]> payloads = rendezvous.allGather(MemberInfoCodec.encode(self), conf.get(GpuCollConf.TIMEOUT));
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
    String chosen = chooseBackend(conf.get(GpuCollConf.BACKEND), members, rendezvous.rank());
    CommunicatorBackend backend = usable.get(chosen);
    return backend.create(new GroupContext(rendezvous, members, conf));
  }

  /**
   * The backend every member can run. Computed from the gathered facts alone, so every rank
   * reaches the same answer without another exchange.
   */
  static String chooseBackend(String requested, List<MemberInfo> members, int rank) {
    List<String> order = requested.equals("auto") ? List.of("gpu", "host") : List.of(requested);
    List<String> problems = new ArrayList<>();
    for (String name : order) {
      List<Integer> lacking = new ArrayList<>();
      for (MemberInfo m : members) {
        if (!List.of(m.facts().getOrDefault(FACT_BACKENDS, "").split(",")).contains(name)) {
          lacking.add(m.rank());
        }
      }
      if (lacking.isEmpty()) {
        return name;
      }
      problems.add("backend '" + name + "' is not usable on ranks " + lacking);
    }
    throw new CollectiveException(rank, null, "no backend can serve this group ("
        + String.join("; ", problems) + "); spark.gpucoll.backend=" + requested);
  }

  static String processId(String host) {
    return ProcessHandle.current().pid() + "@" + host + "/" + ManagementFactory.getRuntimeMXBean().getStartTime();
  }
}
