package dev.gpucoll.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.examples.linalg.SummaPowerIteration;
import dev.gpucoll.examples.moe.MoeAllToAll;
import dev.gpucoll.examples.training.DigitsTraining;
import java.util.Arrays;
import java.util.List;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The three examples at small sizes as barrier stages of 4 ranks in one Spark local[4] context
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

  @Test
  void badSizesFailOnTheDriverWithTheReason() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> SummaPowerIteration.runDistributed(jsc, new SummaPowerIteration.Config(RANKS, 100, 8, 1, 5)));
    assertTrue(e.getMessage().startsWith("n = 100 must be a multiple of block size 8"), e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> new DigitsTraining.Config(RANKS, 10, 121, 0.5f, 1));
  }
}
