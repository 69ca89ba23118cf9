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
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.logging.Logger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Every {@code spark.gpucoll.*} setting, typed, with its documentation and default. Spark-free: the
 * Spark layer passes SparkConf entries in as a map, other JVMs pass their own.
 * {@link #markdown()} generates docs/configs.md (a test fails when that file is stale).
 */
public final class GpuCollConf {
  public static final String PREFIX = "spark.gpucoll.";
  private static final List<ConfigEntry<?>> ENTRIES = new ArrayList<>();
  private static final Logger LOG = Logger.getLogger(GpuCollConf.class.getName());
  /** Unknown keys already warned about in this JVM: one WARN per key, not one per task. */
  private static final Set<String> WARNED_UNKNOWN = ConcurrentHashMap.newKeySet();
  // The parsers' tables come before the entries: each entry parses its default when declared.
  /** Spark's time suffixes (JavaUtils.timeStringAs): "m" is minutes, as in Spark. */
  private static final Map<String, TimeUnit> TIME_SUFFIXES = Map.of(
      "us", TimeUnit.MICROSECONDS, "ms", TimeUnit.MILLISECONDS, "s", TimeUnit.SECONDS,
      "m", TimeUnit.MINUTES, "min", TimeUnit.MINUTES, "h", TimeUnit.HOURS, "d", TimeUnit.DAYS);
  private static final Pattern NUMBER_AND_SUFFIX = Pattern.compile("(-?[0-9]+)([a-z]+)?");
  private static final Pattern FRACTION_AND_SUFFIX = Pattern.compile("-?[0-9]+\\.[0-9]+([a-z]+)?");

  /** Spark's size suffixes (JavaUtils.byteStringAs), powers of 1024. */
  private static final Map<String, Integer> SIZE_SHIFTS = Map.ofEntries(
      Map.entry("b", 0), Map.entry("k", 10), Map.entry("kb", 10), Map.entry("m", 20),
      Map.entry("mb", 20), Map.entry("g", 30), Map.entry("gb", 30), Map.entry("t", 40),
      Map.entry("tb", 40), Map.entry("p", 50), Map.entry("pb", 50));

  /**
   * The longest duration a setting may hold (about 146 years): waits count it in nanoseconds in a
   * long and add it to System.nanoTime for their deadline, so half a long leaves room for the
   * clock's own value. Anything longer would fail every call instead of the setting.
   */
  private static final Duration LONGEST_DURATION = Duration.ofNanos(Long.MAX_VALUE / 2);

  private static final String SIZE_SYNTAX =
      "Spark's size syntax: b, k or kb, m or mb, g or gb (powers of 1024); a plain number is bytes.";

  public static final ConfigEntry<String> BACKEND = choice("backend", "auto",
      "Which backend serves a group: 'gpu' (our CUDA kernels inside a node, NCCL for large messages"
          + " and between nodes), 'host' (shared memory between executor JVMs, no GPU needed), or"
          + " 'auto' (gpu when every member has a usable GPU, else host).",
      "auto", "gpu", "host");

  /**
   * The bounds of {@link #TIMEOUT}: the driver's rendezvous announces it in whole milliseconds and
   * keeps an abandoned round for twice its length, so a day bounds what a stray rank can pin there.
   */
  public static final Duration SHORTEST_TIMEOUT = Duration.ofMillis(1);
  public static final Duration LONGEST_TIMEOUT = Duration.ofHours(24);

  public static final ConfigEntry<Duration> TIMEOUT = entry("timeout", "120s",
      "How long a rank waits for its peers without progress, at rendezvous and at each wait of a"
          + " collective (a long call whose peers keep arriving never times out), before it fails with"
          + " an error naming the ranks that did not arrive; NCCL calls are aborted after it. A job's"
          + " local property applies to its tasks, also on a communicator an earlier job formed."
          + " Spark's duration syntax: us, ms, s, m or min, h, d (500ms, 2m, 1h); a plain number is seconds;"
          + " 1ms to 24h.",
      GpuCollConf::parseTimeout);

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
      "How the ranks of a barrier stage meet: 'auto' (through the plugin's RPC to the driver,"
          + " milliseconds per round; a barrier job without GpuCollectivesPlugin in spark.plugins is"
          + " refused at its submission, naming the setting) or 'allgather' (BarrierTaskContext.allGather"
          + " rounds, about 1 s each, and no communicator caching across stages; the one way to run"
          + " without the plugin, with a WARN on the driver; for comparison and debugging).",
      "auto", "allgather");

  public static final ConfigEntry<String> SHM_DIR = entry("host.shmDir", "/dev/shm",
      "Directory for the host backend's shared-memory segments (files are mode 0600 and removed"
          + " when the group closes).",
      v -> {
        // Path.of("") is the working directory: the segments would land wherever the executor runs.
        if (v.isEmpty()) {
          throw new IllegalArgumentException("must name a directory, e.g. /dev/shm");
        }
        return v;
      });

  public static final ConfigEntry<Long> HOST_ONE_SHOT_MAX_BYTES = entry("host.oneShotMaxBytes",
      "65536",
      "Host backend: messages up to this size use one-shot (every rank reads every peer);"
          + " larger ones use two-shot (reduce-scatter then all-gather). " + SIZE_SYNTAX,
      GpuCollConf::parseBytes);

  public static final ConfigEntry<String> HOST_CROSS_HOST = choice("host.crossHost", "auto",
      "Host backend, groups whose ranks run on several hosts: 'ucx' (shared memory inside each host,"
          + " one leader per host exchanging over UCX through JUCX; needs UCX on every executor's host,"
          + " e.g. Debian's libucx0 1.13.1 or later, and fails naming each rank's reason when a rank lacks it),"
          + " 'relay' (data through the rendezvous, i.e. the driver: correct and slow), or 'auto' (ucx"
          + " when every rank can load UCX, else the relay with a WARN naming why).",
      "auto", "ucx", "relay");

  public static final ConfigEntry<Long> GPU_ONE_SHOT_MAX_BYTES = entry("gpu.oneShotMaxBytes", "64k",
      "GPU backend: inside a node, messages up to this size use the one-shot barrier-free kernel"
          + " (every rank reads every peer). " + SIZE_SYNTAX,
      GpuCollConf::parseBytes);

  public static final ConfigEntry<Long> GPU_TWO_SHOT_MAX_BYTES = entry("gpu.twoShotMaxBytes", "1m",
      "GPU backend: inside a node, messages above gpu.oneShotMaxBytes and up to this size use the"
          + " two-shot kernel (reduce-scatter then all-gather); larger ones go to NCCL. " + SIZE_SYNTAX,
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

  public static final ConfigEntry<String> NCCL_LOG_DIR = entry("nccl.logDir", "",
      "Directory of NCCL's own per-process log, used to confirm which NCCL path ran. Empty: use"
          + " NCCL_DEBUG_FILE from the executor environment if set. NCCL reads its environment"
          + " once, before any Java code runs: set spark.executorEnv.NCCL_DEBUG=INFO,"
          + " spark.executorEnv.NCCL_DEBUG_SUBSYS=INIT,TUNING and"
          + " spark.executorEnv.NCCL_DEBUG_FILE=<dir>/nccl.%h.%p.log (see docs/zero-cta.md).",
      Function.identity());

  /**
   * Internal: the kernel variant every collective runs (its name in the kernel names, e.g. "ll",
   * "sentinel"), so the GPU checks cover each variant at every size; "auto" routes by size. Read
   * by the gpu backend's route, which names the valid variants when the value is none of them.
   */
  public static final ConfigEntry<Optional<String>> INTERNAL_KERNEL_VARIANT = internal("kernelVariant", "auto",
      "The kernel variant every collective runs on the gpu backend ('auto': chosen by size), for the GPU checks.",
      v -> v.isEmpty() || v.equalsIgnoreCase("auto") ? Optional.empty() : Optional.of(v.toLowerCase(Locale.ROOT)));

  /**
   * Internal: our kernels spin even when ranks of this process share a GPU (the GPU checks run many
   * ranks on one GPU on purpose); user code that synchronises the device between collectives can
   * then deadlock, which is why the route otherwise stages such groups through the host.
   */
  public static final ConfigEntry<Boolean> INTERNAL_SPIN_ON_SHARED_GPU = internal("spinOnSharedGpu", "false",
      "Run our spinning kernels even when ranks of one process share a GPU, for the GPU checks.",
      GpuCollConf::parseBoolean);

  /**
   * Internal: the threads that wait per rank of a host (the rank's own, and 1 more for a Python
   * task: its process waits while its executor's session runs the call). Waits spin only where
   * every waiter has a core ({@code Backoff}); set by the Spark layer for Python tasks.
   */
  public static final ConfigEntry<Integer> INTERNAL_WAITERS_PER_RANK = internal("waitersPerRank", "1",
      "Threads that wait per rank of a host (2 for Python tasks), for the host backend's choice to spin.",
      v -> {
        int n = Integer.parseInt(v.trim());
        if (n < 1 || n > 8) {
          throw new IllegalArgumentException("must be 1 to 8");
        }
        return n;
      });

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

  /**
   * Parses every known key, so a value that does not parse fails early with an error naming the key
   * and the value. An unknown spark.gpucoll key (a typo, or a setting of a newer version) is not
   * fatal, as in Spark: it gets one WARN per JVM naming it, the close match if there is one
   * ({@link #closestKey}) and the known keys, and is ignored.
   *
   * @throws InvalidSettingException for the first value that does not parse
   */
  public GpuCollConf validate() {
    for (String k : unknownKeys()) {
      if (WARNED_UNKNOWN.add(k)) {
        String guess = closestKey(k).map(c -> ": did you mean " + c + "?").orElse("");
        LOG.warning("gpucoll: ignoring unknown setting " + k + guess + " (a typo, or a setting of"
            + " another gpucoll version; known settings: "
            + ENTRIES.stream().filter(e -> !e.internal()).map(ConfigEntry::key).toList() + ")");
      }
    }
    ENTRIES.forEach(e -> e.get(settings));
    return this;
  }

  /**
   * The known key an unknown one most likely meant: the nearest by edit distance (a transposition
   * counts as one edit, case is ignored), if at most 2 edits and under a third of its length away.
   */
  public static Optional<String> closestKey(String unknown) {
    String name = unknown.toLowerCase(Locale.ROOT);
    String best = null;
    int bestDistance = Integer.MAX_VALUE;
    for (ConfigEntry<?> e : ENTRIES) {
      if (e.internal()) {
        continue; // the GPU checks' knobs are no user's intent
      }
      int d = editDistance(name, e.key().toLowerCase(Locale.ROOT));
      if (d < bestDistance) {
        bestDistance = d;
        best = e.key();
      }
    }
    int nameLength = name.length() - (name.startsWith(PREFIX) ? PREFIX.length() : 0);
    return best != null && bestDistance <= 2 && bestDistance * 3 < nameLength
        ? Optional.of(best) : Optional.empty();
  }

  /** Optimal string alignment distance: insertions, deletions, substitutions, adjacent swaps. */
  static int editDistance(String a, String b) {
    int[][] d = new int[a.length() + 1][b.length() + 1];
    for (int i = 0; i <= a.length(); i++) {
      d[i][0] = i;
    }
    for (int j = 0; j <= b.length(); j++) {
      d[0][j] = j;
    }
    for (int i = 1; i <= a.length(); i++) {
      for (int j = 1; j <= b.length(); j++) {
        int cost = a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1;
        d[i][j] = Math.min(Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1), d[i - 1][j - 1] + cost);
        if (i > 1 && j > 1 && a.charAt(i - 1) == b.charAt(j - 2) && a.charAt(i - 2) == b.charAt(j - 1)) {
          d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
        }
      }
    }
    return d[a.length()][b.length()];
  }

  /** The spark.gpucoll keys set here that no entry declares. */
  public List<String> unknownKeys() {
    return settings.keySet().stream()
        .filter(k -> ENTRIES.stream().noneMatch(e -> e.key().equals(k)))
        .sorted()
        .toList();
  }

  /** The explicitly set known keys, for shipping to executors (unknown ones stay behind). */
  public Map<String, String> asMap() {
    Map<String, String> known = new TreeMap<>(settings);
    unknownKeys().forEach(known::remove);
    return Collections.unmodifiableMap(known);
  }

  public static List<ConfigEntry<?>> entries() {
    return Collections.unmodifiableList(ENTRIES);
  }

  /**
   * The effective values of the settings that change which protocol a call takes (or where its
   * memory lives). Every rank of a group must hold the same values, else ranks pick different
   * protocols for one call and return wrong data; group formation compares them.
   */
  public Map<String, String> groupWideSettings() {
    Map<String, String> out = new TreeMap<>();
    for (ConfigEntry<?> e : List.of(BACKEND, ALGORITHM, SHM_DIR, HOST_ONE_SHOT_MAX_BYTES, HOST_CROSS_HOST,
        GPU_ONE_SHOT_MAX_BYTES, GPU_TWO_SHOT_MAX_BYTES, GPU_LL128_MIN_RANKS, NCCL_CTA_POLICY,
        INTERNAL_KERNEL_VARIANT, INTERNAL_SPIN_ON_SHARED_GPU, INTERNAL_WAITERS_PER_RANK)) {
      Object v = get(e);
      out.put(e.key(), v instanceof java.util.Optional<?> o ? o.map(String::valueOf).orElse("auto") : String.valueOf(v));
    }
    return out;
  }

  /** The content of docs/configs.md. */
  public static String markdown() {
    StringBuilder sb = new StringBuilder();
    sb.append("# Configuration\n\n")
        .append("Generated from `dev.gpucoll.core.config.GpuCollConf` by `ConfigDocs`; do not edit.\n\n")
        .append("| Key | Default | Meaning |\n|---|---|---|\n");
    for (ConfigEntry<?> e : ENTRIES) {
      if (e.internal()) {
        continue; // not for users: spark.gpucoll.internal.* exists for the project's own checks
      }
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

  /** A {@code spark.gpucoll.internal.*} entry: known and parsed like any other, left out of docs/configs.md. */
  static <T> ConfigEntry<T> internal(String name, String dflt, String doc, Function<String, T> parser) {
    ConfigEntry<T> e = new ConfigEntry<>(PREFIX + "internal." + name, doc, dflt, parser, List.of(), true);
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

  /**
   * A duration in Spark's grammar: an integer with one of us, ms, s, m, min, h, d, or a plain
   * integer in {@code plainUnit}. Must be positive.
   */
  static Duration parseDuration(String v, TimeUnit plainUnit) {
    String s = v.trim().toLowerCase(Locale.ROOT);
    Matcher m = NUMBER_AND_SUFFIX.matcher(s);
    if (!m.matches()) {
      throw new IllegalArgumentException((FRACTION_AND_SUFFIX.matcher(s).matches()
          ? "fractional durations are not supported; " : "") + "expected a duration such as"
          + " 250ms, 30s, 2m, 1h or 1d (a plain number is " + unitName(plainUnit) + ")");
    }
    TimeUnit unit = plainUnit;
    if (m.group(2) != null) {
      unit = TIME_SUFFIXES.get(m.group(2));
      if (unit == null) {
        throw new IllegalArgumentException("unknown time unit '" + m.group(2)
            + "'; expected one of us, ms, s, m, min, h, d");
      }
    }
    String tooLarge = "duration is too large: at most " + LONGEST_DURATION.toDays() + "d";
    Duration d;
    try {
      d = Duration.of(Long.parseLong(m.group(1)), unit.toChronoUnit());
    } catch (NumberFormatException | ArithmeticException e) {
      throw new IllegalArgumentException(tooLarge, e);
    }
    if (d.compareTo(LONGEST_DURATION) > 0) {
      throw new IllegalArgumentException(tooLarge);
    }
    return positive(d, v);
  }

  /** A {@link #TIMEOUT}: a duration from {@link #SHORTEST_TIMEOUT} to {@link #LONGEST_TIMEOUT}. */
  static Duration parseTimeout(String v) {
    Duration d = parseDuration(v, TimeUnit.SECONDS);
    if (d.compareTo(SHORTEST_TIMEOUT) < 0 || d.compareTo(LONGEST_TIMEOUT) > 0) {
      throw new IllegalArgumentException("a timeout must be 1ms to 24h, got " + v.trim());
    }
    return d;
  }

  private static String unitName(TimeUnit u) {
    return u.name().toLowerCase(Locale.ROOT);
  }

  private static Duration positive(Duration d, String v) {
    if (d.isNegative() || d.isZero()) {
      throw new IllegalArgumentException("duration must be positive: " + v);
    }
    return d;
  }

  /** "true" or "false" (any case), nothing else. */
  static boolean parseBoolean(String v) {
    String s = v.trim().toLowerCase(Locale.ROOT);
    if (!s.equals("true") && !s.equals("false")) {
      throw new IllegalArgumentException("expected true or false");
    }
    return s.equals("true");
  }

  /** A size in Spark's grammar: an integer with b, k, kb, m, mb, g, gb, t, tb, p, pb, or plain bytes. */
  static long parseBytes(String v) {
    String s = v.trim().toLowerCase(Locale.ROOT);
    Matcher m = NUMBER_AND_SUFFIX.matcher(s);
    if (!m.matches()) {
      throw new IllegalArgumentException((FRACTION_AND_SUFFIX.matcher(s).matches()
          ? "fractional sizes are not supported; " : "") + "expected a size such as 4096, 64k,"
          + " 1m or 2g (a plain number is bytes)");
    }
    int shift = 0;
    if (m.group(2) != null) {
      Integer known = SIZE_SHIFTS.get(m.group(2));
      if (known == null) {
        throw new IllegalArgumentException("unknown size unit '" + m.group(2)
            + "'; expected one of b, k, kb, m, mb, g, gb, t, tb, p, pb");
      }
      shift = known;
    }
    long n;
    try {
      n = Long.parseLong(m.group(1));
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("size is too large", e);
    }
    if (n < 0) {
      throw new IllegalArgumentException("size must not be negative");
    }
    if (shift > 0 && n > (Long.MAX_VALUE >> shift)) {
      throw new IllegalArgumentException("size is too large");
    }
    return n << shift;
  }
}
