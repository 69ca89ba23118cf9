package dev.gpucoll.spark;

import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.core.rendezvous.Rendezvous;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import org.apache.spark.BarrierTaskContext;

/**
 * Fallback rendezvous when the executor plugin is not active: each round is one
 * {@link BarrierTaskContext#allGather} call, which costs about one second because Spark polls its
 * coordinator with {@code Thread.sleep(1000)}. It lives only as long as the barrier task: a
 * communicator built on it is not cached across stages. The wait is bounded by
 * {@code spark.barrier.sync.timeout}, not by spark.gpucoll.timeout.
 */
final class BarrierAllGatherRendezvous implements Rendezvous {
  private static final String TAG = "gpucoll1:";

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
    return "barrier-allgather";
  }

  @Override
  public List<byte[]> allGather(byte[] payload, Duration timeout) {
    if (payload.length > RendezvousService.MAX_PAYLOAD_BYTES) {
      throw new CollectiveException(rank(), null, "rendezvous payload of " + payload.length
          + " bytes exceeds the limit of " + RendezvousService.MAX_PAYLOAD_BYTES);
    }
    String[] all = context.allGather(TAG + Base64.getEncoder().encodeToString(payload));
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
