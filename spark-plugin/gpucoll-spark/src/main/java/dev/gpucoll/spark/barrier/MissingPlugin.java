package dev.gpucoll.spark.barrier;

import dev.gpucoll.core.config.GpuCollConf;
import dev.gpucoll.spark.rpc.PluginName;
import org.apache.spark.SparkConf;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a barrier job does when the plugin ({@value PluginName#CLASS}) is not in {@code spark.plugins}: it is
 * refused, naming the setting, unless {@code spark.gpucoll.rendezvous=allgather} asks for the slow
 * path without the plugin (then the driver WARNs). Without this the job would run about 4 times
 * slower with no tab, no metrics and the only hint in one executor's log.
 */
final class MissingPlugin {
  private static final Logger LOG = LoggerFactory.getLogger(MissingPlugin.class);
  static final String SETTING = "spark.plugins=" + PluginName.CLASS;

  private MissingPlugin() {}

  /** True when the settings ask for the allGather rendezvous, the one path that needs no plugin. */
  static boolean allowed(String rendezvous) {
    return "allgather".equals(rendezvous);
  }

  static String refusal(String where) {
    return "gpucoll: " + PluginName.SIMPLE + " is not enabled " + where + ": set "
        + SETTING + " (with the gpucoll jar on --jars). To run without it, set "
        + GpuCollConf.RENDEZVOUS.key() + "=allgather: the ranks then meet in BarrierTaskContext.allGather"
        + " rounds of about 1 s each, communicators are not cached between stages, and there is no"
        + " GPU Collectives tab, path report or metrics";
  }

  /**
   * On the driver at a barrier job's submission, when the driver plugin is not running: refuses
   * the job, or WARNs when the job's settings ask for the path without the plugin.
   */
  static void checkJob(org.apache.spark.SparkContext sc) {
    String key = GpuCollConf.RENDEZVOUS.key();
    java.util.Map<String, String> settings = new java.util.HashMap<>();
    SparkConf conf = sc.getConf();
    if (conf.contains(key)) {
      settings.put(key, conf.get(key));
    }
    String local = sc.getLocalProperty(key);
    if (local != null) {
      settings.put(key, local);
    }
    if (!allowed(GpuCollConf.RENDEZVOUS.get(settings))) {
      throw new IllegalStateException(refusal("on the driver"));
    }
    LOG.warn("gpucoll: {} is not enabled and {}=allgather: this barrier job's ranks meet in"
        + " BarrierTaskContext.allGather rounds (about 1 s each), without caching, tab or metrics; set {}"
        + " for a rendezvous in milliseconds", PluginName.SIMPLE,
        GpuCollConf.RENDEZVOUS.key(), SETTING);
  }
}
