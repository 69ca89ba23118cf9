package dev.gpucoll.it;

import java.nio.file.Path;
import org.apache.spark.SparkConf;
import org.apache.spark.deploy.history.FsHistoryProvider;
import org.apache.spark.deploy.history.HistoryServer;
import org.apache.spark.deploy.history.HistoryServer$;
import org.apache.spark.util.SystemClock;

/** A History Server in this JVM over an event-log folder, on a free port; rescans every second. */
final class LocalHistoryServer implements AutoCloseable {
  private final HistoryServer server;

  LocalHistoryServer(Path eventLogs) {
    SparkConf conf = new SparkConf(false)
        .set("spark.history.fs.logDirectory", eventLogs.toUri().toString())
        .set("spark.history.fs.update.interval", "1s")
        .set("spark.history.ui.port", "0");
    FsHistoryProvider provider = new FsHistoryProvider(conf, new SystemClock());
    server = new HistoryServer(conf, provider, HistoryServer$.MODULE$.createSecurityManager(conf), 0);
    server.bind();
    provider.start();
  }

  /**
   * A local-cluster application with its live UI on a free port and an uncompressed event log in
   * {@code eventLogs}, for a History Server to replay.
   */
  static SparkConf uiAppConf(String appName, int executors, Path eventLogs) {
    return dev.gpucoll.examples.LocalCluster.conf(appName, executors)
        .set("spark.ui.enabled", "true")
        .set("spark.ui.port", "0")
        .set("spark.gpucoll.timeout", "30s")
        .set("spark.task.maxFailures", "1")
        .set("spark.eventLog.enabled", "true")
        .set("spark.eventLog.compress", "false")
        .set("spark.eventLog.dir", eventLogs.toUri().toString());
  }

  /** The page {@code path} (e.g. "gpucoll/") of application {@code appId}. */
  String url(String appId, String path) {
    return "http://localhost:" + server.boundPort() + "/history/" + appId + "/" + path;
  }

  @Override
  public void close() {
    server.stop();
  }
}
