package dev.gpucoll.cuda.check;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.check.CorrectnessMatrix;
import dev.gpucoll.check.CorrectnessMatrix.Case;
import dev.gpucoll.check.CorrectnessMatrix.Group;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** What the suite takes from the matrix, without a GPU: its groups and each group's buffer size. */
class GpuSuiteMatrixTest {

  @Test
  void everyGroupOfTheMatrixGetsBuffersForItsLargestCase() {
    Map<Group, List<Case>> groups = CorrectnessMatrix.load().cases(false, new SplittableRandom(5));
    long largest = 0;
    for (Map.Entry<Group, List<Case>> g : groups.entrySet()) {
      int n = g.getKey().ranks();
      long cap = GpuSuite.capacity(g.getValue(), n);
      for (Case c : g.getValue()) {
        for (int r = 0; r < n; r++) {
          assertTrue(c.sendElems(r, n) * c.t().byteSize() <= cap && c.recvElems(r, n) * c.t().byteSize() <= cap,
              g.getKey() + " " + c.label());
        }
      }
      largest = Math.max(largest, cap);
    }
    assertEquals((64L << 20) + 4096, largest, "64 MB per rank is the largest buffer of the matrix");
    assertEquals(1 << 20, GpuSuite.capacity(List.of(), 2) - 4096, "at least 1 MB");
  }

  @Test
  void theSuiteRunsTheShippedVariantsAndLeavesTheBenchOnlyOneToTheCppTest() {
    for (String v : List.of("ll", "sentinel", "ll128", "pipe")) {
      assertTrue(GpuSuite.shippedVariant(v), v);
    }
    assertTrue(!GpuSuite.shippedVariant("barrier2"), "barrier2 is in the benchmark build only");
    assertTrue(CorrectnessMatrix.load().cases(true, new SplittableRandom(1)).keySet().stream()
        .anyMatch(g -> g.variant().equals("barrier2")), "the matrix has a barrier2 block for the C++ test");
  }

  @Test
  void aCallRefusedOnEveryRankIsRefusedAndOnSomeRanksAFailure() {
    assertEquals(null, GpuSuite.refusalOutcome(java.util.Arrays.asList(null, null, null)));
    assertEquals(List.of(GpuSuite.REFUSED + "at most 16384 elements"),
        GpuSuite.refusalOutcome(List.of("at most 16384 elements", "at most 16384 elements")));
    List<String> some = GpuSuite.refusalOutcome(java.util.Arrays.asList(null, "at most 16384 elements"));
    assertEquals(1, some.size());
    assertTrue(some.get(0).startsWith("refused on some ranks only"), some.get(0));
  }
}
