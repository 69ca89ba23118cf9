package dev.gpucoll.core.host;

import dev.gpucoll.api.Communicator;
import dev.gpucoll.core.CommunicatorFactory;
import dev.gpucoll.core.config.GpuCollConf;
import dev.gpucoll.core.rendezvous.LocalRendezvous;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntFunction;

/** Runs one body per rank, each on its own thread with its own communicator, and collects outcomes. */
final class Ranks {
  private static final AtomicInteger GROUPS = new AtomicInteger();

  /** What one rank's body returned or threw. */
  record Outcome<T>(T value, Throwable error) {
    T get() {
      if (error != null) {
        throw new AssertionError("rank failed: " + error, error);
      }
      return value;
    }
  }

  interface Body<T> {
    T run(Communicator comm) throws Exception;
  }

  static GpuCollConf conf(String... kv) {
    Map<String, String> m = new java.util.HashMap<>();
    m.put("spark.gpucoll.timeout", "20s");
    for (int i = 0; i < kv.length; i += 2) {
      m.put("spark.gpucoll." + kv[i], kv[i + 1]);
    }
    return GpuCollConf.of(m).validate();
  }

  /**
   * {@link #conf} for a test of {@code backend}: "host-relay" asks for the relay across hosts; a test of
   * "host-ucx" is skipped where UCX cannot be used ({@link NeedsUcx}), since the group would relay.
   */
  static GpuCollConf confFor(String backend, String... kv) {
    if (backend.equals("host-ucx")) {
      NeedsUcx.assume();
    }
    String[] all = java.util.Arrays.copyOf(kv, kv.length + 2);
    all[kv.length] = "host.crossHost";
    all[kv.length + 1] = backend.equals("host-relay") ? "relay" : "auto";
    return conf(all);
  }

  static <T> List<Outcome<T>> run(int n, GpuCollConf conf, Body<T> body) {
    return run(n, conf, r -> "localhost", body);
  }

  /** Ranks on the hosts {@code hostOf} names (different hosts make a relay group). */
  static <T> List<Outcome<T>> run(int n, GpuCollConf conf, IntFunction<String> hostOf, Body<T> body) {
    String group = "test-" + GROUPS.incrementAndGet();
    ExecutorService pool = Executors.newFixedThreadPool(n);
    try {
      List<Future<T>> futures = new ArrayList<>();
      for (int r = 0; r < n; r++) {
        int rank = r;
        futures.add(pool.submit(() -> {
          try (LocalRendezvous rv = LocalRendezvous.join(group, rank, n);
              Communicator comm = CommunicatorFactory.create(rv, conf, hostOf.apply(rank))) {
            return body.run(comm);
          }
        }));
      }
      List<Outcome<T>> out = new ArrayList<>();
      for (Future<T> f : futures) {
        try {
          out.add(new Outcome<>(f.get(120, TimeUnit.SECONDS), null));
        } catch (ExecutionException e) {
          out.add(new Outcome<>(null, e.getCause()));
        } catch (TimeoutException | InterruptedException e) {
          throw new AssertionError("a rank hung for 120 s", e);
        }
      }
      return out;
    } finally {
      pool.shutdownNow();
    }
  }

  static <T> List<T> values(List<Outcome<T>> outcomes) {
    List<T> out = new ArrayList<>();
    for (Outcome<T> o : outcomes) {
      out.add(o.get());
    }
    return out;
  }
}
