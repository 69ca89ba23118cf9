package dev.gpucoll.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.LocOp;
import dev.gpucoll.api.PairType;
import dev.gpucoll.api.ReduceOp;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** The Python package's wire ({@code python/gpucoll/_wire.py}) is the JVM side's, name for name. */
class PythonWireTest {
  private static final Pattern ASSIGN = Pattern.compile("^([A-Z_0-9]+) = (.+?)(\\s+#.*)?$");

  private static Map<String, String> wire() throws IOException {
    Path file = Path.of(System.getProperty("user.dir")).resolve("../../python/gpucoll/_wire.py").normalize();
    Map<String, String> out = new HashMap<>();
    List<String> lines = Files.readAllLines(file);
    for (int i = 0; i < lines.size(); i++) {
      Matcher m = ASSIGN.matcher(lines.get(i));
      if (m.matches()) {
        StringBuilder value = new StringBuilder(m.group(2));
        while (value.chars().filter(c -> c == '(').count() > value.chars().filter(c -> c == ')').count()) {
          value.append(' ').append(lines.get(++i).trim());
        }
        out.put(m.group(1), value.toString());
      }
    }
    return out;
  }

  private static List<String> names(String tuple) {
    List<String> out = new ArrayList<>();
    Matcher m = Pattern.compile("\"([A-Za-z_0-9]+)\"").matcher(tuple);
    while (m.find()) {
      out.add(m.group(1));
    }
    return out;
  }

  private static long number(String v) {
    v = v.replace("_", "");
    return v.startsWith("0x") ? Long.parseUnsignedLong(v.substring(2), 16) : Long.parseLong(v);
  }

  private static <E extends Enum<E>> List<String> names(E[] values) {
    return Arrays.stream(values).map(Enum::name).toList();
  }

  @Test
  void layoutCodesAndEnumsAreTheJavaSides() throws IOException {
    Map<String, String> w = wire();
    assertEquals("\"" + PythonChannel.HELLO + "\"", w.get("HELLO"));
    Map<String, Long> java = new HashMap<>();
    java.put("MAGIC", PythonMailbox.MAGIC);
    java.put("HEADER_BYTES", (long) PythonMailbox.HEADER_BYTES);
    java.put("OFF_MAGIC", (long) PythonMailbox.OFF_MAGIC);
    java.put("OFF_REQ_SEQ", (long) PythonMailbox.OFF_REQ_SEQ);
    java.put("OFF_RESP_SEQ", (long) PythonMailbox.OFF_RESP_SEQ);
    java.put("OFF_SLEEPING", (long) PythonMailbox.OFF_SLEEPING);
    java.put("OFF_REQUEST", (long) PythonMailbox.OFF_REQUEST);
    java.put("OFF_RESPONSE", (long) PythonMailbox.OFF_RESPONSE);
    java.put("OFF_MESSAGE", (long) PythonMailbox.OFF_MESSAGE);
    java.put("RECORD_BYTES", (long) PythonMailbox.RECORD_BYTES);
    java.put("OP_FORM", (long) PythonSession.OP_FORM);
    java.put("OP_CALLS", (long) PythonSession.OP_CALLS);
    java.put("OP_SPLIT", (long) PythonSession.OP_SPLIT);
    java.put("OP_EXPLAIN", (long) PythonSession.OP_EXPLAIN);
    java.put("OP_REPORT", (long) PythonSession.OP_REPORT);
    java.put("OP_CLOSE", (long) PythonSession.OP_CLOSE);
    java.put("OP_GROW", (long) PythonSession.OP_GROW);
    java.put("OP_DEVICE_FORM", (long) PythonSession.OP_DEVICE_FORM);
    java.put("OP_DEVICE_ROUTE", (long) PythonSession.OP_DEVICE_ROUTE);
    java.put("OP_DEVICE_ERROR", (long) PythonSession.OP_DEVICE_ERROR);
    java.put("OP_DEVICE_ABI", (long) PythonSession.OP_DEVICE_ABI);
    java.put("FLAG_REFUSED", (long) PythonSession.FLAG_REFUSED);
    java.put("FLAG_GROUP", (long) PythonSession.FLAG_GROUP);
    java.forEach((name, value) -> {
      assertTrue(w.containsKey(name), "_wire.py has no " + name);
      assertEquals(value, number(w.get(name)), name);
    });
    assertEquals(names(Collective.values()), names(w.get("COLLECTIVES")));
    assertEquals(Arrays.stream(Collective.values()).map(Collective::apiName).toList(),
        names(w.get("COLLECTIVE_API_NAMES")));
    assertEquals(PythonSession.LOC_ALL_REDUCE, Collective.values().length);
    assertEquals(names(DataType.values()), names(w.get("DATA_TYPES")));
    assertEquals(names(ReduceOp.values()), names(w.get("REDUCE_OPS")));
    assertEquals(names(PairType.values()), names(w.get("PAIR_TYPES")));
    assertEquals(names(LocOp.values()), names(w.get("LOC_OPS")));
  }

  @Test
  void pythonPackageVersionIsTheJars() throws IOException {
    Path version = Path.of(System.getProperty("user.dir")).resolve("../../python/gpucoll/_version.py").normalize();
    String text = Files.readString(version).trim();
    String jar = GpuCollectivesPlugin.class.getPackage().getImplementationVersion();
    String pom = System.getProperty("project.version", jar);
    if (pom == null) {
      String root = Files.readString(Path.of(System.getProperty("user.dir")).resolve("../../pom.xml").normalize());
      Matcher m = Pattern.compile("<artifactId>gpucoll-parent</artifactId>\\s*<version>([^<]+)</version>").matcher(root);
      assertTrue(m.find(), "the root pom's version");
      pom = m.group(1);
    }
    assertEquals("__version__ = \"" + pom + "\"", text);
  }
}
