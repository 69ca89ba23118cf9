package dev.gpucoll.cuda;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.cuda.eligibility.BufferRegistration;
import java.util.Map;

/**
 * Host cost of {@link GroupRoute#route} on the per-call path, without a GPU: a main program, not a
 * test, so the build never runs it. Run after test-compile with the test classpath:
 * {@code java -cp target/classes:target/test-classes:<deps> dev.gpucoll.cuda.RouteBench [calls]}.
 */
public final class RouteBench {
  private RouteBench() {}

  static volatile Object sink;

  public static void main(String[] args) {
    long calls = args.length > 0 ? Long.parseLong(args[0]) : 10_000_000L;
    // First, as GpuBench times launches: a fresh JVM, 20k calls, best of 3 (mostly not yet compiled by C2).
    GroupRoute cold = GroupRouteTest.route(GroupRouteTest.cluster(1, 1, true), Map.of());
    double best = Double.MAX_VALUE;
    for (int rep = 0; rep < 3; rep++) {
      long t0 = System.nanoTime();
      for (int i = 0; i < 20_000; i++) {
        sink = cold.route(Collective.ALL_REDUCE, 8, DataType.FLOAT32, ReduceOp.SUM, BufferRegistration.UNKNOWN);
      }
      best = Math.min(best, (System.nanoTime() - t0) / 20_000.0);
    }
    System.out.printf("cold: 1 rank allReduce 8 B, 20k calls, best of 3: %.1f ns/call%n", best);
    for (int pass = 0; pass < 2; pass++) {
      System.out.println(pass == 0 ? "warm-up pass" : "measured pass");
      for (int n : new int[] {1, 2, 8}) {
        GroupRoute r = GroupRouteTest.route(GroupRouteTest.cluster(1, n, true), Map.of());
        time(n + " ranks allReduce fp32 SUM 8 B", r, Collective.ALL_REDUCE, 8, calls);
      }
      GroupRoute r8 = GroupRouteTest.route(GroupRouteTest.cluster(1, 8, true), Map.of());
      time("8 ranks allGather 4 KB", r8, Collective.ALL_GATHER, 4096, calls);
    }
  }

  private static void time(String label, GroupRoute r, Collective c, long bytes, long calls) {
    Object last = null;
    for (long i = 0; i < calls / 10; i++) {
      last = r.route(c, bytes, DataType.FLOAT32, ReduceOp.SUM, BufferRegistration.UNKNOWN);
    }
    long t0 = System.nanoTime();
    for (long i = 0; i < calls; i++) {
      last = r.route(c, bytes, DataType.FLOAT32, ReduceOp.SUM, BufferRegistration.UNKNOWN);
    }
    long ns = System.nanoTime() - t0;
    sink = last;
    System.out.printf("%-34s %7.1f ns/call  (%s)%n", label, (double) ns / calls, ((GroupRoute.Route) last).algorithm());
  }
}
