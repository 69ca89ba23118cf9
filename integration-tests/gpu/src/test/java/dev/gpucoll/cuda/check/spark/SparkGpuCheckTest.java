package dev.gpucoll.cuda.check.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The job's own pieces that run without Spark: argument parsing, placement, the JSON rows (the
 * reference checks are gpucoll-check-support's, tested there).
 */
class SparkGpuCheckTest {

  @Test
  void argumentsAreParsedAndBadOnesNamed() {
    SparkGpuCheck.Options o = SparkGpuCheck.Options.parse(new String[] {"--ranks", "2", "--executors", "2", "--quick"});
    assertEquals(2, o.ranks());
    assertEquals(1 << 20, o.maxBytes());
    assertEquals(64 << 20, SparkGpuCheck.Options.parse(new String[] {"--ranks", "2", "--executors", "2"}).maxBytes());
    IllegalArgumentException unknown = assertThrows(IllegalArgumentException.class,
        () -> SparkGpuCheck.Options.parse(new String[] {"--ranks", "2", "--executors", "1", "--fast"}));
    assertTrue(unknown.getMessage().contains("unknown argument --fast"), unknown.getMessage());
    IllegalArgumentException missing = assertThrows(IllegalArgumentException.class,
        () -> SparkGpuCheck.Options.parse(new String[] {"--ranks"}));
    assertTrue(missing.getMessage().contains("--ranks needs a value"), missing.getMessage());
    IllegalArgumentException none = assertThrows(IllegalArgumentException.class,
        () -> SparkGpuCheck.Options.parse(new String[] {"--quick"}));
    assertTrue(none.getMessage().contains("at least 1"), none.getMessage());
  }

  @Test
  void theReuseStageAsksForTheExecutorsOfTheFirstStage() {
    List<String> lines = List.of(
        "RANK rank=1/2 executor=0 host=127.0.0.1 pid=7 backend=gpu taskGpus=[1]",
        "CHECKS stage=check memory=host rank=1 cases=3 failures=0",
        "RANK rank=0/2 executor=1 host=127.0.0.1 pid=8 backend=gpu taskGpus=[0]");
    assertEquals(List.of("executor_127.0.0.1_1", "executor_127.0.0.1_0"), SparkGpuCheck.executorsOf(lines, 2));
    assertNull(SparkGpuCheck.executorsOf(lines.subList(0, 2), 2), "a rank that did not report: no placement");
  }

  @Test
  void jsonFieldsAreRead() {
    String row = "{\"label\":\"ours\",\"rank\":1,\"dtype\":\"bf16\",\"bytes\":4096,\"path\":\"gpu-ll-oneshot\","
        + "\"eager_us\":5.250,\"graph_us\":null}";
    assertEquals("ours", SparkGpuCheck.field(row, "label"));
    assertEquals("4096", SparkGpuCheck.field(row, "bytes"));
    assertEquals("null", SparkGpuCheck.field(row, "graph_us"));
    assertThrows(IllegalArgumentException.class, () -> SparkGpuCheck.field(row, "nccl_us"));
  }
}
