package dev.gpucoll.examples.linalg;

import dev.gpucoll.examples.ExampleSpark;
import dev.gpucoll.examples.linalg.Factorizations.Config;
import dev.gpucoll.examples.linalg.Factorizations.RankResult;
import dev.gpucoll.examples.linalg.Factorizations.Routine;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.spark.api.java.JavaSparkContext;

/**
 * Times gpucoll-linalg's LU and Cholesky on the ranks' grid against the same routines on one rank
 * (a 1 × 1 grid in one executor: on the host the same steps without communication, with
 * {@code --kernels gpu} one cuSOLVER call): wall time and GFLOP/s (LU 2n³/3, Cholesky n³/3 flops) of
 * each, their ratio, and the solve residuals of the last run. The distributed time is the slowest rank's, between two barriers around the
 * factorization (matrix generation and the check not included); each is the median of
 * {@code --repeat} runs after one untimed run. Prints a table and writes a JSON record
 * ({@code --out}, default docs/records/bench/linalg-&lt;date&gt;-&lt;commit&gt;.json).
 *
 * <p>Run: {@code scripts/example.sh linalg-bench [--ranks 4] [--sizes 256,512] [--block 32] [--repeat 3]}.
 */
public final class FactorizationBenchmark {
  static final String USAGE = "linalg-bench [--ranks 4] [--sizes 256,512] [--block 32] [--repeat 3] [--seed 3]"
      + " [--kernels cpu|gpu] [--out FILE] [--commit C] [--master local-cluster|local[N]]";

  private FactorizationBenchmark() {}

  record Row(String factorization, int n, int nb, String grid, String backend, String kernels, double distributedMs,
      double commMs, double oneProcessMs, double residual, double oneProcessResidual) {
    double flops() {
      double n3 = (double) n * n * n;
      return factorization.equals("LU") ? 2 * n3 / 3 : n3 / 3;
    }

    double distributedGflops() {
      return flops() / distributedMs / 1e6;
    }

    double oneProcessGflops() {
      return flops() / oneProcessMs / 1e6;
    }

    /** Distributed GFLOP/s over one process's: above 1, the grid is faster. */
    double ratio() {
      return oneProcessMs / distributedMs;
    }
  }

  public static void main(String[] args) {
    Map<String, String> o = ExampleSpark.options(args, USAGE);
    int ranks = ExampleSpark.intOption(o, "ranks", 4);
    int nb = ExampleSpark.intOption(o, "block", 32);
    int repeat = Math.max(1, ExampleSpark.intOption(o, "repeat", 3));
    int seed = ExampleSpark.intOption(o, "seed", 3);
    Factorizations.Kernels kind = Factorizations.kernelsOption(o);
    int[] sizes = Arrays.stream(o.getOrDefault("sizes", "256,512").split(",")).mapToInt(s -> Integer.parseInt(s.trim()))
        .toArray();
    for (int n : sizes) {
      new Config(ranks, n, nb, seed, -1, kind).descriptor(); // bad sizes fail before Spark starts
    }
    List<Row> rows = new ArrayList<>();
    try (JavaSparkContext jsc = ExampleSpark.start("gpucoll-linalg-bench", o.get("master"), ranks)) {
      for (int n : sizes) {
        Config c = new Config(ranks, n, nb, seed, -1, kind);
        rows.add(row(jsc, Routine.LU, c, repeat));
        rows.add(row(jsc, Routine.CHOLESKY, c, repeat));
      }
    }
    String master = o.getOrDefault("master", "local-cluster");
    System.out.println();
    System.out.println("kernels: " + rows.get(0).kernels() + " (grid and one rank)");
    System.out.printf("%-9s %6s %4s %5s %-10s %12s %10s %9s %12s %10s %7s %9s %9s%n", "factor", "n", "nb", "grid",
        "backend", "grid ms", "GFLOP/s", "comm ms", "1-proc ms", "GFLOP/s", "ratio", "residual", "1-proc");
    for (Row r : rows) {
      System.out.printf(Locale.ROOT, "%-9s %6d %4d %5s %-10s %12.1f %10.2f %9.1f %12.1f %10.2f %7.2f %9.3f %9.3f%n",
          r.factorization(), r.n(), r.nb(), r.grid(), r.backend(), r.distributedMs(), r.distributedGflops(), r.commMs(),
          r.oneProcessMs(), r.oneProcessGflops(), r.ratio(), r.residual(), r.oneProcessResidual());
    }
    boolean pass = rows.stream().allMatch(r -> r.residual() < Factorizations.RESIDUAL_LIMIT
        && r.oneProcessResidual() < Factorizations.RESIDUAL_LIMIT);
    System.out.println("ratio = one-rank time / grid time (GFLOP/s of the grid over one rank's, same matrix);"
        + " residuals ||b - Ax|| / (||A|| ||x|| n eps), limit " + (int) Factorizations.RESIDUAL_LIMIT);
    String commit = o.getOrDefault("commit", commit());
    Path out = o.containsKey("out") ? Path.of(o.get("out")) : benchDirectory().resolve("linalg-"
        + Instant.now().toString().substring(0, 10) + "-" + commit + ".json");
    write(out, rows, ranks, master, commit, String.join(" ", args));
    System.out.println("JSON record: " + out);
    System.out.println(pass ? "CHECK OK" : "CHECK FAILED");
    if (!pass) {
      System.exit(1);
    }
  }

  /**
   * The routine's row: the grid's runs and the same problem's runs on one rank (a 1 × 1 grid, in
   * an executor), each timed as the median of {@code repeat} after one untimed run.
   */
  private static Row row(JavaSparkContext jsc, Routine routine, Config c, int repeat) {
    List<RankResult>[] grid = timedRuns(jsc, routine, c, repeat);
    List<RankResult>[] one = timedRuns(jsc, routine, c.onOneRank(), repeat);
    List<RankResult> last = grid[repeat - 1];
    Factorizations.Check check = Factorizations.check(routine, c, last, one[repeat - 1]);
    return new Row(routine == Routine.LU ? "LU" : "Cholesky", c.n(), c.blockSize(), c.gridName(),
        last.get(0).backend(), last.get(0).kernels(), slowest(grid, RankResult::factorNanos) / 1e6,
        slowest(grid, RankResult::commNanos) / 1e6, slowest(one, RankResult::factorNanos) / 1e6, check.residual(),
        check.referenceResidual());
  }

  @SuppressWarnings("unchecked")
  private static List<RankResult>[] timedRuns(JavaSparkContext jsc, Routine routine, Config c, int repeat) {
    Factorizations.runDistributed(routine, jsc, c); // untimed
    List<RankResult>[] runs = new List[repeat];
    for (int i = 0; i < repeat; i++) {
      runs[i] = Factorizations.runDistributed(routine, jsc, c);
    }
    return runs;
  }

  /** The median over the runs of the slowest rank's time. */
  private static long slowest(List<RankResult>[] runs, java.util.function.ToLongFunction<RankResult> time) {
    long[] t = new long[runs.length];
    for (int i = 0; i < runs.length; i++) {
      t[i] = runs[i].stream().mapToLong(time).max().orElseThrow();
    }
    return median(t);
  }

  private static long median(long[] t) {
    long[] s = t.clone();
    Arrays.sort(s);
    return s[s.length / 2];
  }

  /** docs/records/bench of the checkout this runs in (Maven runs the examples from examples/), else ./docs/records/bench. */
  private static Path benchDirectory() {
    for (Path d = Path.of("").toAbsolutePath(); d != null; d = d.getParent()) {
      if (Files.isDirectory(d.resolve("docs/records/bench"))) {
        return d.resolve("docs/records/bench");
      }
    }
    return Path.of("docs/records/bench");
  }

  /** The 1, 5 and 15 minute load averages (Linux), or "unknown": other work on the machine shows in the times. */
  private static String loadAverage() {
    try {
      String[] f = Files.readString(Path.of("/proc/loadavg")).trim().split("\\s+");
      return f[0] + " " + f[1] + " " + f[2];
    } catch (IOException | RuntimeException e) {
      return "unknown";
    }
  }

  private static String commit() {
    try {
      Process p = new ProcessBuilder("git", "rev-parse", "--short", "HEAD").redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
      return p.waitFor() == 0 && out.matches("[0-9a-f]+") ? out : "unknown";
    } catch (IOException e) {
      return "unknown";
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "unknown";
    }
  }

  private static void write(Path out, List<Row> rows, int ranks, String master, String commit, String args) {
    StringBuilder sb = new StringBuilder();
    sb.append(String.format(Locale.ROOT, "{\"kind\": \"linalg-factorizations\", \"date\": \"%s\", \"commit\": \"%s\","
        + " \"ranks\": %d, \"master\": \"%s\", \"nproc\": %d, \"load\": \"%s\", \"java\": \"%s\", \"command\":"
        + " \"dev.gpucoll.examples.linalg.FactorizationBenchmark %s\", \"rows\": [%n", Instant.now().truncatedTo(ChronoUnit.SECONDS), commit,
        ranks, master, Runtime.getRuntime().availableProcessors(), loadAverage(), System.getProperty("java.version"),
        args.replace("\"", "'")));
    for (int i = 0; i < rows.size(); i++) {
      Row r = rows.get(i);
      sb.append(String.format(Locale.ROOT, "  {\"factorization\": \"%s\", \"n\": %d, \"nb\": %d, \"grid\": \"%s\","
          + " \"backend\": \"%s\", \"kernels\": \"%s\", \"grid_ms\": %.3f, \"grid_gflops\": %.3f, \"grid_comm_ms\": %.3f,"
          + " \"one_process_ms\": %.3f, \"one_process_gflops\": %.3f, \"ratio\": %.3f, \"residual\": %.4f,"
          + " \"one_process_residual\": %.4f}%s%n", r.factorization(), r.n(), r.nb(), r.grid(), r.backend(),
          r.kernels(), r.distributedMs(), r.distributedGflops(), r.commMs(), r.oneProcessMs(), r.oneProcessGflops(), r.ratio(),
          r.residual(), r.oneProcessResidual(), i + 1 < rows.size() ? "," : ""));
    }
    sb.append("]}\n");
    try {
      if (out.getParent() != null) {
        Files.createDirectories(out.getParent());
      }
      Files.writeString(out, sb.toString());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
