package dev.gpucoll.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.Communicator;
import dev.gpucoll.core.CommunicatorFactory;
import dev.gpucoll.core.config.GpuCollConf;
import dev.gpucoll.core.rendezvous.LocalRendezvous;
import dev.gpucoll.examples.linalg.Factorizations;
import dev.gpucoll.examples.linalg.Factorizations.Routine;
import dev.gpucoll.linalg.FactorizationException;
import dev.gpucoll.examples.linalg.SolveSystem;
import dev.gpucoll.examples.linalg.SummaPowerIteration;
import java.util.ArrayList;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.BiFunction;
import dev.gpucoll.examples.moe.MoeAllToAll;
import dev.gpucoll.examples.training.DigitsTraining;
import java.util.Arrays;
import java.util.List;
import org.apache.spark.SparkException;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The examples at small sizes as barrier stages of 4 ranks in one Spark local[4] context
 * with the plugin (host backend), each checked against its one-process computation.
 */
class ExamplesTest {
  static final int RANKS = 4;
  static JavaSparkContext jsc;

  @BeforeAll
  static void start() {
    jsc = ExampleSpark.start("gpucoll-examples-test", "local[" + RANKS + "]", RANKS);
  }

  @AfterAll
  static void stop() {
    if (jsc != null) {
      jsc.stop();
    }
  }

  @Test
  void dataParallelTrainingMatchesOneProcess() {
    DigitsTraining.Config c = new DigitsTraining.Config(RANKS, 60, 120, 0.5f, 7);
    DigitsTraining.Dataset d = DigitsTraining.load(c.seed());
    assertEquals(1437, d.train().rows());
    assertEquals(360, d.test().rows());
    List<DigitsTraining.Result> ranks = DigitsTraining.trainDistributed(jsc, d, c);
    assertEquals(RANKS, ranks.size());
    DigitsTraining.Result single = DigitsTraining.trainSingleProcess(d, c);
    DigitsTraining.Comparison cmp = DigitsTraining.compare(c, d, ranks, single);
    assertTrue(cmp.ranksAgree(), "every rank ends with the same parameters");
    assertTrue(cmp.maxLossRelativeError() <= 1e-4, "loss differs by " + cmp.maxLossRelativeError());
    assertTrue(Math.abs(cmp.distributedTestAccuracy() - cmp.singleTestAccuracy()) <= 0.5, cmp.toString());
    // it learned: loss fell and the test accuracy is far above chance
    float[] losses = ranks.get(0).losses();
    assertTrue(losses[losses.length - 1] < losses[0] / 3, Arrays.toString(losses));
    assertTrue(cmp.distributedTestAccuracy() > 85, cmp.toString());
    assertTrue(cmp.passes(), cmp.toString());
    assertTrue(ranks.get(0).commNanos() > 0 && ranks.get(0).computeNanos() > 0);
  }

  @Test
  void bf16GradientsHalveTheBytesAndStillLearn() {
    DigitsTraining.Config c = new DigitsTraining.Config(RANKS, 60, 120, 0.5f, 7,
        DigitsTraining.GradientType.BF16);
    DigitsTraining.Dataset d = DigitsTraining.load(c.seed());
    List<DigitsTraining.Result> ranks = DigitsTraining.trainDistributed(jsc, d, c);
    DigitsTraining.Comparison cmp = DigitsTraining.compare(c, d, ranks,
        DigitsTraining.trainSingleProcess(d, c));
    assertTrue(cmp.passes(), cmp.toString());
    assertTrue(cmp.maxLossRelativeError() > 0, "bf16 rounding shows in the loss: " + cmp);
  }

  @Test
  void moeAllToAllMatchesOneProcessBitForBit() {
    MoeAllToAll.Config c = new MoeAllToAll.Config(RANKS, 256, 16, 2, 11);
    List<MoeAllToAll.Result> ranks = MoeAllToAll.runDistributed(jsc, c);
    assertEquals(List.of(), MoeAllToAll.mismatches(c, ranks));
    // routing is uneven: the ranks receive different numbers of tokens
    long[] received = new long[RANKS];
    for (MoeAllToAll.Result r : ranks) {
      assertEquals(256, Arrays.stream(r.tokensTo()).sum());
      for (int q = 0; q < RANKS; q++) {
        received[q] += r.tokensTo()[q];
      }
    }
    assertTrue(Arrays.stream(received).distinct().count() > 1, Arrays.toString(received));
  }

  @Test
  void summaAndPowerIterationOnATwoByTwoGridMatchOneProcess() {
    SummaPowerIteration.Config c = new SummaPowerIteration.Config(RANKS, 96, 8, 30, 5);
    List<SummaPowerIteration.Result> ranks = SummaPowerIteration.runDistributed(jsc, c);
    assertEquals(List.of("0,0", "0,1", "1,0", "1,1"), ranks.stream().map(r -> r.p() + "," + r.q()).toList());
    SummaPowerIteration.Check check = SummaPowerIteration.check(c, ranks, SummaPowerIteration.reference(c));
    assertTrue(check.passes(), check.toString());
  }

  /** The example's check of {@code routine} on {@code c} through Spark: the grid's run against one rank's. */
  private Factorizations.Check checkThroughSpark(Routine routine, Factorizations.Config c) {
    return Factorizations.check(routine, c, Factorizations.runDistributed(routine, jsc, c),
        Factorizations.runDistributed(routine, jsc, c.onOneRank()));
  }

  @Test
  void luWithPartialPivotingOnATwoByTwoGridMatchesOneRank() {
    Factorizations.Config c = new Factorizations.Config(RANKS, 101, 8, 3); // ragged: 101 is no multiple of 8 x 2
    Factorizations.Check check = checkThroughSpark(Routine.LU, c);
    assertTrue(check.passes(), check.toString());
    // gpucoll-linalg's host routines give every grid the same pivots and the same bits
    assertTrue(check.samePivots(), check.toString());
    assertEquals(0.0, check.maxFactorDifference(), check.toString());
  }

  @Test
  void choleskyOnATwoByTwoGridMatchesOneRank() {
    Factorizations.Config c = new Factorizations.Config(RANKS, 101, 8, 3);
    Factorizations.Check check = checkThroughSpark(Routine.CHOLESKY, c);
    assertTrue(check.passes(), check.toString());
    assertEquals(0.0, check.maxFactorDifference(), check.toString());
  }

  @Test
  void aSingularMatrixFailsTheStageNamingTheColumn() throws Exception {
    Factorizations.Config c = new Factorizations.Config(RANKS, 96, 8, 3, 37);
    SparkException e = assertThrows(SparkException.class, () -> Factorizations.runDistributed(Routine.LU, jsc, c));
    assertTrue(e.getMessage().contains("getrf: the matrix is singular: column 37 has no nonzero pivot"),
        e.getMessage());
    FactorizationException one = assertInstanceOf(FactorizationException.class,
        everyRank(1, (comm, cfg) -> Factorizations.factorRank(Routine.LU, comm, cfg), c.onOneRank()).get(0));
    assertEquals(37, one.column());
  }

  /** Every rank of a 2 x 3 grid (threads, host backend, no Spark) fails with the same error. */
  private static <T> List<Throwable> everyRank(int ranks, BiFunction<Communicator, Factorizations.Config, T> body,
      Factorizations.Config c) throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(ranks);
    GpuCollConf conf = GpuCollConf.of(Map.of("spark.gpucoll.timeout", "30s")).validate();
    String group = "factor-" + System.nanoTime();
    try {
      List<Future<T>> futures = new ArrayList<>();
      for (int r = 0; r < ranks; r++) {
        int rank = r;
        futures.add(pool.submit(() -> {
          try (LocalRendezvous rv = LocalRendezvous.join(group, rank, ranks);
              Communicator comm = CommunicatorFactory.create(rv, conf, "localhost")) {
            return body.apply(comm, c);
          }
        }));
      }
      List<Throwable> errors = new ArrayList<>();
      for (Future<T> f : futures) {
        try {
          f.get(60, TimeUnit.SECONDS);
          errors.add(null);
        } catch (java.util.concurrent.ExecutionException e) {
          errors.add(e.getCause());
        }
      }
      return errors;
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void singularAndIndefiniteMatricesFailOnEveryRankOfATwoByThreeGrid() throws Exception {
    for (int column : new int[] {0, 21, 47}) {
      Factorizations.Config c = new Factorizations.Config(6, 48, 8, 3, column);
      for (Throwable t : everyRank(6, (comm, cfg) -> Factorizations.factorRank(Routine.LU, comm, cfg), c)) {
        assertTrue(t instanceof FactorizationException, String.valueOf(t));
        assertEquals("getrf: the matrix is singular: column " + column + " has no nonzero pivot (U(" + column + ","
            + column + ") = 0; 0-based)", t.getMessage());
      }
      for (Throwable t : everyRank(6, (comm, cfg) -> Factorizations.factorRank(Routine.CHOLESKY, comm, cfg), c)) {
        assertTrue(t instanceof FactorizationException, String.valueOf(t));
        assertTrue(t.getMessage().startsWith("potrf: the matrix is not positive definite: the pivot of column "
            + column + " (0-based) is -"), t.getMessage());
      }
    }
    // and the same sizes without a defect factor on that grid as in one process
    Factorizations.Config ok = new Factorizations.Config(6, 48, 8, 3);
    assertEquals(java.util.Collections.nCopies(6, null),
        everyRank(6, (comm, cfg) -> Factorizations.factorRank(Routine.LU, comm, cfg), ok));
  }

  @Test
  void solveSystemRunsTheProductsLuAndCholeskyOnAnyShapeThroughSpark() {
    // n not a multiple of the block, the first block off process (0, 0), grids 2 x 2 and 1 x 4.
    for (SolveSystem.Config c : List.of(new SolveSystem.Config(false, 2, 2, 61, 8, 3, 1, 1, 5),
        new SolveSystem.Config(true, 1, 4, 45, 6, 2, 0, 3, 6))) {
      SolveSystem.Solution s = SolveSystem.run(jsc, c);
      assertEquals(c.ranks(), s.times().size());
      assertEquals(c.b().blockRows() * c.b().blockCols(), s.x().size());
      double err = SolveSystem.backwardError(c, s);
      assertTrue(err < 10, c + ": backward error " + err);
    }
  }

  @Test
  void badSizesFailOnTheDriverWithTheReason() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> SummaPowerIteration.runDistributed(jsc, new SummaPowerIteration.Config(RANKS, 100, 8, 1, 5)));
    assertTrue(e.getMessage().startsWith("n = 100 must be a multiple of block size 8"), e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> new DigitsTraining.Config(RANKS, 10, 121, 0.5f, 1));
  }
}
