package dev.gpucoll.cuda.nccl;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * This process's NCCL log file: where NCCL writes it, whether the environment asks NCCL for the
 * lines the path proof needs, and reading it.
 *
 * <p>NCCL reads NCCL_DEBUG, NCCL_DEBUG_SUBSYS and NCCL_DEBUG_FILE from the process environment once,
 * at its first initialisation, and Java cannot change its own environment (JavaCPP binds no
 * setenv). So they must be in the environment before the JVM starts: in Spark through
 * {@code spark.executorEnv.*} (see {@link #sparkExecutorEnv}), elsewhere in the launch script. When
 * they are missing the proof says so ("runtime proof unavailable: ...") instead of guessing.
 */
public final class NcclDebugLog {
  private final Path file;

  private NcclDebugLog(Path file) {
    this.file = file;
  }

  /** The variables NCCL needs for the proof, with {@code dir} for the per-process files. */
  public static Map<String, String> environment(String dir, int ncclVersion) {
    Map<String, String> env = new LinkedHashMap<>();
    env.put("NCCL_DEBUG", "INFO");
    // TUNING carries the per-call "[Symmetric]" (2.27+) and "[Copy Engine]" (2.29.2+) lines.
    env.put("NCCL_DEBUG_SUBSYS", "INIT,ENV,TUNING");
    env.put("NCCL_DEBUG_FILE", Path.of(dir).resolve("nccl.%h.%p.log").toString());
    return env;
  }

  /** The same as Spark settings: {@code spark.executorEnv.NCCL_DEBUG=INFO} and so on. */
  public static Map<String, String> sparkExecutorEnv(String dir) {
    Map<String, String> out = new LinkedHashMap<>();
    environment(dir, 0).forEach((k, v) -> out.put("spark.executorEnv." + k, v));
    return out;
  }

  /** Why the proof cannot read NCCL's path lines in a process started with {@code env}; empty if it can. */
  public static Optional<String> missingSetup(Map<String, String> env) {
    String debug = env.getOrDefault("NCCL_DEBUG", "");
    if (!debug.equalsIgnoreCase("INFO") && !debug.equalsIgnoreCase("TRACE")) {
      return Optional.of("NCCL_DEBUG is '" + debug + "', not INFO");
    }
    String subsys = env.getOrDefault("NCCL_DEBUG_SUBSYS", "INIT").toUpperCase(Locale.ROOT);
    if (!subsys.contains("INIT") && !subsys.contains("ALL")) {
      return Optional.of("NCCL_DEBUG_SUBSYS=" + subsys + " lacks INIT (the 'Init CE' line)");
    }
    if (!env.containsKey("NCCL_DEBUG_FILE")) {
      return Optional.of("NCCL_DEBUG_FILE is not set (NCCL writes to stdout, which we cannot read back)");
    }
    return Optional.empty();
  }

  /** Whether the environment asks NCCL for TUNING lines ("[Symmetric]", "[Copy Engine]"). */
  public static boolean tuningLogged(Map<String, String> env) {
    String subsys = env.getOrDefault("NCCL_DEBUG_SUBSYS", "INIT").toUpperCase(Locale.ROOT);
    return !subsys.startsWith("^") && (subsys.contains("TUNING") || subsys.contains("ALL"));
  }

  /**
   * The log file of process {@code pid} for an NCCL_DEBUG_FILE pattern. NCCL expands %h to the host
   * name up to its first dot and %p to the pid; the host name Java sees may differ, so %h matches
   * any name. Empty when no such file exists (yet).
   */
  public static Optional<NcclDebugLog> find(String pattern, long pid) {
    Path p = Path.of(pattern);
    Path dir = p.getParent() == null ? Path.of(".") : p.getParent();
    String name = p.getFileName().toString();
    StringBuilder regex = new StringBuilder();
    for (int i = 0; i < name.length(); i++) {
      char ch = name.charAt(i);
      if (ch == '%' && i + 1 < name.length()) {
        char k = name.charAt(++i);
        regex.append(k == 'h' ? "[^/]*" : k == 'p' ? Long.toString(pid) : k == '%' ? "%" : Pattern.quote("%" + k));
      } else {
        regex.append(Pattern.quote(String.valueOf(ch)));
      }
    }
    Pattern match = Pattern.compile(regex.toString());
    if (!Files.isDirectory(dir)) {
      return Optional.empty();
    }
    List<Path> hits = new ArrayList<>();
    try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir)) {
      for (Path f : ds) {
        if (match.matcher(f.getFileName().toString()).matches()) {
          hits.add(f);
        }
      }
    } catch (IOException e) {
      return Optional.empty();
    }
    hits.sort(null);
    return hits.isEmpty() ? Optional.empty() : Optional.of(new NcclDebugLog(hits.get(0)));
  }

  /** This process's log, from its own NCCL_DEBUG_FILE. */
  public static Optional<NcclDebugLog> forThisProcess() {
    String pattern = System.getenv("NCCL_DEBUG_FILE");
    return pattern == null ? Optional.empty() : find(pattern, ProcessHandle.current().pid());
  }

  public Path file() {
    return file;
  }

  public List<String> lines() {
    try {
      return Files.readAllLines(file, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read NCCL log " + file, e);
    }
  }

  public NcclLogSummary parse() {
    return NcclLogParser.parse(lines());
  }
}
