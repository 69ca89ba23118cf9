package dev.gpucoll.cuda.check.spark;

import dev.gpucoll.api.DataType;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.check.Reduction;
import dev.gpucoll.check.Reduction.Accumulation;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** What the cuDF job decides without cuDF's natives or a GPU: arguments, sizes, the join reference, the verdicts. */
class CudfGpuCheckTest {

  @Test
  void argumentsAndSizes() {
    CudfGpuCheck.Options o = CudfGpuCheck.Options.parse(new String[] {"--ranks", "2", "--executors", "1"});
    assertTrue(o.forced());
    assertEquals(4 << 20, o.shuffleRows());
    assertEquals(1 << 20, CudfGpuCheck.Options.parse(new String[] {"--quick"}).shuffleRows());
    assertArrayEquals(new int[] {1000}, CudfGpuCheck.Options.parse(new String[] {"--shuffle-rows", "1000"}).routed()
        .shuffleRows());
    assertArrayEquals(new int[] {1 << 18, 4 << 20}, o.routed().shuffleRows());
    // Forced LL kernels: every payload within 64 KiB, also per peer and column in the shuffle.
    CudfGpuCheck.Sizes k = o.forcedKernels();
    assertEquals(CudfGpuCheck.LL_MAX_BYTES, k.maxBytes());
    assertEquals(1, k.shuffleRows().length);
    assertTrue(k.shuffleRows()[0] * 8L / 2 <= CudfGpuCheck.LL_MAX_BYTES / 2, "rows per peer leave room for hash skew");
    assertTrue(k.joinBuildRows() <= k.shuffleRows()[0] && k.joinProbeRows() <= k.shuffleRows()[0]);
    assertTrue(!CudfGpuCheck.Options.parse(new String[] {"--no-forced"}).forced());
    IllegalArgumentException bad = assertThrows(IllegalArgumentException.class,
        () -> CudfGpuCheck.Options.parse(new String[] {"--fractional"}));
    assertTrue(bad.getMessage().contains("unknown argument --fractional"), bad.getMessage());
    assertThrows(IllegalArgumentException.class, () -> CudfGpuCheck.Options.parse(new String[] {"--ranks", "0"}));
  }

  @Test
  void theOneProcessJoinMatchesABruteForceJoin() {
    List<JoinReference.Share> shares = List.of(JoinReference.share(5, 0, 300, 200, 50),
        JoinReference.share(5, 1, 300, 200, 50));
    List<long[]> rows = new ArrayList<>();
    for (JoinReference.Share b : shares) {
      for (int i = 0; i < b.buildKey().length; i++) {
        for (JoinReference.Share p : shares) {
          for (int j = 0; j < p.probeKey().length; j++) {
            if (b.buildKey()[i] == p.probeKey()[j]) {
              rows.add(new long[] {b.buildKey()[i], Double.doubleToRawLongBits(b.buildValue()[i]), b.buildId()[i],
                  p.probeValue()[j]});
            }
          }
        }
      }
    }
    long[] flat = new long[rows.size() * 4];
    for (int i = 0; i < rows.size(); i++) {
      System.arraycopy(rows.get(i), 0, flat, i * 4, 4);
    }
    long[] reference = JoinReference.join(shares);
    assertTrue(reference.length > 4 * 1000, "many-to-many matches: " + reference.length / 4);
    assertArrayEquals(JoinReference.sortRows(flat), reference);
    assertArrayEquals(reference, JoinReference.decode(JoinReference.encode(reference)));
  }

  @Test
  void theJoinVerdictCatchesLostDuplicatedAndSplitRows() {
    CudfGpuCheck.Sizes s = new CudfGpuCheck.Sizes(1024, 400, 300, 120, new int[] {10}, 1);
    List<JoinReference.Share> shares = List.of(JoinReference.share(CudfGpuCheck.JOIN_SEED, 0, 400, 300, 120),
        JoinReference.share(CudfGpuCheck.JOIN_SEED, 1, 400, 300, 120));
    long[] all = JoinReference.join(shares);
    // A correct shuffle: even keys on rank 0, odd keys on rank 1.
    long[][] byRank = split(all, key -> (int) (key & 1));
    assertTrue(CudfGpuCheck.checkJoin("cudf-join", s, lines(byRank, 800, 600), 2).startsWith("JOIN stage=cudf-join: "));
    // One row lost.
    long[][] lost = {java.util.Arrays.copyOf(byRank[0], byRank[0].length - 4), byRank[1]};
    assertTrue(CudfGpuCheck.checkJoin("cudf-join", s, lines(lost, 800, 600), 2).contains("the one-process join has"));
    // Rows arriving in all but one fewer build row delivered by the shuffle.
    assertTrue(CudfGpuCheck.checkJoin("cudf-join", s, lines(byRank, 799, 600), 2).contains("the shuffle delivered"));
    // A key joined on both ranks: the same multiset, but one row of a repeated key on the other rank.
    int at = 0;
    while (count(all, all[at]) < 2) {
      at += 4;
    }
    long key = all[at];
    int owner = (int) (key & 1);
    long[][] splitKey = {byRank[0], byRank[1]};
    int i = indexOfKey(splitKey[owner], key);
    long[] moved = java.util.Arrays.copyOfRange(splitKey[owner], i, i + 4);
    long[] rest = concat(java.util.Arrays.copyOfRange(splitKey[owner], 0, i),
        java.util.Arrays.copyOfRange(splitKey[owner], i + 4, splitKey[owner].length));
    splitKey[owner] = rest;
    splitKey[1 - owner] = concat(splitKey[1 - owner], moved);
    String verdict = CudfGpuCheck.checkJoin("cudf-join", s, lines(splitKey, 800, 600), 2);
    assertTrue(verdict.contains("keys joined on several ranks (the shuffle must send a key to one rank): [" + key),
        verdict);
    // A rank that sent nothing.
    List<String> one = lines(byRank, 800, 600).subList(0, 1);
    assertTrue(CudfGpuCheck.checkJoin("cudf-join", s, one, 2).contains("no joined rows from rank(s) [1]"));
  }

  private static int indexOfKey(long[] rows, long key) {
    for (int i = 0; i < rows.length; i += 4) {
      if (rows[i] == key) {
        return i;
      }
    }
    throw new AssertionError("no row of key " + key);
  }

  private static long count(long[] rows, long key) {
    long c = 0;
    for (int i = 0; i < rows.length; i += 4) {
      c += rows[i] == key ? 1 : 0;
    }
    return c;
  }

  private static long[] concat(long[] a, long[] b) {
    long[] out = java.util.Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }

  private static long[][] split(long[] rows, java.util.function.LongToIntFunction owner) {
    List<List<long[]>> parts = List.of(new ArrayList<>(), new ArrayList<>());
    for (int i = 0; i < rows.length; i += 4) {
      parts.get(owner.applyAsInt(rows[i])).add(java.util.Arrays.copyOfRange(rows, i, i + 4));
    }
    long[][] out = new long[2][];
    for (int r = 0; r < 2; r++) {
      out[r] = new long[parts.get(r).size() * 4];
      for (int i = 0; i < parts.get(r).size(); i++) {
        System.arraycopy(parts.get(r).get(i), 0, out[r], i * 4, 4);
      }
    }
    return out;
  }

  private static List<String> lines(long[][] byRank, long receivedBuild, long receivedProbe) {
    List<String> out = new ArrayList<>();
    for (int r = 0; r < byRank.length; r++) {
      long b = r == 0 ? receivedBuild / 2 : receivedBuild - receivedBuild / 2;
      long p = r == 0 ? receivedProbe / 2 : receivedProbe - receivedProbe / 2;
      out.add("JOIN stage=cudf-join rank=" + r + " buildRows=400 probeRows=300 receivedBuild=" + b + " receivedProbe="
          + p + " joined=" + byRank[r].length / 4 + " data=" + JoinReference.encode(byRank[r]));
    }
    return out;
  }

  @Test
  void uint8ReducesUnsigned() {
    long[] terms = {200, 100}; // raw bits, as Elements.bits reads them
    Accumulation acc = Accumulation.ELEMENT_TYPE;
    assertNull(Reduction.check(DataType.UINT8, ReduceOp.MIN, terms, 100, acc));
    assertNotNull(Reduction.check(DataType.UINT8, ReduceOp.MIN, terms, 200, acc));
    assertNull(Reduction.check(DataType.UINT8, ReduceOp.MAX, terms, 200, acc));
    assertNull(Reduction.check(DataType.UINT8, ReduceOp.AVG, terms, 22, acc)); // (200 + 100) wraps to 44, / 2
    assertNull(Reduction.check(DataType.INT8, ReduceOp.MIN, terms, 200, acc)); // 200 is -56 as INT8
  }

  @Test
  void theColumnTypesAreThoseTheModuleMapsAndMoves() {
    assertEquals(6, CudfRankChecks.REDUCE_DTYPES.length);
    for (ai.rapids.cudf.DType dt : CudfRankChecks.REDUCE_DTYPES) {
      assertEquals(dt.getSizeInBytes(), CudfRankChecks.elementType(dt).byteSize());
    }
    for (ai.rapids.cudf.DType dt : CudfRankChecks.FIXED_WIDTH_DTYPES) {
      assertTrue(dt.getSizeInBytes() > 0 && !dt.isNestedType() && !dt.hasOffsets(), dt.toString());
    }
  }
}
