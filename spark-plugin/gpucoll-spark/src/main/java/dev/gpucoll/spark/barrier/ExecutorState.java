package dev.gpucoll.spark.barrier;

import dev.gpucoll.core.config.GpuCollConf;
import dev.gpucoll.spark.metrics.ExecutorMetrics;
import dev.gpucoll.spark.rpc.GroupCredential;
import dev.gpucoll.spark.rpc.RpcMessages;
import dev.gpucoll.spark.rpc.Tickets;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.spark.api.plugin.PluginContext;

/**
 * What barrier tasks of this JVM need from the executor plugin, which sets it at its start
 * ({@link #activate}) and clears it at its shutdown.
 *
 * <p>Internal: public for the other packages of gpucoll-spark, not for users.
 *
 * @param latestCredential the credential of the latest job whose task formed or reused a group
 *     here: it seals the metric totals, which change only through such tasks
 * @param tickets the executor's {@link dev.gpucoll.spark.rpc.Freshness} tickets, shared by all its senders
 * @param oneWay the sender of this executor's one-way messages (reports, progress, totals)
 */
public record ExecutorState(PluginContext context, GpuCollConf conf, List<String> gpus,
    ExecutorMetrics metrics, AtomicReference<GroupCredential> latestCredential, Tickets tickets,
    Tickets.Sender oneWay) {

  /** Set while the executor plugin runs in this JVM; tasks read it. */
  private static volatile ExecutorState active;

  /** The executor plugin's state in this JVM, or null when the plugin is not running here. */
  public static ExecutorState active() {
    return active;
  }

  /** From the executor plugin: {@code state} while it runs, null once it has shut down. */
  public static void activate(ExecutorState state) {
    active = state;
  }

  /**
   * Sends {@code message} one-way to the driver, sealed with {@code credential} and stamped by
   * {@link #oneWay}: stamped and handed to Spark under one lock, so they leave in the order of
   * their numbers.
   */
  public void sendSealed(Object message, GroupCredential credential) throws Exception {
    synchronized (oneWay) {
      context.send(RpcMessages.encode(RpcMessages.seal(message, credential, oneWay.next())));
    }
  }
}
