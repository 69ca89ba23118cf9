package dev.gpucoll.examples;

import dev.gpucoll.spark.GpuCollectivesPlugin;
import dev.gpucoll.spark.GroupReport;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;

/**
 * What the three examples share: their command line ({@code --key value} options), the Spark
 * context they start (a local-cluster of one executor JVM per rank by default, or any master),
 * and the driver's path report.
 */
public final class ExampleSpark {
  private ExampleSpark() {}

  /** {@code --key value} pairs; anything else is an error naming the argument. */
  public static Map<String, String> options(String[] args, String usage) {
    Map<String, String> out = new HashMap<>();
    for (int i = 0; i < args.length; i++) {
      if (!args[i].startsWith("--") || i + 1 >= args.length) {
        throw new IllegalArgumentException("unexpected argument '" + args[i] + "'; usage: " + usage);
      }
      out.put(args[i].substring(2), args[++i]);
    }
    return out;
  }

  public static int intOption(Map<String, String> options, String key, int fallback) {
    String v = options.get(key);
    try {
      return v == null ? fallback : Integer.parseInt(v.trim());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("--" + key + " must be an integer, got '" + v + "'");
    }
  }

  /**
   * A context for {@code ranks} barrier tasks: {@code local-cluster} (the default) starts one
   * executor JVM per rank, any other master (e.g. {@code local[4]}) is used as given.
   */
  public static JavaSparkContext start(String appName, String master, int ranks) {
    SparkConf conf;
    boolean cluster = master == null || master.startsWith("local-cluster");
    if (cluster) {
      conf = LocalCluster.conf(appName, ranks);
    } else {
      conf = new SparkConf().setAppName(appName).setMaster(master)
          .set("spark.plugins", "dev.gpucoll.spark.GpuCollectivesPlugin")
          .set("spark.ui.enabled", "false")
          .set("spark.driver.host", "127.0.0.1")
          .set("spark.driver.bindAddress", "127.0.0.1");
    }
    conf.set("spark.gpucoll.report", "summary").set("spark.task.maxFailures", "1");
    JavaSparkContext jsc = new JavaSparkContext(conf);
    if (cluster) {
      LocalCluster.awaitExecutors(jsc.sc(), ranks, Duration.ofSeconds(180));
    }
    return jsc;
  }

  /** The summary line of the newest group report the driver received (waits up to 10 s). */
  public static String lastPathReport() {
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (System.nanoTime() < deadline) {
      List<GroupReport> all = GpuCollectivesPlugin.driverReports();
      if (!all.isEmpty()) {
        return all.get(all.size() - 1).summaryLine();
      }
      try {
        Thread.sleep(20);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
    }
    return "(no path report arrived within 10 s)";
  }

  /** Milliseconds with one decimal. */
  public static String ms(long nanos) {
    return String.format("%.1f ms", nanos / 1e6);
  }
}
