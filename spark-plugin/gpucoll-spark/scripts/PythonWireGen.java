import dev.gpucoll.api.Collective;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.LocOp;
import dev.gpucoll.api.PairType;
import dev.gpucoll.api.ReduceOp;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.regex.Pattern;

/**
 * The Python wire's two sides from python-wire.txt and the Java API's enums: python/gpucoll/_wire.py
 * and PythonWire.java. {@code --write} writes them; {@code --check} fails (exit 1, naming the
 * script that regenerates them) when a checked-in copy differs.
 *   java -cp <gpucoll-api classes> PythonWireGen.java --write|--check TABLE WIRE_PY PYTHON_WIRE_JAVA
 */
public class PythonWireGen {
  private static final Pattern NAME = Pattern.compile("[A-Z][A-Z_0-9]*");

  record Entry(String kind, String name, String value, String comment, String section) {}

  public static void main(String[] args) throws Exception {
    if (args.length != 4 || !List.of("--write", "--check").contains(args[0])) {
      System.err.println("usage: PythonWireGen --write|--check TABLE WIRE_PY PYTHON_WIRE_JAVA");
      System.exit(2);
    }
    List<Entry> entries = parse(Path.of(args[1]));
    String py = python(entries);
    String java = java(entries);
    boolean check = args[0].equals("--check");
    List<String> stale = new ArrayList<>();
    for (String[] out : List.of(new String[] {args[2], py}, new String[] {args[3], java})) {
      Path p = Path.of(out[0]);
      if (check) {
        if (!Files.exists(p) || !Files.readString(p, StandardCharsets.UTF_8).equals(out[1])) {
          stale.add(p.toString());
        }
      } else {
        Files.writeString(p, out[1], StandardCharsets.UTF_8);
      }
    }
    if (!stale.isEmpty()) {
      System.err.println("the Python wire's generated files differ from python-wire.txt: " + stale
          + "; run spark-plugin/gpucoll-spark/scripts/generate-python-wire.sh and commit them");
      System.exit(1);
    }
  }

  static List<Entry> parse(Path table) throws Exception {
    List<Entry> out = new ArrayList<>();
    String section = null;
    int n = 0;
    for (String raw : Files.readAllLines(table, StandardCharsets.UTF_8)) {
      n++;
      String line = raw.strip();
      if (line.startsWith("# ----")) {
        section = line.substring(2);
        continue;
      }
      int hash = line.indexOf('#');
      String comment = hash < 0 ? null : line.substring(hash + 1).strip();
      line = (hash < 0 ? line : line.substring(0, hash)).strip();
      if (line.isEmpty()) {
        continue;
      }
      String[] f = line.split("\\s+");
      if (f.length != 3 || !List.of("text", "int", "long").contains(f[0]) || !NAME.matcher(f[1]).matches()) {
        throw new IllegalArgumentException(table + ":" + n + ": expected 'text|int|long NAME VALUE', got '" + raw + "'");
      }
      if (!f[0].equals("text")) {
        long v = f[2].startsWith("0x") ? Long.parseUnsignedLong(f[2].substring(2), 16) : Long.parseLong(f[2]);
        if (f[0].equals("int") && (v < Integer.MIN_VALUE || v > Integer.MAX_VALUE)) {
          throw new IllegalArgumentException(table + ":" + n + ": " + f[1] + " does not fit an int");
        }
      }
      out.add(new Entry(f[0], f[1], f[2], comment, section));
      section = null;
    }
    return out;
  }

  private static <E extends Enum<E>> List<String> names(E[] values) {
    return Arrays.stream(values).map(Enum::name).toList();
  }

  private static String tuple(List<String> names) {
    return "(" + String.join(", ", names.stream().map(s -> "\"" + s + "\"").toList()) + ")";
  }

  static String python(List<Entry> entries) {
    StringBuilder b = new StringBuilder();
    b.append("\"\"\"The wire between a Python task and its executor's plugin (``PythonChannel``, ``PythonMailbox`` and\n")
        .append("``PythonSession`` on the JVM side). Generated from spark-plugin/gpucoll-spark/python-wire.txt and the\n")
        .append("Java API's enums by its scripts/PythonWireGen.java: edit the table, not this file.\"\"\"\n\n");
    for (Entry e : entries) {
      if (e.section() != null) {
        b.append("\n# ").append(e.section()).append('\n');
      }
      if (e.comment() != null) {
        b.append("# ").append(e.comment()).append('\n');
      }
      b.append(e.name()).append(" = ").append(e.kind().equals("text") ? "\"" + e.value() + "\"" : e.value()).append('\n');
    }
    b.append("\n# ---- the Java API's enums in ordinal order (the codes on the wire) ----\n");
    b.append("COLLECTIVES = ").append(tuple(names(Collective.values()))).append('\n');
    b.append("COLLECTIVE_API_NAMES = ")
        .append(tuple(Arrays.stream(Collective.values()).map(Collective::apiName).toList())).append('\n');
    for (Collective c : Collective.values()) {
      b.append(c.name()).append(" = ").append(c.ordinal()).append('\n');
    }
    b.append("# MAXLOC / MINLOC's collective code in a call record, after the collectives\n");
    b.append("LOC_ALL_REDUCE = ").append(Collective.values().length).append('\n');
    b.append("DATA_TYPES = ").append(tuple(names(DataType.values()))).append('\n');
    b.append("REDUCE_OPS = ").append(tuple(names(ReduceOp.values()))).append('\n');
    b.append("PAIR_TYPES = ").append(tuple(names(PairType.values()))).append('\n');
    b.append("LOC_OPS = ").append(tuple(names(LocOp.values()))).append('\n');
    return b.toString();
  }

  static String java(List<Entry> entries) {
    StringBuilder b = new StringBuilder();
    b.append("package dev.gpucoll.spark.python;\n\n")
        .append("/**\n")
        .append(" * The wire between a Python task and its executor's plugin: generated from python-wire.txt by\n")
        .append(" * scripts/PythonWireGen.java, as python/gpucoll/_wire.py is (edit the table, not this file).\n")
        .append(" */\n")
        .append("final class PythonWire {\n")
        .append("  private PythonWire() {}\n");
    for (Entry e : entries) {
      if (e.section() != null) {
        b.append("\n  // ").append(e.section()).append('\n');
      }
      if (e.comment() != null) {
        b.append("  /** ").append(e.comment()).append(". */\n");
      }
      String type = switch (e.kind()) {
        case "text" -> "String";
        case "long" -> "long";
        default -> "int";
      };
      String value = switch (e.kind()) {
        case "text" -> "\"" + e.value() + "\"";
        case "long" -> e.value() + "L";
        default -> e.value();
      };
      b.append("  static final ").append(type).append(' ').append(e.name()).append(" = ").append(value).append(";\n");
    }
    b.append("\n  /** MAXLOC / MINLOC's collective code in a call record, after the collectives. */\n");
    b.append("  static final int LOC_ALL_REDUCE = ").append(Collective.values().length).append(";\n");
    b.append("}\n");
    return b.toString();
  }
}
