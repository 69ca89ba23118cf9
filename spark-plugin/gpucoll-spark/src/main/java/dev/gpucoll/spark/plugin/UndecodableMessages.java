package dev.gpucoll.spark.plugin;

import dev.gpucoll.spark.rpc.PluginName;
import dev.gpucoll.spark.rpc.RpcMessages;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What reaches the driver plugin's endpoint without being a gpucoll message (foreign bytes,
 * another version, truncated, another object): dropped, counted and logged the way messages that
 * fail the group credential are, one line at the first and at each power of two, never a stack
 * trace per message.
 */
final class UndecodableMessages {
  private static final Logger LOG = LoggerFactory.getLogger(PluginName.CLASS);
  private final AtomicLong count = new AtomicLong();

  /**
   * Counts {@code message} ({@code why}: what it is) and answers with a failed round, unsealed: an
   * executor on another gpucoll version that asked raises it as the driver's reason.
   */
  byte[] drop(Object message, String why) {
    long n = count.incrementAndGet();
    if (Long.bitCount(n) == 1) {
      LOG.warn("gpucoll: dropped {} message(s) to the plugin's endpoint that are no gpucoll message (latest: {});"
          + " some process that is no task of this application, or one on another gpucoll jar, reaches the"
          + " driver's plugin endpoint", n, why);
    }
    return RpcMessages.encode(new RpcMessages.RoundState(null, java.util.List.of(),
        "the driver dropped " + why));
  }

  long count() {
    return count.get();
  }
}
