import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Turns native-kernels/kernel-table.txt into the C header the kernels include, the Java class the
 * host plans launches from, and the benchmark build's header (the table's section after "bench":
 * what only the test programs build, never the product). Run by the build in --check mode (fails when
 * a checked-in output differs from what the table gives) and by scripts/generate-kernel-table.sh in
 * --write mode. Plain JDK, run as a source file ({@code java KernelTableGen.java ...}): no Python, no
 * compile step.
 *
 * <pre>java KernelTableGen.java --check|--write table.txt kernel_table.h KernelTable.java bench_table.h</pre>
 */
public final class KernelTableGen {
  // bench: declared after the table's "bench" line, so in the benchmark build's header alone.
  record Const(String name, long value, boolean hexBits, String comment, boolean bench) {}
  record Type(String name, String suffix, String cType, int size, int accSize, int code) {}
  /** A value-index pair of MAXLOC / MINLOC: the C struct {value; index;}, two slots of the wider type. */
  record Pair(String name, String suffix, Type value, Type index, int code) {
    int size() {
      return 2 * Math.max(value.size, index.size);
    }
  }
  record Coll(String name, int id, String part, String kind) {}
  record Proto(String name, int id, String part, String comment, boolean bench) {}
  record Field(String name, String type, List<Long> dims, int offset, int size, String comment) {}
  record Struct(String name, List<Field> fields, int size) {}
  record Region(String name, long offset, long bytes, String comment, boolean bench) {}
  // pairs: one kernel per pair type (types empty; ops are pair reductions)
  record Kernel(Coll coll, Proto proto, String algorithm, boolean bench, List<Type> types, boolean anyType,
      List<String> ops, String capacity, String grid, boolean pairs) {
    String name(Type t) {
      String p = proto.part.equals("-") ? "" : "_" + proto.part;
      return "gc_" + coll.part + p + (t == null ? "" : "_" + t.suffix);
    }

    String name(Pair t) {
      return name((Type) null) + "_" + t.suffix;
    }

    /** A batch kernel: takes GcBatch beside GcArgs (capacity "packed"). */
    boolean packed() {
      return capacity.startsWith("packed:");
    }
  }

  /** The macro prefix of a struct's offsets: GC_ARGS_ (GcArgs), GC_BATCH_ (GcBatch), GC_ERR_ (GcErrorRecord). */
  static String structPrefix(String name) {
    return switch (name) {
      case "GcArgs" -> "ARGS_";
      case "GcBatch" -> "BATCH_";
      case "GcErrorRecord" -> "ERR_";
      default -> throw new IllegalArgumentException("unknown struct " + name);
    };
  }

  final Map<String, Const> consts = new LinkedHashMap<>();
  final List<Type> types = new ArrayList<>();
  final List<String> ops = new ArrayList<>();
  final List<Pair> pairs = new ArrayList<>();
  final List<String> locOps = new ArrayList<>();
  final Map<String, Coll> colls = new LinkedHashMap<>();
  final Map<String, Proto> protos = new LinkedHashMap<>();
  final List<Kernel> kernels = new ArrayList<>();
  final List<Struct> structs = new ArrayList<>();
  final List<Region> regions = new ArrayList<>();
  /** Whether the parser is past the "bench" line: what follows is the benchmark build's alone. */
  boolean inBench;
  /** Bytes of the product workspace (its regions; the benchmark regions follow). */
  long productWorkspaceBytes;

  public static void main(String[] args) throws IOException {
    if (args.length != 5 || !(args[0].equals("--check") || args[0].equals("--write"))) {
      System.err.println("usage: java KernelTableGen.java --check|--write <kernel-table.txt> <kernel_table.h> <KernelTable.java>"
          + " <bench_table.h>");
      System.exit(2);
    }
    KernelTableGen g = new KernelTableGen();
    Path table = Path.of(args[1]);
    try {
      g.parse(Files.readAllLines(table, StandardCharsets.UTF_8));
    } catch (RuntimeException e) {
      System.err.println("ERROR: " + table + ": " + e.getMessage());
      System.exit(2);
    }
    Map<Path, String> outputs = new LinkedHashMap<>();
    outputs.put(Path.of(args[2]), g.header());
    outputs.put(Path.of(args[3]), g.java());
    outputs.put(Path.of(args[4]), g.benchHeader());
    List<String> stale = new ArrayList<>();
    for (Map.Entry<Path, String> o : outputs.entrySet()) {
      Path p = o.getKey();
      boolean same = Files.exists(p) && Files.readString(p, StandardCharsets.UTF_8).equals(o.getValue());
      if (same) {
        continue;
      }
      if (args[0].equals("--write")) {
        Files.writeString(p, o.getValue(), StandardCharsets.UTF_8);
        System.out.println("wrote " + p);
      } else {
        stale.add(p.toString());
      }
    }
    if (!stale.isEmpty()) {
      System.err.println("ERROR: generated from " + table + " but differs (edited by hand, or the table changed): "
          + String.join(", ", stale));
      System.err.println("  regenerate with native-kernels/scripts/generate-kernel-table.sh and commit the result");
      System.exit(1);
    }
  }

  // ------------------------------------------------------------------ parsing

  void parse(List<String> lines) {
    Struct open = null;
    List<Field> fields = null;
    int offset = 0, align = 1;
    long regionAt = 0;
    for (int n = 0; n < lines.size(); n++) {
      String raw = lines.get(n);
      int hash = raw.indexOf('#');
      String comment = hash >= 0 ? raw.substring(hash + 1).trim() : "";
      String line = (hash >= 0 ? raw.substring(0, hash) : raw).trim();
      if (line.isEmpty()) {
        continue;
      }
      String[] f = line.split("\\s+");
      try {
        if (inBench && !List.of("const", "protocol", "kernel", "region").contains(f[0])) {
          throw new IllegalArgumentException("only const, protocol, kernel and region lines may follow \"bench\", not " + f[0]);
        }
        switch (f[0]) {
          case "bench" -> {
            need(f, 1);
            if (open != null) {
              throw new IllegalArgumentException("bench inside struct " + open.name);
            }
            inBench = true;
            productWorkspaceBytes = regionAt;
          }
          case "const" -> {
            need(f, 3);
            if (consts.containsKey(f[1])) {
              throw new IllegalArgumentException("constant " + f[1] + " defined twice");
            }
            consts.put(f[1], new Const(f[1], eval(f[2]), f[2].matches("0[xX][0-9a-fA-F]+"), comment, inBench));
          }
          case "type" -> {
            need(f, 6);
            types.add(new Type(f[1], f[2], f[3], Integer.parseInt(f[4]), Integer.parseInt(f[5]), types.size()));
          }
          case "op" -> ops.add(f[1]);
          case "pair" -> {
            need(f, 5);
            pairs.add(new Pair(f[1], f[2], typeNamed(f[3]), typeNamed(f[4]), pairs.size()));
          }
          case "locop" -> locOps.add(f[1]);
          case "collective" -> {
            need(f, 5);
            colls.put(f[1], new Coll(f[1], Integer.parseInt(f[2]), f[3], f[4]));
          }
          case "protocol" -> {
            need(f, 4);
            int id = Integer.parseInt(f[2]);
            for (Proto p : protos.values()) {
              if (p.name.equals(f[1]) || p.id == id) {
                throw new IllegalArgumentException("protocol " + f[1] + " " + id + " repeats the name or id of " + p.name + " " + p.id);
              }
            }
            if (id < 0 || id > 15) {
              throw new IllegalArgumentException("protocol id " + id + " outside 0..15 (kernel id = collective * 16 + protocol)");
            }
            protos.put(f[1], new Proto(f[1], id, f[3], comment, inBench));
          }
          case "kernel" -> kernels.add(kernel(f));
          case "struct" -> {
            open = new Struct(f[1], fields = new ArrayList<>(), 0);
            offset = 0;
            align = 1;
          }
          case "field" -> {
            if (open == null) {
              throw new IllegalArgumentException("field outside a struct");
            }
            Matcher m = Pattern.compile("(u32|u64|i64)((?:\\[[^\\]]+\\])*)").matcher(f[2]);
            if (!m.matches()) {
              throw new IllegalArgumentException("field type " + f[2]);
            }
            int es = m.group(1).equals("u32") ? 4 : 8;
            List<Long> dims = new ArrayList<>();
            Matcher d = Pattern.compile("\\[([^\\]]+)\\]").matcher(m.group(2));
            long count = 1;
            while (d.find()) {
              long v = eval(d.group(1));
              dims.add(v);
              count *= v;
            }
            offset = (offset + es - 1) / es * es;
            align = Math.max(align, es);
            fields.add(new Field(f[1], m.group(1), dims, offset, (int) (es * count), comment));
            offset += (int) (es * count);
          }
          case "end" -> {
            int size = (offset + align - 1) / align * align;
            structs.add(new Struct(open.name, fields, size));
            open = null;
          }
          case "region" -> {
            need(f, 3);
            long bytes = eval(f[2]);
            if (!regions.isEmpty() && regionAt % 4096 != 0) {
              throw new IllegalArgumentException("region " + f[1] + " would start at " + regionAt + ", not 4096-aligned");
            }
            regions.add(new Region(f[1], regionAt, bytes, comment, inBench));
            regionAt += bytes;
          }
          default -> throw new IllegalArgumentException("unknown keyword " + f[0]);
        }
      } catch (RuntimeException e) {
        throw new IllegalArgumentException("line " + (n + 1) + ": " + e.getMessage(), e);
      }
    }
    if (open != null) {
      throw new IllegalArgumentException("struct " + open.name + " has no end");
    }
    if (!inBench) {
      productWorkspaceBytes = regionAt;
    }
  }

  static void need(String[] f, int n) {
    if (f.length != n) {
      throw new IllegalArgumentException(f[0] + " takes " + (n - 1) + " fields, got " + (f.length - 1));
    }
  }

  Type typeNamed(String name) {
    return types.stream().filter(x -> x.name.equals(name)).findFirst()
        .orElseThrow(() -> new IllegalArgumentException("unknown type " + name));
  }

  Kernel kernel(String[] f) {
    need(f, 8);
    Coll c = colls.get(f[1]);
    Proto p = protos.get(f[2]);
    if (c == null || p == null) {
      throw new IllegalArgumentException("unknown collective or protocol in " + String.join(" ", f));
    }
    // A product kernel reports its Algorithm; a benchmark kernel has none (the Java side never sees it).
    if (inBench != f[3].equals("-")) {
      throw new IllegalArgumentException((inBench ? "a benchmark kernel has no algorithm (write -), not " : "a product kernel needs an algorithm, not ")
          + f[3]);
    }
    List<Type> ts = new ArrayList<>();
    boolean any = f[4].equals("any");
    boolean pairKernel = f[4].equals("pairs");
    if (f[4].equals("all")) {
      ts.addAll(types);
    } else if (!any && !pairKernel && !f[4].equals("none")) {
      for (String t : f[4].split(",")) {
        ts.add(typeNamed(t));
      }
    }
    if (pairKernel ? !c.kind.equals("reduction") || inBench || !f[6].startsWith("bytes:")
        : c.kind.equals("reduction") == (any || ts.isEmpty())) {
      throw new IllegalArgumentException(c.name + " is " + c.kind + ": types " + f[4] + " do not fit"
          + (pairKernel ? " (a pairs kernel reduces, ships, and has a bytes: capacity)" : ""));
    }
    List<String> opNames = pairKernel ? locOps : ops;
    List<String> os = f[5].equals("all") ? opNames : f[5].equals("none") ? List.of() : List.of(f[5].split(","));
    for (String o : os) {
      if (!opNames.contains(o)) {
        throw new IllegalArgumentException("unknown op " + o);
      }
    }
    // GC_KERNEL_TAKES_OP lists the product's op restrictions only.
    if (inBench && !os.isEmpty() && os.size() != ops.size()) {
      throw new IllegalArgumentException("a benchmark kernel takes all ops or none, not " + f[5]);
    }
    if (!(f[6].equals("lines") || f[6].equals("unbounded") || f[6].startsWith("bytes:") && consts.containsKey(f[6].substring(6))
        || f[6].startsWith("packed:") && consts.containsKey(f[6].substring(7)) && c.kind.equals("reduction"))) {
      throw new IllegalArgumentException("capacity " + f[6]);
    }
    if (!(f[7].equals("bytes") || f[7].equals("same-bytes") || f[7].equals("one")
        || f[7].startsWith("fixed:") && consts.containsKey(f[7].substring(6)))) {
      throw new IllegalArgumentException("grid " + f[7]);
    }
    for (Kernel k : kernels) {
      if (k.coll == c && k.proto == p) {
        throw new IllegalArgumentException("two kernels for " + c.name + " " + p.name);
      }
    }
    return new Kernel(c, p, f[3], inBench, ts, any, os, f[6], f[7], pairKernel);
  }

  /** A table comment as javadoc text: HTML's special characters escaped, no comment end inside. */
  static String javadoc(String comment) {
    return comment.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("*/", "* /");
  }

  /** Integer expression: + - * / ( ), decimal or hex literals, constants defined above. */
  long eval(String s) {
    Matcher t = Pattern.compile("0[xX][0-9a-fA-F]+|\\d+|\\w+|[-+*/()]").matcher(s);
    List<String> tok = new ArrayList<>();
    int end = 0;
    while (t.find()) {
      if (!s.substring(end, t.start()).isBlank()) {
        throw new IllegalArgumentException("bad expression " + s);
      }
      tok.add(t.group());
      end = t.end();
    }
    if (!s.substring(end).isBlank()) {
      throw new IllegalArgumentException("bad expression " + s);
    }
    int[] pos = {0};
    long v = sum(tok, pos);
    if (pos[0] != tok.size()) {
      throw new IllegalArgumentException("bad expression " + s);
    }
    return v;
  }

  long sum(List<String> t, int[] p) {
    long v = product(t, p);
    while (p[0] < t.size() && (t.get(p[0]).equals("+") || t.get(p[0]).equals("-"))) {
      v = t.get(p[0]++).equals("+") ? v + product(t, p) : v - product(t, p);
    }
    return v;
  }

  long product(List<String> t, int[] p) {
    long v = atom(t, p);
    while (p[0] < t.size() && (t.get(p[0]).equals("*") || t.get(p[0]).equals("/"))) {
      v = t.get(p[0]++).equals("*") ? v * atom(t, p) : v / atom(t, p);
    }
    return v;
  }

  long atom(List<String> t, int[] p) {
    String x = t.get(p[0]++);
    if (x.equals("(")) {
      long v = sum(t, p);
      p[0]++;
      return v;
    }
    if (x.matches("0[xX][0-9a-fA-F]+")) {
      return Long.parseLong(x.substring(2), 16);
    }
    if (x.matches("\\d+")) {
      return Long.parseLong(x);
    }
    Const c = consts.get(x);
    if (c == null) {
      throw new IllegalArgumentException("unknown constant " + x);
    }
    return c.value;
  }

  // ------------------------------------------------------------------ the C header

  static final String GENERATED = "GENERATED from native-kernels/kernel-table.txt by native-kernels/scripts/KernelTableGen.java;"
      + " do not edit (the build fails when this file differs from what the table gives).";

  static String cLiteral(long v, boolean hex) {
    String s = hex ? "0x" + Long.toHexString(v).toUpperCase(Locale.ROOT) : Long.toString(v);
    return v <= Integer.MAX_VALUE && !hex ? s : v <= 0xFFFFFFFFL ? s + "u" : s + "ull";
  }

  static String upper(String s) {
    return s.toUpperCase(Locale.ROOT);
  }

  String header() {
    StringBuilder h = new StringBuilder();
    h.append("/* ").append(GENERATED).append("\n *\n")
        .append(" * The kernel table in C: limits and capacities, type/op/collective/protocol codes, the kernels that\n")
        .append(" * exist (X-macro lists the kernel sources instantiate from), GcArgs and GcErrorRecord with every\n")
        .append(" * offset pinned, the workspace regions. The launch contract around it: kernel_abi.h. */\n")
        .append("#ifndef GPUCOLL_KERNEL_TABLE_H_\n#define GPUCOLL_KERNEL_TABLE_H_\n\n#include <stddef.h>\n#include <stdint.h>\n\n");
    h.append("/* ---- limits, geometry, capacities ---- */\n");
    defineConsts(h, false);
    h.append("/* Grid rule \"bytes\": ceil(bytes / GC_BYTES_PER_BLOCK) clamped to [1, GC_MAX_GRID_RULE]. */\n")
        .append("#define GC_GRID_FOR_BYTES(bytes) \\\n")
        .append("  ((bytes) <= GC_BYTES_PER_BLOCK ? 1u \\\n")
        .append("   : ((bytes) >= (uint64_t)GC_BYTES_PER_BLOCK * GC_MAX_GRID_RULE ? (unsigned)GC_MAX_GRID_RULE \\\n")
        .append("      : (unsigned)(((bytes) + GC_BYTES_PER_BLOCK - 1) / GC_BYTES_PER_BLOCK)))\n\n");
    h.append("/* ---- element types: codes equal dev.gpucoll.api.DataType ordinals ---- */\n");
    for (Type t : types) {
      h.append("#define GC_DT_").append(t.name).append(' ').append(t.code).append('\n');
    }
    h.append("#define GC_DT_COUNT ").append(types.size()).append("\n");
    h.append("/* X(CODE, suffix, cuda_type) for every element type */\n#define GC_FOR_EACH_TYPE(X)");
    for (Type t : types) {
      h.append(" \\\n  X(GC_DT_").append(t.name).append(", ").append(t.suffix).append(", ").append(t.cType).append(')');
    }
    h.append("\n\n/* ---- reduction ops: codes equal dev.gpucoll.api.ReduceOp ordinals ---- */\n");
    for (int i = 0; i < ops.size(); i++) {
      h.append("#define GC_OP_").append(ops.get(i)).append(' ').append(i).append('\n');
    }
    h.append("#define GC_OP_COUNT ").append(ops.size()).append("\n\n");
    h.append("/* ---- value-index pair types (MAXLOC/MINLOC): codes equal dev.gpucoll.api.PairType ordinals ---- */\n");
    for (Pair t : pairs) {
      h.append("#define GC_PT_").append(t.name).append(' ').append(t.code).append('\n');
    }
    h.append("#define GC_PT_COUNT ").append(pairs.size()).append("\n");
    h.append("/* ---- pair reductions: codes equal dev.gpucoll.api.LocOp ordinals ---- */\n");
    for (int i = 0; i < locOps.size(); i++) {
      h.append("#define GC_LOC_").append(locOps.get(i)).append(' ').append(i).append('\n');
    }
    h.append("#define GC_LOC_COUNT ").append(locOps.size()).append("\n\n");
    h.append("/* ---- collectives and protocols; GcErrorRecord.kernel = GC_KERNEL_ID(collective, protocol) ---- */\n");
    for (Coll c : colls.values()) {
      h.append("#define GC_COLL_").append(upper(c.part)).append(' ').append(c.id).append('\n');
    }
    defineProtocols(h, false);
    h.append("#define GC_KERNEL_ID(coll, proto) ((coll) * 16 + (proto))\n\n");
    h.append("/* ---- the kernels; X(name, GC_COLL_*, GC_PROTO_*, cuda_type) per reduction kernel (one per type),\n")
        .append(" *      X(name, GC_COLL_*, GC_PROTO_*) per kernel for every type or none; the batch kernels (capacity\n")
        .append(" *      \"packed\", parameters GcArgs and GcBatch) X(name, GC_COLL_*, GC_PROTO_*, cuda_type); the pair kernels\n")
        .append(" *      X(name, GC_COLL_*, GC_PROTO_*, GC_PT_*, value cuda_type, index cuda_type) ---- */\n");
    h.append("/* gpucoll_kernels.fatbin (in the jar) */\n");
    kernelLists(h, false);
    h.append("/* Whether (collective, protocol) supports op (reductions) -- the table's op lists. */\n")
        .append("#define GC_KERNEL_TAKES_OP(coll, proto, op) ( \\\n");
    for (Kernel k : kernels) {
      if (!k.bench && !k.pairs && !k.ops.isEmpty() && k.ops.size() != ops.size()) {
        h.append("  ((coll) == GC_COLL_").append(upper(k.coll.part)).append(" && (proto) == GC_PROTO_").append(k.proto.name)
            .append(") ? (");
        for (int i = 0; i < k.ops.size(); i++) {
          h.append(i > 0 ? " || " : "").append("(op) == GC_OP_").append(k.ops.get(i));
        }
        h.append(") : \\\n");
      }
    }
    h.append("  (op) < GC_OP_COUNT)\n\n");
    for (Struct s : structs) {
      String pfx = "GC_" + structPrefix(s.name);
      h.append("/* ---- ").append(s.name).append(" ---- */\ntypedef struct ").append(s.name).append(" {\n");
      for (Field f : s.fields) {
        String ct = f.type.equals("u32") ? "uint32_t" : f.type.equals("u64") ? "uint64_t" : "int64_t";
        StringBuilder dims = new StringBuilder();
        for (Long d : f.dims) {
          dims.append('[').append(d).append(']');
        }
        h.append("  ").append(ct).append(' ').append(f.name).append(dims).append(';')
            .append(f.comment.isEmpty() ? "" : " /* " + f.comment + " */").append('\n');
      }
      h.append("} ").append(s.name).append(";\n");
      for (Field f : s.fields) {
        h.append("#define ").append(pfx).append("OFFSET_").append(upper(f.name)).append(' ').append(f.offset).append('\n');
      }
      h.append("#define ").append(pfx).append("SIZE ").append(s.size).append('\n');
    }
    h.append("\n/* ---- workspace regions (bytes from the workspace base) ---- */\n");
    defineRegions(h, false);
    h.append("#define GC_WORKSPACE_BYTES ").append(cLiteral(productWorkspaceBytes, false)).append("\n\n");
    h.append("#ifdef __cplusplus\n#define GC_STATIC_ASSERT(c, m) static_assert(c, m)\n#else\n")
        .append("#define GC_STATIC_ASSERT(c, m) _Static_assert(c, m)\n#endif\n");
    for (Struct s : structs) {
      String pfx = "GC_" + structPrefix(s.name);
      for (Field f : s.fields) {
        h.append("GC_STATIC_ASSERT(offsetof(").append(s.name).append(", ").append(f.name).append(") == ").append(pfx)
            .append("OFFSET_").append(upper(f.name)).append(", \"").append(s.name).append('.').append(f.name).append("\");\n");
      }
      h.append("GC_STATIC_ASSERT(sizeof(").append(s.name).append(") == ").append(pfx).append("SIZE, \"").append(s.name)
          .append(" size\");\n");
    }
    h.append("\n#ifdef __CUDACC__\n#define GC_HOST_DEVICE __host__ __device__\n#else\n#define GC_HOST_DEVICE\n#endif\n");
    h.append("/* Element size in bytes of a GC_DT_* code, 0 for an unknown code. */\n")
        .append("static inline GC_HOST_DEVICE uint32_t gc_dtype_size(uint32_t dtype) {\n  switch (dtype) {\n");
    typeCases(h, "    case GC_DT_%s: return %su;\n", t -> Integer.toString(t.size));
    h.append("    default: return 0u;\n  }\n}\n");
    h.append("/* Bytes of the type a reduction accumulates in (16-bit floats in fp32), 0 for an unknown code. */\n")
        .append("static inline GC_HOST_DEVICE uint32_t gc_acc_size(uint32_t dtype) {\n  switch (dtype) {\n");
    typeCases(h, "    case GC_DT_%s: return %su;\n", t -> Integer.toString(t.accSize));
    h.append("    default: return 0u;\n  }\n}\n");
    h.append("/* LL128 capacity (\"lines\"): a line holds GC_LL128_DATA_BYTES of accumulators. */\n")
        .append("#define GC_LL128_ELEMS_PER_LINE(dtype) (GC_LL128_DATA_BYTES / gc_acc_size(dtype))\n")
        .append("#define GC_LL128_MAX_COUNT(dtype) ((uint64_t)GC_LL128_MAX_LINES * GC_LL128_ELEMS_PER_LINE(dtype))\n");
    h.append("/* Elements per peer that the kernel of (collective, protocol) takes for dtype -- the table's capacity\n")
        .append(" * column (bytes per peer, LL128 lines, packed bytes, unbounded); 0 when it has no such kernel or type. */\n")
        .append("static inline GC_HOST_DEVICE uint64_t gc_kernel_max_count(uint32_t coll, uint32_t proto, uint32_t dtype) {\n")
        .append("  if (gc_dtype_size(dtype) == 0) return 0u;\n  switch (GC_KERNEL_ID(coll, proto)) {\n");
    capacityCases(h, false);
    h.append("    default: return 0u;\n  }\n}\n");
    h.append("/* Bytes of a value-index pair of a GC_PT_* code (the C struct {value; index;}), 0 for an unknown code. */\n")
        .append("static inline GC_HOST_DEVICE uint32_t gc_pair_size(uint32_t ptype) {\n  switch (ptype) {\n");
    for (Pair t : pairs) {
      h.append("    case GC_PT_").append(t.name).append(": return ").append(t.size()).append("u;\n");
    }
    h.append("    default: return 0u;\n  }\n}\n");
    h.append("/* Pairs that the pair kernel of (collective, protocol) takes for ptype (its capacity column); 0 when none. */\n")
        .append("static inline GC_HOST_DEVICE uint64_t gc_pair_kernel_max_count(uint32_t coll, uint32_t proto, uint32_t ptype) {\n")
        .append("  if (gc_pair_size(ptype) == 0) return 0u;\n  switch (GC_KERNEL_ID(coll, proto)) {\n");
    for (Kernel k : kernels) {
      if (k.pairs) {
        h.append("    case GC_KERNEL_ID(GC_COLL_").append(upper(k.coll.part)).append(", GC_PROTO_").append(k.proto.name)
            .append("): return (uint64_t)GC_").append(k.capacity.substring(6)).append(" / gc_pair_size(ptype);\n");
      }
    }
    h.append("    default: return 0u;\n  }\n}\n");
    h.append("\n#endif /* GPUCOLL_KERNEL_TABLE_H_ */\n");
    return h.toString();
  }

  /** The benchmark build's header: the table after its "bench" line, on top of the product's kernel_abi.h. */
  String benchHeader() {
    StringBuilder h = new StringBuilder();
    h.append("/* ").append(GENERATED).append("\n *\n")
        .append(" * The kernel table's benchmark section (after its \"bench\" line) in C: what only the test programs\n")
        .append(" * build (gc_test, gc_bench, gpucoll_bench.fatbin), never the shipped fatbin, the Java class or a\n")
        .append(" * product workspace. Its regions follow the product workspace: a test program allocates\n")
        .append(" * GC_BENCH_WORKSPACE_BYTES per rank, the product GC_WORKSPACE_BYTES. */\n")
        .append("#ifndef GPUCOLL_BENCH_TABLE_H_\n#define GPUCOLL_BENCH_TABLE_H_\n\n#include \"gpucoll/kernel_abi.h\"\n\n");
    h.append("/* ---- benchmark constants ---- */\n");
    defineConsts(h, true);
    h.append("\n/* ---- benchmark protocols (ids apart from the product's: GcErrorRecord.kernel names one kernel) ---- */\n");
    defineProtocols(h, true);
    h.append("\n/* ---- benchmark kernels: gpucoll_bench.fatbin (test programs only); lists as kernel_table.h's ---- */\n");
    kernelLists(h, true);
    h.append("\n/* ---- benchmark workspace regions, after the product's GC_WORKSPACE_BYTES ---- */\n");
    defineRegions(h, true);
    h.append("#define GC_BENCH_WORKSPACE_BYTES ").append(cLiteral(regions.isEmpty() ? 0 : regions.get(regions.size() - 1).offset
        + regions.get(regions.size() - 1).bytes, false)).append("\n\n");
    h.append("/* Elements per peer that the kernel of (collective, protocol) takes for dtype in the benchmark build:\n")
        .append(" * a benchmark kernel's capacity, else the product's gc_kernel_max_count. */\n")
        .append("static inline GC_HOST_DEVICE uint64_t gc_bench_kernel_max_count(uint32_t coll, uint32_t proto, uint32_t dtype) {\n")
        .append("  if (gc_dtype_size(dtype) == 0) return 0u;\n  switch (GC_KERNEL_ID(coll, proto)) {\n");
    capacityCases(h, true);
    h.append("    default: return gc_kernel_max_count(coll, proto, dtype);\n  }\n}\n");
    h.append("\n#endif /* GPUCOLL_BENCH_TABLE_H_ */\n");
    return h.toString();
  }

  void defineConsts(StringBuilder h, boolean bench) {
    for (Const c : consts.values()) {
      if (c.bench == bench) {
        h.append("#define GC_").append(c.name).append(' ').append(cLiteral(c.value, c.hexBits))
            .append(c.comment.isEmpty() ? "" : " /* " + c.comment + " */").append('\n');
      }
    }
  }

  void defineProtocols(StringBuilder h, boolean bench) {
    for (Proto p : protos.values()) {
      if (p.bench == bench) {
        h.append("#define GC_PROTO_").append(p.name).append(' ').append(p.id)
            .append(p.comment.isEmpty() ? "" : " /* " + p.comment + " */").append('\n');
      }
    }
  }

  /**
   * GC_SHIPPED_* (product) or GC_BENCH_* (benchmark) X-macro lists: REDUCTION_KERNELS and BATCH_KERNELS
   * X(name, GC_COLL_*, GC_PROTO_*, cuda_type), PAIR_KERNELS X(name, GC_COLL_*, GC_PROTO_*, GC_PT_*,
   * value cuda_type, index cuda_type), UNTYPED_KERNELS X(name, GC_COLL_*, GC_PROTO_*).
   */
  void kernelLists(StringBuilder h, boolean bench) {
    String image = bench ? "BENCH" : "SHIPPED";
    for (boolean packed : new boolean[] {false, true}) {
      h.append("#define GC_").append(image).append(packed ? "_BATCH_KERNELS(X)" : "_REDUCTION_KERNELS(X)");
      for (Kernel k : kernels) {
        if (k.bench == bench && k.coll.kind.equals("reduction") && k.packed() == packed) {
          for (Type t : k.types) {
            h.append(" \\\n  X(").append(k.name(t)).append(", GC_COLL_").append(upper(k.coll.part)).append(", GC_PROTO_")
                .append(k.proto.name).append(", ").append(t.cType).append(')');
          }
        }
      }
      if (!packed) {
        h.append('\n');
      }
    }
    h.append("\n#define GC_").append(image).append("_PAIR_KERNELS(X)");
    for (Kernel k : kernels) {
      if (k.bench == bench && k.pairs) {
        for (Pair t : pairs) {
          h.append(" \\\n  X(").append(k.name(t)).append(", GC_COLL_").append(upper(k.coll.part)).append(", GC_PROTO_")
              .append(k.proto.name).append(", GC_PT_").append(t.name).append(", ").append(t.value.cType).append(", ")
              .append(t.index.cType).append(')');
        }
      }
    }
    h.append("\n#define GC_").append(image).append("_UNTYPED_KERNELS(X)");
    for (Kernel k : kernels) {
      if (k.bench == bench && !k.coll.kind.equals("reduction")) {
        h.append(" \\\n  X(").append(k.name((Type) null)).append(", GC_COLL_").append(upper(k.coll.part)).append(", GC_PROTO_")
            .append(k.proto.name).append(')');
      }
    }
    h.append("\n");
  }

  void defineRegions(StringBuilder h, boolean bench) {
    for (Region r : regions) {
      if (r.bench == bench) {
        h.append("#define GC_WS_").append(r.name).append("_OFFSET ").append(cLiteral(r.offset, false)).append('\n');
        h.append("#define GC_WS_").append(r.name).append("_BYTES ").append(cLiteral(r.bytes, false))
            .append(r.comment.isEmpty() ? "" : " /* " + r.comment + " */").append('\n');
      }
    }
  }

  /** The capacity column as switch cases of gc_kernel_max_count / gc_bench_kernel_max_count. */
  void capacityCases(StringBuilder h, boolean bench) {
    for (Kernel k : kernels) {
      if (k.bench != bench || k.pairs) {
        continue; // a pair kernel's capacity: gc_pair_kernel_max_count
      }
      String max = k.capacity.equals("unbounded") ? "UINT64_MAX" : k.capacity.equals("lines") ? "GC_LL128_MAX_COUNT(dtype)"
          : "(uint64_t)GC_" + k.capacity.substring(k.capacity.indexOf(':') + 1) + " / gc_dtype_size(dtype)";
      boolean everyType = k.anyType || k.coll.kind.equals("none") || k.types.size() == types.size();
      String takes = everyType ? "" : "(" + String.join(" || ", k.types.stream().map(t -> "dtype == GC_DT_" + t.name).toList()) + ") ? ";
      h.append("    case GC_KERNEL_ID(GC_COLL_").append(upper(k.coll.part)).append(", GC_PROTO_").append(k.proto.name)
          .append("): return ").append(takes).append(max).append(everyType ? "" : " : 0u").append(";\n");
    }
  }

  /** One switch case per element type: {@code format} gets the type's name and {@code value}'s text. */
  void typeCases(StringBuilder b, String format, java.util.function.Function<Type, String> value) {
    for (Type t : types) {
      b.append(String.format(Locale.ROOT, format, t.name, value.apply(t)));
    }
  }

  // ------------------------------------------------------------------ the Java class

  static String javaLiteral(long v, boolean hex, boolean forceLong) {
    if (!forceLong && hex && v <= 0xFFFFFFFFL) {
      return "0x" + Long.toHexString(v).toUpperCase(Locale.ROOT);
    }
    if (!forceLong && v <= Integer.MAX_VALUE) {
      return Long.toString(v);
    }
    return v + "L";
  }

  static String javaType(long v, boolean hex, boolean forceLong) {
    return !forceLong && (v <= Integer.MAX_VALUE || hex && v <= 0xFFFFFFFFL) ? "int" : "long";
  }

  static String camel(String upperSnake) {
    StringBuilder b = new StringBuilder();
    for (String part : upperSnake.toLowerCase(Locale.ROOT).split("_")) {
      b.append(Character.toUpperCase(part.charAt(0))).append(part.substring(1));
    }
    return b.toString();
  }

  String java() {
    StringBuilder j = new StringBuilder();
    j.append("// ").append(GENERATED).append("\n");
    j.append("package dev.gpucoll.cuda;\n\n")
        .append("import dev.gpucoll.api.Collective;\nimport dev.gpucoll.api.DataType;\nimport dev.gpucoll.api.LocOp;\n")
        .append("import dev.gpucoll.api.PairType;\nimport dev.gpucoll.api.ReduceOp;\n")
        .append("import dev.gpucoll.core.Algorithm;\nimport java.util.EnumSet;\nimport java.util.List;\nimport java.util.Set;\n\n");
    j.append("/**\n")
        .append(" * The kernel table (native-kernels/kernel-table.txt) in Java: which kernels exist in the shipped fatbin,\n")
        .append(" * the types, ops and sizes each takes, the grid each is launched with, the {@link Algorithm} each\n")
        .append(" * runs, and the byte layout of GcArgs, GcErrorRecord and the workspace. The kernels include the same\n")
        .append(" * table as include/gpucoll/kernel_table.h, so the two cannot disagree. The table's benchmark section\n")
        .append(" * (kernels of the test programs only) is not here.\n")
        .append(" *\n * <p>Lookups:\n * <ul>\n")
        .append(" *   <li>{@link #kernel(Collective, Protocol)} or {@link #kernel(Collective, Algorithm)}: the\n")
        .append(" *       {@link Kernel} for a collective on a protocol, or {@code null} when the table has none;\n")
        .append(" *   <li>{@link Kernel#name(DataType)}: the kernel function's name for an element type ({@code null}\n")
        .append(" *       when that kernel does not take the type);\n")
        .append(" *   <li>{@link Kernel#capacityElements(DataType)}: the largest count (elements; per peer for data\n")
        .append(" *       movement) the kernel takes;\n")
        .append(" *   <li>{@link Kernel#grid(long)}: gridDim.x for a call of that many per-peer bytes\n")
        .append(" *       (blockDim.x is always {@link #BLOCK_THREADS});\n")
        .append(" *   <li>{@link #ofKernelId(int)}: the kernel a GcErrorRecord names.\n")
        .append(" * </ul>\n */\n");
    j.append("public final class KernelTable {\n  private KernelTable() {}\n\n");
    j.append("  // ---- limits, geometry, capacities\n");
    for (Const c : consts.values()) {
      if (c.bench) {
        continue;
      }
      if (!c.comment.isEmpty()) {
        j.append("  /** ").append(javadoc(c.comment)).append(". */\n");
      }
      j.append("  public static final ").append(javaType(c.value, c.hexBits, false)).append(' ').append(c.name).append(" = ")
          .append(javaLiteral(c.value, c.hexBits, false)).append(";\n");
    }
    for (Struct s : structs) {
      String pfx = structPrefix(s.name);
      j.append("\n  // ---- ").append(s.name).append(" (byte offsets, little-endian)\n");
      for (Field f : s.fields) {
        j.append("  /** ").append(f.type).append(f.dims.isEmpty() ? "" : f.dims.toString()).append(f.comment.isEmpty() ? "" : ": " + javadoc(f.comment))
            .append(". */\n  public static final int ").append(pfx).append("OFFSET_").append(upper(f.name)).append(" = ")
            .append(f.offset).append(";\n");
      }
      j.append("  public static final int ").append(pfx).append("SIZE = ").append(s.size).append(";\n");
    }
    j.append("\n  // ---- workspace regions (bytes from the workspace base)\n");
    for (Region r : regions) {
      if (r.bench) {
        continue;
      }
      if (!r.comment.isEmpty()) {
        j.append("  /** ").append(javadoc(r.comment)).append(". */\n");
      }
      j.append("  public static final long WS_").append(r.name).append("_OFFSET = ").append(r.offset).append("L;\n");
      j.append("  public static final long WS_").append(r.name).append("_BYTES = ").append(r.bytes).append("L;\n");
    }
    j.append("  /** Bytes of one rank's workspace. */\n  public static final long WORKSPACE_BYTES = ").append(productWorkspaceBytes)
        .append("L;\n\n");

    // Protocol enum
    j.append("  /** The protocols a kernel moves data with; {@link #id()} is the C GC_PROTO_* code. */\n");
    j.append("  public enum Protocol {\n");
    List<Proto> ps = protos.values().stream().filter(p -> !p.bench).toList();
    for (int i = 0; i < ps.size(); i++) {
      Proto p = ps.get(i);
      j.append("    /** ").append(p.comment.isEmpty() ? p.name : javadoc(p.comment)).append(". */\n    ").append(p.name).append('(')
          .append(p.id).append(", \"").append(p.part.equals("-") ? "" : p.part).append("\")").append(i + 1 < ps.size() ? ",\n" : ";\n");
    }
    j.append("\n    private final int id;\n    private final String abiName;\n\n")
        .append("    Protocol(int id, String abiName) {\n      this.id = id;\n      this.abiName = abiName;\n    }\n\n")
        .append("    /** GC_PROTO_* code (GcErrorRecord.kernel = collective id * 16 + this). */\n")
        .append("    public int id() {\n      return id;\n    }\n\n")
        .append("    /** The protocol's part of a kernel name (\"ll\" in gc_allreduce_ll_f32); empty when kernels of it are named after the collective alone. */\n")
        .append("    public String abiName() {\n      return abiName;\n    }\n  }\n\n");

    j.append("  /** How a kernel's gridDim.x is chosen. */\n  public enum GridRule {\n")
        .append("    /** {@link #gridForBytes} of the per-peer bytes; any grid is correct, ranks may differ. */\n    BYTES,\n")
        .append("    /** {@link #gridForBytes} of the per-peer bytes, and every rank must launch the same grid. */\n    SAME_BYTES,\n")
        .append("    /** A fixed grid, the same on every rank (per-block channels). */\n    FIXED,\n")
        .append("    /** One block. */\n    ONE\n  }\n\n");

    j.append("  /** One kernel of the table: a collective on a protocol, for a set of types and ops. */\n");
    j.append("  public static final class Kernel {\n")
        .append("    private final Collective collective;\n    private final Protocol protocol;\n    private final Algorithm algorithm;\n")
        .append("    private final String[] names;\n    private final long[] capacity;\n")
        .append("    private final boolean[] ops;\n    private final GridRule gridRule;\n    private final int fixedGrid;\n")
        .append("    private final boolean packed;\n")
        .append("    /** A pair kernel's names, capacities and pair reductions by PairType / LocOp ordinal; null for the others. */\n")
        .append("    private final String[] pairNames;\n    private final long[] pairCapacity;\n    private final boolean[] locOps;\n\n")
        .append("    Kernel(Collective collective, Protocol protocol, Algorithm algorithm, String[] names,\n")
        .append("        long[] capacity, boolean[] ops, GridRule gridRule, int fixedGrid, boolean packed, String[] pairNames,\n")
        .append("        long[] pairCapacity, boolean[] locOps) {\n")
        .append("      this.collective = collective;\n      this.protocol = protocol;\n      this.algorithm = algorithm;\n")
        .append("      this.names = names;\n      this.capacity = capacity;\n      this.ops = ops;\n")
        .append("      this.gridRule = gridRule;\n      this.fixedGrid = fixedGrid;\n      this.packed = packed;\n")
        .append("      this.pairNames = pairNames;\n      this.pairCapacity = pairCapacity;\n      this.locOps = locOps;\n    }\n\n")
        .append("    public Collective collective() {\n      return collective;\n    }\n\n")
        .append("    public Protocol protocol() {\n      return protocol;\n    }\n\n")
        .append("    /** The path a call on this kernel reports. */\n    public Algorithm algorithm() {\n      return algorithm;\n    }\n\n")
        .append("    /**\n     * A batch kernel: it takes GcBatch (up to {@link #MAX_BATCH_CALLS} calls) beside GcArgs, and\n")
        .append("     * {@link #capacityElements} bounds the calls' slot-aligned payloads together.\n     */\n")
        .append("    public boolean packed() {\n      return packed;\n    }\n\n")
        .append("    /** A pair kernel: MAXLOC / MINLOC of value-index pairs, one kernel per {@link PairType} (no DataType). */\n")
        .append("    public boolean pairs() {\n      return pairNames != null;\n    }\n\n")
        .append("    /** The kernel function for pairs of {@code t}, or {@code null} when this is no pair kernel. */\n")
        .append("    public String name(PairType t) {\n      return pairNames == null ? null : pairNames[t.ordinal()];\n    }\n\n")
        .append("    /** The largest count of {@code t} pairs this kernel takes; 0 when this is no pair kernel. */\n")
        .append("    public long capacityPairs(PairType t) {\n      return pairCapacity == null ? 0 : pairCapacity[t.ordinal()];\n    }\n\n")
        .append("    /** Whether the kernel reduces pairs with {@code op}. */\n")
        .append("    public boolean supports(LocOp op) {\n      return locOps != null && locOps[op.ordinal()];\n    }\n\n")
        .append("    /** GcErrorRecord.kernel of this kernel. */\n    public int id() {\n      return kernelId(collective, protocol);\n    }\n\n")
        .append("    /** The kernel function for elements of {@code t}, or {@code null} when this kernel does not take {@code t}. */\n")
        .append("    public String name(DataType t) {\n      return names[t.ordinal()];\n    }\n\n")
        .append("    public boolean supports(DataType t) {\n      return names[t.ordinal()] != null;\n    }\n\n")
        .append("    /** Whether the kernel reduces with {@code op} (false for every op when it does not reduce). */\n")
        .append("    public boolean supports(ReduceOp op) {\n      return ops[op.ordinal()];\n    }\n\n")
        .append("    /**\n     * The largest count of {@code t} elements this kernel takes (per peer for data movement);\n")
        .append("     * {@link Long#MAX_VALUE} when unbounded, 0 when it does not take {@code t}.\n     */\n")
        .append("    public long capacityElements(DataType t) {\n      return capacity[t.ordinal()];\n    }\n\n")
        .append("    public GridRule gridRule() {\n      return gridRule;\n    }\n\n")
        .append("    /** Whether every rank of a call must launch the same gridDim.x. */\n")
        .append("    public boolean sameGridOnEveryRank() {\n      return gridRule == GridRule.SAME_BYTES || gridRule == GridRule.FIXED;\n    }\n\n")
        .append("    /** gridDim.x for a call moving {@code perPeerBytes} to or from each peer. */\n")
        .append("    public int grid(long perPeerBytes) {\n      return switch (gridRule) {\n")
        .append("        case BYTES, SAME_BYTES -> gridForBytes(perPeerBytes);\n        case FIXED -> fixedGrid;\n        case ONE -> 1;\n      };\n    }\n\n")
        .append("    @Override\n    public String toString() {\n      return collective.apiName() + \"/\" + protocol.name().toLowerCase(java.util.Locale.ROOT);\n    }\n  }\n\n");

    // the table itself: one row per kernel, as in kernel-table.txt; kernel() expands a row per type
    j.append("  /** How a kernel's capacity is given: bytes per peer (a constant), LL128 lines, or none. */\n")
        .append("  private enum Capacity { BYTES, LINES, UNBOUNDED }\n\n");
    j.append("  private static final Set<DataType> ALL_TYPES = EnumSet.allOf(DataType.class);\n")
        .append("  private static final Set<LocOp> ALL_LOC_OPS = EnumSet.allOf(LocOp.class);\n")
        .append("  private static final Set<ReduceOp> ALL_OPS = EnumSet.allOf(ReduceOp.class);\n")
        .append("  private static final Set<ReduceOp> NO_OPS = EnumSet.noneOf(ReduceOp.class);\n\n");
    j.append("  // collective, protocol, algorithm, name (the type suffix follows for reductions), types,\n")
        .append("  // ops, capacity (with its bytes), grid rule (with its fixed grid)\n");
    j.append("  private static final List<Kernel> KERNELS = List.of(\n");
    List<Kernel> product = kernels.stream().filter(k -> !k.bench).toList();
    for (int i = 0; i < product.size(); i++) {
      Kernel k = product.get(i);
      boolean reduction = k.coll.kind.equals("reduction");
      boolean everyType = k.anyType || k.coll.kind.equals("none") || k.types.size() == types.size();
      String typeList = everyType ? "ALL_TYPES" : "EnumSet.of(" + String.join(", ",
          k.types.stream().map(t -> "DataType." + t.name).toList()) + ")";
      String opList = k.ops.isEmpty() ? "NO_OPS" : k.ops.size() == ops.size() ? "ALL_OPS"
          : "EnumSet.of(" + String.join(", ", k.ops.stream().map(o -> "ReduceOp." + o).toList()) + ")";
      String cap = k.capacity.equals("unbounded") ? "Capacity.UNBOUNDED, 0" : k.capacity.equals("lines") ? "Capacity.LINES, 0"
          : "Capacity.BYTES, " + k.capacity.substring(k.capacity.indexOf(':') + 1);
      String rule = k.grid.startsWith("fixed:") ? "FIXED" : upper(k.grid.replace('-', '_'));
      String fixed = k.grid.startsWith("fixed:") ? k.grid.substring(6) : "0";
      if (k.pairs) {
        String locList = k.ops.size() == locOps.size() ? "ALL_LOC_OPS"
            : "EnumSet.of(" + String.join(", ", k.ops.stream().map(o -> "LocOp." + o).toList()) + ")";
        j.append("      pairKernel(Collective.").append(k.coll.name).append(", Protocol.").append(k.proto.name).append(", Algorithm.")
            .append(k.algorithm).append(", \"").append(k.name((Type) null)).append("\", ").append(locList).append(", ")
            .append(k.capacity.substring(6)).append(", GridRule.").append(rule).append(", ").append(fixed).append(')')
            .append(i + 1 < product.size() ? ",\n" : ");\n\n");
        continue;
      }
      j.append("      kernel(Collective.").append(k.coll.name).append(", Protocol.").append(k.proto.name).append(", Algorithm.")
          .append(k.algorithm).append(", \"").append(k.name((Type) null)).append("\", ")
          .append(reduction).append(", ").append(typeList).append(", ").append(opList).append(", ").append(cap)
          .append(", GridRule.").append(rule).append(", ").append(fixed).append(", ").append(k.packed()).append(')').append(i + 1 < product.size() ? ",\n" : ");\n\n");
    }
    j.append("  /** One row of the table, its names and capacities per element type (0 and no name for a type it does not take). */\n")
        .append("  private static Kernel kernel(Collective c, Protocol p, Algorithm a, String name, boolean perType,\n")
        .append("      Set<DataType> types, Set<ReduceOp> ops, Capacity capacity, long capacityBytes, GridRule rule, int fixedGrid,\n")
        .append("      boolean packed) {\n")
        .append("    String[] names = new String[DataType.values().length];\n")
        .append("    long[] elements = new long[names.length];\n")
        .append("    for (DataType t : types) {\n")
        .append("      names[t.ordinal()] = perType ? name + \"_\" + typeSuffix(t) : name;\n")
        .append("      elements[t.ordinal()] = switch (capacity) {\n")
        .append("        case BYTES -> capacityBytes / t.byteSize();\n")
        .append("        case LINES -> (long) LL128_MAX_LINES * (LL128_DATA_BYTES / accumulationBytes(t));\n")
        .append("        case UNBOUNDED -> Long.MAX_VALUE;\n")
        .append("      };\n    }\n")
        .append("    boolean[] takes = new boolean[ReduceOp.values().length];\n")
        .append("    ops.forEach(op -> takes[op.ordinal()] = true);\n")
        .append("    return new Kernel(c, p, a, names, elements, takes, rule, fixedGrid, packed, null, null, null);\n  }\n\n");
    j.append("  /** A pair kernel's row: one kernel per pair type, up to {@code capacityBytes} of pairs. */\n")
        .append("  private static Kernel pairKernel(Collective c, Protocol p, Algorithm a, String name, Set<LocOp> ops,\n")
        .append("      long capacityBytes, GridRule rule, int fixedGrid) {\n")
        .append("    String[] names = new String[PairType.values().length];\n")
        .append("    long[] pairs = new long[names.length];\n")
        .append("    for (PairType t : PairType.values()) {\n")
        .append("      names[t.ordinal()] = name + \"_\" + pairSuffix(t);\n")
        .append("      pairs[t.ordinal()] = capacityBytes / t.byteSize();\n    }\n")
        .append("    boolean[] takes = new boolean[LocOp.values().length];\n")
        .append("    ops.forEach(op -> takes[op.ordinal()] = true);\n")
        .append("    return new Kernel(c, p, a, new String[DataType.values().length], new long[DataType.values().length],\n")
        .append("        new boolean[ReduceOp.values().length], rule, fixedGrid, false, names, pairs, takes);\n  }\n\n");
    j.append("  private static final Kernel[][] BY_COLLECTIVE = new Kernel[Collective.values().length][Protocol.values().length];\n\n");
    j.append("  static {\n    for (Kernel k : KERNELS) {\n      BY_COLLECTIVE[k.collective().ordinal()][k.protocol().ordinal()] = k;\n    }\n");
    j.append("    // The C codes are the API ordinals: a reordered enum must fail here, not launch the wrong type.\n");
    for (Type t : types) {
      j.append("    requireCode(DataType.").append(t.name).append(".ordinal(), ").append(t.code).append(", \"DataType.").append(t.name).append("\");\n");
    }
    for (int i = 0; i < ops.size(); i++) {
      j.append("    requireCode(ReduceOp.").append(ops.get(i)).append(".ordinal(), ").append(i).append(", \"ReduceOp.").append(ops.get(i)).append("\");\n");
    }
    for (Pair t : pairs) {
      j.append("    requireCode(PairType.").append(t.name).append(".ordinal(), ").append(t.code).append(", \"PairType.").append(t.name).append("\");\n");
    }
    for (int i = 0; i < locOps.size(); i++) {
      j.append("    requireCode(LocOp.").append(locOps.get(i)).append(".ordinal(), ").append(i).append(", \"LocOp.").append(locOps.get(i)).append("\");\n");
    }
    j.append("    requireCode(DataType.values().length, ").append(types.size()).append(", \"DataType count\");\n");
    j.append("    requireCode(PairType.values().length, ").append(pairs.size()).append(", \"PairType count\");\n");
    j.append("    requireCode(LocOp.values().length, ").append(locOps.size()).append(", \"LocOp count\");\n");
    j.append("    requireCode(ReduceOp.values().length, ").append(ops.size()).append(", \"ReduceOp count\");\n  }\n\n");
    j.append("  private static void requireCode(int java, int c, String what) {\n    if (java != c) {\n")
        .append("      throw new IllegalStateException(what + \" is \" + java + \" in Java but \" + c + \" in the kernel table\");\n    }\n  }\n\n");
    j.append("  /** Every kernel of the shipped fatbin, in table order. */\n")
        .append("  public static List<Kernel> kernels() {\n    return KERNELS;\n  }\n\n");
    j.append("  /** The kernel for {@code c} on {@code p}, or {@code null} when the table has none. */\n")
        .append("  public static Kernel kernel(Collective c, Protocol p) {\n    return BY_COLLECTIVE[c.ordinal()][p.ordinal()];\n  }\n\n");
    j.append("  /** The kernel for {@code c} that runs {@code a} call by call (no batch or pair kernel), or {@code null} when none does (NCCL, host paths). */\n")
        .append("  public static Kernel kernel(Collective c, Algorithm a) {\n    for (Kernel k : BY_COLLECTIVE[c.ordinal()]) {\n")
        .append("      if (k != null && k.algorithm() == a && !k.packed() && !k.pairs()) {\n        return k;\n      }\n    }\n    return null;\n  }\n\n");
    j.append("  /** GcErrorRecord.kernel of {@code c} on {@code p}. */\n")
        .append("  public static int kernelId(Collective c, Protocol p) {\n    return collectiveId(c) * 16 + p.id();\n  }\n\n");
    j.append("  /** The kernel a GcErrorRecord.kernel value names, or {@code null}. */\n")
        .append("  public static Kernel ofKernelId(int id) {\n    for (Kernel k : KERNELS) {\n      if (k.id() == id) {\n        return k;\n")
        .append("      }\n    }\n    return null;\n  }\n\n");
    j.append("  /** The C GC_COLL_* code of {@code c}. */\n  public static int collectiveId(Collective c) {\n    return switch (c) {\n");
    for (Coll c : colls.values()) {
      j.append("      case ").append(c.name).append(" -> ").append(c.id).append(";\n");
    }
    j.append("    };\n  }\n\n");
    j.append("  /** The collective of a GC_COLL_* code, or {@code null}. */\n  public static Collective collectiveOfId(int id) {\n    return switch (id) {\n");
    for (Coll c : colls.values()) {
      j.append("      case ").append(c.id).append(" -> Collective.").append(c.name).append(";\n");
    }
    j.append("      default -> null;\n    };\n  }\n\n");
    j.append("  /** Grid rule \"bytes\": ceil(bytes / BYTES_PER_BLOCK) clamped to [1, MAX_GRID_RULE]. */\n")
        .append("  public static int gridForBytes(long bytes) {\n    if (bytes <= BYTES_PER_BLOCK) {\n      return 1;\n    }\n")
        .append("    if (bytes >= (long) BYTES_PER_BLOCK * MAX_GRID_RULE) {\n      return MAX_GRID_RULE;\n    }\n")
        .append("    return (int) ((bytes + BYTES_PER_BLOCK - 1) / BYTES_PER_BLOCK);\n  }\n\n");
    j.append("  /** The kernel-name suffix of an element type (\"f32\"). */\n  public static String typeSuffix(DataType t) {\n    return switch (t) {\n");
    typeCases(j, "      case %s -> \"%s\";\n", t -> t.suffix);
    j.append("    };\n  }\n\n");
    j.append("  /** The kernel-name suffix of a pair type (\"f64_i32\"). */\n  public static String pairSuffix(PairType t) {\n    return switch (t) {\n");
    for (Pair t : pairs) {
      j.append("      case ").append(t.name).append(" -> \"").append(t.suffix).append("\";\n");
    }
    j.append("    };\n  }\n\n");
    j.append("  /** Bytes of the type a reduction of {@code t} accumulates in (16-bit floats: fp32). */\n")
        .append("  public static int accumulationBytes(DataType t) {\n    return switch (t) {\n");
    typeCases(j, "      case %s -> %s;\n", t -> Integer.toString(t.accSize));
    j.append("    };\n  }\n}\n");
    return j.toString();
  }
}
