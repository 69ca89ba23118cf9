package dev.gpucoll.core.host;

import dev.gpucoll.api.Communicator;
import dev.gpucoll.core.spi.CommunicatorBackend;
import dev.gpucoll.core.spi.GroupContext;
import java.util.Optional;

/**
 * The CPU backend, usable in every JVM: ranks of one host share a memory segment
 * ({@value HostShmCommunicator#BACKEND}); a group that spans hosts relays through the rendezvous
 * ({@value HostRelayCommunicator#BACKEND}), and says so in its report.
 */
public final class HostBackend implements CommunicatorBackend {
  public static final String NAME = "host";

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
    if (!group.singleHost()) {
      return new HostRelayCommunicator(group);
    }
    return HostShmCommunicator.create(group);
  }
}
