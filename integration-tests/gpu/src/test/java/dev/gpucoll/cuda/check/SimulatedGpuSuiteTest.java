package dev.gpucoll.cuda.check;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.Collective;
import dev.gpucoll.check.CorrectnessMatrix;
import dev.gpucoll.check.CorrectnessMatrix.Case;
import dev.gpucoll.core.Algorithm;
import dev.gpucoll.cuda.SimulatedDevice;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The GPU suite's own correctness-matrix cases (the "auto" blocks, quick sizes) and checks, on a
 * simulated device, for every path that needs no kernel of ours: a group of one rank (one copy per
 * call, allToAllv's displacements included) and ranks sharing the GPU on the default route (the
 * staged path through the host backend). Device memory is host memory there and copies run at once,
 * so a wrong offset, a short copy or a call that leaves its output unwritten fails here as on a GPU.
 */
class SimulatedGpuSuiteTest {

  @Test
  void oneRankGroupsPassTheMatrix() {
    runMatrix(1, Algorithm.ONE_RANK_COPY);
  }

  @Test
  void ranksSharingTheGpuPassTheMatrixOnTheStagedPath() {
    runMatrix(2, Algorithm.GPU_STAGED_HOST);
    runMatrix(3, Algorithm.GPU_STAGED_HOST);
  }

  private static void runMatrix(int n, Algorithm expected) {
    try (SimulatedDevice.Installed sim = SimulatedDevice.install()) {
      List<Case> cases = CorrectnessMatrix.load().casesAt(CorrectnessMatrix.AUTO, n, true, new SplittableRandom(7));
      GpuSuite suite = new GpuSuite(0, true, false, 600);
      List<String> failures = new ArrayList<>();
      long cap = GpuSuite.capacity(cases, n);
      try (RankGroup g = RankGroup.createDefaultRoute(n, 0, Duration.ofSeconds(20), cap)) {
        assertEquals(expected.id(), g.ranks[0].comm.explain(Collective.ALL_REDUCE, 8).algorithm());
        long seed = 1;
        for (Case c : cases) {
          List<String> bad = suite.runCase(g, c, seed++);
          bad.removeIf(s -> s.startsWith("order:")); // the host backend folds in rank order too; see check()
          if (!bad.isEmpty()) {
            failures.add(c.label() + ": " + bad);
          }
        }
        assertTrue(g.ranks[0].comm.observedPaths().stream().allMatch(p -> p.contains(expected.id())
            || p.contains(Algorithm.NOOP_EMPTY.id())), "paths: " + g.ranks[0].comm.observedPaths());
      }
      assertTrue(failures.isEmpty(), n + " ranks: " + failures.size() + " of " + cases.size() + " cases failed: "
          + failures.subList(0, Math.min(10, failures.size())));
      assertEquals(0, sim.device().refusedLaunches(), "a path of the simulated run tried to launch a kernel");
    }
  }
}
