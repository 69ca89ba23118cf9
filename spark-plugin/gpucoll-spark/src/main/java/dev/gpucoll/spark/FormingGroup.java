package dev.gpucoll.spark;

import java.util.List;

/**
 * A group whose ranks are meeting at the driver's rendezvous: some have arrived, others not yet.
 * The tab and {@code /gpucoll/json/} show it as FORMING, so a slow rank can be told from a hang.
 *
 * @param groupId the rendezvous group ("app-stage3.0")
 * @param stage the barrier stage it serves ("stage 3.0"), from the group id
 * @param size the group's ranks
 * @param arrivedRanks the ranks that reached the driver at the round(s) still open
 * @param missingRanks the ranks the others wait for
 * @param waitingNanos since the first rank arrived at the earliest open round
 */
public record FormingGroup(String groupId, String stage, int size, List<Integer> arrivedRanks,
    List<Integer> missingRanks, long waitingNanos) {

  public static final String STATUS = "FORMING";

  public FormingGroup {
    arrivedRanks = List.copyOf(arrivedRanks);
    missingRanks = List.copyOf(missingRanks);
  }

  /** The group as the page's JSON shows it: {@code "status":"FORMING"}, then its fields. */
  public String toJson() {
    return GroupReport.withStatus(STATUS, this, java.util.Map.of());
  }
}
