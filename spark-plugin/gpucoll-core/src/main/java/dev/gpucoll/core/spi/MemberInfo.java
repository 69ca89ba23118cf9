package dev.gpucoll.core.spi;

import java.util.Map;

/**
 * What one rank tells the others at rendezvous.
 *
 * @param host  host name as the cluster manager sees it (Spark: TaskInfo address host)
 * @param processId a string unique per JVM process on a host ("pid@host")
 * @param facts backend facts (GPU UUID, PCI bus id, driver and NCCL versions...), key to value
 */
public record MemberInfo(int rank, String host, String processId, Map<String, String> facts) {
  public MemberInfo {
    facts = Map.copyOf(facts);
  }
}
