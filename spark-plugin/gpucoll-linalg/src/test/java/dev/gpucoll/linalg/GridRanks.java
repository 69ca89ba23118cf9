package dev.gpucoll.linalg;

import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.ProcessGrid;
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

/** P × Q ranks of the host backend as threads, each with its grid; one body per rank, outcomes in rank order. */
final class GridRanks {
  private static final AtomicInteger GROUPS = new AtomicInteger();

  private GridRanks() {}

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
    T run(ProcessGrid<Communicator> grid) throws Exception;
  }

  static <T> List<Outcome<T>> run(int rows, int cols, Body<T> body) {
    return run(rows, cols, "20s", body);
  }

  static <T> List<Outcome<T>> run(int rows, int cols, String timeout, Body<T> body) {
    int n = rows * cols;
    GpuCollConf conf = GpuCollConf.of(Map.of("spark.gpucoll.timeout", timeout)).validate();
    String group = "linalg-" + GROUPS.incrementAndGet();
    ExecutorService pool = Executors.newFixedThreadPool(n);
    try {
      List<Future<T>> futures = new ArrayList<>();
      for (int r = 0; r < n; r++) {
        int rank = r;
        futures.add(pool.submit(() -> {
          try (LocalRendezvous rv = LocalRendezvous.join(group, rank, n);
              Communicator comm = CommunicatorFactory.create(rv, conf, "localhost");
              ProcessGrid<Communicator> grid = ProcessGrid.of(comm, rows, cols)) {
            return body.run(grid);
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

  /** Every rank's value, failing on the first error. */
  static <T> List<T> values(List<Outcome<T>> outcomes) {
    List<T> out = new ArrayList<>();
    for (Outcome<T> o : outcomes) {
      out.add(o.get());
    }
    return out;
  }
}
