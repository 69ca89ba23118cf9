package dev.gpucoll.core.host;

import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.core.config.GpuCollConf;
import dev.gpucoll.core.spi.CommunicatorBackend;
import dev.gpucoll.core.spi.GroupContext;
import dev.gpucoll.core.spi.MemberInfo;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.IntFunction;
import java.util.logging.Logger;

/**
 * The CPU backend, usable in every JVM: ranks of one host share a memory segment
 * ({@value HostShmCommunicator#BACKEND}); a group that spans hosts runs shared memory inside each
 * host and UCX between them ({@value HostUcxCommunicator#BACKEND}) when every rank can load UCX,
 * else it relays through the rendezvous ({@value HostRelayCommunicator#BACKEND}) and says why.
 */
public final class HostBackend implements CommunicatorBackend {
  public static final String NAME = "host";
  private static final Logger LOG = Logger.getLogger(HostBackend.class.getName());

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public Optional<String> unavailableReason() {
    return Optional.empty();
  }

  @Override
  public Communicator create(GroupContext group) {
    return create(group, n -> UcxProbe.open(n, group.self().host()));
  }

  /**
   * {@link #create} over {@code transports} between hosts (a test's stands in for UCX). UCX is
   * asked for only here, for a group that spans hosts: probing it makes a UCP context, which a
   * one-host group never needs (and which prints UCX's own errors when /dev/shm is nearly full).
   * Each rank opens its transport in the group's first round and says why when it cannot
   * ({@link HostUcxCommunicator#link}), so every rank decides alike from the same answers.
   */
  static Communicator create(GroupContext group, IntFunction<PeerTransport> transports) {
    if (group.singleHost()) {
      return HostShmCommunicator.create(group);
    }
    String mode = group.conf().get(GpuCollConf.HOST_CROSS_HOST);
    if (mode.equals("relay")) {
      return new HostRelayCommunicator(group);
    }
    HostUcxCommunicator.Link link = HostUcxCommunicator.link(group, transports);
    if (link.everyRank()) {
      return HostUcxCommunicator.create(group, link, transports);
    }
    link.close();
    Map<String, List<Integer>> ranksByReason = new LinkedHashMap<>();
    for (MemberInfo m : group.members()) {
      String ucx = link.reasons()[m.rank()];
      if (ucx != null) {
        ranksByReason.computeIfAbsent(m.host() + ": " + ucx, k -> new ArrayList<>()).add(m.rank());
      }
    }
    List<String> reasons = new ArrayList<>();
    ranksByReason.forEach((why, ranks) -> reasons.add("ranks " + ranks + " on " + why));
    String why = "UCX is not usable on every rank (" + String.join("; ", reasons) + ")";
    if (mode.equals("ucx")) {
      throw new CollectiveException(group.rank(), null, GpuCollConf.HOST_CROSS_HOST.key() + "=ucx but " + why);
    }
    if (group.rank() == 0) {
      LOG.warning("gpucoll: group " + group.rendezvous().groupId() + " spans hosts and relays every payload"
          + " through the rendezvous (slow): " + why);
    }
    return new HostRelayCommunicator(group);
  }
}
