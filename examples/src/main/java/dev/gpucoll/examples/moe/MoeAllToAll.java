package dev.gpucoll.examples.moe;

import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.DataType;
import dev.gpucoll.examples.ExampleSpark;
import dev.gpucoll.spark.GpuCollectives;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.stream.IntStream;
import org.apache.spark.api.java.JavaSparkContext;

/**
 * One mixture-of-experts layer with expert parallelism, as a barrier stage: each rank owns
 * {@code expertsPerRank} experts and a batch of tokens; a gate sends each token to one expert
 * (top-1, skewed so that counts are uneven), {@code allToAllv} moves the tokens to the ranks of
 * their experts, each expert computes, and the reverse {@code allToAllv} brings the results home,
 * where they are scaled by the gate probability. Checked element for element against the same
 * layer computed in one process.
 *
 * <p>Run: {@code scripts/example.sh moe [--ranks 4] [--tokens 512] [--dim 32] [--experts-per-rank 2]}.
 */
public final class MoeAllToAll {
  static final String USAGE = "moe [--ranks 4] [--tokens 512] [--dim 32] [--experts-per-rank 2]"
      + " [--seed 11] [--master local-cluster|local[N]]";

  private MoeAllToAll() {}

  public record Config(int ranks, int tokensPerRank, int dim, int expertsPerRank, long seed)
      implements Serializable {
    public Config {
      if (ranks < 1 || tokensPerRank < 1 || dim < 1 || expertsPerRank < 1) {
        throw new IllegalArgumentException("every size must be positive: " + this);
      }
    }

    int experts() {
      return ranks * expertsPerRank;
    }
  }

  /** One rank's output tokens (tokens × dim), how many it sent to each rank, and its time split. */
  public record Result(int rank, float[] output, long[] tokensTo, long computeNanos, long commNanos,
      String backend) implements Serializable {}

  // ---- the layer: deterministic from the seed, shared by both runs ----

  static float[] tokens(Config c, int rank) {
    SplittableRandom rnd = new SplittableRandom(c.seed() * 7919 + rank);
    float[] x = new float[c.tokensPerRank() * c.dim()];
    for (int i = 0; i < x.length; i++) {
      x[i] = (float) (rnd.nextDouble() * 2 - 1);
    }
    return x;
  }

  static float[] gateWeights(Config c) {
    SplittableRandom rnd = new SplittableRandom(c.seed() * 31 + 1);
    float[] w = new float[c.dim() * c.experts()];
    for (int i = 0; i < w.length; i++) {
      w[i] = (float) (rnd.nextDouble() * 2 - 1);
    }
    return w;
  }

  static float[] expertWeights(Config c, int expert) {
    SplittableRandom rnd = new SplittableRandom(c.seed() * 104_729 + expert);
    float[] w = new float[c.dim() * c.dim()];
    float scale = (float) (1 / Math.sqrt(c.dim()));
    for (int i = 0; i < w.length; i++) {
      w[i] = (float) (rnd.nextDouble() * 2 - 1) * scale;
    }
    return w;
  }

  /** Top-1 routing: the expert of each token and its softmax probability. */
  record Routing(int[] expert, float[] probability) {}

  static Routing route(Config c, float[] x, float[] gate) {
    int n = c.tokensPerRank();
    int e = c.experts();
    int[] expert = new int[n];
    float[] prob = new float[n];
    float[] logits = new float[e];
    for (int t = 0; t < n; t++) {
      float max = Float.NEGATIVE_INFINITY;
      for (int j = 0; j < e; j++) {
        float z = -0.35f * j; // a skew: low-numbered experts are popular, so counts are uneven
        for (int k = 0; k < c.dim(); k++) {
          z += x[t * c.dim() + k] * gate[k * e + j];
        }
        logits[j] = z;
        if (z > max) {
          max = z;
          expert[t] = j;
        }
      }
      float sum = 0;
      for (int j = 0; j < e; j++) {
        sum += (float) Math.exp(logits[j] - max);
      }
      prob[t] = 1f / sum;
    }
    return new Routing(expert, prob);
  }

  /** y = tanh(x W) for one token (row {@code in} of x into row {@code out} of y). */
  static void expertForward(int dim, float[] w, float[] x, int in, float[] y, int out) {
    for (int j = 0; j < dim; j++) {
      float z = 0;
      for (int k = 0; k < dim; k++) {
        z += x[in * dim + k] * w[k * dim + j];
      }
      y[out * dim + j] = (float) Math.tanh(z);
    }
  }

  // ---- one rank ----

  static Result runRank(Communicator comm, Config c) {
    int size = comm.size();
    if (size != c.ranks()) {
      throw new IllegalStateException("the stage has " + size + " ranks, the config " + c.ranks());
    }
    int rank = comm.rank();
    int dim = c.dim();
    int epr = c.expertsPerRank();
    long compute = 0;
    long communication = 0;

    long t0 = System.nanoTime();
    float[] x = tokens(c, rank);
    Routing routing = route(c, x, gateWeights(c));
    // Tokens sorted by expert (stable), so each destination's tokens are contiguous, by local expert.
    Integer[] order = IntStream.range(0, c.tokensPerRank()).boxed().toArray(Integer[]::new);
    Arrays.sort(order, (a, b) -> Integer.compare(routing.expert()[a], routing.expert()[b]));
    float[] sendTokens = new float[x.length];
    long[] perExpert = new long[c.experts()];
    for (int i = 0; i < order.length; i++) {
      System.arraycopy(x, order[i] * dim, sendTokens, i * dim, dim);
      perExpert[routing.expert()[order[i]]]++;
    }
    long t1 = System.nanoTime();

    // 1. counts: recvPerExpert[p * epr + j] = tokens rank p sends to my local expert j
    long[] recvPerExpert = new long[c.experts()];
    comm.allToAll(CommBuffer.of(perExpert), CommBuffer.of(recvPerExpert), epr, DataType.INT64);
    long[] sendCounts = new long[size];
    long[] recvCounts = new long[size];
    for (int p = 0; p < size; p++) {
      for (int j = 0; j < epr; j++) {
        sendCounts[p] += perExpert[p * epr + j] * dim;
        recvCounts[p] += recvPerExpert[p * epr + j] * dim;
      }
    }
    long[] sendDispls = displacements(sendCounts);
    long[] recvDispls = displacements(recvCounts);
    float[] received = new float[(int) (recvDispls[size - 1] + recvCounts[size - 1])];
    // 2. dispatch: tokens to the ranks of their experts
    comm.allToAllv(CommBuffer.of(sendTokens), sendCounts, sendDispls, CommBuffer.of(received),
        recvCounts, recvDispls, DataType.FLOAT32);
    long t2 = System.nanoTime();

    // 3. expert compute: from each source, its tokens for local expert 0, then 1, ...
    float[][] weights = new float[epr][];
    for (int j = 0; j < epr; j++) {
      weights[j] = expertWeights(c, rank * epr + j);
    }
    float[] computed = new float[received.length];
    int row = 0;
    for (int p = 0; p < size; p++) {
      for (int j = 0; j < epr; j++) {
        for (long t = 0; t < recvPerExpert[p * epr + j]; t++, row++) {
          expertForward(dim, weights[j], received, row, computed, row);
        }
      }
    }
    long t3 = System.nanoTime();

    // 4. combine: results back to the tokens' home ranks (counts swapped)
    float[] back = new float[sendTokens.length];
    comm.allToAllv(CommBuffer.of(computed), recvCounts, recvDispls, CommBuffer.of(back),
        sendCounts, sendDispls, DataType.FLOAT32);
    long t4 = System.nanoTime();

    float[] output = new float[x.length];
    for (int i = 0; i < order.length; i++) {
      int token = order[i];
      for (int k = 0; k < dim; k++) {
        output[token * dim + k] = back[i * dim + k] * routing.probability()[token];
      }
    }
    long t5 = System.nanoTime();
    compute += (t1 - t0) + (t3 - t2) + (t5 - t4);
    communication += (t2 - t1) + (t4 - t3);
    long[] tokensTo = new long[size];
    for (int p = 0; p < size; p++) {
      tokensTo[p] = sendCounts[p] / dim;
    }
    return new Result(rank, output, tokensTo, compute, communication, comm.backend());
  }

  static long[] displacements(long[] counts) {
    long[] d = new long[counts.length];
    for (int i = 1; i < counts.length; i++) {
      d[i] = d[i - 1] + counts[i - 1];
    }
    return d;
  }

  /** The layer in one process: every token straight through its expert. */
  public static float[] reference(Config c, int rank) {
    float[] x = tokens(c, rank);
    Routing routing = route(c, x, gateWeights(c));
    float[] y = new float[x.length];
    float[][] weights = new float[c.experts()][];
    for (int t = 0; t < c.tokensPerRank(); t++) {
      int e = routing.expert()[t];
      if (weights[e] == null) {
        weights[e] = expertWeights(c, e);
      }
      expertForward(c.dim(), weights[e], x, t, y, t);
      for (int k = 0; k < c.dim(); k++) {
        y[t * c.dim() + k] *= routing.probability()[t];
      }
    }
    return y;
  }

  public static List<Result> runDistributed(JavaSparkContext jsc, Config c) {
    List<Result> out = new ArrayList<>(GpuCollectives.barrierMapPartitions(
        jsc.parallelize(IntStream.range(0, c.ranks()).boxed().toList(), c.ranks()),
        (comm, rows) -> List.of(runRank(comm, c)).iterator()).collect());
    out.sort((a, b) -> Integer.compare(a.rank(), b.rank()));
    return out;
  }

  /** Ranks whose output differs from the one-process layer (bit for bit), with the first index. */
  public static List<String> mismatches(Config c, List<Result> ranks) {
    List<String> bad = new ArrayList<>();
    for (Result r : ranks) {
      float[] want = reference(c, r.rank());
      for (int i = 0; i < want.length; i++) {
        if (Float.floatToIntBits(want[i]) != Float.floatToIntBits(r.output()[i])) {
          bad.add("rank " + r.rank() + " output[" + i + "] = " + r.output()[i] + ", expected " + want[i]);
          break;
        }
      }
    }
    return bad;
  }

  public static void main(String[] args) {
    Map<String, String> o = ExampleSpark.options(args, USAGE);
    Config c = new Config(ExampleSpark.intOption(o, "ranks", 4), ExampleSpark.intOption(o, "tokens", 512),
        ExampleSpark.intOption(o, "dim", 32), ExampleSpark.intOption(o, "experts-per-rank", 2),
        ExampleSpark.intOption(o, "seed", 11));
    System.out.println("MoE layer: " + c.ranks() + " ranks x " + c.tokensPerRank() + " tokens of dim "
        + c.dim() + ", " + c.experts() + " experts (" + c.expertsPerRank() + " per rank), top-1 routing");
    List<Result> ranks;
    try (JavaSparkContext jsc = ExampleSpark.start("gpucoll-example-moe", o.get("master"), c.ranks())) {
      long t0 = System.nanoTime();
      ranks = runDistributed(jsc, c);
      System.out.println("Barrier job: " + ExampleSpark.ms(System.nanoTime() - t0));
      System.out.println("Path report: " + ExampleSpark.lastPathReport());
    }
    System.out.println();
    System.out.println("Tokens routed (row: from rank, column: to rank):");
    for (Result r : ranks) {
      StringBuilder line = new StringBuilder(String.format("  rank %2d:", r.rank()));
      for (long n : r.tokensTo()) {
        line.append(String.format(" %6d", n));
      }
      System.out.println(line);
    }
    for (Result r : ranks) {
      System.out.println("rank " + r.rank() + " (" + r.backend() + "): compute " + ExampleSpark.ms(r.computeNanos())
          + ", allToAll + 2 allToAllv " + ExampleSpark.ms(r.commNanos()) + " (waits for the slowest rank included)");
    }
    List<String> bad = mismatches(c, ranks);
    System.out.println(bad.isEmpty() ? "every output identical to the one-process layer: CHECK OK"
        : "CHECK FAILED: " + bad);
    if (!bad.isEmpty()) {
      System.exit(1);
    }
  }
}
