package dev.gpucoll.cuda;

import dev.gpucoll.core.spi.MemberInfo;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * How the members of a group sit on processes and GPUs, computed from the rendezvous facts alone so
 * every rank reaches the same answer without another exchange. A GPU is one of its host: ranks on
 * different hosts never share one, whatever their UUIDs say (hosts simulated on one machine report
 * the same UUID).
 *
 * <p>Spinning kernels of different processes on one GPU time-slice instead of running together (a
 * flag round trip costs milliseconds, measured 4.6 ms on an H200; 62 us with MPS), so a group in
 * which two processes share a GPU must not spin: it takes the non-spinning staged path.
 */
final class GroupTopology {
  /** How a rank reaches a peer's workspace. */
  public enum PeerAccess {
    /** The peer is this rank: its own pointer. */
    SELF,
    /** Same process (threads of one JVM): the peer's device pointer is valid here as is. */
    SAME_PROCESS,
    /** Another process on another GPU: the pointer comes from cudaIpcOpenMemHandle. */
    IPC
  }

  private final List<MemberInfo> members;
  private final List<String> problems = new ArrayList<>();

  public GroupTopology(List<MemberInfo> members) {
    this.members = List.copyOf(members);
    for (MemberInfo m : members) {
      if (m.facts().get(DeviceFacts.KEY_UUID) == null) {
        problems.add("rank " + m.rank() + " reported no GPU UUID");
      }
    }
  }

  public int size() {
    return members.size();
  }

  public String uuid(int rank) {
    return members.get(rank).facts().get(DeviceFacts.KEY_UUID);
  }

  public String processId(int rank) {
    return members.get(rank).processId();
  }

  /** Facts that make the GPU backend unusable for this group; empty when it can serve it. */
  public List<String> problems() {
    return List.copyOf(problems);
  }

  public boolean singleHost() {
    return members.stream().map(MemberInfo::host).distinct().count() == 1;
  }

  public boolean sameProcess(int a, int b) {
    return processId(a).equals(processId(b));
  }

  public boolean sameGpu(int a, int b) {
    return Objects.equals(uuid(a), uuid(b)) && members.get(a).host().equals(members.get(b).host());
  }

  public PeerAccess access(int self, int peer) {
    if (self == peer) {
      return PeerAccess.SELF;
    }
    return sameProcess(self, peer) ? PeerAccess.SAME_PROCESS : PeerAccess.IPC;
  }

  /** Pairs of ranks in different processes on the same GPU, e.g. "0,1 on GPU-1234..." ; empty if none. */
  public List<String> crossProcessSharedGpus() {
    List<String> out = new ArrayList<>();
    for (int a = 0; a < members.size(); a++) {
      for (int b = a + 1; b < members.size(); b++) {
        if (sameGpu(a, b) && !sameProcess(a, b)) {
          out.add("ranks " + a + "," + b + " share " + uuid(a) + " from different processes");
        }
      }
    }
    return out;
  }

  /** Pairs of ranks of one process on the same GPU (Spark's fractional GPUs); empty if none. */
  public List<String> sameProcessSharedGpus() {
    List<String> out = new ArrayList<>();
    for (int a = 0; a < members.size(); a++) {
      for (int b = a + 1; b < members.size(); b++) {
        if (sameGpu(a, b) && sameProcess(a, b)) {
          out.add("ranks " + a + "," + b + " share " + uuid(a) + " in one process");
        }
      }
    }
    return out;
  }

  /** True when spinning kernels would time-slice: the group must use the non-spinning path. */
  public boolean mustNotSpin() {
    return !crossProcessSharedGpus().isEmpty();
  }

  /** Distinct processes in the group. */
  public long processCount() {
    return members.stream().map(MemberInfo::processId).distinct().count();
  }

  /** Distinct GPUs in the group. */
  public long gpuCount() {
    return members.stream().map(m -> m.host() + "/" + m.facts().get(DeviceFacts.KEY_UUID)).distinct().count();
  }

  /** One line for the path report. */
  public String describe() {
    return members.size() + " ranks, " + processCount() + " process(es), " + gpuCount() + " GPU(s)"
        + (mustNotSpin() ? "; " + String.join("; ", crossProcessSharedGpus()) : "");
  }
}
