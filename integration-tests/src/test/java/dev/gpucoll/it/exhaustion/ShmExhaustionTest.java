package dev.gpucoll.it.exhaustion;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Executors whose /dev/shm is a 1 MiB tmpfs (a private mount namespace, so nothing else on the
 * machine sees it), smaller than the 3 MiB segment of a 3-rank group: forming the group fails
 * with an error naming the directory, the bytes needed and free and the setting; no executor
 * JVM exits; the next stage, pointed at a directory with room, forms a new group on the same
 * executors; an unexpected error inside a call fails its task and the group, not the executor.
 * (A sparse segment used to fault when tmpfs ran out under a call: every executor exited with 50.)
 *
 * <p>Needs root and util-linux's unshare. Without them it is skipped, unless
 * GPUCOLL_REQUIRE_PRIVATE_TMPFS=1 (set by CI) makes that a failure.
 */
class ShmExhaustionTest {
  @TempDir
  Path roomy;

  @Test
  void tinyShmFailsFormationClearlyAndNoExecutorDies() throws Exception {
    String missing = privateTmpfsMissing();
    if (missing != null) {
      if ("1".equals(System.getenv("GPUCOLL_REQUIRE_PRIVATE_TMPFS"))) {
        throw new AssertionError("GPUCOLL_REQUIRE_PRIVATE_TMPFS=1 but a private tmpfs cannot be mounted: " + missing);
      }
      Assumptions.abort("skipped: a private tmpfs cannot be mounted here (" + missing + "); needs root and unshare");
    }
    List<String> command = new ArrayList<>(List.of("unshare", "-m", "--propagation", "private", "sh", "-c",
        "mount -t tmpfs -o size=1m,mode=1777 tmpfs /dev/shm && exec \"$@\"", "sh"));
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    command.addAll(Arrays.stream(System.getProperty("gpucoll.jvm.flags", "").split("\\s+"))
        .filter(s -> !s.isBlank()).toList());
    command.addAll(List.of("-cp", classPath(), ShmExhaustionJob.class.getName(), roomy.toString()));
    Process job = new ProcessBuilder(command).redirectErrorStream(true).start();
    Path log = roomy.resolve("job.log");
    Thread copy = new Thread(() -> {
      try {
        Files.copy(job.getInputStream(), log);
      } catch (java.io.IOException e) {
        // the log is for the assertion messages only
      }
    });
    copy.start();
    boolean ended = job.waitFor(240, TimeUnit.SECONDS);
    if (!ended) {
      job.destroyForcibly();
    }
    copy.join(10_000);
    List<String> lines = Files.readAllLines(log);
    String tail = lines.stream().skip(Math.max(0, lines.size() - 60)).collect(Collectors.joining("\n"));
    assertTrue(ended, "the job did not end within 240 s:\n" + tail);
    assertEquals(0, job.exitValue(), tail);
    Path resultFile = roomy.resolve("results.txt");
    List<String> resultLines = Files.exists(resultFile) ? Files.readAllLines(resultFile) : List.of();
    Map<String, String> results = resultLines.stream().filter(l -> l.startsWith("PIDS ") || l.startsWith("ERROR ")
        || l.startsWith("REMOVED ")).collect(Collectors.toMap(l -> l.startsWith("REMOVED") ? "REMOVED"
            : l.split(" ")[1], l -> l, (a, b) -> a + " | " + b));
    System.out.println(String.join("\n", results.values()));
    String tiny = results.getOrDefault("tiny-shm", "none");
    assertTrue(tiny.startsWith("ERROR ") && tiny.contains("/dev/shm has no room for a segment of 3 ranks")
        && tiny.contains("bytes are free") && tiny.contains("spark.gpucoll.host.shmDir"), tiny + "\n" + tail);
    String roomyPids = results.getOrDefault("roomy", "none");
    assertTrue(roomyPids.startsWith("PIDS roomy ["), roomyPids + "\n" + tail);
    String pids = roomyPids.substring("PIDS roomy ".length());
    String fault = results.getOrDefault("fault", "none");
    assertTrue(fault.startsWith("ERROR ") && fault.contains("InternalError"), fault + "\n" + tail);
    assertEquals("PIDS after-fault " + pids, results.get("after-fault"), "the executors outlive the fault\n" + tail);
    assertEquals("REMOVED 0", results.get("REMOVED"), "no executor JVM exited\n" + tail);
  }

  /** Why a private tmpfs cannot be mounted here, or null when it can. */
  private static String privateTmpfsMissing() {
    try {
      Process p = new ProcessBuilder("unshare", "-m", "--propagation", "private", "sh", "-c",
          "mount -t tmpfs -o size=1m tmpfs /dev/shm").redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes()).trim();
      return p.waitFor() == 0 ? null : "unshare -m and mount failed: " + out;
    } catch (Exception e) {
      return e.toString();
    }
  }

  private static String classPath() {
    String cp = System.getProperty("surefire.test.class.path");
    return cp == null || cp.isBlank() ? System.getProperty("java.class.path") : cp.replace(File.pathSeparator
        + File.pathSeparator, File.pathSeparator);
  }
}
