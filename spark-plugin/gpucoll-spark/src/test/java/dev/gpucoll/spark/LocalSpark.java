package dev.gpucoll.spark;

import java.util.concurrent.atomic.AtomicInteger;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerStageSubmitted;

/** Local-mode Spark settings for tests of the plugin: tasks are threads of this JVM. */
public final class LocalSpark {
  private LocalSpark() {}

  /** {@code master} (e.g. local[2]) with the plugin on and the UI off, bound to the loopback address. */
  public static SparkConf withPlugin(String appName, String master) {
    return new SparkConf()
        .setMaster(master)
        .setAppName(appName)
        .set("spark.ui.enabled", "false")
        .set("spark.driver.host", "127.0.0.1")
        .set("spark.driver.bindAddress", "127.0.0.1")
        .set("spark.plugins", GpuCollectivesPlugin.class.getName());
  }

  /** A count of the stages submitted from now on (read it after {@code listenerBus().waitUntilEmpty()}). */
  public static AtomicInteger countStages(JavaSparkContext sc) {
    AtomicInteger stages = new AtomicInteger();
    sc.sc().addSparkListener(new SparkListener() {
      @Override
      public void onStageSubmitted(SparkListenerStageSubmitted submitted) {
        stages.incrementAndGet();
      }
    });
    return stages;
  }
}
