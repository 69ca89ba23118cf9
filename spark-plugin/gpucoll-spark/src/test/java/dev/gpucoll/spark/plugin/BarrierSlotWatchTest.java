package dev.gpucoll.spark.plugin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.spark.GpuCollectives;
import dev.gpucoll.spark.GpuCollectivesPlugin;
import dev.gpucoll.spark.LocalSpark;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.Logger;
import org.apache.logging.log4j.core.appender.AbstractAppender;
import org.apache.logging.log4j.core.config.Property;
import org.apache.spark.SparkException;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.Test;

/**
 * A barrier stage of more tasks than the cluster has slots: the driver says so at the job's first
 * slot check, once, with both counts and the settings to change, instead of leaving Spark's retries
 * to look like a hang.
 */
class BarrierSlotWatchTest {
  @Test
  void aBarrierStageWiderThanTheClusterIsNamedOnTheDriverAtOnce() {
    List<LogEvent> events = new CopyOnWriteArrayList<>();
    Logger plugin = (Logger) LogManager.getLogger(GpuCollectivesPlugin.class);
    AbstractAppender capture = new AbstractAppender("slot-watch-test", null, null, true, Property.EMPTY_ARRAY) {
      @Override
      public void append(LogEvent event) {
        events.add(event.toImmutable());
      }
    };
    capture.start();
    plugin.addAppender(capture);
    // Spark's retries cut short (1 retry, 1 s apart) so that the job fails soon after the first check.
    JavaSparkContext sc = new JavaSparkContext(LocalSpark.withPlugin("gpucoll-slots", "local[2]")
        .set("spark.scheduler.barrier.maxConcurrentTasksCheck.maxFailures", "1")
        .set("spark.scheduler.barrier.maxConcurrentTasksCheck.interval", "1s"));
    try {
      long start = System.nanoTime();
      assertThrows(SparkException.class, () ->
          GpuCollectives.barrierMapPartitions(sc.parallelize(List.of(1, 2, 3, 4), 4), (comm, rows) -> rows).collect());
      List<String> told = events.stream().filter(e -> e.getLevel() == Level.WARN)
          .map(e -> e.getMessage().getFormattedMessage()).filter(m -> m.contains("barrier stage of job")).toList();
      assertEquals(1, told.size(), "one WARN per job, at its first check: " + told);
      String m = told.get(0);
      assertTrue(m.contains("has 4 tasks") && m.contains("2 task slot(s)") && m.contains("master local[2]")
          && m.contains("every 1s") && m.contains("1 times")
          && m.contains("at most 2 partitions") && m.contains("local[N]") && m.contains("spark.task.cpus"), m);
      assertTrue(System.nanoTime() - start < 60_000_000_000L, "the job took Spark's full retries");
    } finally {
      sc.stop();
      plugin.removeAppender(capture);
      capture.stop();
    }
    // The watch leaves with the context: a later check is not answered by a stopped plugin.
    assertTrue(((org.apache.logging.log4j.core.LoggerContext) LogManager.getContext(false)).getConfiguration()
        .getLoggerConfig(BarrierSlotWatch.SCHEDULER_LOGGER).getAppenders().keySet().stream()
        .noneMatch(n -> n.startsWith("gpucoll")), "the scheduler's logger still has the watch");
  }
}
