package dev.gpucoll.check;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.DataType;
import dev.gpucoll.check.CorrectnessMatrix.Case;
import dev.gpucoll.check.CorrectnessMatrix.Group;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The C++ test (gc_test, through native-kernels/test/correctness_matrix.h) reads the same matrix as
 * the Java suite: its parser, built here as the host-only matrix_list, must expand the file into the
 * same groups and cases, and refuse what the Java parser refuses. Without a C++ compiler the test is
 * skipped, unless GPUCOLL_REQUIRE_CXX is set (CI), where it fails.
 */
class CorrectnessMatrixNativeTest {
  private static final Path TEST_DIR = Path.of("../../native-kernels/test");
  private static final Map<DataType, String> TYPE_NAMES = Map.of(DataType.FLOAT32, "f32", DataType.FLOAT64, "f64",
      DataType.FLOAT16, "f16", DataType.BFLOAT16, "bf16", DataType.INT32, "i32", DataType.INT64, "i64",
      DataType.INT8, "i8", DataType.UINT8, "u8");
  private static Path binary;

  @BeforeAll
  static void build() throws Exception {
    String cxx = null;
    for (String c : List.of("c++", "g++", "clang++")) {
      if (run(List.of("sh", "-c", "command -v " + c)).rc == 0) {
        cxx = c;
        break;
      }
    }
    if (cxx == null) {
      if (System.getenv("GPUCOLL_REQUIRE_CXX") != null) {
        throw new AssertionError("no C++ compiler (c++, g++, clang++) on PATH, and GPUCOLL_REQUIRE_CXX is set");
      }
      Assumptions.abort("no C++ compiler on PATH: the C++ matrix parser is not compared");
    }
    Path out = Path.of("target", "matrix_list").toAbsolutePath();
    Files.createDirectories(out.getParent());
    Result r = run(List.of(cxx, "-std=c++17", "-O1", "-Wall", "-Werror", "-o", out.toString(),
        TEST_DIR.resolve("matrix_list.cpp").toString()));
    assertEquals(0, r.rc, "building matrix_list: " + r.out);
    binary = out;
  }

  @Test
  void theCppParserExpandsTheShippedMatrixAsJavaDoes() throws Exception {
    String text = Files.readString(TEST_DIR.resolve("correctness-matrix.txt"));
    for (boolean quick : new boolean[] {false, true}) {
      Result r = list(TEST_DIR.resolve("correctness-matrix.txt"), quick);
      assertEquals(0, r.rc, r.out);
      Map<Group, List<Case>> java = CorrectnessMatrix.parse(text).cases(quick, new SplittableRandom(7));
      List<String> lines = r.out.lines().toList();
      int at = 0;
      long total = 0;
      for (Map.Entry<Group, List<Case>> g : java.entrySet()) {
        int n = g.getKey().ranks();
        assertEquals("group " + g.getKey().variant() + " " + n + " " + g.getValue().size(), lines.get(at++));
        for (Case c : g.getValue()) {
          String line = lines.get(at++);
          String[] f = line.split(" ");
          String want = "case " + c.c().apiName() + " " + TYPE_NAMES.get(c.t()) + " " + c.op().name().toLowerCase(Locale.ROOT)
              + " " + c.count() + " " + (c.inPlace() ? 1 : 0);
          assertEquals(want, line.substring(0, line.lastIndexOf(' ')), "quick=" + quick);
          if (c.c() == Collective.BROADCAST) {
            String root = f[f.length - 1];
            assertTrue(root.equals("last") ? c.root() == n - 1 : root.equals("middle") ? c.root() == n / 2
                : root.equals("random") && c.root() >= 0 && c.root() < n, line + " vs root " + c.root());
          }
        }
        total += g.getValue().size();
      }
      assertEquals("total " + total + " " + java.size(), lines.get(at++));
      assertEquals(lines.size(), at, "lines after the total");
      assertTrue(total > 1000, total + " cases");
    }
  }

  @Test
  void theCppParserRefusesWhatJavaRefusesNamingTheLine(@org.junit.jupiter.api.io.TempDir Path dir) throws Exception {
    for (String bad : List.of("ll 2 allReduce f32 sum,foo 1", "ll 2 allReduce,allGather f32 sum 1",
        "ll 0 allGather f32 - 1", "ll 2 allGather f32 - 1 sideways", "pipe 2 broadcast f32 - 12QiB",
        "ll 2 allReduce f32 sum")) {
      Path f = dir.resolve("m.txt");
      Files.writeString(f, "# a comment\n\n" + bad + "\n");
      Result r = list(f, false);
      assertEquals(2, r.rc, bad + ": " + r.out);
      assertTrue(r.out.contains("correctness matrix line 3"), bad + ": " + r.out);
      try {
        CorrectnessMatrix.parse(Files.readString(f));
        throw new AssertionError("the Java parser took " + bad);
      } catch (IllegalArgumentException e) {
        assertTrue(e.getMessage().contains("line 3"), e.getMessage());
      }
    }
    Path empty = dir.resolve("empty.txt");
    Files.writeString(empty, "# nothing but comments\n");
    Result r = list(empty, false);
    assertEquals(2, r.rc, "a matrix without a block: " + r.out);
    assertTrue(r.out.contains("holds no block"), r.out);
    r = list(dir.resolve("missing.txt"), false);
    assertEquals(2, r.rc, r.out);
    assertTrue(r.out.contains("cannot read"), r.out);
  }

  private static Result list(Path matrix, boolean quick) throws Exception {
    List<String> cmd = new ArrayList<>(List.of(binary.toString(), matrix.toString()));
    if (quick) {
      cmd.add("--quick");
    }
    return run(cmd);
  }

  private record Result(int rc, String out) {}

  private static Result run(List<String> cmd) throws IOException, InterruptedException {
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    byte[] out = p.getInputStream().readAllBytes();
    if (!p.waitFor(60, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new AssertionError(cmd + " did not finish in 60 s");
    }
    return new Result(p.exitValue(), new String(out, StandardCharsets.UTF_8));
  }
}
