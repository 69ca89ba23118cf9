package dev.gpucoll.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.core.rendezvous.LocalRendezvous;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class SplitRendezvousTest {
  static final Duration T = Duration.ofSeconds(20);

  interface RankBody {
    String run(LocalRendezvous parent) throws Exception;
  }

  static List<String> onRanks(String id, int n, RankBody body) throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(n);
    try {
      List<Future<String>> fs = new ArrayList<>();
      for (int r = 0; r < n; r++) {
        int rank = r;
        fs.add(pool.submit(() -> body.run(LocalRendezvous.join(id, rank, n))));
      }
      List<String> out = new ArrayList<>();
      for (Future<String> f : fs) {
        out.add(f.get(60, TimeUnit.SECONDS));
      }
      return out;
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void childrenWithDifferentRoundCountsAllFinish() throws Exception {
    // Parent ranks 0..4; colors 0,1,0,1,none. Child 0 = {2, 0} (keys order it), child 1 = {1, 3}.
    int[][] membersByRank = {{2, 0}, {1, 3}, {2, 0}, {1, 3}, {}};
    List<String> out = onRanks("split-rounds", 5, parent -> {
      int me = parent.rank();
      SplitRendezvous child = new SplitRendezvous(parent, "child", membersByRank[me]);
      StringBuilder seen = new StringBuilder();
      if (membersByRank[me].length > 0) {
        int rounds = membersByRank[me][0] == 2 ? 3 : 1; // the children need different numbers of rounds
        for (int i = 0; i < rounds; i++) {
          List<byte[]> got = child.allGather(("p" + me + "r" + i).getBytes(StandardCharsets.UTF_8), T);
          for (byte[] g : got) {
            seen.append(new String(g, StandardCharsets.UTF_8)).append(' ');
          }
        }
      }
      child.finish(T);
      // The parent rendezvous stays usable, in step, for everyone.
      List<byte[]> after = parent.allGather(new byte[] {(byte) me}, T);
      assertEquals(5, after.size());
      return child.rank() + ":" + seen.toString().trim();
    });
    assertEquals("1:p2r0 p0r0 p2r1 p0r1 p2r2 p0r2", out.get(0));
    assertEquals("0:p1r0 p3r0", out.get(1));
    assertEquals("0:p2r0 p0r0 p2r1 p0r1 p2r2 p0r2", out.get(2));
    assertEquals("1:p1r0 p3r0", out.get(3));
    assertEquals("-1:", out.get(4));
  }

  @Test
  void aMemberThatStopsIsNamedAndNobodyHangs() throws Exception {
    List<String> out = onRanks("split-fail", 3, parent -> {
      int me = parent.rank();
      SplitRendezvous child = new SplitRendezvous(parent, "child", new int[] {0, 1, 2});
      try {
        if (me == 2) {
          return "failed before its first round";
        }
        CollectiveException e = assertThrows(CollectiveException.class, () -> child.allGather(new byte[] {1}, T));
        return e.getMessage();
      } finally {
        child.finish(T);
      }
    });
    assertTrue(out.get(0).contains("rank 2 (parent rank 2) stopped forming the group"), out.get(0));
    assertTrue(out.get(1).contains("rank 2 (parent rank 2) stopped forming the group"), out.get(1));
  }

  @Test
  void usableOnlyForFormation() throws Exception {
    onRanks("split-after", 2, parent -> {
      SplitRendezvous child = new SplitRendezvous(parent, "child", new int[] {0, 1});
      child.finish(T);
      assertThrows(IllegalStateException.class, () -> child.allGather(new byte[0], T));
      return "";
    });
    assertThrows(IllegalArgumentException.class,
        () -> new SplitRendezvous(LocalRendezvous.join("split-bad", 0, 2), "c", new int[] {1}));
  }
}
