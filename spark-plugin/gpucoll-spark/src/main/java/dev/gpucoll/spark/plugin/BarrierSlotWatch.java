package dev.gpucoll.spark.plugin;

import dev.gpucoll.spark.rpc.PluginName;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.appender.AbstractAppender;
import org.apache.logging.log4j.core.config.Configuration;
import org.apache.logging.log4j.core.config.LoggerConfig;
import org.apache.logging.log4j.core.config.Property;
import org.apache.spark.SparkConf;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Says on the driver, once per job and at its first try, why a barrier stage does not start: it has
 * more tasks than the cluster has task slots. Spark then retries its slot check every 15 s, 40 times
 * by default, before failing the job, which on a small machine looks like a hang. Spark's scheduler
 * makes that check where no listener or plugin sees it, and logs each failure on its own logger;
 * this reads that line through log4j 2 (Spark's logging) and answers it with what to change.
 */
final class BarrierSlotWatch implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(PluginName.CLASS);
  static final String SCHEDULER_LOGGER = "org.apache.spark.scheduler.DAGScheduler";
  /** Spark's line for a failed check, 3.5 to 4.2. */
  static final Pattern CHECK_FAILED =
      Pattern.compile("Barrier stage in job (\\d+) requires (\\d+) slots, but only (\\d+) are available");

  private final Configuration config;
  private final LoggerContext context;
  private final AbstractAppender appender;
  /** Whether this watch added the scheduler's logger config (removed again at close) or only an appender to it. */
  private final boolean ownConfig;

  static final String INTERVAL = "spark.scheduler.barrier.maxConcurrentTasksCheck.interval";
  static final String MAX_FAILURES = "spark.scheduler.barrier.maxConcurrentTasksCheck.maxFailures";

  private BarrierSlotWatch(LoggerContext context, SparkConf conf) {
    String master = conf.get("spark.master", "?");
    String interval = conf.get(INTERVAL, "15s");
    String retries = conf.get(MAX_FAILURES, "40");
    this.context = context;
    this.config = context.getConfiguration();
    Set<String> told = ConcurrentHashMap.newKeySet();
    appender = new AbstractAppender("gpucoll-barrier-slots", null, null, true, Property.EMPTY_ARRAY) {
      @Override
      public void append(LogEvent event) {
        Matcher m = CHECK_FAILED.matcher(event.getMessage().getFormattedMessage());
        if (m.find() && told.add(m.group(1))) {
          LOG.warn(advice(m.group(1), Integer.parseInt(m.group(2)), Integer.parseInt(m.group(3)), master,
              interval, retries));
        }
      }
    };
    appender.start();
    LoggerConfig existing = config.getLoggerConfig(SCHEDULER_LOGGER);
    ownConfig = !existing.getName().equals(SCHEDULER_LOGGER);
    if (ownConfig) {
      // No level of its own: the scheduler's logger keeps following its parent's (sc.setLogLevel).
      LoggerConfig own = new LoggerConfig(SCHEDULER_LOGGER, null, true);
      own.addAppender(appender, null, null);
      config.addLogger(SCHEDULER_LOGGER, own);
    } else {
      existing.addAppender(appender, null, null);
    }
    context.updateLoggers();
  }

  /** Watches the scheduler's log when Spark logs through log4j 2; otherwise nothing (null). */
  static BarrierSlotWatch start(SparkConf conf) {
    try {
      return LogManager.getContext(false) instanceof LoggerContext ctx ? new BarrierSlotWatch(ctx, conf) : null;
    } catch (LinkageError | RuntimeException e) {
      LOG.debug("gpucoll: not watching Spark's barrier slot check", e);
      return null;
    }
  }

  /** What the driver says: the counts, Spark's retries, and the settings that change either side. */
  static String advice(String job, int tasks, int slots, String master, String interval, String retries) {
    return "gpucoll: the barrier stage of job " + job + " has " + tasks + " tasks, which must all run at once,"
        + " but the cluster has " + slots + " task slot(s) now (master " + master + "). Spark retries every "
        + interval + " (" + INTERVAL + "), " + retries + " times (" + MAX_FAILURES + "), then fails the job. Give the stage at"
        + " most " + slots + " partitions, or the application more slots: a larger N in local[N] or"
        + " local-cluster[N,cores,memory], more executors or spark.cores.max, spark.executor.cores,"
        + " spark.task.cpus=1. When executors are still registering, spark.scheduler.minRegisteredResourcesRatio=1.0"
        + " makes jobs wait for them.";
  }

  @Override
  public void close() {
    if (ownConfig) {
      config.removeLogger(SCHEDULER_LOGGER);
    } else {
      config.getLoggerConfig(SCHEDULER_LOGGER).removeAppender(appender.getName());
    }
    context.updateLoggers();
    appender.stop();
  }
}
