package dev.gpucoll.core.config;

import dev.gpucoll.core.Algorithm;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.function.Function;

/**
 * Every {@code spark.gpucoll.*} setting, typed, with its documentation and default. Spark-free: the
 * Spark layer passes SparkConf entries in as a map, other JVMs pass their own.
 * {@link #markdown()} generates docs/configs.md (a test fails when that file is stale).
 */
public final class GpuCollConf {
  public static final String PREFIX = "spark.gpucoll.";
  private static final List<ConfigEntry<?>> ENTRIES = new ArrayList<>();

  public static final ConfigEntry<String> BACKEND = choice("backend", "auto",
      "Which backend serves a group: 'gpu' (our CUDA kernels inside a node, NCCL for large messages"
          + " and between nodes), 'host' (shared memory between executor JVMs, no GPU needed), or"
          + " 'auto' (gpu when every member has a usable GPU, else host).",
      "auto", "gpu", "host");

  public static final ConfigEntry<Duration> TIMEOUT = entry("timeout", "120s",
      "How long a rank waits for its peers, at rendezvous and in every collective, before it fails"
          + " with an error naming the ranks that did not arrive. Units: ms, s, min.",
      GpuCollConf::parseDuration);

  public static final ConfigEntry<Optional<Algorithm>> ALGORITHM = entry("algorithm", "auto",
      "Force one algorithm for every collective instead of choosing by size and topology (for"
          + " benchmarks and debugging); the names are those path reports print (dev.gpucoll.core.Algorithm)."
          + " gpu-* and nccl* run on the gpu backend, host-* on the host backend. An algorithm the group"
          + " cannot run is an error, not a silent fallback. Forcing gpu-* also keeps our spinning kernels"
          + " on ranks of one process that share a GPU (they otherwise take gpu-staged-host): user code"
          + " that synchronises the device between collectives (cudaFree) can then deadlock.",
      Algorithm::parseSetting, Algorithm.settingValues());

  public static final ConfigEntry<String> REPORT = choice("report", "summary",
      "Path report verbosity: 'off', 'summary' (one line per group in the driver log) or"
          + " 'verbose' (the full block: members, topology, eligibility reasons, chosen and observed"
          + " paths).",
      "off", "summary", "verbose");

  public static final ConfigEntry<String> RENDEZVOUS = choice("rendezvous", "auto",
      "How the ranks of a barrier stage meet: 'auto' (through the plugin's RPC to the driver when"
          + " GpuCollectivesPlugin is enabled, milliseconds per round; otherwise"
          + " BarrierTaskContext.allGather rounds, about 1 s each) or 'allgather' (always allGather"
          + " rounds and no communicator caching across stages; for comparison and debugging).",
      "auto", "allgather");

  public static final ConfigEntry<String> SHM_DIR = entry("host.shmDir", "/dev/shm",
      "Directory for the host backend's shared-memory segments (files are mode 0600 and removed"
          + " when the group closes).",
      Function.identity());

  public static final ConfigEntry<Long> HOST_ONE_SHOT_MAX_BYTES = entry("host.oneShotMaxBytes",
      "65536",
      "Host backend: messages up to this size use one-shot (every rank reads every peer);"
          + " larger ones use two-shot (reduce-scatter then all-gather).",
      GpuCollConf::parseBytes);

  public static final ConfigEntry<Long> GPU_ONE_SHOT_MAX_BYTES = entry("gpu.oneShotMaxBytes", "64k",
      "GPU backend: inside a node, messages up to this size use the one-shot barrier-free kernel"
          + " (every rank reads every peer).",
      GpuCollConf::parseBytes);

  public static final ConfigEntry<Long> GPU_TWO_SHOT_MAX_BYTES = entry("gpu.twoShotMaxBytes", "1m",
      "GPU backend: inside a node, messages above gpu.oneShotMaxBytes and up to this size use the"
          + " two-shot kernel (reduce-scatter then all-gather); larger ones go to NCCL.",
      GpuCollConf::parseBytes);

  public static final ConfigEntry<Integer> GPU_LL128_MIN_RANKS = entry("gpu.ll128MinRanks", "8",
      "GPU backend: groups of at least this many ranks in one node use the LL128-atomic two-phase"
          + " kernel instead of one-shot/two-shot for messages up to gpu.twoShotMaxBytes.",
      v -> {
        int n = Integer.parseInt(v.trim());
        if (n < 2) {
          throw new IllegalArgumentException("must be at least 2");
        }
        return n;
      });

  public static final ConfigEntry<String> NCCL_CTA_POLICY = choice("nccl.ctaPolicy", "zero",
      "CTA policy of the group's NCCL communicator (ncclConfig_t.CTAPolicy): 'zero' lets NCCL run"
          + " AllGather/AlltoAll on copy engines (Zero-CTA) when the group and the buffers are"
          + " eligible; 'default' and 'efficiency' never do. The environment variable NCCL_CTA_POLICY"
          + " overrides it (on NCCL 2.28 only as a number: NCCL_CTA_POLICY=ZERO there means 0).",
      "default", "efficiency", "zero");

  public static final ConfigEntry<Boolean> NCCL_BLOCKING = entry("nccl.blocking", "false",
      "Create the group's NCCL communicators in blocking mode. Default non-blocking: every NCCL call"
          + " is bounded by spark.gpucoll.timeout and a stuck communicator is aborted. NCCL 2.28.3"
          + " fails to deregister symmetric windows (ncclCommWindowDeregister: 'Could not find handle')"
          + " on non-blocking communicators and not on blocking ones (H200 runs, docs/zero-cta.md): set"
          + " true when you register and release windows repeatedly; a rank that dies during NCCL"
          + " initialisation can then stall its peers.",
      GpuCollConf::parseBoolean);

  public static final ConfigEntry<String> NCCL_LOG_DIR = entry("nccl.logDir", "",
      "Directory of NCCL's own per-process log, used to confirm which NCCL path ran. Empty: use"
          + " NCCL_DEBUG_FILE from the executor environment if set. NCCL reads its environment"
          + " once, before any Java code runs: set spark.executorEnv.NCCL_DEBUG=INFO,"
          + " spark.executorEnv.NCCL_DEBUG_SUBSYS=INIT,TUNING and"
          + " spark.executorEnv.NCCL_DEBUG_FILE=<dir>/nccl.%h.%p.log (see docs/zero-cta.md).",
      Function.identity());

  private GpuCollConf() {}

  private final Map<String, String> settings = new LinkedHashMap<>();

  /** Settings from any source; keys outside {@code spark.gpucoll.} are ignored. */
  public static GpuCollConf of(Map<String, String> settings) {
    GpuCollConf c = new GpuCollConf();
    settings.forEach((k, v) -> {
      if (k.startsWith(PREFIX)) {
        c.settings.put(k, v);
      }
    });
    return c;
  }

  public static GpuCollConf defaults() {
    return of(Map.of());
  }

  public <T> T get(ConfigEntry<T> entry) {
    return entry.get(settings);
  }

  /** Parses every known key (so a bad value fails early) and rejects unknown spark.gpucoll keys. */
  public GpuCollConf validate() {
    for (String k : settings.keySet()) {
      if (ENTRIES.stream().noneMatch(e -> e.key().equals(k))) {
        throw new IllegalArgumentException("unknown setting " + k + "; known settings: "
            + ENTRIES.stream().map(ConfigEntry::key).toList());
      }
    }
    ENTRIES.forEach(e -> e.get(settings));
    return this;
  }

  /** The explicitly set keys, for shipping to executors. */
  public Map<String, String> asMap() {
    return Collections.unmodifiableMap(new TreeMap<>(settings));
  }

  public static List<ConfigEntry<?>> entries() {
    return Collections.unmodifiableList(ENTRIES);
  }

  /** The content of docs/configs.md. */
  public static String markdown() {
    StringBuilder sb = new StringBuilder();
    sb.append("# Configuration\n\n")
        .append("Generated from `dev.gpucoll.core.config.GpuCollConf` by `ConfigDocs`; do not edit.\n\n")
        .append("| Key | Default | Meaning |\n|---|---|---|\n");
    for (ConfigEntry<?> e : ENTRIES) {
      String doc = e.doc();
      if (!e.allowed().isEmpty()) {
        doc += " One of: " + String.join(", ", e.allowed()) + ".";
      }
      sb.append("| `").append(e.key()).append("` | `").append(e.defaultText()).append("` | ")
          .append(doc.replace("|", "\\|")).append(" |\n");
    }
    return sb.toString();
  }

  static <T> ConfigEntry<T> entry(String name, String dflt, String doc, Function<String, T> parser) {
    return entry(name, dflt, doc, parser, List.of());
  }

  /** An entry whose values are the names in {@code allowed}, parsed to a type by {@code parser}. */
  static <T> ConfigEntry<T> entry(String name, String dflt, String doc, Function<String, T> parser,
      List<String> allowed) {
    ConfigEntry<T> e = new ConfigEntry<>(PREFIX + name, doc, dflt, parser, allowed);
    ENTRIES.add(e);
    return e;
  }

  static ConfigEntry<String> choice(String name, String dflt, String doc, String... allowed) {
    List<String> values = List.of(allowed);
    ConfigEntry<String> e = new ConfigEntry<>(PREFIX + name, doc, dflt, v -> {
      String lower = v.toLowerCase(Locale.ROOT);
      if (!values.contains(lower)) {
        throw new IllegalArgumentException("expected one of " + values);
      }
      return lower;
    }, values);
    ENTRIES.add(e);
    return e;
  }

  static Duration parseDuration(String v) {
    String s = v.trim().toLowerCase(Locale.ROOT);
    long n;
    if (s.endsWith("ms")) {
      n = Long.parseLong(s.substring(0, s.length() - 2).trim());
      return positive(Duration.ofMillis(n), v);
    } else if (s.endsWith("min")) {
      n = Long.parseLong(s.substring(0, s.length() - 3).trim());
      return positive(Duration.ofMinutes(n), v);
    } else if (s.endsWith("s")) {
      n = Long.parseLong(s.substring(0, s.length() - 1).trim());
      return positive(Duration.ofSeconds(n), v);
    }
    throw new IllegalArgumentException("expected a duration such as 500ms, 30s or 2min");
  }

  private static Duration positive(Duration d, String v) {
    if (d.isNegative() || d.isZero()) {
      throw new IllegalArgumentException("duration must be positive: " + v);
    }
    return d;
  }

  static boolean parseBoolean(String v) {
    return switch (v.trim().toLowerCase(Locale.ROOT)) {
      case "true" -> true;
      case "false" -> false;
      default -> throw new IllegalArgumentException("expected true or false");
    };
  }

  static long parseBytes(String v) {
    String s = v.trim().toLowerCase(Locale.ROOT);
    long mult = 1;
    if (s.endsWith("k")) {
      mult = 1L << 10;
    } else if (s.endsWith("m")) {
      mult = 1L << 20;
    } else if (s.endsWith("g")) {
      mult = 1L << 30;
    }
    if (mult != 1) {
      s = s.substring(0, s.length() - 1);
    }
    long n = Long.parseLong(s.trim()) * mult;
    if (n < 0) {
      throw new IllegalArgumentException("size must not be negative: " + v);
    }
    return n;
  }
}
