package dev.gpucoll.examples;

import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.core.CommunicatorFactory;
import dev.gpucoll.core.config.GpuCollConf;
import dev.gpucoll.core.rendezvous.LocalRendezvous;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * A long random soak of the host backend: {@code HostSoak <ranks> <calls> [seed]}. Ranks are threads
 * of this JVM over one shared-memory segment (the protocol code is the same as across executor
 * JVMs). Every call draws, from a seed all ranks share, a collective, an integer type (INT32 or
 * INT64, so the reference is exact), a reduction op and a count (mostly small, sometimes past the
 * one-shot, LL and chunk limits); each rank fills its send buffer from (call, rank, index) alone and
 * checks its result against a reference it computes itself, independently of the library, with
 * wrapping long arithmetic. Prints one line per 10% and a final table; exits 1 on any wrong result.
 */
public final class HostSoak {
  private static final String[] KINDS = {"allReduce", "allGather", "reduceScatter", "allToAll", "allToAllv",
      "broadcast", "barrier"};

  private HostSoak() {}

  public static void main(String[] args) throws Exception {
    int n = Integer.parseInt(args[0]);
    long calls = Long.parseLong(args[1]);
    long seed = args.length > 2 ? Long.parseLong(args[2]) : 20261201L;
    GpuCollConf conf = GpuCollConf.of(Map.of("spark.gpucoll.timeout", "60s", "spark.gpucoll.backend", "host"));
    ExecutorService pool = Executors.newFixedThreadPool(n);
    long t0 = System.nanoTime();
    List<Future<long[]>> futures = new ArrayList<>();
    for (int r = 0; r < n; r++) {
      int rank = r;
      futures.add(pool.submit(() -> {
        try (LocalRendezvous rv = LocalRendezvous.join("soak", rank, n);
            Communicator comm = CommunicatorFactory.create(rv, conf, "localhost")) {
          return run(comm, calls, seed);
        }
      }));
    }
    long[] total = new long[KINDS.length * 2];
    for (Future<long[]> f : futures) {
      long[] c = f.get();
      for (int i = 0; i < total.length; i++) {
        total[i] += c[i];
      }
    }
    pool.shutdown();
    double secs = (System.nanoTime() - t0) / 1e9;
    long wrong = 0;
    System.out.printf("%-14s %12s %8s%n", "collective", "rank-calls", "wrong");
    for (int k = 0; k < KINDS.length; k++) {
      System.out.printf("%-14s %12d %8d%n", KINDS[k], total[2 * k], total[2 * k + 1]);
      wrong += total[2 * k + 1];
    }
    System.out.printf("%d ranks, %d calls per rank, seed %d, %.1f s, wrong results: %d%n", n, calls, seed, secs,
        wrong);
    System.exit(wrong == 0 ? 0 : 1);
  }

  /** Per collective kind: {rank-calls, wrong}. */
  private static long[] run(Communicator comm, long calls, long seed) {
    int n = comm.size();
    int me = comm.rank();
    long[] counts = new long[KINDS.length * 2];
    SplittableRandom shared = new SplittableRandom(seed);
    for (long call = 0; call < calls; call++) {
      int kind = shared.nextInt(KINDS.length);
      DataType type = shared.nextBoolean() ? DataType.INT32 : DataType.INT64;
      ReduceOp op = new ReduceOp[] {ReduceOp.SUM, ReduceOp.MIN, ReduceOp.MAX, ReduceOp.PROD}[shared.nextInt(4)];
      int roll = shared.nextInt(1000);
      int count = roll < 900 ? shared.nextInt(65) : roll < 995 ? shared.nextInt(20_000) : shared.nextInt(300_000);
      int root = shared.nextInt(n);
      long salt = shared.nextLong();
      if (me == 0 && calls >= 10 && call % (calls / 10) == 0) {
        System.out.println("call " + call + " of " + calls);
      }
      boolean ok = switch (KINDS[kind]) {
        case "allReduce" -> {
          long[] send = fill(type, count, me, salt, 0);
          long[] out = exchange(comm, type, send, count, (s, r) -> comm.allReduce(s, r, count, type, op));
          boolean good = true;
          for (int i = 0; i < count && good; i++) {
            good = out[i] == reduce(type, op, n, salt, i);
          }
          yield good;
        }
        case "allGather" -> {
          long[] out = exchange(comm, type, fill(type, count, me, salt, 0), (long) count * n,
              (s, r) -> comm.allGather(s, r, count, type));
          boolean good = true;
          for (int p = 0; p < n && good; p++) {
            for (int i = 0; i < count && good; i++) {
              good = out[p * count + i] == value(type, p, salt, i);
            }
          }
          yield good;
        }
        case "reduceScatter" -> {
          long[] out = exchange(comm, type, fill(type, count * n, me, salt, 0), count,
              (s, r) -> comm.reduceScatter(s, r, count, type, op));
          boolean good = true;
          for (int i = 0; i < count && good; i++) {
            good = out[i] == reduce(type, op, n, salt, me * count + i);
          }
          yield good;
        }
        case "allToAll" -> {
          long[] out = exchange(comm, type, fill(type, count * n, me, salt, 0), (long) count * n,
              (s, r) -> comm.allToAll(s, r, count, type));
          boolean good = true;
          for (int p = 0; p < n && good; p++) {
            for (int i = 0; i < count && good; i++) {
              good = out[p * count + i] == value(type, p, salt, me * count + i);
            }
          }
          yield good;
        }
        case "allToAllv" -> {
          // counts[p][q]: elements p sends q, from the shared seed; displacements packed in order.
          int[][] m = new int[n][n];
          for (int p = 0; p < n; p++) {
            for (int q = 0; q < n; q++) {
              m[p][q] = count == 0 ? 0 : (int) Math.floorMod(salt * 31 + p * 7919L + q * 104729L, count + 1);
            }
          }
          long[] sc = new long[n];
          long[] sd = new long[n];
          long[] rc = new long[n];
          long[] rd = new long[n];
          long sTotal = 0;
          long rTotal = 0;
          for (int q = 0; q < n; q++) {
            sc[q] = m[me][q];
            sd[q] = sTotal;
            sTotal += sc[q];
            rc[q] = m[q][me];
            rd[q] = rTotal;
            rTotal += rc[q];
          }
          long[] out = exchange(comm, type, fill(type, (int) sTotal, me, salt, 0), rTotal,
              (s, r) -> comm.allToAllv(s, sc, sd, r, rc, rd, type));
          boolean good = true;
          for (int p = 0; p < n && good; p++) {
            long pOff = 0; // where rank p's block for me starts in p's send buffer
            for (int q = 0; q < me; q++) {
              pOff += m[p][q];
            }
            for (int i = 0; i < rc[p] && good; i++) {
              good = out[(int) rd[p] + i] == value(type, p, salt, (int) pOff + i);
            }
          }
          yield good;
        }
        case "broadcast" -> {
          long[] out = exchange(comm, type, fill(type, count, me, salt, 0), count,
              (s, r) -> comm.broadcast(s, r, count, type, root));
          boolean good = true;
          for (int i = 0; i < count && good; i++) {
            good = out[i] == value(type, root, salt, i);
          }
          yield good;
        }
        default -> {
          comm.barrier();
          yield true;
        }
      };
      counts[2 * kind]++;
      if (!ok) {
        counts[2 * kind + 1]++;
        System.out.println("WRONG: rank " + me + " call " + call + " " + KINDS[kind] + " " + type + " " + op
            + " count " + count);
      }
    }
    return counts;
  }

  private interface Call {
    void run(CommBuffer send, CommBuffer recv);
  }

  /** Runs the call on typed buffers holding {@code send}; returns the receive buffer widened to long. */
  private static long[] exchange(Communicator comm, DataType type, long[] send, long recvCount, Call call) {
    int rn = (int) Math.max(1, recvCount);
    if (type == DataType.INT32) {
      int[] s = new int[Math.max(1, send.length)];
      for (int i = 0; i < send.length; i++) {
        s[i] = (int) send[i];
      }
      int[] r = new int[rn];
      call.run(CommBuffer.of(s), CommBuffer.of(r));
      return Arrays.stream(r).asLongStream().toArray();
    }
    long[] s = Arrays.copyOf(send, Math.max(1, send.length));
    long[] r = new long[rn];
    call.run(CommBuffer.of(s), CommBuffer.of(r));
    return r;
  }

  private static long[] fill(DataType type, int count, int rank, long salt, int from) {
    long[] out = new long[count];
    for (int i = 0; i < count; i++) {
      out[i] = value(type, rank, salt, from + i);
    }
    return out;
  }

  /** Element i of rank r's send buffer: a hash of (salt, r, i), in the type's range. */
  static long value(DataType type, int rank, long salt, int i) {
    long h = salt ^ (rank * 0x9E3779B97F4A7C15L) ^ (i * 0xC2B2AE3D27D4EB4FL);
    h ^= h >>> 31;
    h *= 0xBF58476D1CE4E5B9L;
    h ^= h >>> 29;
    return type == DataType.INT32 ? (int) h : h;
  }

  /** The reference: op over ranks 0..n-1 of element i, wrapping in the type's width. */
  static long reduce(DataType type, ReduceOp op, int n, long salt, int i) {
    long acc = value(type, 0, salt, i);
    for (int r = 1; r < n; r++) {
      long v = value(type, r, salt, i);
      acc = switch (op) {
        case SUM -> acc + v;
        case PROD -> acc * v;
        case MIN -> Math.min(acc, v);
        case MAX -> Math.max(acc, v);
        case AVG -> throw new IllegalArgumentException("not drawn");
      };
      if (type == DataType.INT32) {
        acc = (int) acc;
      }
    }
    return acc;
  }
}
