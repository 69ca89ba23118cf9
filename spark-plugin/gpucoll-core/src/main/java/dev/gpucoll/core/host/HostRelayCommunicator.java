package dev.gpucoll.core.host;

import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.core.config.GpuCollConf;
import dev.gpucoll.core.spi.GroupContext;
import dev.gpucoll.core.spi.MemberInfo;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The host backend for a group that spans hosts: the recipes of {@link FlatHostCommunicator} over
 * steps through the rendezvous channel ({@link RelaySteps}), each rank computing its result
 * locally, in the same rank order as the shared-memory path. Correct and slow; reported as
 * "host-relay" everywhere so nobody mistakes it for the fast path.
 */
final class HostRelayCommunicator extends FlatHostCommunicator<RelaySteps> {
  static final String BACKEND = "host-relay";

  private final List<String> hosts;

  HostRelayCommunicator(GroupContext group) {
    super(group.rank(), group.size(), group.rendezvous().groupId(), group.self().host(),
        group.rendezvous().kind(), checked(group),
        HostRoute.relay(group.members().stream().map(MemberInfo::host).toArray(String[]::new),
            group.rendezvous().kind(), group.conf()),
        self -> new RelaySteps(self, group.rendezvous()));
    this.hosts = group.members().stream().map(MemberInfo::host).toList();
  }

  /** The group's settings, once a forced algorithm (which the relay cannot run) is refused. */
  private static GpuCollConf checked(GroupContext g) {
    HostRoute.checkForced(g.conf(), g.rank(), HostRoute.Between.RELAY, BACKEND,
        g.members().stream().map(MemberInfo::host).distinct().toList());
    return g.conf();
  }

  @Override
  public String backend() {
    return BACKEND;
  }

  @Override
  List<String> findings() {
    return List.of("host-relay: the host backend cannot share memory across hosts "
        + hosts.stream().distinct().toList() + "; every collective goes through the rendezvous");
  }

  @Override
  Communicator splitGroup(int color, int key) {
    ByteBuffer mine = ByteBuffer.allocate(8).putInt(color).putInt(key);
    List<byte[]> all = steps.allGatherBytes(Signature.setup(1), mine.array());
    int[] members = splitMembers(all, color);
    // Every rank learns whether every new group fits on one host, so all fail or go on alike.
    List<String> spanning = new ArrayList<>();
    Map<Integer, Set<String>> hostsByColor = new TreeMap<>();
    for (int p = 0; p < size; p++) {
      int pc = ByteBuffer.wrap(all.get(p)).getInt();
      if (pc >= 0) {
        hostsByColor.computeIfAbsent(pc, k -> new TreeSet<>()).add(hosts.get(p));
      }
    }
    hostsByColor.forEach((col, hs) -> {
      if (hs.size() > 1) {
        spanning.add("color " + col + " spans " + hs);
      }
    });
    if (!spanning.isEmpty()) {
      throw new CollectiveException(rank, null, "split of a " + BACKEND + " group into groups that span hosts"
          + " is not supported (" + String.join("; ", spanning) + "); form such groups with a new rendezvous");
    }
    ShmSegment child = SegmentSetup.establish(p -> steps.allGatherBytes(Signature.setup(2), p), rank,
        members, Path.of(conf.get(GpuCollConf.SHM_DIR)), HostShmCommunicator.llBytesFor(conf),
        HostShmCommunicator.BULK_BYTES);
    if (child == null) {
      return null;
    }
    int newRank = 0;
    while (members[newRank] != rank) {
      newRank++;
    }
    return new HostShmCommunicator(child, newRank, groupId + "/split(" + color + ")", host, rendezvousKind, conf);
  }

  @Override
  void abandonGroup(String reason) {
    // The rendezvous has no group-wide mark: the peers fail at their next round's timeout.
  }

  @Override
  void closeTransport() {
    // The rendezvous belongs to whoever created the group; nothing else is held.
  }
}
