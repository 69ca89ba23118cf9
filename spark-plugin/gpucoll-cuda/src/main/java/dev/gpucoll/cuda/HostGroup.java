package dev.gpucoll.cuda;

import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.DataType;
import dev.gpucoll.core.CommunicatorFactory;
import dev.gpucoll.core.batch.GroupAgreement;
import dev.gpucoll.core.config.GpuCollConf;
import dev.gpucoll.core.spi.CommunicatorBackend;
import dev.gpucoll.core.spi.GroupContext;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.HashMap;
import java.util.Map;

/**
 * The GPU group's ranks over the host backend: the staged path's collectives ({@link StagedCalls})
 * and, on every path, the exchange of {@code group()}'s {@link GroupAgreement}, which touches no
 * device (a few flag round trips on shared memory, so no group() waits for the stream).
 */
final class HostGroup implements GroupAgreement.Exchange {
  private final Communicator host;

  private HostGroup(Communicator host) {
    this.host = host;
  }

  /**
   * Forms the host-backend group of {@code group}'s ranks (rendezvous rounds, no device call).
   *
   * @param staged true when it carries the staged path's collectives: then it takes the group's
   *               settings as they are; else it carries only the agreement, and the settings that
   *               choose the host backend's paths (a forced algorithm names a GPU path here; the
   *               transport between hosts) are left to the host backend's own choice
   * @param why what the group needs it for, for the error when the host backend is not usable
   */
  static HostGroup form(GroupContext group, boolean staged, String why) {
    CommunicatorBackend backend = CommunicatorFactory.backends().get("host");
    if (backend == null || backend.unavailableReason().isPresent()) {
      throw new CollectiveException(group.rank(), null, why + ", but the host backend is not usable: "
          + (backend == null ? "not on the class path" : backend.unavailableReason().get()));
    }
    GroupContext context = group;
    if (!staged) {
      Map<String, String> settings = new HashMap<>(group.conf().asMap());
      settings.remove(GpuCollConf.ALGORITHM.key());
      settings.remove(GpuCollConf.HOST_CROSS_HOST.key());
      context = new GroupContext(group.rendezvous(), group.members(), GpuCollConf.of(settings));
    }
    return new HostGroup(backend.create(context));
  }

  Communicator communicator() {
    return host;
  }

  /** Every rank's {@code mine} (as long on every rank), in rank order: one allGather of the host backend. */
  @Override
  public long[] allGather(long[] mine) {
    ByteBuffer in = ByteBuffer.allocate(8 * mine.length).order(ByteOrder.nativeOrder());
    in.asLongBuffer().put(mine);
    ByteBuffer out = ByteBuffer.allocate(8 * mine.length * host.size()).order(ByteOrder.nativeOrder());
    host.allGather(CommBuffer.of(in), CommBuffer.of(out), mine.length, DataType.INT64);
    long[] all = new long[mine.length * host.size()];
    out.asLongBuffer().get(all);
    return all;
  }

  void close() {
    host.close();
  }
}
