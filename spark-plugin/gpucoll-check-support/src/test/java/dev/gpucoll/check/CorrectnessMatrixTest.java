package dev.gpucoll.check;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.LocOp;
import dev.gpucoll.api.PairType;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.check.CorrectnessMatrix.Case;
import dev.gpucoll.check.CorrectnessMatrix.Group;
import dev.gpucoll.check.CorrectnessMatrix.PairCase;
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
  void maxlocLinesExpandIntoPairCasesApartFromTheOthers() {
    CorrectnessMatrix m = CorrectnessMatrix.parse("""
        auto 2,3*  allReduce  f64:i32,i32:i64  maxloc,MINLOC  1,9*   # pairs
        auto 2     allReduce  f32:i32          maxloc         4 in-place
        auto 2     allReduce  f32              max            4
        """);
    List<PairCase> two = m.pairCasesAt("auto", 2, false);
    assertEquals(List.of(new PairCase(PairType.FLOAT64_INT32, LocOp.MAXLOC, 1, false),
        new PairCase(PairType.FLOAT64_INT32, LocOp.MINLOC, 1, false),
        new PairCase(PairType.FLOAT64_INT32, LocOp.MAXLOC, 9, false),
        new PairCase(PairType.FLOAT64_INT32, LocOp.MINLOC, 9, false),
        new PairCase(PairType.INT32_INT64, LocOp.MAXLOC, 1, false),
        new PairCase(PairType.INT32_INT64, LocOp.MINLOC, 1, false),
        new PairCase(PairType.INT32_INT64, LocOp.MAXLOC, 9, false),
        new PairCase(PairType.INT32_INT64, LocOp.MINLOC, 9, false),
        new PairCase(PairType.FLOAT32_INT32, LocOp.MAXLOC, 4, true)), two);
    assertEquals(5, m.pairCasesAt("auto", 2, true).size(), "quick leaves out count 9");
    assertEquals(List.of(new Group("auto", 2), new Group("auto", 3)), List.copyOf(m.pairCases(false).keySet()));
    assertEquals(List.of(new Group("auto", 2)), List.copyOf(m.pairCases(true).keySet()));
    // the plain cases do not see the pair lines
    assertEquals(1, m.size(false));
    // the shipped matrix has every pair type and op
    List<PairCase> shipped = CorrectnessMatrix.load().pairCasesAt("auto", 3, true);
    for (PairType t : PairType.values()) {
      for (LocOp op : LocOp.values()) {
        assertTrue(shipped.stream().anyMatch(c -> c.type() == t && c.op() == op), t + " " + op);
      }
    }
  }

  @Test
  void aBadMaxlocLineIsNamedWithItsNumberAndField() {
    for (String[] bad : new String[][] {
        {"auto 2 allReduce f16:i32 maxloc 1", "line 1: types item 'f16:i32': unknown pair type"},
        {"auto 2 allReduce f64:f32 maxloc 1", "line 1: types item 'f64:f32': unknown pair type"},
        {"auto 2 allReduce f64:i32 maxloc,sum 1", "line 1: ops item 'sum': a maxloc/minloc line takes no other op"},
        {"auto 2 reduceScatter f64:i32 maxloc 1", "line 1: maxloc and minloc are for allReduce alone"},
        {"auto 2 allReduce f64:i32 maxloc 1 root=last", "line 1: unknown option root=last"}}) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> CorrectnessMatrix.parse(bad[0]));
      assertTrue(e.getMessage().startsWith("correctness matrix " + bad[1]), e.getMessage());
    }
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
