package dev.gpucoll.core.spi;

import dev.gpucoll.core.config.GpuCollConf;
import dev.gpucoll.core.rendezvous.Rendezvous;
import java.util.List;

/** Everything a backend needs to build one rank's communicator. */
public record GroupContext(Rendezvous rendezvous, List<MemberInfo> members, GpuCollConf conf) {
  public GroupContext {
    members = List.copyOf(members);
  }

  public int rank() {
    return rendezvous.rank();
  }

  public int size() {
    return rendezvous.size();
  }

  public MemberInfo self() {
    return members.get(rank());
  }

  /** True when every member runs on the same host. */
  public boolean singleHost() {
    return members.stream().map(MemberInfo::host).distinct().count() == 1;
  }
}
