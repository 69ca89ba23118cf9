package dev.gpucoll.cuda.check.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.Communicator;
import dev.gpucoll.check.CorrectnessMatrix;
import dev.gpucoll.core.CommunicatorFactory;
import dev.gpucoll.core.config.GpuCollConf;
import dev.gpucoll.core.rendezvous.LocalRendezvous;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The job's checks take the correctness matrix's cases, then MAXLOC/MINLOC of every pair type: run
 * here on the host backend, 3 ranks as threads.
 */
class RankChecksTest {

  @Test
  void theMatrixCasesThatFitPassOnEveryRankOfTheHostBackend() throws Exception {
    int n = 3;
    long maxBytes = 64 << 10;
    GpuCollConf conf = GpuCollConf.of(Map.of("spark.gpucoll.timeout", "60s", "spark.gpucoll.backend", "host"));
    ExecutorService pool = Executors.newFixedThreadPool(n);
    List<Future<List<String>>> ranks = new ArrayList<>();
    for (int r = 0; r < n; r++) {
      int rank = r;
      ranks.add(pool.submit(() -> {
        try (LocalRendezvous rv = LocalRendezvous.join("rank-checks", rank, n);
            Communicator comm = CommunicatorFactory.create(rv, conf, "localhost")) {
          return new RankChecks(comm, Memory.host(), "check").runAll(maxBytes, true);
        }
      }));
    }
    long matrix = CorrectnessMatrix.load().casesAt(CorrectnessMatrix.AUTO, n, true, new SplittableRandom(1)).size();
    long pairs = CorrectnessMatrix.load().pairCasesAt(CorrectnessMatrix.AUTO, n, true).size();
    assertEquals(2 * 8 * 2 + 2 * 2, pairs, "every pair type and op at two counts, two in place");
    Pattern checks = Pattern.compile("CHECKS stage=check memory=host rank=\\d cases=(\\d+) failures=(\\d+)");
    Pattern note = Pattern.compile("NOTE .* (\\d+) matrix cases need buffers above");
    for (Future<List<String>> f : ranks) {
      List<String> lines = f.get(5, TimeUnit.MINUTES);
      Matcher m = checks.matcher(lines.get(0));
      assertTrue(m.find(), lines.get(0));
      assertEquals("0", m.group(2), String.join("\n", lines));
      long beyond = lines.stream().map(note::matcher).filter(Matcher::find).mapToLong(x -> Long.parseLong(x.group(1)))
          .sum();
      assertTrue(beyond > 0, "some quick cases exceed 64 KiB");
      assertEquals(matrix - beyond + pairs + 2, Long.parseLong(m.group(1)),
          "every matrix case that fits, the MAXLOC/MINLOC cases, split and group()'s agreement");
    }
    pool.shutdown();
  }
}
