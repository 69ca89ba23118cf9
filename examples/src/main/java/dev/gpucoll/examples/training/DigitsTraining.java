package dev.gpucoll.examples.training;

import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.core.host.HalfFloats;
import dev.gpucoll.examples.ExampleSpark;
import dev.gpucoll.spark.GpuCollectives;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.zip.GZIPInputStream;
import org.apache.spark.api.java.JavaSparkContext;

/**
 * Data-parallel training in a barrier stage: multinomial logistic regression on the UCI digits
 * (8×8 images, 10 classes; see resources/datasets/README.md). Each rank holds one shard of the
 * training set, computes the gradient of its part of the global batch, and the ranks all-reduce
 * the fp32 gradient (with the batch loss in its last element) every step.
 *
 * <p>The same seed and global batch give the same training in one process; the example runs both
 * and checks the loss curve (within 1e-4 relative) and the accuracy (within 0.5 points).
 *
 * <p>With {@code --grad bf16} the gradient travels as bf16 (half the bytes); the run then drifts
 * from the fp32 one within looser limits (5e-2 relative loss, 2 accuracy points).
 *
 * <p>Run: {@code scripts/example.sh training [--ranks 4] [--steps 150] [--batch 120] [--grad fp32|bf16]}.
 */
public final class DigitsTraining {
  static final String USAGE = "training [--ranks 4] [--steps 150] [--batch 120] [--lr 0.5]"
      + " [--seed 7] [--grad fp32|bf16] [--master local-cluster|local[N]]";
  static final int FEATURES = 64;
  static final int CLASSES = 10;
  static final double LOSS_TOLERANCE = 1e-4;
  static final double ACCURACY_TOLERANCE_POINTS = 0.5;
  // bf16 keeps 8 bits of mantissa: each step's gradient is off by up to 2^-9 relative, so the
  // run drifts from the fp32 one; it must still learn as well.
  static final double BF16_LOSS_TOLERANCE = 5e-2;
  static final double BF16_ACCURACY_TOLERANCE_POINTS = 2.0;

  private DigitsTraining() {}

  /** How the gradient travels: fp32, or bf16 (half the bytes; rounded once per step). */
  public enum GradientType { FP32, BF16 }

  /** What both trainings share. */
  public record Config(int ranks, int steps, int globalBatch, float learningRate, long seed,
      GradientType gradients) implements Serializable {
    public Config(int ranks, int steps, int globalBatch, float learningRate, long seed) {
      this(ranks, steps, globalBatch, learningRate, seed, GradientType.FP32);
    }

    public Config {
      if (gradients == null) {
        throw new IllegalArgumentException("gradient type is null (fp32 or bf16)");
      }
      if (ranks < 1 || steps < 1 || globalBatch < 1) {
        throw new IllegalArgumentException("ranks, steps and batch must be positive: " + this);
      }
      if (globalBatch % ranks != 0) {
        throw new IllegalArgumentException("the global batch (" + globalBatch + ") must split evenly"
            + " over " + ranks + " ranks");
      }
    }
  }

  /** Rows of 64 features scaled to [0, 1], and labels. */
  public record Split(float[] x, int[] y) implements Serializable {
    public int rows() {
      return y.length;
    }
  }

  public record Dataset(Split train, Split test) {}

  /** One training run: the loss of each step, the final parameters, and where the time went. */
  public record Result(int rank, float[] losses, float[] params, long computeNanos, long commNanos,
      String backend) implements Serializable {}

  /** The digits, shuffled with {@code seed}, 80 % for training and 20 % for test. */
  public static Dataset load(long seed) {
    List<float[]> rows = new ArrayList<>();
    List<Integer> labels = new ArrayList<>();
    try (InputStream raw = DigitsTraining.class.getResourceAsStream("/datasets/digits.csv.gz")) {
      if (raw == null) {
        throw new IllegalStateException("datasets/digits.csv.gz is not on the class path");
      }
      BufferedReader in = new BufferedReader(new InputStreamReader(new GZIPInputStream(raw),
          StandardCharsets.US_ASCII));
      for (String line = in.readLine(); line != null; line = in.readLine()) {
        String[] f = line.split(",");
        if (f.length != FEATURES + 1) {
          throw new IllegalStateException("digits.csv.gz line " + (rows.size() + 1) + " has "
              + f.length + " fields, expected " + (FEATURES + 1));
        }
        float[] x = new float[FEATURES];
        for (int i = 0; i < FEATURES; i++) {
          x[i] = Float.parseFloat(f[i]) / 16f;
        }
        rows.add(x);
        labels.add((int) Float.parseFloat(f[FEATURES]));
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read datasets/digits.csv.gz", e);
    }
    int[] order = new int[rows.size()];
    Arrays.setAll(order, i -> i);
    SplittableRandom rnd = new SplittableRandom(seed);
    for (int i = order.length - 1; i > 0; i--) {
      int j = rnd.nextInt(i + 1);
      int t = order[i];
      order[i] = order[j];
      order[j] = t;
    }
    int trainRows = order.length * 4 / 5;
    return new Dataset(pick(rows, labels, order, 0, trainRows),
        pick(rows, labels, order, trainRows, order.length));
  }

  private static Split pick(List<float[]> rows, List<Integer> labels, int[] order, int from, int to) {
    float[] x = new float[(to - from) * FEATURES];
    int[] y = new int[to - from];
    for (int i = from; i < to; i++) {
      System.arraycopy(rows.get(order[i]), 0, x, (i - from) * FEATURES, FEATURES);
      y[i - from] = labels.get(order[i]);
    }
    return new Split(x, y);
  }

  /** Rank r's shard: a contiguous slice of the (shuffled) training set. */
  public static Split shard(Split train, int rank, int ranks) {
    int from = (int) ((long) train.rows() * rank / ranks);
    int to = (int) ((long) train.rows() * (rank + 1) / ranks);
    return new Split(Arrays.copyOfRange(train.x(), from * FEATURES, to * FEATURES),
        Arrays.copyOfRange(train.y(), from, to));
  }

  /** The rows of rank r's shard in step t's global batch; the single-process run draws the same. */
  static int[] batchRows(Config c, int step, int rank, int shardRows) {
    SplittableRandom rnd = new SplittableRandom(c.seed() * 1_000_003L + step * 1_009L + rank);
    int[] rows = new int[c.globalBatch() / c.ranks()];
    for (int i = 0; i < rows.length; i++) {
      rows[i] = rnd.nextInt(shardRows);
    }
    return rows;
  }

  /** The body of one rank: local gradient, one allReduce, the same update everywhere. */
  static Result trainRank(Communicator comm, Split shard, Config c) {
    SoftmaxRegression model = new SoftmaxRegression(FEATURES, CLASSES);
    int p = model.parameterCount();
    float[] params = new float[p];
    float[] grad = new float[p + 1]; // the batch loss rides in the last element
    short[] bf16 = new short[p + 1];
    float[] scratch = new float[CLASSES];
    float[] losses = new float[c.steps()];
    long compute = 0;
    long communication = 0;
    for (int step = 0; step < c.steps(); step++) {
      long t0 = System.nanoTime();
      Arrays.fill(grad, 0f);
      float loss = 0;
      for (int row : batchRows(c, step, comm.rank(), shard.rows())) {
        loss += model.accumulate(params, shard.x(), row, shard.y()[row], grad, scratch);
      }
      grad[p] = loss;
      long t1 = System.nanoTime();
      if (c.gradients() == GradientType.BF16) {
        for (int i = 0; i < grad.length; i++) {
          bf16[i] = HalfFloats.floatToBf16(grad[i]);
        }
        comm.allReduce(CommBuffer.of(bf16), CommBuffer.of(bf16), bf16.length, DataType.BFLOAT16, ReduceOp.SUM);
        for (int i = 0; i < grad.length; i++) {
          grad[i] = HalfFloats.bf16ToFloat(bf16[i]);
        }
      } else {
        comm.allReduce(grad, ReduceOp.SUM);
      }
      long t2 = System.nanoTime();
      update(params, grad, c);
      losses[step] = grad[p] / c.globalBatch();
      compute += (t1 - t0) + (System.nanoTime() - t2);
      communication += t2 - t1;
    }
    return new Result(comm.rank(), losses, params, compute, communication, comm.backend());
  }

  private static void update(float[] params, float[] grad, Config c) {
    float scale = c.learningRate() / c.globalBatch();
    for (int i = 0; i < params.length; i++) {
      params[i] -= scale * grad[i];
    }
  }

  /** The same training in one process: every rank's batch rows, summed in one gradient. */
  public static Result trainSingleProcess(Dataset d, Config c) {
    SoftmaxRegression model = new SoftmaxRegression(FEATURES, CLASSES);
    List<Split> shards = new ArrayList<>();
    for (int r = 0; r < c.ranks(); r++) {
      shards.add(shard(d.train(), r, c.ranks()));
    }
    float[] params = new float[model.parameterCount()];
    float[] grad = new float[model.parameterCount()];
    float[] scratch = new float[CLASSES];
    float[] losses = new float[c.steps()];
    long t0 = System.nanoTime();
    for (int step = 0; step < c.steps(); step++) {
      Arrays.fill(grad, 0f);
      float loss = 0;
      for (int r = 0; r < c.ranks(); r++) {
        Split s = shards.get(r);
        for (int row : batchRows(c, step, r, s.rows())) {
          loss += model.accumulate(params, s.x(), row, s.y()[row], grad, scratch);
        }
      }
      update(params, grad, c);
      losses[step] = loss / c.globalBatch();
    }
    return new Result(0, losses, params, System.nanoTime() - t0, 0, "single process");
  }

  /** One barrier stage of {@code c.ranks()} tasks; every rank's result, in rank order. */
  public static List<Result> trainDistributed(JavaSparkContext jsc, Dataset d, Config c) {
    List<Split> shards = new ArrayList<>();
    for (int r = 0; r < c.ranks(); r++) {
      shards.add(shard(d.train(), r, c.ranks()));
    }
    List<Result> out = new ArrayList<>(GpuCollectives.barrierMapPartitions(
        jsc.parallelize(shards, c.ranks()), (comm, rows) -> {
          Split shard = rows.next(); // one shard per partition, partition r = rank r
          return List.of(trainRank(comm, shard, c)).iterator();
        }).collect());
    out.sort((a, b) -> Integer.compare(a.rank(), b.rank()));
    return out;
  }

  /** The comparison the example prints and its test asserts. */
  public record Comparison(GradientType gradients, double maxLossRelativeError,
      double distributedTestAccuracy, double singleTestAccuracy, double distributedTrainAccuracy,
      double singleTrainAccuracy, boolean ranksAgree) {
    public double lossTolerance() {
      return gradients == GradientType.FP32 ? LOSS_TOLERANCE : BF16_LOSS_TOLERANCE;
    }

    public double accuracyTolerancePoints() {
      return gradients == GradientType.FP32 ? ACCURACY_TOLERANCE_POINTS : BF16_ACCURACY_TOLERANCE_POINTS;
    }

    public boolean passes() {
      return ranksAgree && maxLossRelativeError <= lossTolerance()
          && Math.abs(distributedTestAccuracy - singleTestAccuracy) <= accuracyTolerancePoints()
          && Math.abs(distributedTrainAccuracy - singleTrainAccuracy) <= accuracyTolerancePoints();
    }
  }

  /** The distributed run against the fp32 single-process one. */
  public static Comparison compare(Config c, Dataset d, List<Result> ranks, Result single) {
    SoftmaxRegression model = new SoftmaxRegression(FEATURES, CLASSES);
    Result r0 = ranks.get(0);
    boolean agree = ranks.stream().allMatch(r -> Arrays.equals(r.params(), r0.params())
        && Arrays.equals(r.losses(), r0.losses()));
    double maxRel = 0;
    for (int s = 0; s < single.losses().length; s++) {
      maxRel = Math.max(maxRel, Math.abs(r0.losses()[s] - single.losses()[s]) / Math.abs(single.losses()[s]));
    }
    return new Comparison(c.gradients(), maxRel,
        model.accuracy(r0.params(), d.test().x(), d.test().y()),
        model.accuracy(single.params(), d.test().x(), d.test().y()),
        model.accuracy(r0.params(), d.train().x(), d.train().y()),
        model.accuracy(single.params(), d.train().x(), d.train().y()), agree);
  }

  static GradientType gradientType(String name) {
    return switch (name.toLowerCase(java.util.Locale.ROOT)) {
      case "fp32" -> GradientType.FP32;
      case "bf16" -> GradientType.BF16;
      default -> throw new IllegalArgumentException("--grad must be fp32 or bf16, got '" + name + "'");
    };
  }

  public static void main(String[] args) {
    Map<String, String> o = ExampleSpark.options(args, USAGE);
    Config c = new Config(ExampleSpark.intOption(o, "ranks", 4), ExampleSpark.intOption(o, "steps", 150),
        ExampleSpark.intOption(o, "batch", 120), Float.parseFloat(o.getOrDefault("lr", "0.5")),
        ExampleSpark.intOption(o, "seed", 7), gradientType(o.getOrDefault("grad", "fp32")));
    Dataset d = load(c.seed());
    System.out.println("Digits: " + d.train().rows() + " training rows in " + c.ranks() + " shards, "
        + d.test().rows() + " test rows; global batch " + c.globalBatch() + ", " + c.steps() + " steps, "
        + c.gradients().name().toLowerCase(java.util.Locale.ROOT) + " gradients");
    List<Result> ranks;
    try (JavaSparkContext jsc = ExampleSpark.start("gpucoll-example-training", o.get("master"), c.ranks())) {
      long t0 = System.nanoTime();
      ranks = trainDistributed(jsc, d, c);
      System.out.println("Barrier job: " + ExampleSpark.ms(System.nanoTime() - t0));
      System.out.println("Path report: " + ExampleSpark.lastPathReport());
    }
    Result single = trainSingleProcess(d, c);
    Comparison cmp = compare(c, d, ranks, single);
    System.out.println();
    System.out.printf("%6s %14s %14s%n", "step", "loss (" + c.ranks() + " ranks)", "loss (1 process)");
    for (int s = 0; s < c.steps(); s++) {
      if (s % 10 == 0 || s == c.steps() - 1) {
        System.out.printf("%6d %14.6f %14.6f%n", s, ranks.get(0).losses()[s], single.losses()[s]);
      }
    }
    System.out.println();
    for (Result r : ranks) {
      System.out.println("rank " + r.rank() + " (" + r.backend() + "): compute " + ExampleSpark.ms(r.computeNanos())
          + ", allReduce " + ExampleSpark.ms(r.commNanos()) + " (waits for the slowest rank included)");
    }
    System.out.printf("test accuracy %.2f %% (1 process: %.2f %%), train accuracy %.2f %% (1 process: %.2f %%)%n",
        cmp.distributedTestAccuracy(), cmp.singleTestAccuracy(), cmp.distributedTrainAccuracy(),
        cmp.singleTrainAccuracy());
    System.out.printf("largest relative loss difference %.2e (limit %.0e), accuracy limit %.1f points;"
        + " every rank holds the same parameters: %s%n", cmp.maxLossRelativeError(), cmp.lossTolerance(),
        cmp.accuracyTolerancePoints(), cmp.ranksAgree());
    System.out.println(cmp.passes() ? "CHECK OK" : "CHECK FAILED");
    if (!cmp.passes()) {
      System.exit(1);
    }
  }
}
