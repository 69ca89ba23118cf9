package dev.gpucoll.it;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * Debian's chromium, headless, as a person's browser for the UI tests: the DOM after the page
 * loaded, and a screenshot. Each call starts a fresh browser with its own profile directory.
 */
final class HeadlessChromium {
  /** Set (to anything but "0") where the browser test must run: a missing browser then fails it. */
  static final String REQUIRE_ENV = "GPUCOLL_REQUIRE_BROWSER";
  private static final List<String> NAMES = List.of("chromium", "chromium-browser", "google-chrome");
  private static final long TIMEOUT_SECONDS = 90;

  private final Path binary;

  private HeadlessChromium(Path binary) {
    this.binary = binary;
  }

  /** The browser on PATH (or in GPUCOLL_CHROMIUM), if any. */
  static Optional<HeadlessChromium> find() {
    String explicit = System.getenv("GPUCOLL_CHROMIUM");
    if (explicit != null && !explicit.isBlank()) {
      return Optional.of(new HeadlessChromium(Path.of(explicit)));
    }
    for (String dir : System.getenv().getOrDefault("PATH", "").split(java.io.File.pathSeparator)) {
      for (String name : NAMES) {
        Path p = Path.of(dir.isEmpty() ? "." : dir, name);
        if (Files.isExecutable(p)) {
          return Optional.of(new HeadlessChromium(p));
        }
      }
    }
    return Optional.empty();
  }

  static boolean required() {
    String v = System.getenv(REQUIRE_ENV);
    return v != null && !v.isBlank() && !v.equals("0");
  }

  /** The page's DOM as the browser built it. */
  String dumpDom(String url) throws IOException, InterruptedException {
    return run(List.of("--dump-dom", url));
  }

  /** A PNG of the page at {@code width} x {@code height} CSS pixels. */
  void screenshot(String url, Path png, int width, int height) throws IOException, InterruptedException {
    Files.createDirectories(png.getParent());
    Files.deleteIfExists(png);
    run(List.of("--hide-scrollbars", "--window-size=" + width + "," + height, "--screenshot=" + png, url));
    if (!Files.isRegularFile(png) || Files.size(png) == 0) {
      throw new IOException("chromium wrote no screenshot at " + png);
    }
  }

  private String run(List<String> args) throws IOException, InterruptedException {
    Path profile = Files.createTempDirectory("gpucoll-chromium");
    Path err = Files.createTempFile("gpucoll-chromium", ".log");
    Path out = Files.createTempFile("gpucoll-chromium", ".out");
    try {
      List<String> cmd = new ArrayList<>(List.of(binary.toString(), "--headless", "--no-sandbox", "--disable-gpu",
          "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update",
          "--disable-sync", "--disable-dev-shm-usage", "--user-data-dir=" + profile));
      cmd.addAll(args);
      Process p = new ProcessBuilder(cmd).redirectError(err.toFile()).redirectOutput(out.toFile())
          .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null"))).start();
      if (!p.waitFor(TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new IOException("chromium did not finish within " + TIMEOUT_SECONDS + " s: " + cmd);
      }
      if (p.exitValue() != 0) {
        throw new IOException("chromium exited with " + p.exitValue() + ": " + cmd + "\n" + tail(err));
      }
      return Files.readString(out, StandardCharsets.UTF_8);
    } finally {
      Files.deleteIfExists(err);
      Files.deleteIfExists(out);
      try (Stream<Path> files = Files.walk(profile)) {
        files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
      }
    }
  }

  private static String tail(Path log) throws IOException {
    List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
    return String.join("\n", lines.subList(Math.max(0, lines.size() - 20), lines.size()));
  }
}
