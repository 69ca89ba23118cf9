package dev.gpucoll.core.host;

import dev.gpucoll.api.CollectiveException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Gives a new group its shared-memory segment in two exchange rounds among a parent group (the
 * rendezvous at creation, the parent's segment for split): round 1, each new group's leader
 * creates the segment and sends its path; round 2, every member maps it and says whether that
 * worked. Every member then unlinks the file (whichever survives does it): from here on it lives
 * only as long as some rank maps it. Every member fails if any member of its group failed, so no
 * rank is left waiting.
 */
final class SegmentSetup {
  /** An all-gather among the parent group; returns payloads by parent rank. */
  @FunctionalInterface
  interface Exchange {
    List<byte[]> allGather(byte[] payload);
  }

  private static final String OK = "OK ";
  private static final String ERR = "ERR ";
  private static final String LEADER_FAILED = "the group leader failed";

  private SegmentSetup() {}

  /**
   * @param members parent ranks of this rank's new group, in new-rank order; empty when this
   *     rank joins no group (it still takes part in both rounds)
   * @return the mapped segment, or null when {@code members} is empty
   */
  static ShmSegment establish(Exchange exchange, int parentRank, int[] members, Path dir, int llBytes,
      int bulkBytes) {
    boolean member = members.length > 0;
    boolean leader = member && members[0] == parentRank;
    ShmSegment created = null;
    String round1;
    if (leader) {
      try {
        created = ShmSegment.create(dir, members.length, llBytes, bulkBytes);
        round1 = OK + created.path;
      } catch (Throwable e) { // any failure reaches the peers, which would otherwise wait for round 1
        round1 = ERR + "cannot create a shared-memory segment in " + dir + ": " + e;
      }
    } else {
      round1 = "";
    }
    ShmSegment mine = created;
    Path known = created == null ? null : created.path;
    try {
      List<byte[]> paths = exchange.allGather(round1.getBytes(StandardCharsets.UTF_8));
      String round2 = "";
      if (member && !leader) {
        String fromLeader = new String(paths.get(members[0]), StandardCharsets.UTF_8);
        if (fromLeader.startsWith(OK)) {
          try {
            Path named = Path.of(fromLeader.substring(OK.length()));
            mine = ShmSegment.open(dir, named, members.length);
            known = named; // checked: a segment file in the shm directory, ours
            round2 = OK;
          } catch (Throwable e) {
            round2 = ERR + "cannot map the segment " + fromLeader.substring(OK.length()) + ": " + e;
          }
        } else {
          round2 = ERR + LEADER_FAILED + " (parent rank " + members[0] + ")";
        }
      } else if (leader) {
        round2 = round1.startsWith(OK) ? OK : round1;
      }
      List<byte[]> statuses = exchange.allGather(round2.getBytes(StandardCharsets.UTF_8));
      List<String> failures = new ArrayList<>();
      List<Integer> followers = new ArrayList<>(); // failed only because the leader did
      for (int m : members) {
        String s = new String(statuses.get(m), StandardCharsets.UTF_8);
        if (s.startsWith(ERR + LEADER_FAILED)) {
          followers.add(m);
        } else if (!s.startsWith(OK)) {
          failures.add("rank " + m + ": " + s.substring(Math.min(s.length(), ERR.length())));
        }
      }
      if (!followers.isEmpty()) {
        failures.add((followers.size() == 1 ? "rank " : "ranks ") + followers + " cannot go on without it");
      }
      if (!failures.isEmpty()) {
        throw new CollectiveException(parentRank, null,
            "shared-memory setup failed: " + String.join("; ", failures));
      }
      ShmSegment ok = mine;
      mine = null;
      if (ok != null) {
        int newRank = 0;
        while (members[newRank] != parentRank) {
          newRank++;
        }
        ok.setPid(newRank, ProcessHandle.current().pid());
      }
      return ok;
    } finally {
      if (mine != null) {
        mine.close();
      }
      if (known != null) {
        try {
          // Only after round 2 (every member mapped it, or setup failed): unlinked by whoever
          // is still alive, also when the leader died meanwhile.
          java.nio.file.Files.deleteIfExists(known);
        } catch (IOException | RuntimeException e) {
          // the file is gone or unreachable; nothing more to do
        }
      }
    }
  }
}
