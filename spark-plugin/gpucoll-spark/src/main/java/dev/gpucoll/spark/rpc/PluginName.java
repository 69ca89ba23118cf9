package dev.gpucoll.spark.rpc;

/**
 * The plugin as the classes beneath it name it: they cannot name its class, which stands above
 * them (it makes them). The name {@code spark.plugins} takes, and the logger the plugin's own lines
 * go to on the driver and the executors (its class's name, as users know it). PublicNamesTest
 * holds these to {@code dev.gpucoll.spark.GpuCollectivesPlugin}.
 *
 * <p>Internal: public for the other packages of gpucoll-spark, not for users.
 */
public final class PluginName {
  /** The plugin's class: {@code spark.plugins}' value for gpucoll, and its logger's name. */
  public static final String CLASS = "dev.gpucoll.spark.GpuCollectivesPlugin";
  /** The plugin's class without its package, as messages name it. */
  public static final String SIMPLE = "GpuCollectivesPlugin";

  private PluginName() {}
}
