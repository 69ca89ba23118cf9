package dev.gpucoll.spark;

import dev.gpucoll.spark.plugin.ClassPathCheck;
import dev.gpucoll.spark.plugin.GpuCollDriverPlugin;
import dev.gpucoll.spark.plugin.GpuCollExecutorPlugin;
import java.util.List;
import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.SparkPlugin;

/**
 * The Spark plugin: {@code spark.plugins=dev.gpucoll.spark.GpuCollectivesPlugin}.
 *
 * <p>The driver part validates {@code spark.gpucoll.*}, ships it to executors, serves the
 * rendezvous of barrier tasks over the plugin RPC and logs one path report per group. The
 * executor part gives barrier tasks ({@link GpuCollectives#communicator()}) the RPC channel, the
 * executor's GPU and the metrics registry, and closes cached communicators at shutdown.
 */
public final class GpuCollectivesPlugin implements SparkPlugin {

  @Override
  public DriverPlugin driverPlugin() {
    ClassPathCheck.require(GpuCollectivesPlugin.class.getClassLoader(), "driver");
    return new GpuCollDriverPlugin();
  }

  @Override
  public ExecutorPlugin executorPlugin() {
    ClassPathCheck.require(GpuCollectivesPlugin.class.getClassLoader(), "executor");
    return new GpuCollExecutorPlugin();
  }

  /**
   * The merged per-group reports received by this driver so far, oldest first (one per group
   * and stage); empty when the plugin's driver part is not running in this JVM.
   */
  public static List<GroupReport> driverReports() {
    GpuCollDriverPlugin driver = GpuCollDriverPlugin.active();
    return driver == null ? List.of() : driver.reports();
  }

  /**
   * The groups whose barrier tasks are running now, from the progress their ranks send every
   * {@value GpuCollExecutorPlugin#PROGRESS_INTERVAL_MILLIS} ms: members, backend, paths and latency
   * so far (no predictions until the tasks end; a rank that sent none yet has pid -1). Empty when
   * the plugin's driver part is not running in this JVM.
   */
  public static List<GroupReport> driverRunningGroups() {
    GpuCollDriverPlugin driver = GpuCollDriverPlugin.active();
    return driver == null ? List.of() : driver.running();
  }

  /**
   * The groups forming now: some ranks have reached the driver's rendezvous, others not yet (which,
   * and for how long). Empty when the plugin's driver part is not running in this JVM.
   */
  public static List<FormingGroup> driverFormingGroups() {
    GpuCollDriverPlugin driver = GpuCollDriverPlugin.active();
    return driver == null ? List.of() : driver.forming();
  }

  /**
   * The executors' checks of the backend {@code spark.gpucoll.backend} requires (made at executor
   * start when it is not {@code auto}), by executor id; empty when the driver part is not running
   * in this JVM.
   */
  public static List<BackendCheckEvent> driverBackendChecks() {
    GpuCollDriverPlugin driver = GpuCollDriverPlugin.active();
    return driver == null ? List.of() : driver.backendChecks();
  }
}
