package dev.gpucoll.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.DataType;
import dev.gpucoll.api.ReduceOp;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.bytedeco.javacpp.BytePointer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The generated {@link KernelTable} against the generated kernel_table.h (both from kernel-table.txt;
 * this guards the generator): the header is parsed here (object-like #defines, evaluated with their
 * integer arithmetic) and every GC_X macro that has a Java constant X must have the same value; and
 * {@link KernelAbi} lays GcArgs out at those offsets.
 */
class KernelAbiHeaderTest {
  static final Path HEADER = Path.of("../../native-kernels/include/gpucoll/kernel_table.h");
  static final Path ABI_HEADER = Path.of("../../native-kernels/include/gpucoll/kernel_abi.h");
  static final Path BENCH_HEADER = Path.of("../../native-kernels/test/bench_table.h");
  static Map<String, Long> macros;

  @BeforeAll
  static void parse() throws Exception {
    macros = parseDefines(Files.readString(HEADER) + "\n" + Files.readString(ABI_HEADER));
  }

  /** Object-like #defines whose bodies are integer expressions over earlier macros. */
  static Map<String, Long> parseDefines(String text) {
    Map<String, String> raw = new LinkedHashMap<>();
    // Comments first (they may span lines), then line continuations.
    String uncommented = text.replaceAll("(?s)/\\*.*?\\*/", " ").replaceAll("//[^\\n]*", "");
    String joined = uncommented.replaceAll("\\\\\\r?\\n", " ");
    Matcher m = Pattern.compile("(?m)^\\s*#define\\s+(\\w+)(?!\\()\\s+(.*?)\\s*$").matcher(joined);
    while (m.find()) {
      String body = m.group(2).replaceAll("/\\*.*?\\*/", "").trim();
      raw.put(m.group(1), body);
    }
    Map<String, Long> values = new LinkedHashMap<>();
    for (String name : raw.keySet()) {
      try {
        values.put(name, new Expr(raw, raw.get(name)).eval());
      } catch (RuntimeException notInteger) {
        // string macros, function-like helpers: not part of the numeric ABI
      }
    }
    return values;
  }

  /** Recursive-descent evaluator for + - * / ( ) with C integer literals (u, ull suffixes, hex) and (type) casts. */
  static final class Expr {
    private final Map<String, String> raw;
    private final List<String> tokens = new ArrayList<>();
    private int pos;

    Expr(Map<String, String> raw, String text) {
      this.raw = raw;
      Matcher t = Pattern.compile("0[xX][0-9a-fA-F]+[uUlL]*|\\d+[uUlL]*|\\w+|[-+*/()]").matcher(text);
      int end = 0;
      while (t.find()) {
        if (!text.substring(end, t.start()).isBlank()) {
          throw new IllegalArgumentException("unexpected text in " + text);
        }
        tokens.add(t.group());
        end = t.end();
      }
      if (!text.substring(end).isBlank() || tokens.isEmpty()) {
        throw new IllegalArgumentException("not an expression: " + text);
      }
    }

    long eval() {
      long v = sum();
      if (pos != tokens.size()) {
        throw new IllegalArgumentException("trailing tokens");
      }
      return v;
    }

    private long sum() {
      long v = product();
      while (pos < tokens.size() && (peek().equals("+") || peek().equals("-"))) {
        v = tokens.get(pos++).equals("+") ? v + product() : v - product();
      }
      return v;
    }

    private long product() {
      long v = unary();
      while (pos < tokens.size() && (peek().equals("*") || peek().equals("/"))) {
        v = tokens.get(pos++).equals("*") ? v * unary() : v / unary();
      }
      return v;
    }

    private long unary() {
      String t = tokens.get(pos++);
      if (t.equals("-")) {
        return -unary();
      }
      if (t.equals("(")) {
        if (pos < tokens.size() && peek().matches("u?int\\d+_t|unsigned|size_t")) {
          pos += 2; // a cast: (uint64_t)
          return unary();
        }
        long v = sum();
        pos++; // ")"
        return v;
      }
      if (t.matches("0[xX][0-9a-fA-F]+[uUlL]*")) {
        return Long.parseUnsignedLong(t.replaceAll("[uUlL]", "").substring(2), 16);
      }
      if (t.matches("\\d+[uUlL]*")) {
        return Long.parseLong(t.replaceAll("[uUlL]", ""));
      }
      if (raw.containsKey(t)) {
        return new Expr(raw, raw.get(t)).eval();
      }
      throw new IllegalArgumentException("unknown identifier " + t);
    }

    private String peek() {
      return tokens.get(pos);
    }
  }

  @Test
  void everyJavaConstantMatchesItsMacro() throws Exception {
    int compared = 0;
    List<String> mismatches = new ArrayList<>();
    for (Field f : KernelTable.class.getFields()) {
      if (!Modifier.isStatic(f.getModifiers()) || !(f.getType() == int.class || f.getType() == long.class)) {
        continue;
      }
      Long header = macros.get("GC_" + f.getName());
      if (header == null) {
        continue;
      }
      long java = f.getType() == int.class ? Integer.toUnsignedLong(f.getInt(null)) : f.getLong(null);
      long expect = f.getType() == int.class ? header & 0xFFFFFFFFL : header;
      if (java != expect) {
        mismatches.add(f.getName() + ": Java " + java + ", header " + header);
      }
      compared++;
    }
    assertTrue(mismatches.isEmpty(), "KernelTable disagrees with kernel_table.h: " + mismatches);
    assertTrue(compared >= 40, "compared only " + compared + " constants");
  }

  @Test
  void argsAndErrorRecordOffsetsAreAllMirrored() {
    for (String name : macros.keySet()) {
      if (name.startsWith("GC_ARGS_OFFSET_") || name.startsWith("GC_ERR_OFFSET_") || name.equals("GC_ARGS_SIZE")
          || name.equals("GC_ERR_SIZE") || name.equals("GC_WORKSPACE_BYTES")) {
        String field = name.substring(3);
        assertTrue(hasField(field), "kernel_table.h defines " + name + " but KernelTable has no " + field);
      }
    }
    assertEquals(720L, macros.get("GC_ARGS_SIZE"));
  }

  @Test
  void typeAndOpCodesAreTheApiOrdinals() {
    String[] dt = {"FLOAT32", "FLOAT64", "FLOAT16", "BFLOAT16", "INT32", "INT64", "INT8", "UINT8"};
    for (String d : dt) {
      assertEquals((long) DataType.valueOf(d).ordinal(), macros.get("GC_DT_" + d), d);
    }
    assertEquals((long) DataType.values().length, macros.get("GC_DT_COUNT"));
    for (ReduceOp op : ReduceOp.values()) {
      assertEquals((long) op.ordinal(), macros.get("GC_OP_" + op.name()), op.name());
    }
  }

  @Test
  void workspaceRegionsAreAlignedAndContiguous() {
    long sent = macros.get("GC_WS_SENT_OFFSET");
    assertEquals(KernelTable.WS_SENT_OFFSET, sent);
    assertEquals(sent + macros.get("GC_WS_SENT_BYTES"), macros.get("GC_WS_ESC_OFFSET"));
    assertEquals(macros.get("GC_WS_PIPE_OFFSET") + macros.get("GC_WS_PIPE_BYTES"), KernelTable.WORKSPACE_BYTES);
    for (String r : List.of("GC_WS_SENT_OFFSET", "GC_WS_LL128_OFFSET", "GC_WS_PIPE_OFFSET")) {
      assertEquals(0, macros.get(r) % KernelTable.WORKSPACE_ALIGN, r);
    }
    // The Java header after the kernel workspace keeps the workspace base at the allocation base.
    assertEquals(0, KernelTable.WORKSPACE_BYTES % 256);
    assertTrue(macros.get("GC_WS_ERR_CLAIM") + 8 <= macros.get("GC_WS_CTRL_BYTES"));
  }

  /**
   * The test programs' comparison kernels live in the benchmark build's header alone: none of their
   * protocol, kernels, constants or workspace in the product's; their regions follow the product
   * workspace and their protocol ids stay apart from the product's.
   */
  @Test
  void benchmarkMaterialIsInTheBenchmarkHeaderOnly() throws Exception {
    String product = Files.readString(HEADER) + Files.readString(ABI_HEADER);
    for (String bench : List.of("TWO_BARRIER", "barrier2", "GC_BENCH_", "GC_WS_RAW", "GC_RAW_PEER_BYTES")) {
      assertTrue(!product.contains(bench), "the product's kernel headers mention " + bench);
    }
    Map<String, Long> bench = parseDefines(Files.readString(HEADER) + "\n" + Files.readString(BENCH_HEADER));
    assertEquals(KernelTable.WORKSPACE_BYTES, bench.get("GC_WS_RAW_OFFSET"));
    assertEquals(bench.get("GC_WS_RAW_OFFSET") + bench.get("GC_WS_RAW_BYTES"), bench.get("GC_BENCH_WORKSPACE_BYTES"));
    assertEquals(4L << 20, bench.get("GC_WS_RAW_BYTES"));
    long twoBarrier = bench.get("GC_PROTO_TWO_BARRIER");
    for (KernelTable.Protocol p : KernelTable.Protocol.values()) {
      assertTrue(p.id() != twoBarrier, p + " shares the benchmark protocol's id " + twoBarrier);
    }
  }

  @Test
  void controlBlockHoldsErrorRecordThenAbortWord() {
    assertTrue(KernelAbi.CONTROL_ABORT_OFFSET >= KernelTable.ERR_SIZE);
    assertTrue(KernelAbi.CONTROL_ABORT_OFFSET + 4 <= KernelAbi.CONTROL_BYTES);
    assertEquals(0, KernelAbi.CONTROL_ABORT_OFFSET % 4);
  }

  @Test
  void gridRuleMatchesHeaderFormula() {
    // GC_GRID_FOR_BYTES: <= 4 KB -> 1; >= 64 KB -> 16; else ceil(bytes / 4 KB) (one LL slot per thread).
    assertEquals(1, KernelTable.gridForBytes(0));
    assertEquals(1, KernelTable.gridForBytes(4096));
    assertEquals(2, KernelTable.gridForBytes(4097));
    assertEquals(8, KernelTable.gridForBytes(32768));
    assertEquals(16, KernelTable.gridForBytes(65536));
    assertEquals(16, KernelTable.gridForBytes(131072));
    assertEquals(16, KernelTable.gridForBytes(64L << 20));
    assertTrue(macros.get("GC_MAX_GRID_RULE") <= macros.get("GC_MAX_BLOCKS"));
  }

  @Test
  void writeGroupRefusesAnUnmappedPeer() {
    BytePointer b = new BytePointer(KernelTable.ARGS_SIZE);
    IllegalStateException e = assertThrows(IllegalStateException.class,
        () -> KernelAbi.writeGroup(b.asByteBuffer(), 0, 3, 7, 0x11, 0x22, new long[] {0x1000, 0, 0x3000}));
    assertTrue(e.getMessage().contains("rank 1"), e.getMessage());
  }

  @Test
  void writeArgsLaysOutGcArgs() {
    long[] peers = {0x1000, 0x2000, 0x3000};
    long[][] a2av = {{1, 2, 3}, {0, 1, 3}, {4, 5, 6}, {0, 4, 9}};
    BytePointer b = new BytePointer(KernelTable.ARGS_SIZE);
    b.fill(0xAB);
    KernelAbi.writeArgs(b.asByteBuffer(), new KernelAbi.Call(1, 3, 42, 0xA0, 0xB0, 777, DataType.BFLOAT16, ReduceOp.MAX, 2, peers,
        0xC0, 0xD0, 5_000_000_000L, a2av));
    assertEquals(42, b.getLong(macros.get("GC_ARGS_OFFSET_EPOCH")));
    assertEquals(0xA0, b.getLong(macros.get("GC_ARGS_OFFSET_SEND")));
    assertEquals(0xB0, b.getLong(macros.get("GC_ARGS_OFFSET_RECV")));
    assertEquals(777, b.getLong(macros.get("GC_ARGS_OFFSET_COUNT")));
    assertEquals(1, b.getInt(macros.get("GC_ARGS_OFFSET_RANK")));
    assertEquals(3, b.getInt(macros.get("GC_ARGS_OFFSET_NRANKS")));
    assertEquals(macros.get("GC_DT_BFLOAT16"), (long) b.getInt(macros.get("GC_ARGS_OFFSET_DTYPE")));
    assertEquals(macros.get("GC_OP_MAX"), (long) b.getInt(macros.get("GC_ARGS_OFFSET_OP")));
    assertEquals(2, b.getInt(macros.get("GC_ARGS_OFFSET_ROOT")));
    assertEquals(0, b.getInt(macros.get("GC_ARGS_OFFSET_RESERVED0")));
    assertEquals(5_000_000_000L, b.getLong(macros.get("GC_ARGS_OFFSET_TIMEOUT_NS")));
    assertEquals(0xC0, b.getLong(macros.get("GC_ARGS_OFFSET_ABORT_WORD")));
    assertEquals(0xD0, b.getLong(macros.get("GC_ARGS_OFFSET_ERROR_RECORD")));
    long peersAt = macros.get("GC_ARGS_OFFSET_PEERS");
    long maxRanks = macros.get("GC_MAX_RANKS");
    for (int r = 0; r < maxRanks; r++) {
      assertEquals(r < 3 ? peers[r] : 0, b.getLong(peersAt + 8L * r), "peers[" + r + "]");
    }
    long a2avAt = macros.get("GC_ARGS_OFFSET_A2AV");
    for (int k = 0; k < 4; k++) {
      for (int r = 0; r < maxRanks; r++) {
        assertEquals(r < 3 ? a2av[k][r] : 0, b.getLong(a2avAt + 8L * (k * maxRanks + r)), "a2av[" + k + "][" + r + "]");
      }
    }
    assertEquals(2L, macros.get("GC_A2AV_RECV_COUNTS"));
  }

  @Test
  void perCallWriteLeavesGroupFieldsAndA2avTable() {
    BytePointer b = new BytePointer(KernelTable.ARGS_SIZE);
    b.fill(0);
    java.nio.ByteBuffer view = b.asByteBuffer();
    KernelAbi.writeGroup(view, 2, 4, 7, 0x11, 0x22, new long[] {1, 2, 3, 4});
    KernelAbi.writeCall(view, 9, 0x100, 0x200, 5, DataType.INT64, ReduceOp.SUM, 3,
        new long[][] {{1, 1, 1, 1}, {0, 1, 2, 3}, {2, 2, 2, 2}, {0, 2, 4, 6}});
    KernelAbi.writeCall(view, 10, 0x300, 0x400, 6, DataType.FLOAT32, ReduceOp.MIN, 0, null);
    assertEquals(10, b.getLong(macros.get("GC_ARGS_OFFSET_EPOCH")));
    assertEquals(0x300, b.getLong(macros.get("GC_ARGS_OFFSET_SEND")));
    assertEquals(2, b.getInt(macros.get("GC_ARGS_OFFSET_RANK")));
    assertEquals(4, b.getInt(macros.get("GC_ARGS_OFFSET_NRANKS")));
    assertEquals(0x22, b.getLong(macros.get("GC_ARGS_OFFSET_ERROR_RECORD")));
    assertEquals(4, b.getLong(macros.get("GC_ARGS_OFFSET_PEERS") + 24));
    assertEquals(6, b.getLong(macros.get("GC_ARGS_OFFSET_A2AV") + 8L * (3 * macros.get("GC_MAX_RANKS") + 3)));
  }

  @Test
  void errorRecordBecomesTimeoutNamingPeerAndEpoch() {
    BytePointer rec = new BytePointer(KernelAbi.CONTROL_BYTES);
    rec.fill(0);
    rec.putInt(macros.get("GC_ERR_OFFSET_RANK"), 0);
    rec.putInt(macros.get("GC_ERR_OFFSET_PEER"), 3);
    rec.putInt(macros.get("GC_ERR_OFFSET_KERNEL"), (int) (macros.get("GC_COLL_ALLREDUCE") * 16 + macros.get("GC_PROTO_LL")));
    rec.putLong(macros.get("GC_ERR_OFFSET_EPOCH"), 17);
    rec.putLong(macros.get("GC_ERR_OFFSET_DETAIL"), 1); // the peer it was polling
    rec.putInt(macros.get("GC_ERR_OFFSET_CODE"), (int) (long) macros.get("GC_ERR_TIMEOUT"));
    assertEquals(1, KernelAbi.errorCode(rec.asByteBuffer()));
    var e = KernelAbi.toException(rec.asByteBuffer(), 0, null);
    assertTrue(e instanceof dev.gpucoll.api.CollectiveTimeoutException, e.toString());
    assertEquals(List.of(3), ((dev.gpucoll.api.CollectiveTimeoutException) e).missingRanks());
    assertEquals(dev.gpucoll.api.Collective.ALL_REDUCE, e.collective());
    assertTrue(e.getMessage().contains("waiting for rank 3") && e.getMessage().contains("epoch 17")
        && e.getMessage().contains("allReduce/ll") && e.getMessage().contains("polling rank 1"), e.getMessage());
  }

  private static boolean hasField(String name) {
    try {
      KernelTable.class.getField(name);
      return true;
    } catch (NoSuchFieldException e) {
      return false;
    }
  }
}
