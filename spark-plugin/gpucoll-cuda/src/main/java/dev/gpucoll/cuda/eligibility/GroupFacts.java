package dev.gpucoll.cuda.eligibility;

import dev.gpucoll.core.spi.MemberInfo;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * The group as the rendezvous described it: each member's host, process and GPU facts (see
 * {@link FactKeys}), with the questions the detector and the selector ask of them. Pure Java: tests
 * build it from synthetic {@link MemberInfo}s.
 */
public final class GroupFacts {

  /** A GPU pair's link as seen from one process. */
  public record Link(boolean p2p, boolean nativeAtomics) {
    /** "NVLink-class" when atomics work over the link, "PCIe P2P" when only P2P does, else "no P2P". */
    public String describe() {
      return !p2p ? "no P2P" : nativeAtomics ? "NVLink-class" : "PCIe P2P";
    }
  }

  /** One rank with its facts parsed. */
  public record Member(int rank, String host, String processId, Map<String, String> facts) {
    public Member {
      facts = Map.copyOf(facts);
    }

    public Optional<String> fact(String key) {
      String v = facts.get(key);
      return v == null || v.isBlank() ? Optional.empty() : Optional.of(v.trim());
    }

    public Optional<String> gpuUuid() {
      return fact(FactKeys.GPU_UUID);
    }

    public Optional<String> busId() {
      return fact(FactKeys.GPU_PCI_BUS_ID).map(GroupFacts::normalizeBusId);
    }

    /** 0 when unknown or NCCL is not loadable. */
    public int ncclVersion() {
      return intFact(FactKeys.NCCL_VERSION);
    }

    /** 0 when unknown. */
    public int driverVersion() {
      return intFact(FactKeys.CUDA_DRIVER_VERSION);
    }

    public Optional<Boolean> vmm() {
      return fact(FactKeys.GPU_VMM).map("1"::equals);
    }

    public boolean wsl() {
      return fact(FactKeys.OS_WSL).map("1"::equals).orElse(false);
    }

    /** The NCCL variable this rank's process was started with, if any. */
    public Optional<String> env(String variable) {
      return Optional.ofNullable(facts.get(FactKeys.env(variable)));
    }

    /** Other GPUs this process can see, by normalized bus id. */
    public Map<String, Link> peers() {
      Map<String, Link> out = new LinkedHashMap<>();
      String raw = facts.getOrDefault(FactKeys.GPU_PEERS, "");
      for (String entry : raw.split(",")) {
        String[] parts = entry.trim().split("\\|");
        if (parts.length == 3 && !parts[0].isBlank()) {
          out.put(normalizeBusId(parts[0]), new Link("1".equals(parts[1]), "1".equals(parts[2])));
        }
      }
      return out;
    }

    private int intFact(String key) {
      try {
        return fact(key).map(Integer::parseInt).orElse(0);
      } catch (NumberFormatException e) {
        return 0;
      }
    }

    /** "rank 1 (host-b, GPU 0000:00:07.0)". */
    public String label() {
      return "rank " + rank + " (" + host + ", GPU " + busId().or(this::gpuUuid).orElse("?") + ")";
    }
  }

  private final List<Member> members;

  private GroupFacts(List<Member> members) {
    this.members = List.copyOf(members);
  }

  public static GroupFacts of(List<MemberInfo> infos) {
    if (infos == null || infos.isEmpty()) {
      throw new IllegalArgumentException("a group needs at least one member");
    }
    List<Member> ms = new ArrayList<>(infos.size());
    for (MemberInfo m : infos) {
      ms.add(new Member(m.rank(), m.host(), m.processId(), m.facts()));
    }
    return new GroupFacts(ms);
  }

  static String normalizeBusId(String busId) {
    // CUDA prints "0000:00:06.0", nvidia-smi "00000000:00:06.0": compare the last 12 characters.
    String s = busId.trim().toLowerCase(java.util.Locale.ROOT);
    return s.length() > 12 ? s.substring(s.length() - 12) : s;
  }

  public int size() {
    return members.size();
  }

  public List<Member> members() {
    return members;
  }

  public Member member(int rank) {
    return members.get(rank);
  }

  /** Members by host, hosts in order of their lowest rank. */
  public Map<String, List<Member>> byHost() {
    Map<String, List<Member>> out = new LinkedHashMap<>();
    for (Member m : members) {
      out.computeIfAbsent(m.host(), h -> new ArrayList<>()).add(m);
    }
    return out;
  }

  public boolean singleHost() {
    return byHost().size() == 1;
  }

  public boolean singleProcess() {
    return members.stream().map(m -> m.host() + "/" + m.processId()).distinct().count() == 1;
  }

  /**
   * Groups of ranks that share one physical GPU (same host and same UUID, or bus id when the UUID is
   * unknown). Empty when every rank has its own GPU or the facts cannot tell.
   */
  public List<List<Member>> sharedGpus() {
    Map<String, List<Member>> byGpu = new TreeMap<>();
    for (Member m : members) {
      Optional<String> id = m.gpuUuid().or(m::busId);
      id.ifPresent(g -> byGpu.computeIfAbsent(m.host() + "/" + g, k -> new ArrayList<>()).add(m));
    }
    List<List<Member>> out = new ArrayList<>();
    byGpu.values().stream().filter(l -> l.size() > 1).forEach(out::add);
    return Collections.unmodifiableList(out);
  }

  /** True when ranks that share a GPU live in different processes (spin kernels would time-slice). */
  public boolean sharedGpuAcrossProcesses() {
    return sharedGpus().stream().anyMatch(l -> l.stream().map(Member::processId).distinct().count() > 1);
  }

  /**
   * The link between two ranks' GPUs on one host, from either side's view; empty when neither process
   * can see the other's GPU (container or CUDA_VISIBLE_DEVICES isolation) or a bus id is unknown.
   */
  public Optional<Link> link(Member a, Member b) {
    if (a.busId().isEmpty() || b.busId().isEmpty()) {
      return Optional.empty();
    }
    Link ab = a.peers().get(b.busId().get());
    if (ab != null) {
      return Optional.of(ab);
    }
    return Optional.ofNullable(b.peers().get(a.busId().get()));
  }

  /** One line per host: ranks, GPUs, and the link of every same-host pair of distinct GPUs. */
  public List<String> describe() {
    List<String> lines = new ArrayList<>();
    for (Map.Entry<String, List<Member>> e : byHost().entrySet()) {
      StringBuilder sb = new StringBuilder("host ").append(e.getKey()).append(": ");
      List<Member> ms = e.getValue();
      for (int i = 0; i < ms.size(); i++) {
        Member m = ms.get(i);
        sb.append(i == 0 ? "" : ", ").append("rank ").append(m.rank()).append(" GPU ")
            .append(m.busId().orElse("?")).append(" cc ").append(m.fact(FactKeys.GPU_COMPUTE_CAPABILITY).orElse("?"))
            .append(" pid ").append(m.processId());
      }
      for (int i = 0; i < ms.size(); i++) {
        for (int j = i + 1; j < ms.size(); j++) {
          Member a = ms.get(i);
          Member b = ms.get(j);
          if (a.busId().isPresent() && a.busId().equals(b.busId())) {
            sb.append("; ranks ").append(a.rank()).append('-').append(b.rank()).append(": same GPU");
          } else {
            sb.append("; ranks ").append(a.rank()).append('-').append(b.rank()).append(": ")
                .append(link(a, b).map(Link::describe).orElse("link unknown (peer GPU not visible)"));
          }
        }
      }
      lines.add(sb.toString());
    }
    return lines;
  }
}
