package dev.gpucoll.check;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.check.CorrectnessMatrix.Case;
import dev.gpucoll.check.CorrectnessMatrix.Group;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class CorrectnessMatrixTest {

  @Test
  void theShippedMatrixParsesAndCoversAtLeastTheFormerSuite() {
    CorrectnessMatrix m = CorrectnessMatrix.load();
    long full = m.size(false);
    long quick = m.size(true);
    Map<Group, List<Case>> groups = m.cases(false, new SplittableRandom(3));
    System.out.println("correctness matrix: " + full + " cases in " + groups.size() + " groups (" + quick
        + " with --quick)");
    // The suite before the matrix ran 4811 cases, its special checks and fatbin name lookups included.
    assertTrue(full >= 4811, "the matrix has " + full + " cases");
    assertTrue(quick > 0 && quick < full / 3, quick + " quick cases of " + full);
    for (String v : List.of("auto", "ll", "sentinel", "ll128", "pipe")) { // barrier2: the benchmark build's (gc_test only)
      assertTrue(groups.keySet().stream().anyMatch(g -> g.variant().equals(v)), v);
    }
    for (Collective c : Collective.values()) {
      assertTrue(groups.values().stream().flatMap(List::stream).anyMatch(k -> k.c() == c), c.apiName());
    }
    assertNull(new Group("auto", 2).forcedVariant());
    assertEquals("pipe", new Group("pipe", 2).forcedVariant());
  }

  @Test
  void aLineExpandsInItsOrderWithQuickItemsBytesAndPerRankCounts() {
    CorrectnessMatrix m = CorrectnessMatrix.parse("""
        # comment
        pipe 2,4*  allReduce,reduceScatter f32,f16 sum,max  1,4KiB*,8KiB/n   # trailing comment

        auto 3 broadcast i8 - 10 in-place root=last
        auto 3 barrier - - 0
        """);
    Map<Group, List<Case>> full = m.cases(false, new SplittableRandom(1));
    assertEquals(List.of(new Group("pipe", 2), new Group("pipe", 4), new Group("auto", 3)), List.copyOf(full.keySet()));
    List<Case> two = full.get(new Group("pipe", 2));
    assertEquals(2 * 2 * 3 * 2, two.size());
    Case first = two.get(0);
    assertEquals(Collective.ALL_REDUCE, first.c());
    assertEquals(DataType.FLOAT32, first.t());
    assertEquals(ReduceOp.SUM, first.op());
    assertEquals(1, first.count());
    assertEquals(ReduceOp.MAX, two.get(1).op());
    assertEquals(1024, two.get(2).count(), "4 KiB of f32");
    assertEquals(8192 / 4 / 2, two.get(4).count(), "8 KiB of f32 over 2 ranks");
    assertEquals(8192 / 2 / 2, two.get(10).count(), "8 KiB of f16 over 2 ranks");
    assertEquals(8192 / 4 / 4, full.get(new Group("pipe", 4)).get(4).count(), "8 KiB of f32 over 4 ranks");
    Case bcast = full.get(new Group("auto", 3)).get(0);
    assertTrue(bcast.inPlace());
    assertEquals(2, bcast.root());
    assertEquals(Collective.BARRIER, full.get(new Group("auto", 3)).get(1).c());

    Map<Group, List<Case>> quick = m.cases(true, new SplittableRandom(1));
    assertFalse(quick.containsKey(new Group("pipe", 4)), "a rank count marked '*' is full-only");
    assertEquals(2 * 2 * 2 * 2, quick.get(new Group("pipe", 2)).size(), "4KiB* left out");
  }

  @Test
  void anAllToAllvTableIsConsistentBetweenSendersAndReceivers() {
    Case c = CorrectnessMatrix.parse("auto 5 allToAllv f64 - 1000").cases(false, new SplittableRandom(9))
        .get(new Group("auto", 5)).get(0);
    for (int r = 0; r < 5; r++) {
      for (int p = 0; p < 5; p++) {
        assertEquals(c.a2avOf(r)[0][p], c.a2avOf(p)[2][r], "what " + r + " sends to " + p + " is what " + p + " receives");
        assertTrue(c.a2avOf(r)[0][p] <= 1000);
      }
      assertTrue(c.sendElems(r, 5) >= java.util.Arrays.stream(c.a2avOf(r)[0]).sum());
      assertTrue(c.recvElems(r, 5) >= java.util.Arrays.stream(c.a2avOf(r)[2]).sum());
    }
  }

  @Test
  void aBadLineIsNamedWithItsNumberAndField() {
    assertError("auto 2 allReduce f32 sum", "line 1: expected variant, ranks, collectives, types, ops and counts");
    assertError("\nauto 2 allReduce f33 sum 1", "line 2: types item 'f33': unknown type");
    assertError("auto 2 allreduce f32 sum 1", "collectives item 'allreduce': unknown collective");
    assertError("auto 0 allReduce f32 sum 1", "ranks item '0': a group has at least 1 rank");
    assertError("auto 2 allReduce f32 - 1", "a reduction needs ops");
    assertError("auto 2 allGather f32 sum 1", "ops are for allReduce and reduceScatter");
    assertError("auto 2 allReduce,allGather f32 sum 1", "reductions and data movement in one line");
    assertError("auto 2 allReduce f32 sum 1 inplace", "unknown option inplace");
    assertError("auto 2 broadcast f32 - 1 root=first", "root must be random, last or middle");
    assertError("auto 2 allReduce f32 sum 4GB", "counts item '4GB'");
  }

  private static void assertError(String text, String expected) {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> CorrectnessMatrix.parse(text));
    assertTrue(e.getMessage().contains(expected), e.getMessage());
  }
}
