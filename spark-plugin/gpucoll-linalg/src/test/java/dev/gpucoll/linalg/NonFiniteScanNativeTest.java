package dev.gpucoll.linalg;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The device scan for NaN and Inf ({@code gc_linalg_first_nonfinite_f64}) and the host one
 * ({@link HostKernels#firstNonFinite}) answer alike: the kernel's walk, built for the CPU as
 * native-kernels/test/linalg_scan_check (every lane of every warp of a launch in turn), on ragged
 * block-cyclic parts of several grids, leading dimensions and column alignments, must find the
 * first NaN and the first Inf that the host scan and a count over the placed values find, and read
 * each element it must read exactly once and nothing else (the program fails a case otherwise): with
 * lower, no element above the diagonal. Without a C++ compiler the test is skipped, unless
 * GPUCOLL_REQUIRE_CXX is set (CI), where it fails.
 */
class NonFiniteScanNativeTest {
  private static final Path KERNELS = Path.of("../../native-kernels");
  private static final int WHOLE = 1 << 30; // one block per dimension: the plain-matrix scan's identity map
  private static Path binary;

  @BeforeAll
  static void build() throws Exception {
    String cxx = null;
    for (String c : List.of("c++", "g++", "clang++")) {
      if (run(List.of("sh", "-c", "command -v " + c), null).rc == 0) {
        cxx = c;
        break;
      }
    }
    if (cxx == null) {
      if (System.getenv("GPUCOLL_REQUIRE_CXX") != null) {
        throw new AssertionError("no C++ compiler (c++, g++, clang++) on PATH, and GPUCOLL_REQUIRE_CXX is set");
      }
      Assumptions.abort("no C++ compiler on PATH: the device scan's walk is not checked");
    }
    Path out = Path.of("target", "linalg_scan_check").toAbsolutePath();
    Files.createDirectories(out.getParent());
    Result r = run(List.of(cxx, "-std=c++17", "-O2", "-Wall", "-Wextra", "-Werror", "-I",
        KERNELS.resolve("include").toString(), "-o", out.toString(),
        KERNELS.resolve("test/linalg_scan_check.cpp").toString()), null);
    assertEquals(0, r.rc, "building linalg_scan_check: " + r.out);
    binary = out;
  }

  /** m, n, mb, nb, rsrc, csrc, grid rows, grid cols: ragged edges, sources off 0, one and several tiles a column. */
  private static final int[][] SHAPES = {
    {23, 23, 4, 4, 1, 2, 2, 3},
    {41, 41, 3, 5, 2, 1, 3, 2},
    {37, 29, 5, 2, 2, 0, 3, 1},
    {29, 37, 2, 3, 0, 3, 1, 4},
    {9, 9, 1, 1, 0, 0, 1, 1},
    {700, 700, 64, 48, 1, 0, 2, 2},
    {613, 613, 613, 613, 0, 0, 1, 1},
    {530, 517, WHOLE, WHOLE, 0, 0, 1, 1},
  };

  private record Placed(int i, int j, boolean nan) {}

  /** A case line of linalg_scan_check, and the part it describes. */
  private record Case(Descriptor d, int prow, int pcol, int offset, boolean lower, int warps, List<Placed> placed) {
    String line() {
      StringBuilder b = new StringBuilder();
      b.append(d.m()).append(' ').append(d.n()).append(' ').append(d.mb()).append(' ').append(d.nb()).append(' ')
          .append(d.rsrc()).append(' ').append(d.csrc()).append(' ').append(d.gridRows()).append(' ')
          .append(d.gridCols()).append(' ').append(prow).append(' ').append(pcol).append(' ').append(d.lld())
          .append(' ').append(offset).append(' ').append(lower ? 1 : 0).append(' ').append(warps).append(' ')
          .append(placed.size());
      for (Placed p : placed) {
        b.append(' ').append(p.i).append(' ').append(p.j).append(' ').append(p.nan ? 'n' : 'i');
      }
      return b.toString();
    }

    @Override
    public String toString() {
      return line();
    }
  }

  /** The placements of one matrix: none, above the diagonal only, on and just below it past an earlier one above, random. */
  private static List<List<Placed>> placements(int m, int n, SplittableRandom random) {
    int k = Math.min(m, n) * 2 / 3;
    List<Placed> random6 = new ArrayList<>();
    for (int t = 0; t < 6; t++) {
      random6.add(new Placed(random.nextInt(m), random.nextInt(n), random.nextBoolean()));
    }
    return List.of(
        List.of(),
        List.of(new Placed(0, n - 1, true), new Placed(k - 1, k, false), new Placed(k - 1, k + 1, true)),
        List.of(new Placed(0, k, true), new Placed(k - 1, k, false), new Placed(k, k, true), new Placed(k + 1, k, false)),
        random6);
  }

  @Test
  void theKernelsWalkFindsWhatTheHostScanFindsReadingOnlyWhatItMust() throws Exception {
    SplittableRandom random = new SplittableRandom(53);
    List<Case> cases = new ArrayList<>();
    for (int[] s : SHAPES) {
      Descriptor tight = Descriptor.of(s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]);
      boolean big = s[0] > 100;
      for (List<Placed> placed : placements(s[0], s[1], random)) {
        for (int prow = 0; prow < s[6]; prow++) {
          for (int pcol = 0; pcol < s[7]; pcol++) {
            for (int lldExtra : new int[] {0, 3}) {
              Descriptor d = tight.withLld(tight.lld() + lldExtra);
              for (int offset : new int[] {0, 1}) {
                for (boolean lower : new boolean[] {false, true}) {
                  for (int warps : big ? new int[] {3, 40} : new int[] {1, 2, 7}) {
                    cases.add(new Case(d, prow, pcol, offset, lower, warps, placed));
                  }
                }
              }
            }
          }
        }
      }
    }
    Path input = Files.createTempFile("scan-cases", ".txt");
    try {
      Files.write(input, cases.stream().map(Case::line).toList(), StandardCharsets.UTF_8);
      Result r = run(List.of(binary.toString()), input);
      assertEquals(0, r.rc, "linalg_scan_check: " + r.out);
      List<String> lines = r.out.lines().toList();
      assertEquals(cases.size(), lines.size(), "one answer a case");
      int reported = 0;
      for (int c = 0; c < cases.size(); c++) {
        Case k = cases.get(c);
        String[] words = lines.get(c).split(" ");
        long[] device = {Long.parseUnsignedLong(words[0]), Long.parseUnsignedLong(words[1])};
        long[] want = counted(k);
        assertArrayEquals(want, device, "the kernel's walk on " + k);
        assertArrayEquals(want, host(k), "the host scan on " + k);
        reported += want[0] != -1 || want[1] != -1 ? 1 : 0;
      }
      // The cases are not all empty answers (nor all found): both outcomes are checked.
      org.junit.jupiter.api.Assertions.assertTrue(reported > cases.size() / 8 && reported < cases.size(),
          reported + " of " + cases.size() + " cases report a value");
    } finally {
      Files.deleteIfExists(input);
    }
  }

  /** What the case's part holds that the scan must report: its own placements, lower: at or below the diagonal. */
  private static long[] counted(Case k) {
    Descriptor d = k.d();
    long[] first = {-1, -1};
    for (Map.Entry<Long, Boolean> e : values(k).entrySet()) {
      int i = (int) (e.getKey() % d.m());
      int j = (int) (e.getKey() / d.m());
      if (d.indxg2pRow(i) != k.prow() || d.indxg2pCol(j) != k.pcol() || k.lower() && i < j) {
        continue;
      }
      int kind = e.getValue() ? 0 : 1;
      if (first[kind] == -1 || e.getKey() < first[kind]) {
        first[kind] = e.getKey();
      }
    }
    return first;
  }

  private static long[] host(Case k) {
    Descriptor d = k.d();
    Map<Long, Boolean> values = values(k);
    if (d.mb() == WHOLE && d.nb() == WHOLE) { // the plain-matrix scan: positions j * rows + i
      long[] plain = HostKernels.firstNonFinite(d.m(), d.n(), k.lower(), (i, j) -> value(values, i + (long) j * d.m()));
      assertArrayEquals(plain, HostKernels.firstNonFinite(d, 0, 0, k.lower(),
          (li, lj) -> value(values, li + (long) lj * d.m())), "the plain scan and the part's scan on " + k);
      return plain;
    }
    return HostKernels.firstNonFinite(d, k.prow(), k.pcol(), k.lower(),
        (li, lj) -> value(values, d.indxl2gRow(li, k.prow()) + (long) d.indxl2gCol(lj, k.pcol()) * d.m()));
  }

  /** Position j * m + i to NaN (true) or Inf (false), the last placement at a position winning. */
  private static Map<Long, Boolean> values(Case k) {
    Map<Long, Boolean> v = new LinkedHashMap<>();
    for (Placed p : k.placed()) {
      v.put(p.i() + (long) p.j() * k.d().m(), p.nan());
    }
    return v;
  }

  private static double value(Map<Long, Boolean> values, long position) {
    Boolean nan = values.get(position);
    return nan == null ? 1.0 : nan ? Double.NaN : Double.POSITIVE_INFINITY;
  }

  private record Result(int rc, String out) {}

  private static Result run(List<String> cmd, Path stdin) throws IOException, InterruptedException {
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
    if (stdin != null) {
      pb.redirectInput(stdin.toFile());
    }
    Process p = pb.start();
    byte[] out = p.getInputStream().readAllBytes();
    if (!p.waitFor(120, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new AssertionError(cmd + " did not finish in 120 s");
    }
    return new Result(p.exitValue(), new String(out, StandardCharsets.UTF_8));
  }
}
