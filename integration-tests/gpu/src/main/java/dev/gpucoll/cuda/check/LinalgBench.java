package dev.gpucoll.cuda.check;

import dev.gpucoll.api.GpuCommunicator;
import dev.gpucoll.api.ProcessGrid;
import dev.gpucoll.cuda.CudaNative;
import dev.gpucoll.linalg.Descriptor;
import dev.gpucoll.linalg.DeviceMatrix;
import dev.gpucoll.linalg.DeviceSolver;
import dev.gpucoll.linalg.LocalMatrix;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.bytedeco.cuda.cublas.cublasContext;
import org.bytedeco.cuda.cusolver.cusolverDnContext;
import org.bytedeco.cuda.global.cublas;
import org.bytedeco.cuda.global.cudart;
import org.bytedeco.cuda.global.cusolver;
import org.bytedeco.javacpp.DoublePointer;
import org.bytedeco.javacpp.IntPointer;

/**
 * The distributed LU and Cholesky of gpucoll-linalg on the device ({@link DeviceSolver}) beside
 * cuSOLVER's getrf / potrf of the same matrix in one call, on one GPU: ours on a 1 × 1 grid and on
 * P × Q grids of ranks that are threads of this process sharing the GPU. fp64; the matrix is
 * generated on the device from its global positions (the same matrix for every grid); each time is
 * the median of {@code --repeat} runs after an untimed one, from the routine's call to its stream's
 * end, the slowest rank's; GFLOP/s count 2n³/3 (LU) and n³/3 (Cholesky). Every factorization is
 * checked: X of A X = B (B seeded, one column) by the residual ‖B − A X‖₂ / (‖A‖_F ‖X‖₂ n ε),
 * computed on the device apart from the routines. Prints a table and writes
 * {@code linalg-gpu-<date>-<commit>.json} into {@code --json-dir}. On each grid the device scan
 * for NaN and Inf is checked once (n = 1025; a wrong answer fails the run).
 *
 * <p>The ranks' groups are formed as a Spark job's are (the default route): ranks sharing this GPU
 * take the communicator's non-spinning staged path, which {@link DeviceSolver#open} requires of them.
 * {@code --shared-grids R} then factors potrf and getrf R times each on 1 × 3, 3 × 1, 2 × 1 and
 * 2 × 2 grids of ranks sharing the GPU ({@code --shared-n}, the first {@code --block}) and counts the
 * stops: a routine that names a stopped rank, a collective timeout, or a rank that does not come
 * back; any stop fails the run.
 *
 * <p>Usage: LinalgBench [--sizes 4096,8192] [--block 1024] [--grids 1x1,2x2] [--factors getrf,potrf]
 * [--repeat 3] [--json-dir DIR] [--commit SHA] [--machine TEXT] [--cusolvermp] [--shared-grids R]
 * [--shared-n 4096] [--qr-eig] [--qr-eig-grids 2x2] [--qr-eig-grid-n 1024]
 *
 * <p>{@code --qr-eig}: cuSOLVERMp's geqrf / ormqr, gels and syevd at each size on one GPU (1 × 1),
 * checked and timed beside dense cuSOLVER ({@link CuSolverMpQrEig}); {@code --qr-eig-grids}: the
 * same on each P × Q grid at {@code --qr-eig-grid-n}, its ranks processes with a GPU each (or, on a
 * machine with fewer GPUs, sharing GPU 0 as hosts of their own to NCCL, which cuSOLVERMp does not
 * support); both need libcusolverMp.so.0.
 */
public final class LinalgBench {
  private static final double EPS = Math.ulp(1.0) / 2;
  /** How long one P × Q cuSOLVERMp grid may take, its processes' start and NCCL's set-up included. */
  private static final int QR_EIG_GRID_LIMIT_S = 150;

  private record Row(String factor, int n, int nb, String grid, double oursMs, double anchorMs, double residual) {
    /** The same factor by cuSOLVERMp 1 × 1: on our communicator's ncclComm_t, and on a plain one. */
    static Row cuSolverMp(String factor, int n, int nb, String comm, double ms, double anchorMs) {
      return new Row(factor, n, nb, "cuSOLVERMp 1x1 (" + comm + ")", ms, anchorMs, Double.NaN);
    }

    double gflops(double ms) {
      double n3 = (double) n * n * n;
      return (factor.equals("getrf") ? 2 * n3 / 3 : n3 / 3) / (ms * 1e6);
    }
  }

  public static void main(String[] args) throws Exception {
    List<Integer> sizes = List.of(4096, 8192);
    List<Integer> blocks = List.of(1024);
    List<int[]> grids = List.of(new int[] {1, 1}, new int[] {2, 2});
    List<String> factors = List.of("getrf", "potrf");
    int repeat = 3;
    boolean withCuSolverMp = false;
    Path jsonDir = Path.of(System.getenv().getOrDefault("OUT", "/tmp/gpucoll-out"), "bench");
    String commit = "unknown";
    String machine = "";
    int sharedRepeats = 0;
    int sharedN = 4096;
    boolean withQrEig = false;
    List<int[]> qrEigGrids = List.of();
    int qrEigGridN = 1024;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--sizes" -> sizes = ints(args[++i]);
        case "--block" -> blocks = ints(args[++i]);
        case "--grids" -> grids = grids(args[++i]);
        case "--factors" -> factors = List.of(args[++i].split(","));
        case "--repeat" -> repeat = Integer.parseInt(args[++i]);
        case "--json-dir" -> jsonDir = Path.of(args[++i]);
        case "--commit" -> commit = args[++i];
        case "--machine" -> machine = args[++i];
        case "--cusolvermp" -> withCuSolverMp = true;
        case "--shared-grids" -> sharedRepeats = Integer.parseInt(args[++i]);
        case "--shared-n" -> sharedN = Integer.parseInt(args[++i]);
        case "--qr-eig" -> withQrEig = true;
        case "--qr-eig-grids" -> qrEigGrids = grids(args[++i]);
        case "--qr-eig-grid-n" -> qrEigGridN = Integer.parseInt(args[++i]);
        default -> throw new IllegalArgumentException("unknown argument " + args[i]);
      }
    }
    System.out.println("CUDA_MODULE_LOADING=" + System.getenv("CUDA_MODULE_LOADING")
        + " (EAGER: ranks sharing a GPU must not load a kernel lazily while another rank's kernel spins)");
    List<Row> rows = new ArrayList<>();
    boolean failed = false;
    for (String factor : factors) {
      boolean spd = factor.equals("potrf");
      for (int n : sizes) {
        double anchor = anchorMs(factor, n, repeat);
        for (int[] g : grids) {
          for (int nb : g[0] * g[1] == 1 ? blocks.subList(blocks.size() - 1, blocks.size()) : blocks) {
            Row row = ours(factor, n, nb, g[0], g[1], repeat, anchor);
            rows.add(row);
            System.out.println(format(row));
            failed |= !(row.residual <= 10);
          }
        }
        if (withCuSolverMp) {
          int nb = blocks.get(blocks.size() - 1);
          for (Row row : cuSolverMp(factor, n, nb, repeat, anchor)) {
            rows.add(row);
            System.out.println(format(row));
          }
        }
      }
    }
    for (int[] g : grids) {
      List<String> wrong = scanChecks(SCAN_CHECK_N, blocks.get(0), g[0], g[1]);
      System.out.println("scan for NaN and Inf on " + g[0] + " x " + g[1] + ", n=" + SCAN_CHECK_N + ": "
          + (wrong.isEmpty() ? "as expected" : "WRONG: " + String.join(" | ", wrong)));
      failed |= !wrong.isEmpty();
    }
    List<SharedGridRuns> shared = new ArrayList<>();
    for (int k = 0; k < (sharedRepeats > 0 ? SHARED_GRIDS.length : 0); k++) {
      for (String factor : List.of("potrf", "getrf")) {
        SharedGridRuns runs = sharedGridRuns(factor, sharedN, blocks.get(0), SHARED_GRIDS[k][0], SHARED_GRIDS[k][1],
            sharedRepeats);
        shared.add(runs);
        System.out.println(runs.line());
        failed |= runs.stops() > 0;
      }
    }
    List<CuSolverMpQrEig.Result> qrEig = new ArrayList<>();
    int qrNb = blocks.get(blocks.size() - 1);
    int times = repeat;
    for (int n : withQrEig ? sizes : List.<Integer>of()) {
      failed |= !qrEig(qrEig, "1x1", n, () -> CuSolverMpQrEig.run(n, qrNb, times, 20261207L + n));
    }
    for (int[] g : qrEigGrids) {
      int n = qrEigGridN;
      failed |= !qrEig(qrEig, g[0] + "x" + g[1], n, () -> CuSolverMpQrEig.runGrid(g[0], g[1], n, qrNb, times,
          20261207L + n, Duration.ofSeconds(QR_EIG_GRID_LIMIT_S)));
    }
    System.out.println();
    System.out.println("factor | n | nb | grid | ours ms | GFLOP/s | cuSOLVER ms | GFLOP/s | cuSOLVER time / ours | residual");
    for (Row r : rows) {
      System.out.println(format(r));
    }
    Files.createDirectories(jsonDir);
    StringBuilder json = new StringBuilder("{\"kind\":\"linalg-gpu\",\"date\":\"" + LocalDate.now() + "\",\"commit\":\""
        + commit + "\",\"machine\":\"" + machine + "\",\"repeat\":" + repeat
        + ",\"timing\":\"median of repeat runs after an untimed one; slowest rank, call to stream end\","
        + "\"residual\":\"||B - A X||_2 / (||A||_F ||X||_2 n eps), eps = 2^-53\",\"rows\":[");
    for (int i = 0; i < rows.size(); i++) {
      Row r = rows.get(i);
      json.append(i == 0 ? "" : ",").append(String.format(Locale.ROOT, "{\"factor\":\"%s\",\"n\":%d,\"nb\":%d,"
          + "\"grid\":\"%s\",\"ours_ms\":%.3f,\"ours_gflops\":%.1f,\"cusolver_ms\":%.3f,\"cusolver_gflops\":%.1f,"
          + "\"cusolver_time_over_ours\":%.3f,\"residual\":%.4f}", r.factor, r.n, r.nb, r.grid, r.oursMs,
          r.gflops(r.oursMs), r.anchorMs, r.gflops(r.anchorMs), r.anchorMs / r.oursMs, r.residual));
    }
    json.append("],\"shared_grids\":[");
    for (int i = 0; i < shared.size(); i++) {
      SharedGridRuns r = shared.get(i);
      json.append(i == 0 ? "" : ",").append(String.format(Locale.ROOT, "{\"factor\":\"%s\",\"n\":%d,\"nb\":%d,"
          + "\"grid\":\"%dx%d\",\"runs\":%d,\"stops\":%d}", r.factor, r.n, r.nb, r.np, r.nq, r.runs, r.stops));
    }
    json.append("],\"cusolvermp_qr_eig\":[");
    for (int i = 0; i < qrEig.size(); i++) {
      json.append(i == 0 ? "" : ",").append(qrEig.get(i).json());
    }
    json.append("]}\n");
    Path file = jsonDir.resolve("linalg-gpu-" + LocalDate.now() + "-" + commit + ".json");
    Files.writeString(file, json);
    System.out.println("record: " + file);
    System.exit(failed ? 1 : 0);
  }

  /** Odd: on a 1 × 1 grid every other column of the part starts off the 16-byte grid. */
  private static final int SCAN_CHECK_N = 1025;

  /**
   * The device scan for NaN and Inf on the card (the CPU checks its walk: NonFiniteScanNativeTest):
   * on an np × nq grid of ranks sharing this GPU, potrf of a matrix with a NaN above the diagonal
   * (never read) must succeed; with a NaN on the diagonal and an Inf below it too, potrf must name
   * the diagonal NaN and getrf the one above. What went otherwise, a line each (none: as expected).
   */
  private static List<String> scanChecks(int n, int nb, int np, int nq) {
    Descriptor d = Descriptor.of(n, n, nb, nb, np, nq);
    int col = n - 3;
    double[] above = new double[n * n];
    for (int j = 0; j < n; j++) {
      for (int i = 0; i < n; i++) {
        above[i + j * n] = i == j ? n : 1.0 / (1 + i + j); // symmetric, diagonally dominant: positive definite
      }
    }
    above[5 + col * n] = Double.NaN;
    double[] bad = above.clone();
    bad[col + col * n] = Double.NaN;
    bad[n - 1 + col * n] = Double.POSITIVE_INFINITY;
    List<String> expected = List.of("factored",
        "potrf: the input's lower triangle is not finite: NaN at row " + col + ", column " + col
            + " (0-based); it holds Inf too; potrf refuses NaN and Inf",
        "getrf: the input is not finite: NaN at row 5, column " + col + " (0-based); it holds Inf too; getrf"
            + " refuses NaN and Inf");
    try (RankGroup g = RankGroup.createDefaultRoute(np * nq, 0, Duration.ofMinutes(2), 8)) {
      List<List<String>> got = g.onAll(Duration.ofMinutes(5), r -> {
        ProcessGrid<GpuCommunicator> grid = ProcessGrid.of(r.comm, np, nq);
        grid.all().synchronize();
        r.awaitPeers();
        DeviceSolver solver = DeviceSolver.open(grid);
        // Every part uploaded before the first routine and freed after the grid's close (see ours).
        List<DeviceMatrix> parts = new ArrayList<>();
        for (double[] a : List.of(above, bad, bad)) {
          parts.add(solver.upload(LocalMatrix.scatter(a, n, d, grid.myRow(), grid.myCol())));
        }
        r.awaitPeers();
        List<String> outcomes = new ArrayList<>();
        try {
          for (int k = 0; k < parts.size(); k++) {
            try {
              if (k < 2) {
                solver.potrf(parts.get(k));
              } else {
                solver.getrf(parts.get(k));
              }
              solver.synchronize();
              outcomes.add("factored");
            } catch (dev.gpucoll.linalg.FactorizationException e) {
              outcomes.add(e.getMessage());
            }
          }
        } finally {
          r.awaitPeers();
          grid.close();
          r.awaitPeers();
          for (DeviceMatrix p : parts) {
            p.close();
          }
          solver.close();
        }
        return outcomes;
      });
      List<String> wrong = new ArrayList<>();
      for (int rank = 0; rank < got.size(); rank++) {
        for (int k = 0; k < expected.size(); k++) {
          if (!expected.get(k).equals(got.get(rank).get(k))) {
            wrong.add("rank " + rank + " case " + k + ": " + got.get(rank).get(k));
          }
        }
      }
      return wrong;
    }
  }

  /** The grids of ranks sharing this GPU that --shared-grids factors on: those that stopped before. */
  private static final int[][] SHARED_GRIDS = {{1, 3}, {3, 1}, {2, 1}, {2, 2}};

  /** R factorizations on one shared grid, and how many stopped. */
  private record SharedGridRuns(String factor, int n, int nb, int np, int nq, int runs, int stops,
      List<String> why) {
    String line() {
      return "shared grid " + np + "x" + nq + " " + factor + " n=" + n + " nb=" + nb + ": " + runs + " runs, " + stops
          + " stops" + (why.isEmpty() ? "" : ": " + String.join(" | ", why));
    }
  }

  /**
   * {@code repeats} factorizations on an np × nq grid of ranks sharing the GPU (the default route:
   * the staged path), each a fresh matrix; a stop (any failure of a run) is counted and the group
   * formed anew for the runs left.
   */
  private static SharedGridRuns sharedGridRuns(String factor, int n, int nb, int np, int nq, int repeats) {
    boolean spd = factor.equals("potrf");
    Descriptor da = Descriptor.of(n, n, nb, nb, np, nq);
    int stops = 0;
    int done = 0;
    List<String> why = new ArrayList<>();
    while (done < repeats) {
      java.util.concurrent.atomic.AtomicInteger finished = new java.util.concurrent.atomic.AtomicInteger();
      int left = repeats - done;
      try (RankGroup g = RankGroup.createDefaultRoute(np * nq, 0, Duration.ofSeconds(60), 8)) {
        g.onAll(Duration.ofSeconds(120 + 60L * left), r -> {
          ProcessGrid<GpuCommunicator> grid = ProcessGrid.of(r.comm, np, nq);
          grid.all().synchronize();
          r.awaitPeers();
          DeviceSolver solver = DeviceSolver.open(grid, Duration.ofSeconds(60));
          DeviceMatrix a = DeviceMatrix.allocate(da, grid.myRow(), grid.myCol());
          r.awaitPeers();
          try {
            for (int k = 0; k < left; k++) {
              a.fillRandom(20261207L + k, spd, solver.stream());
              solver.synchronize();
              r.awaitPeers();
              if (spd) {
                solver.potrf(a);
              } else {
                solver.getrf(a);
              }
              solver.synchronize();
              r.awaitPeers();
              if (r.rank == 0) {
                finished.incrementAndGet();
              }
            }
          } finally {
            r.awaitPeers();
            grid.close();
            r.awaitPeers();
            a.close();
            solver.close();
          }
          return null;
        });
        done += left;
      } catch (RuntimeException e) {
        stops++;
        done += finished.get() + 1;
        why.add(String.valueOf(e.getMessage()).lines().findFirst().orElse(""));
      }
    }
    return new SharedGridRuns(factor, n, nb, np, nq, repeats, stops, why);
  }

  private static String format(Row r) {
    return String.format(Locale.ROOT, "%s | %d | %d | %s | %.2f | %.0f | %.2f | %.0f | %.3f | %.3f", r.factor, r.n,
        r.nb, r.grid, r.oursMs, r.gflops(r.oursMs), r.anchorMs, r.gflops(r.anchorMs), r.anchorMs / r.oursMs,
        r.residual);
  }

  private static List<Integer> ints(String s) {
    List<Integer> out = new ArrayList<>();
    for (String x : s.split(",")) {
      out.add(Integer.parseInt(x.trim()));
    }
    return out;
  }

  /** Ours on a P × Q grid of threads: the median time and the solve's residual. */
  private static Row ours(String factor, int n, int nb, int np, int nq, int repeat, double anchorMs) {
    boolean spd = factor.equals("potrf");
    long seed = 20261206L + n;
    Descriptor da = Descriptor.of(n, n, nb, nb, np, nq);
    Descriptor db = Descriptor.of(n, 1, nb, nb, np, nq);
    double[] times = new double[repeat];
    double[] x = new double[n];
    System.out.println("  " + factor + " n=" + n + " nb=" + nb + " on " + np + " x " + nq + " ...");
    try (RankGroup g = RankGroup.createDefaultRoute(np * nq, 0, Duration.ofMinutes(2), 8)) {
      g.onAll(Duration.ofMinutes(10), r -> {
        // cudaFree waits for the whole device: nothing is freed until every rank has left its last collective
        // (the grid's close included), or a rank's free would wait for a peer's spinning kernel, and that peer for it.
        ProcessGrid<GpuCommunicator> grid = ProcessGrid.of(r.comm, np, nq);
        // Opening loads code and allocates, which may wait for the whole device: only once no rank's
        // kernel of the grid's forming still runs.
        grid.all().synchronize();
        r.awaitPeers();
        DeviceSolver solver = DeviceSolver.open(grid);
        DeviceMatrix a = DeviceMatrix.allocate(da, grid.myRow(), grid.myCol());
        DeviceMatrix b = DeviceMatrix.allocate(db, grid.myRow(), grid.myCol());
        r.awaitPeers();
        try {
          int[] pivots = null;
          for (int k = -1; k < repeat; k++) {
            a.fillRandom(seed, spd, solver.stream());
            solver.synchronize();
            r.awaitPeers();
            long t0 = System.nanoTime();
            if (spd) {
              solver.potrf(a);
            } else {
              pivots = solver.getrf(a);
            }
            solver.synchronize();
            double ms = (System.nanoTime() - t0) / 1e6;
            if (k >= 0) {
              synchronized (times) {
                times[k] = Math.max(times[k], ms);
              }
            }
          }
          b.fillRandom(seed + 1, false, solver.stream());
          if (spd) {
            solver.potrs(a, b);
          } else {
            solver.getrs(a, pivots, b);
          }
          LocalMatrix mine = solver.download(b);
          synchronized (x) {
            mine.gather(x, n);
          }
        } finally {
          r.awaitPeers();
          grid.close();
          r.awaitPeers();
          b.close();
          a.close();
          solver.close();
        }
        return null;
      });
      double residual = g.onAll(Duration.ofMinutes(5), r -> r.rank == 0 ? residual(n, nb, seed, spd, x) : 0.0).get(0);
      java.util.Arrays.sort(times);
      return new Row(factor, n, nb, np + "x" + nq, times[repeat / 2], anchorMs, residual);
    }
  }

  /**
   * cuSOLVERMp's getrf / potrf 1 × 1 on the same matrix, timed as ours: on the ncclComm_t of a
   * one-rank group of ours, then on a plain NCCL communicator (ncclCommInitRank).
   */
  private static List<Row> cuSolverMp(String factor, int n, int nb, int repeat, double anchorMs) {
    boolean spd = factor.equals("potrf");
    Descriptor da = Descriptor.of(n, n, nb, nb, 1, 1);
    List<Row> out = new ArrayList<>();
    try (RankGroup g = RankGroup.create(1, 0, null, Duration.ofMinutes(2), 8)) {
      g.onAll(Duration.ofMinutes(10), r -> {
        org.bytedeco.cuda.nccl.ncclComm plain = CuSolverMpCheck.plainNcclComm(0);
        long ipiv = CudaNative.malloc(8L * dev.gpucoll.cusolvermp.CuSolverMp.pivotCount(da, 0));
        try (DeviceMatrix a = DeviceMatrix.allocate(da, 0, 0);
            dev.gpucoll.cusolvermp.CuSolverMp ours = dev.gpucoll.cusolvermp.CuSolverMp.open(r.comm, 1, 1);
            dev.gpucoll.cusolvermp.CuSolverMp bare = dev.gpucoll.cusolvermp.CuSolverMp.onNcclComm(plain.address(), 0,
                r.comm.stream(), 1, 1)) {
          for (dev.gpucoll.cusolvermp.CuSolverMp mp : List.of(ours, bare)) {
            double[] times = new double[repeat];
            for (int k = -1; k < repeat; k++) {
              a.fillRandom(20261206L + n, spd, r.comm.stream());
              r.comm.synchronize();
              long t0 = System.nanoTime();
              if (spd) {
                mp.potrf(dev.gpucoll.cusolvermp.CuSolverMp.Fill.LOWER, a.address(), da);
              } else {
                mp.getrf(a.address(), da, ipiv);
              }
              r.comm.synchronize();
              if (k >= 0) {
                times[k] = (System.nanoTime() - t0) / 1e6;
              }
            }
            java.util.Arrays.sort(times);
            out.add(Row.cuSolverMp(factor, n, nb, mp == ours ? "our ncclComm_t" : "plain NCCL", times[repeat / 2],
                anchorMs));
          }
        } finally {
          CudaNative.free(ipiv);
          org.bytedeco.cuda.global.nccl.ncclCommDestroy(plain);
        }
        return null;
      });
    } catch (RuntimeException | LinkageError e) {
      System.out.println("cuSOLVERMp " + factor + " n=" + n + ": not run: " + e);
    }
    return out;
  }

  /** Runs one cuSOLVERMp QR / eigensolver case, prints and keeps its result; false when it failed. */
  private static boolean qrEig(List<CuSolverMpQrEig.Result> results, String grid, int n,
      java.util.concurrent.Callable<CuSolverMpQrEig.Result> run) {
    try {
      CuSolverMpQrEig.Result res = run.call();
      results.add(res);
      System.out.println(res.line());
      return res.passes();
    } catch (Exception | LinkageError e) {
      System.out.println("cuSOLVERMp QR / eigensolver " + grid + " n=" + n + ": not run: " + e);
      return false;
    }
  }

  /** "1x1,2x2" as {P, Q} pairs. */
  private static List<int[]> grids(String list) {
    List<int[]> out = new ArrayList<>();
    for (String g : list.split(",")) {
      String[] pq = g.split("x");
      if (pq.length != 2) {
        throw new IllegalArgumentException("a grid is PxQ, e.g. 2x2: " + g);
      }
      out.add(new int[] {Integer.parseInt(pq[0]), Integer.parseInt(pq[1])});
    }
    return out;
  }

  /**
   * ‖B − A X‖₂ / (‖A‖_F ‖X‖₂ n ε) with A and B generated again on this thread's device (1 × 1),
   * cuBLAS dgemv and dnrm2: apart from the routines that made X.
   */
  static double residual(int n, int nb, long seed, boolean spd, double[] x) {
    Descriptor da = Descriptor.of(n, n, nb, nb, 1, 1);
    Descriptor db = Descriptor.of(n, 1, nb, nb, 1, 1);
    long dx = CudaNative.malloc(8L * n);
    cublasContext blas = new cublasContext();
    try (DeviceMatrix a = DeviceMatrix.allocate(da, 0, 0); DeviceMatrix b = DeviceMatrix.allocate(db, 0, 0);
        DoublePointer hx = new DoublePointer(x); DoublePointer minusOne = new DoublePointer(1).put(-1.0);
        DoublePointer one = new DoublePointer(1).put(1.0); DoublePointer out = new DoublePointer(3)) {
      a.fillRandom(seed, spd, 0);
      b.fillRandom(seed + 1, false, 0);
      check(cudart.cudaDeviceSynchronize(), "cudaDeviceSynchronize");
      check(cublas.cublasCreate_v2(blas), "cublasCreate");
      CudaNative.memcpyAsync(dx, hx.address(), 8L * n, 0);
      check(cudart.cudaDeviceSynchronize(), "cudaDeviceSynchronize");
      check(cublas.cublasDnrm2_v2(blas, (int) Math.min(Integer.MAX_VALUE, (long) n * n), ptr(a.address()), 1,
          out.position(0)), "cublasDnrm2");
      if ((long) n * n > Integer.MAX_VALUE) { // dnrm2 takes an int count: the F-norm by columns
        double s = 0;
        for (int j = 0; j < n; j++) {
          check(cublas.cublasDnrm2_v2(blas, n, ptr(a.address() + 8L * j * n), 1, out.position(0)), "cublasDnrm2");
          s += out.get(0) * out.get(0);
        }
        out.put(0, Math.sqrt(s));
      }
      double normA = out.position(0).get(0);
      check(cublas.cublasDnrm2_v2(blas, n, ptr(dx), 1, out), "cublasDnrm2");
      double normX = out.get(0);
      check(cublas.cublasDgemv_v2(blas, cublas.CUBLAS_OP_N, n, n, minusOne, ptr(a.address()), n, ptr(dx), 1, one,
          ptr(b.address()), 1), "cublasDgemv");
      check(cublas.cublasDnrm2_v2(blas, n, ptr(b.address()), 1, out), "cublasDnrm2");
      double normR = out.get(0);
      return normR / (normA * normX * n * EPS);
    } finally {
      cublas.cublasDestroy_v2(blas);
      CudaNative.free(dx);
    }
  }

  /** cuSOLVER's getrf / potrf of the whole matrix in one call on this device: the median time. */
  private static double anchorMs(String factor, int n, int repeat) {
    boolean spd = factor.equals("potrf");
    Descriptor da = Descriptor.of(n, n, 1024, 1024, 1, 1);
    cusolverDnContext solver = new cusolverDnContext();
    check(cusolver.cusolverDnCreate(solver), "cusolverDnCreate");
    long work = 0;
    long ipiv = CudaNative.malloc(4L * n);
    long info = CudaNative.malloc(8);
    double[] times = new double[repeat];
    try (DeviceMatrix a = DeviceMatrix.allocate(da, 0, 0); IntPointer lwork = new IntPointer(1)) {
      DoublePointer pa = ptr(a.address());
      check(spd ? cusolver.cusolverDnDpotrf_bufferSize(solver, cublas.CUBLAS_FILL_MODE_LOWER, n, pa, n, lwork)
          : cusolver.cusolverDnDgetrf_bufferSize(solver, n, n, pa, n, lwork), "bufferSize");
      work = CudaNative.malloc(8L * lwork.get());
      for (int k = -1; k < repeat; k++) {
        a.fillRandom(20261206L + n, spd, 0);
        check(cudart.cudaDeviceSynchronize(), "cudaDeviceSynchronize");
        long t0 = System.nanoTime();
        check(spd ? cusolver.cusolverDnDpotrf(solver, cublas.CUBLAS_FILL_MODE_LOWER, n, pa, n, ptr(work), lwork.get(),
            new IntPointer(CudaNative.ptr(info)))
            : cusolver.cusolverDnDgetrf(solver, n, n, pa, n, ptr(work), new IntPointer(CudaNative.ptr(ipiv)),
                new IntPointer(CudaNative.ptr(info))), "cuSOLVER factor");
        check(cudart.cudaDeviceSynchronize(), "cudaDeviceSynchronize");
        if (k >= 0) {
          times[k] = (System.nanoTime() - t0) / 1e6;
        }
      }
    } finally {
      cusolver.cusolverDnDestroy(solver);
      CudaNative.free(work);
      CudaNative.free(ipiv);
      CudaNative.free(info);
    }
    java.util.Arrays.sort(times);
    return times[repeat / 2];
  }

  private static DoublePointer ptr(long address) {
    return new DoublePointer(CudaNative.ptr(address));
  }

  private static void check(int status, String call) {
    if (status != 0) {
      throw new IllegalStateException(call + " failed: status " + status);
    }
  }
}
