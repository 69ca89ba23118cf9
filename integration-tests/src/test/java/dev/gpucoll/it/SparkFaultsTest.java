package dev.gpucoll.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.examples.LocalCluster;
import dev.gpucoll.spark.GpuCollectives;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.List;
import java.util.stream.IntStream;
import org.apache.spark.SparkContext;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * Faults of a Spark job while ranks wait inside a collective, with the DEFAULT spark.gpucoll.timeout
 * (120 s): a cancelled job and an executor killed with SIGKILL. The waiting ranks must release their
 * task slots within about a second, not after the timeout. One SparkContext serves both (start-up
 * is the expensive part on a 2-core machine); the executor kill runs last.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class SparkFaultsTest {
  static final int EXECUTORS = 3;
  static SparkContext sc;
  static JavaSparkContext jsc;
  static Path marks;

  @BeforeAll
  static void startCluster() throws IOException {
    marks = Files.createTempDirectory("gpucoll-faults");
    sc = new SparkContext(LocalCluster.conf("gpucoll-faults", EXECUTORS));
    jsc = new JavaSparkContext(sc);
    LocalCluster.awaitExecutors(sc, EXECUTORS, Duration.ofSeconds(180));
  }

  @AfterAll
  static void stopCluster() throws IOException {
    if (sc != null) {
      sc.stop();
    }
    try (var files = Files.list(marks)) {
      for (Path p : files.toList()) {
        Files.delete(p);
      }
    }
    Files.delete(marks);
  }

  private static List<String> marks(String file) throws IOException {
    Path p = marks.resolve(file);
    return Files.exists(p) ? Files.readAllLines(p) : List.of();
  }

  /**
   * Spark cancels the tasks of a cancelled job without interrupting their threads (as it does for
   * the other tasks of a failed barrier stage): the ranks waiting in the allReduce must see the kill
   * through TaskContext and fail at once. Rank 2 never calls: it stands for a rank stuck elsewhere.
   */
  @Test
  @Order(1)
  void aCancelledJobReleasesRanksWaitingInACollective() throws Exception {
    String dir = marks.toString();
    Thread job = new Thread(() -> {
      sc.setJobGroup("gpucoll-cancel", "ranks waiting in a collective", false);
      try {
        GpuCollectives.barrierMapPartitions(
            jsc.parallelize(IntStream.range(0, EXECUTORS).boxed().toList(), EXECUTORS), (comm, rows) -> {
              TaskContext task = TaskContext.get();
              if (comm.rank() == EXECUTORS - 1) {
                while (!task.isInterrupted()) { // cooperates only so the test ends soon
                  Thread.sleep(20);
                }
                return List.of("stuck").iterator();
              }
              mark(dir, "cancel", "waiting " + comm.rank());
              try {
                comm.allReduce(new long[] {1}, ReduceOp.SUM);
                mark(dir, "cancel", "completed " + comm.rank());
              } catch (CollectiveException e) {
                mark(dir, "cancel", "released " + comm.rank() + " " + System.currentTimeMillis() + " " + e.getMessage());
                throw e;
              }
              return List.of("done").iterator();
            }).collect();
      } catch (RuntimeException expected) {
        // the job was cancelled
      }
    });
    job.start();
    long deadline = System.currentTimeMillis() + 120_000;
    while (marks("cancel").stream().filter(l -> l.startsWith("waiting")).count() < EXECUTORS - 1) {
      assertTrue(System.currentTimeMillis() < deadline, "ranks never reached the collective: " + marks("cancel"));
      Thread.sleep(50);
    }
    Thread.sleep(500); // they are inside the wait now
    long cancelled = System.currentTimeMillis();
    sc.cancelJobGroup("gpucoll-cancel");
    job.join(120_000); // the job ends at once; its tasks on the executors a little later
    deadline = System.currentTimeMillis() + 30_000;
    while (marks("cancel").stream().filter(l -> l.startsWith("released")).count() < EXECUTORS - 1
        && System.currentTimeMillis() < deadline) {
      Thread.sleep(50);
    }
    List<String> released = marks("cancel").stream().filter(l -> l.startsWith("released")).toList();
    assertEquals(EXECUTORS - 1, released.size(), () -> {
      try {
        return marks("cancel").toString();
      } catch (IOException e) {
        return e.toString();
      }
    });
    for (String l : released) {
      long at = Long.parseLong(l.split(" ")[2]);
      assertTrue(l.contains("cancelled while waiting for rank 2") && l.contains("Spark killed task"), l);
      assertTrue(at - cancelled < 3_000, "released " + (at - cancelled) + " ms after the cancellation: " + l);
    }
    System.out.println("job cancellation: waiting ranks released " + released.stream()
        .map(l -> (Long.parseLong(l.split(" ")[2]) - cancelled) + " ms").toList() + " after cancelJobGroup");
  }

  /**
   * An executor killed with SIGKILL mid-collective: the survivors fail at once naming it (on one
   * host they see its process gone; across hosts Spark's cancellation of the stage releases them, as
   * above), and the retried stage re-forms the group and completes. (Spark retries a barrier stage
   * only when it feeds a shuffle: a failed barrier result stage fails the job.)
   */
  @Test
  @Order(2)
  void survivorsOfAKilledExecutorReleaseAtOnceAndTheRetriedStageCompletes() throws Exception {
    String dir = marks.toString();
    List<String> out = GpuCollectives.barrierMapPartitions(
        jsc.parallelize(IntStream.range(0, EXECUTORS).boxed().toList(), EXECUTORS), (comm, rows) -> {
          int attempt = TaskContext.get().stageAttemptNumber();
          if (attempt == 0 && comm.rank() == EXECUTORS - 1) {
            Thread.sleep(1000); // the peers are inside the allReduce by now
            mark(dir, "marks", "killed " + System.currentTimeMillis());
            new ProcessBuilder("kill", "-9", Long.toString(ProcessHandle.current().pid())).start().waitFor();
            Thread.sleep(60_000); // never reached: SIGKILL
          }
          long[] v = {1};
          try {
            comm.allReduce(v, ReduceOp.SUM);
          } catch (CollectiveException e) {
            mark(dir, "marks", "released " + comm.rank() + " " + System.currentTimeMillis() + " " + e.getMessage());
            throw e;
          }
          return List.of(attempt + " " + v[0]).iterator();
        })
        // Spark retries a failed barrier stage only when it is a shuffle map stage.
        .repartition(1).collect();
    long done = System.currentTimeMillis();
    List<String> lines = Files.readAllLines(marks.resolve("marks"));
    long killed = lines.stream().filter(l -> l.startsWith("killed ")).mapToLong(l -> Long.parseLong(l.split(" ")[1]))
        .findFirst().orElseThrow(() -> new AssertionError("no kill recorded: " + lines));
    assertEquals(EXECUTORS, out.size(), out::toString);
    for (String o : out) {
      assertTrue(!o.startsWith("0 ") && o.endsWith(" " + EXECUTORS), "a retried attempt with the right sum: " + out);
    }
    List<String> released = lines.stream().filter(l -> l.startsWith("released ")).toList();
    assertEquals(EXECUTORS - 1, released.size(), "both survivors released their wait: " + lines);
    for (String l : released) {
      long at = Long.parseLong(l.split(" ")[2]);
      assertTrue(l.contains("rank 2 is gone") || l.contains("Spark killed"), l);
      assertTrue(at - killed < 5_000, "released " + (at - killed) + " ms after the kill, not within 5 s: " + l);
    }
    // The default timeout is 120 s: a retry that waited for it would take over two minutes.
    assertTrue(done - killed < 60_000, "the retried stage completed " + (done - killed) + " ms after the kill");
    System.out.println("executor loss: survivors released " + released.stream()
        .map(l -> (Long.parseLong(l.split(" ")[2]) - killed) + " ms").toList() + " after the kill; retried stage done after "
        + (done - killed) + " ms");
  }

  private static void mark(String dir, String file, String line) throws IOException {
    Files.writeString(Path.of(dir, file), line + "\n", StandardCharsets.UTF_8, StandardOpenOption.CREATE,
        StandardOpenOption.APPEND);
  }
}
