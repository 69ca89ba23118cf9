package dev.gpucoll.spark.barrier;

import dev.gpucoll.core.config.Durations;
import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.CollectiveTimeoutException;
import dev.gpucoll.core.rendezvous.Rendezvous;
import dev.gpucoll.core.rendezvous.RendezvousLimits;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.spark.BarrierTaskContext;

/**
 * Fallback rendezvous when the executor plugin is not active: each round is one
 * {@link BarrierTaskContext#allGather} call, which costs about one second because Spark polls its
 * coordinator with {@code Thread.sleep(1000)}. It lives only as long as the barrier task: a
 * communicator built on it is not cached across stages. Spark bounds its own wait only by
 * {@code spark.barrier.sync.timeout} (a year by default), so each round runs on a helper thread
 * and the task gives up after spark.gpucoll.timeout, failing the stage instead of hanging.
 */
final class BarrierAllGatherRendezvous implements Rendezvous {
  private static final String TAG = "gpucoll1:";
  /** Runs the blocking allGather calls so the task thread can stop waiting at the timeout. */
  private static final ExecutorService ROUNDS = Executors.newCachedThreadPool(r -> {
    Thread t = new Thread(r, "gpucoll-barrier-allgather");
    t.setDaemon(true);
    return t;
  });

  private final BarrierTaskContext context;
  private final String groupId;

  BarrierAllGatherRendezvous(BarrierTaskContext context, String groupId) {
    this.context = context;
    this.groupId = groupId;
  }

  @Override
  public String groupId() {
    return groupId;
  }

  @Override
  public int rank() {
    return context.partitionId();
  }

  @Override
  public int size() {
    return context.getTaskInfos().length;
  }

  @Override
  public String kind() {
    return KIND;
  }

  static final String KIND = "barrier-allgather";

  @Override
  public List<byte[]> allGather(byte[] payload, Duration timeout) {
    if (payload.length > RendezvousLimits.MAX_PAYLOAD_BYTES) {
      throw new CollectiveException(rank(), null, "rendezvous payload of " + payload.length
          + " bytes exceeds the limit of " + RendezvousLimits.MAX_PAYLOAD_BYTES);
    }
    String message = TAG + Base64.getEncoder().encodeToString(payload);
    Future<String[]> round = ROUNDS.submit(() -> context.allGather(message));
    String[] all;
    try {
      all = round.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      round.cancel(true);
      throw new CollectiveTimeoutException(rank(), null, List.of(), "BarrierTaskContext.allGather"
          + " rendezvous did not complete within " + Durations.format(timeout) + " (spark.gpucoll.timeout): a task of"
          + " this barrier stage never called GpuCollectives.communicator(); Spark does not say which");
    } catch (ExecutionException e) {
      throw new CollectiveException(rank(), null, "BarrierTaskContext.allGather failed: " + e.getCause(),
          e.getCause());
    } catch (InterruptedException e) {
      round.cancel(true);
      Thread.currentThread().interrupt();
      throw new CollectiveException(rank(), null, "interrupted while waiting in BarrierTaskContext.allGather", e);
    }
    List<byte[]> out = new ArrayList<>(all.length);
    for (int r = 0; r < all.length; r++) {
      if (!all[r].startsWith(TAG)) {
        throw new CollectiveException(rank(), null, "rank " + r + " sent a rendezvous message"
            + " this build does not read (" + abbreviate(all[r]) + "): mixed gpucoll versions,"
            + " or other code calls allGather in the same barrier stage");
      }
      out.add(Base64.getDecoder().decode(all[r].substring(TAG.length())));
    }
    return out;
  }

  private static String abbreviate(String s) {
    return s.length() <= 24 ? s : s.substring(0, 24) + "...";
  }
}
