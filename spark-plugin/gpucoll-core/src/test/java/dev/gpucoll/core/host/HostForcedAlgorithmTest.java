package dev.gpucoll.core.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CollectiveException;
import java.util.List;
import org.junit.jupiter.api.Test;

/** spark.gpucoll.algorithm on the host backend: its own names run, the gpu backend's are refused by name. */
class HostForcedAlgorithmTest {
  @Test
  void aGpuAlgorithmIsRefusedNamingTheHostOnes() {
    for (Ranks.Outcome<Object> o : Ranks.run(2, Ranks.conf("algorithm", "gpu-ll-oneshot"), comm -> null)) {
      CollectiveException e = assertInstanceOf(CollectiveException.class, o.error());
      assertTrue(e.getMessage().contains("gpu-ll-oneshot cannot run on the host backend")
          && e.getMessage().contains("host-oneshot") && e.getMessage().contains("host-twoshot"), e.getMessage());
    }
  }

  @Test
  void aForcedHostAlgorithmIsWhatRunsAndWhatExplainSays() {
    List<Object> seen = Ranks.values(Ranks.run(2, Ranks.conf("algorithm", "host-twoshot"), comm -> {
      int[] v = {comm.rank() + 1};
      comm.allReduce(v, dev.gpucoll.api.ReduceOp.SUM);
      assertEquals(3, v[0]);
      assertTrue(comm.explain(Collective.ALL_REDUCE, 4).reasons().contains("spark.gpucoll.algorithm=host-twoshot forces it"));
      return comm.observedPaths();
    }));
    assertEquals(List.of("allReduce/host-twoshot=1"), seen.get(0));
  }
}
