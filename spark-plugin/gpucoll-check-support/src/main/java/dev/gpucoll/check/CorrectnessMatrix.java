package dev.gpucoll.check;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.LocOp;
import dev.gpucoll.api.PairType;
import dev.gpucoll.api.ReduceOp;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * The correctness matrix of the GPU checks (native-kernels/test/correctness-matrix.txt, whose top
 * describes the format; on the class path as {@value #RESOURCE}): its blocks, and their expansion
 * into cases per group.
 */
public final class CorrectnessMatrix {
  public static final String RESOURCE = "/dev/gpucoll/check/correctness-matrix.txt";
  /** The variant that lets the route choose by size. */
  public static final String AUTO = "auto";

  private static final Map<String, DataType> TYPES = Map.of("f32", DataType.FLOAT32, "f64", DataType.FLOAT64,
      "f16", DataType.FLOAT16, "bf16", DataType.BFLOAT16, "i32", DataType.INT32, "i64", DataType.INT64,
      "i8", DataType.INT8, "u8", DataType.UINT8);

  /** One item of a list and whether it runs only in the full matrix ('*'). */
  record Item<T>(T value, boolean fullOnly) {
    boolean runs(boolean quick) {
      return !quick || !fullOnly;
    }
  }

  /** A count as written: elements, or bytes made elements of each type, optionally divided by the group size. */
  record Count(long amount, boolean bytes, boolean perRank) {
    long elements(DataType t, int n) {
      long e = bytes ? amount / t.byteSize() : amount;
      return perRank ? e / n : e;
    }
  }

  enum Root { RANDOM, LAST, MIDDLE }

  /** One line of the file. */
  record Block(int line, String variant, List<Item<Integer>> ranks, List<Collective> collectives,
      List<DataType> types, List<ReduceOp> ops, List<Item<Count>> counts, boolean inPlace, Root root) {}

  /** One MAXLOC/MINLOC line: allReduce over value-index pairs (types "f64:i32", ops maxloc, minloc). */
  record PairBlock(int line, String variant, List<Item<Integer>> ranks, List<PairType> types, List<LocOp> ops,
      List<Item<Long>> counts, boolean inPlace) {}

  /** One MAXLOC/MINLOC case: {@code count} pairs of {@code type}, checked with {@link PairReference}. */
  public record PairCase(PairType type, LocOp op, long count, boolean inPlace) {
    public String label() {
      return "allReduce " + type + " " + op + " count=" + count + (inPlace ? " in-place" : "");
    }
  }

  /** The group a case runs on: a kernel variant (or {@link #AUTO}) and a number of ranks. */
  public record Group(String variant, int ranks) {
    /** The forced variant's name, or null when the route chooses. */
    public String forcedVariant() {
      return variant.equals(AUTO) ? null : variant;
    }
  }

  /**
   * One case. {@code a2av} (allToAllv only) holds, for each rank r, rows 4r..4r+3: send counts,
   * send displacements, receive counts and receive displacements.
   */
  public record Case(Collective c, DataType t, ReduceOp op, long count, int root, boolean inPlace, long[][] a2av) {
    public boolean isReduction() {
      return c == Collective.ALL_REDUCE || c == Collective.REDUCE_SCATTER;
    }

    /** Elements rank {@code rank} of {@code n} reads from its send buffer. */
    public long sendElems(int rank, int n) {
      return switch (c) {
        case REDUCE_SCATTER, ALL_TO_ALL -> count * n;
        case ALL_TO_ALLV -> extent(a2av[4 * rank], a2av[4 * rank + 1]);
        case BARRIER -> 0;
        default -> count;
      };
    }

    /** Elements rank {@code rank} of {@code n} writes to its receive buffer. */
    public long recvElems(int rank, int n) {
      return switch (c) {
        case ALL_GATHER, ALL_TO_ALL -> count * n;
        case ALL_TO_ALLV -> extent(a2av[4 * rank + 2], a2av[4 * rank + 3]);
        case BARRIER -> 0;
        default -> count;
      };
    }

    /** Rank {@code rank}'s allToAllv arguments: send counts, send displacements, receive counts, receive displacements. */
    public long[][] a2avOf(int rank) {
      return new long[][] {a2av[4 * rank], a2av[4 * rank + 1], a2av[4 * rank + 2], a2av[4 * rank + 3]};
    }

    public String label() {
      return c.apiName() + " " + t + (isReduction() ? " " + op : "") + " count=" + count
          + (c == Collective.BROADCAST ? " root=" + root : "") + (inPlace ? " in-place" : "");
    }
  }

  private final List<Block> blocks;
  private final List<PairBlock> pairBlocks;

  private CorrectnessMatrix(List<Block> blocks, List<PairBlock> pairBlocks) {
    this.blocks = List.copyOf(blocks);
    this.pairBlocks = List.copyOf(pairBlocks);
  }

  /** The matrix on the class path. */
  public static CorrectnessMatrix load() {
    try (InputStream in = CorrectnessMatrix.class.getResourceAsStream(RESOURCE)) {
      if (in == null) {
        throw new IllegalStateException(RESOURCE + " is not on the class path (is the gpucoll-check-support jar?)");
      }
      return parse(new String(in.readAllBytes(), StandardCharsets.UTF_8));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** @throws IllegalArgumentException naming the line and the field that does not parse */
  public static CorrectnessMatrix parse(String text) {
    List<Block> blocks = new ArrayList<>();
    List<PairBlock> pairBlocks = new ArrayList<>();
    int lineNo = 0;
    try (BufferedReader r = new BufferedReader(new java.io.StringReader(text))) {
      for (String raw; (raw = r.readLine()) != null; ) {
        lineNo++;
        int hash = raw.indexOf('#');
        String line = (hash >= 0 ? raw.substring(0, hash) : raw).trim();
        if (!line.isEmpty()) {
          if (isPairLine(line)) {
            pairBlocks.add(pairBlock(lineNo, line));
          } else {
            blocks.add(block(lineNo, line));
          }
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return new CorrectnessMatrix(blocks, pairBlocks);
  }

  /** Whether a line's ops are MAXLOC/MINLOC (the C++ parser skips exactly these lines). */
  private static boolean isPairLine(String line) {
    String[] f = line.split("\\s+");
    if (f.length < 5) {
      return false;
    }
    for (String op : f[4].split(",")) {
      String o = op.toLowerCase(Locale.ROOT);
      if (o.equals("maxloc") || o.equals("minloc")) {
        return true;
      }
    }
    return false;
  }

  private static PairBlock pairBlock(int no, String line) {
    String[] f = line.split("\\s+");
    if (f.length < 6) {
      throw bad(no, "expected variant, ranks, collectives, types, ops and counts; got " + f.length + " fields");
    }
    if (!f[2].equals(Collective.ALL_REDUCE.apiName())) {
      throw bad(no, "maxloc and minloc are for allReduce alone; got collectives " + f[2]);
    }
    List<Item<Integer>> ranks = items(no, "ranks", f[1], v -> {
      int n = Integer.parseInt(v);
      if (n < 1) {
        throw new IllegalArgumentException("a group has at least 1 rank");
      }
      return n;
    });
    List<PairType> types = new ArrayList<>();
    for (Item<PairType> t : items(no, "types", f[3], CorrectnessMatrix::pairType)) {
      types.add(t.value());
    }
    List<LocOp> ops = new ArrayList<>();
    for (Item<LocOp> op : items(no, "ops", f[4], v -> {
      String o = v.toLowerCase(Locale.ROOT);
      if (!o.equals("maxloc") && !o.equals("minloc")) {
        throw new IllegalArgumentException("a maxloc/minloc line takes no other op");
      }
      return LocOp.valueOf(o.toUpperCase(Locale.ROOT));
    })) {
      ops.add(op.value());
    }
    List<Item<Long>> counts = items(no, "counts", f[5], v -> {
      long n = Long.parseLong(v);
      if (n < 0) {
        throw new IllegalArgumentException("negative");
      }
      return n;
    });
    boolean inPlace = false;
    for (int i = 6; i < f.length; i++) {
      if (!f[i].equals("in-place")) {
        throw bad(no, "unknown option " + f[i] + " for a maxloc/minloc line; expected in-place");
      }
      inPlace = true;
    }
    return new PairBlock(no, f[0].toLowerCase(Locale.ROOT), ranks, types, ops, counts, inPlace);
  }

  /** "f64:i32" → FLOAT64_INT32: a value type (f32 f64 i32 i64) and an index type (i32 i64). */
  private static PairType pairType(String v) {
    String[] vi = v.split(":");
    DataType value = vi.length == 2 ? TYPES.get(vi[0]) : null;
    DataType index = vi.length == 2 ? TYPES.get(vi[1]) : null;
    for (PairType t : PairType.values()) {
      if (t.value() == value && t.index() == index) {
        return t;
      }
    }
    throw new IllegalArgumentException("unknown pair type; expected value:index with a value of f32 f64 i32 i64"
        + " and an index of i32 i64");
  }

  private static Block block(int no, String line) {
    String[] f = line.split("\\s+");
    if (f.length < 6) {
      throw bad(no, "expected variant, ranks, collectives, types, ops and counts; got " + f.length + " fields");
    }
    String variant = f[0].toLowerCase(Locale.ROOT);
    List<Item<Integer>> ranks = items(no, "ranks", f[1], s -> {
      int n = Integer.parseInt(s);
      if (n < 1) {
        throw new IllegalArgumentException("a group has at least 1 rank");
      }
      return n;
    });
    List<Collective> collectives = new ArrayList<>();
    for (Item<Collective> c : items(no, "collectives", f[2], CorrectnessMatrix::collective)) {
      collectives.add(c.value());
    }
    boolean barrierOnly = collectives.stream().allMatch(c -> c == Collective.BARRIER);
    boolean reductions = collectives.stream().anyMatch(c -> c == Collective.ALL_REDUCE || c == Collective.REDUCE_SCATTER);
    boolean movement = collectives.stream().anyMatch(c -> c != Collective.ALL_REDUCE && c != Collective.REDUCE_SCATTER);
    if (reductions && movement) {
      throw bad(no, "reductions and data movement in one line: their ops differ; write two lines");
    }
    List<DataType> types = new ArrayList<>();
    if (f[3].equals("-")) {
      if (!barrierOnly) {
        throw bad(no, "types '-' is for barrier only");
      }
      types.add(DataType.INT32);
    } else {
      for (Item<DataType> t : items(no, "types", f[3], s -> {
        DataType t0 = TYPES.get(s);
        if (t0 == null) {
          throw new IllegalArgumentException("unknown type; expected one of " + TYPES.keySet());
        }
        return t0;
      })) {
        types.add(t.value());
      }
    }
    List<ReduceOp> ops = new ArrayList<>();
    if (f[4].equals("-")) {
      if (reductions) {
        throw bad(no, "a reduction needs ops");
      }
      ops.add(ReduceOp.SUM);
    } else {
      if (!reductions) {
        throw bad(no, "ops are for allReduce and reduceScatter; write '-'");
      }
      for (Item<ReduceOp> op : items(no, "ops", f[4], s -> ReduceOp.valueOf(s.toUpperCase(Locale.ROOT)))) {
        ops.add(op.value());
      }
    }
    List<Item<Count>> counts = items(no, "counts", f[5], CorrectnessMatrix::count);
    boolean inPlace = false;
    Root root = Root.RANDOM;
    for (int i = 6; i < f.length; i++) {
      if (f[i].equals("in-place")) {
        inPlace = true;
      } else if (f[i].startsWith("root=")) {
        try {
          root = Root.valueOf(f[i].substring(5).toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
          throw bad(no, "root must be random, last or middle: " + f[i]);
        }
      } else {
        throw bad(no, "unknown option " + f[i] + "; expected in-place or root=random|last|middle");
      }
    }
    return new Block(no, variant, ranks, collectives, types, ops, counts, inPlace, root);
  }

  private interface Parser<T> {
    T parse(String s);
  }

  private static <T> List<Item<T>> items(int no, String field, String list, Parser<T> p) {
    List<Item<T>> out = new ArrayList<>();
    for (String s : list.split(",")) {
      boolean fullOnly = s.endsWith("*");
      String v = fullOnly ? s.substring(0, s.length() - 1) : s;
      try {
        out.add(new Item<>(p.parse(v), fullOnly));
      } catch (RuntimeException e) {
        throw bad(no, field + " item '" + s + "': " + e.getMessage());
      }
    }
    return out;
  }

  private static Collective collective(String s) {
    for (Collective c : Collective.values()) {
      if (c.apiName().equals(s)) {
        return c;
      }
    }
    throw new IllegalArgumentException("unknown collective");
  }

  private static Count count(String s) {
    boolean perRank = s.endsWith("/n");
    String v = perRank ? s.substring(0, s.length() - 2) : s;
    long unit = v.endsWith("MiB") ? 1 << 20 : v.endsWith("KiB") ? 1 << 10 : v.endsWith("B") ? 1 : 0;
    String digits = unit == 0 ? v : v.substring(0, v.length() - (unit == 1 ? 1 : 3));
    long n = Long.parseLong(digits);
    if (n < 0) {
      throw new IllegalArgumentException("negative");
    }
    return new Count(unit == 0 ? n : n * unit, unit != 0, perRank);
  }

  private static IllegalArgumentException bad(int no, String what) {
    return new IllegalArgumentException("correctness matrix line " + no + ": " + what);
  }

  /**
   * Every case, per group in the order the groups first appear; {@code quick} leaves out the items
   * marked '*'. Broadcast roots and allToAllv count tables come from {@code rnd}.
   */
  public Map<Group, List<Case>> cases(boolean quick, SplittableRandom rnd) {
    Map<Group, List<Case>> out = new LinkedHashMap<>();
    for (Block b : blocks) {
      for (Item<Integer> ranks : b.ranks()) {
        if (ranks.runs(quick)) {
          expand(b, ranks.value(), quick, rnd, out.computeIfAbsent(new Group(b.variant(), ranks.value()), g -> new ArrayList<>()));
        }
      }
    }
    out.values().removeIf(List::isEmpty);
    return out;
  }

  /**
   * The cases of every block of {@code variant} for a group of {@code ranks} ranks, whatever group
   * sizes the lines list (a job on a cluster checks the group it has); {@code quick} leaves out the
   * counts marked '*'. Every rank that passes the same seed gets the same roots and count tables.
   */
  public List<Case> casesAt(String variant, int ranks, boolean quick, SplittableRandom rnd) {
    List<Case> out = new ArrayList<>();
    for (Block b : blocks) {
      if (b.variant().equals(variant)) {
        expand(b, ranks, quick, rnd, out);
      }
    }
    return out;
  }

  /**
   * The MAXLOC/MINLOC cases of {@code variant} for a group of {@code ranks} ranks (whatever group
   * sizes the lines list), in the order type, count, op; {@code quick} leaves out the counts marked '*'.
   */
  public List<PairCase> pairCasesAt(String variant, int ranks, boolean quick) {
    List<PairCase> out = new ArrayList<>();
    for (PairBlock b : pairBlocks) {
      if (b.variant().equals(variant)) {
        expandPairs(b, quick, out);
      }
    }
    return out;
  }

  /** Every MAXLOC/MINLOC case, per group in the order the groups first appear ({@code quick} as in {@link #cases}). */
  public Map<Group, List<PairCase>> pairCases(boolean quick) {
    Map<Group, List<PairCase>> out = new LinkedHashMap<>();
    for (PairBlock b : pairBlocks) {
      for (Item<Integer> ranks : b.ranks()) {
        if (ranks.runs(quick)) {
          expandPairs(b, quick, out.computeIfAbsent(new Group(b.variant(), ranks.value()), g -> new ArrayList<>()));
        }
      }
    }
    out.values().removeIf(List::isEmpty);
    return out;
  }

  private static void expandPairs(PairBlock b, boolean quick, List<PairCase> group) {
    for (PairType t : b.types()) {
      for (Item<Long> count : b.counts()) {
        if (count.runs(quick)) {
          for (LocOp op : b.ops()) {
            group.add(new PairCase(t, op, count.value(), b.inPlace()));
          }
        }
      }
    }
  }

  /** One block's cases at {@code n} ranks, in the order collective, type, count, op. */
  private static void expand(Block b, int n, boolean quick, SplittableRandom rnd, List<Case> group) {
    for (Collective c : b.collectives()) {
      for (DataType t : b.types()) {
        for (Item<Count> count : b.counts()) {
          if (!count.runs(quick)) {
            continue;
          }
          long elems = count.value().elements(t, n);
          for (ReduceOp op : b.ops()) {
            group.add(switch (c) {
              case ALL_TO_ALLV -> new Case(c, t, op, elems, 0, b.inPlace(), a2avTable(n, elems, rnd));
              case BROADCAST -> new Case(c, t, op, elems, root(b.root(), n, rnd), b.inPlace(), null);
              case BARRIER -> new Case(c, t, op, 0, 0, false, null);
              default -> new Case(c, t, op, elems, 0, b.inPlace(), null);
            });
          }
        }
      }
    }
  }

  private static int root(Root r, int n, SplittableRandom rnd) {
    return switch (r) {
      case RANDOM -> rnd.nextInt(n);
      case LAST -> n - 1;
      case MIDDLE -> n / 2;
    };
  }

  /** An allToAllv case of a group of {@code n} ranks with the matrix's random table, counts up to {@code maxCount}. */
  public static Case allToAllvCase(DataType t, int n, long maxCount, SplittableRandom rnd) {
    return new Case(Collective.ALL_TO_ALLV, t, ReduceOp.SUM, maxCount, 0, false, a2avTable(n, maxCount, rnd));
  }

  /** A random allToAllv: counts[src][dst] in [0, maxCount], blocks packed with gaps between some. */
  static long[][] a2avTable(int n, long maxCount, SplittableRandom rnd) {
    long[][] c = new long[n][n];
    for (int s = 0; s < n; s++) {
      for (int d = 0; d < n; d++) {
        c[s][d] = rnd.nextLong(maxCount + 1);
      }
    }
    long[][] rows = new long[n * 4][];
    for (int r = 0; r < n; r++) {
      long[] sc = new long[n];
      long[] sd = new long[n];
      long[] rc = new long[n];
      long[] rd = new long[n];
      long at = 0;
      for (int k = 0; k < n; k++) {
        sc[k] = c[r][k];
        sd[k] = at;
        at += sc[k] + (k % 2);
      }
      at = 0;
      for (int k = 0; k < n; k++) {
        rc[k] = c[k][r];
        rd[k] = at;
        at += rc[k] + ((k + 1) % 2);
      }
      rows[4 * r] = sc;
      rows[4 * r + 1] = sd;
      rows[4 * r + 2] = rc;
      rows[4 * r + 3] = rd;
    }
    return rows;
  }

  static long extent(long[] counts, long[] displs) {
    long end = 0;
    for (int i = 0; i < counts.length; i++) {
      end = Math.max(end, displs[i] + counts[i]);
    }
    return end;
  }

  /** The number of cases of {@link #cases} (random choices do not change it). */
  public long size(boolean quick) {
    return cases(quick, new SplittableRandom(1)).values().stream().mapToLong(List::size).sum();
  }
}
