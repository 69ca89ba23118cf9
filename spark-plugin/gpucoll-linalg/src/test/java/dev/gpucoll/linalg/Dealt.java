package dev.gpucoll.linalg;

/**
 * The reference the tests check the descriptor against, made without its formulas: blocks of
 * {@code block} indices dealt one by one to processes src, src + 1, ... (mod procs), each process
 * numbering what it receives from 0.
 */
final class Dealt {
  final int[] owner;
  final int[] local;
  final int[] count;
  /** global[p][l]: the global index of process p's local index l. */
  final int[][] global;

  Dealt(int size, int block, int procs, int src) {
    owner = new int[size];
    local = new int[size];
    count = new int[procs];
    int[][] g = new int[procs][size];
    int p = src;
    for (int start = 0; start < size; start += block) {
      for (int i = start; i < Math.min(size, start + block); i++) {
        owner[i] = p;
        local[i] = count[p];
        g[p][count[p]++] = i;
      }
      p = (p + 1) % procs;
    }
    global = new int[procs][];
    for (int q = 0; q < procs; q++) {
      global[q] = java.util.Arrays.copyOf(g[q], count[q]);
    }
  }

  /** How many of process p's indices are below i. */
  int before(int i, int p) {
    int n = 0;
    for (int g = 0; g < i; g++) {
      n += owner[g] == p ? 1 : 0;
    }
    return n;
  }

  /**
   * Fails unless want == got, naming {@code where} (its parts joined, a Supplier's text taken):
   * built only on failure, since the exhaustive tests check millions of values.
   */
  static void same(double want, double got, Object... where) {
    if (Double.compare(want, got) != 0) {
      StringBuilder b = new StringBuilder();
      for (Object w : where) {
        b.append(w instanceof java.util.function.Supplier<?> s ? s.get() : w);
      }
      org.junit.jupiter.api.Assertions.fail(b + " ==> expected: <" + want + "> but was: <" + got + ">");
    }
  }

  private static final int MAX = 13;
  private static final Dealt[][][][] CACHE = new Dealt[MAX + 1][6][4][3];

  /** Sizes 0..13, blocks 1..5, 1..3 processes, every source. */
  static Dealt of(int size, int block, int procs, int src) {
    Dealt d = CACHE[size][block][procs][src];
    if (d == null) {
      d = new Dealt(size, block, procs, src);
      CACHE[size][block][procs][src] = d;
    }
    return d;
  }
}
