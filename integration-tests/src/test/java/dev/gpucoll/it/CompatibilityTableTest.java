package dev.gpucoll.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Element;
import org.w3c.dom.Node;

/**
 * README's compatibility table is the build's matrix: one row per Spark line the build serves,
 * as the POMs say (the default line from the root POM, every other one from its module under
 * spark-lines/, which CI runs through -Pspark-lines), with the coordinates a user of that line takes.
 */
class CompatibilityTableTest {
  static final Path ROOT = Path.of("..");
  static final String HEADER = "| Spark | Scala | Java | `spark-submit` | Compile against (`provided`) | Tested on |";

  /** One row of the table. */
  record Line(String spark, String scala, String java, String submit, String compileAgainst, String testedOn) {}

  @Test
  void readmesTableListsEveryLineTheBuildTestsWithItsCoordinates() throws Exception {
    assertEquals(buildMatrix(), readmeTable(Files.readString(ROOT.resolve("README.md"))),
        "README.md's compatibility table (under '" + HEADER + "') differs from the POMs' Spark lines");
  }

  /** The Python package warns outside the lines it lists (gpucoll/_pyspark_line.py) and its extra pins the newest. */
  @Test
  void thePythonPackageKnowsTheSameLines() throws Exception {
    List<String> lines = buildMatrix().stream().map(l -> l.spark().replace(".x", "")).distinct().sorted().toList();
    String module = Files.readString(ROOT.resolve("python/gpucoll/_pyspark_line.py"));
    Matcher supported = Pattern.compile("(?m)^SUPPORTED = \\(([^)]*)\\)").matcher(module);
    assertTrue(supported.find(), "python/gpucoll/_pyspark_line.py has no SUPPORTED = (...)");
    assertEquals(lines, Arrays.stream(supported.group(1).split(",")).map(s -> s.strip().replace("\"", ""))
        .filter(s -> !s.isEmpty()).toList(), "the Python package's PySpark lines differ from the build's");
    String newest = lines.get(lines.size() - 1);
    String[] v = newest.split("\\.");
    String pin = "spark = [\"pyspark>=" + newest + ",<" + v[0] + "." + (Integer.parseInt(v[1]) + 1) + "\"]";
    assertTrue(Files.readString(ROOT.resolve("python/pyproject.toml")).contains(pin),
        "python/pyproject.toml's extra 'spark' is not " + pin);
  }

  @Test
  void ciRunsEveryLine() throws Exception {
    Element root = pom(ROOT.resolve("pom.xml"));
    Element profile = null;
    for (Element p : descendants(root, "profile")) {
      if ("spark-lines".equals(text(p, "id"))) {
        profile = p;
      }
    }
    assertTrue(profile != null, "the root POM has no spark-lines profile");
    List<String> modules = descendants(profile, "module").stream().map(Node::getTextContent).toList();
    assertTrue(modules.contains("spark-lines"), "the spark-lines profile leaves out spark-lines/: " + modules);
    assertTrue(Pattern.compile("mvn .*verify.*-Pspark-lines").matcher(Files.readString(ROOT.resolve(".ci/run"))).find(),
        ".ci/run does not run mvn verify -Pspark-lines");
  }

  /** The lines as the POMs build and test them: the default line first, then spark-lines/'s modules. */
  static List<Line> buildMatrix() throws Exception {
    Element root = pom(ROOT.resolve("pom.xml"));
    Map<String, String> props = properties(root, new HashMap<>());
    String version = text(root, "version");
    String java = props.get("maven.compiler.release");
    List<Line> out = new ArrayList<>();
    for (String module : descendants(pom(ROOT.resolve("spark-lines/pom.xml")), "module").stream()
        .map(Node::getTextContent).toList()) {
      Map<String, String> line = properties(pom(ROOT.resolve("spark-lines").resolve(module).resolve("pom.xml")),
          new HashMap<>(props));
      out.add(line(resolve(line.get("spark.version"), line), resolve(line.get("scala.binary.version"), line),
          java, version));
    }
    out.add(line(props.get("spark.version"), props.get("scala.binary.version"), java, version));
    out.sort((a, b) -> (a.spark() + a.scala()).compareTo(b.spark() + b.scala()));
    return out;
  }

  static Line line(String sparkVersion, String scala, String java, String version) {
    String[] v = sparkVersion.split("\\.");
    return new Line(v[0] + "." + v[1] + ".x", scala, java,
        "`--packages dev.gpucoll:gpucoll-dist_" + scala + ":" + version + "`",
        "`dev.gpucoll:gpucoll-spark_" + scala + ":" + version + "`", sparkVersion);
  }

  /** The rows of the table under {@link #HEADER}. */
  static List<Line> readmeTable(String markdown) {
    int at = markdown.indexOf(HEADER);
    assertTrue(at >= 0, "README.md has no table with the header " + HEADER);
    List<String> rows = markdown.substring(at).lines().skip(2).takeWhile(l -> l.startsWith("|")).toList();
    List<Line> out = new ArrayList<>();
    for (String row : rows) {
      String[] cells = Arrays.stream(row.substring(1, row.length() - 1).split("\\|")).map(String::strip)
          .toArray(String[]::new);
      assertEquals(6, cells.length, () -> "README.md: a row of the compatibility table has not 6 cells: " + row);
      out.add(new Line(cells[0], cells[1], cells[2], cells[3], cells[4], cells[5]));
    }
    return out;
  }

  static Map<String, String> properties(Element pom, Map<String, String> into) {
    Element props = child(pom, "properties");
    if (props != null) {
      for (Node n = props.getFirstChild(); n != null; n = n.getNextSibling()) {
        if (n instanceof Element e) {
          into.put(e.getTagName(), e.getTextContent().strip());
        }
      }
    }
    return into;
  }

  /** {@code value} with every ${property} replaced from {@code props}. */
  static String resolve(String value, Map<String, String> props) {
    Matcher m = Pattern.compile("\\$\\{([^}]+)}").matcher(value);
    StringBuilder sb = new StringBuilder();
    while (m.find()) {
      String v = props.get(m.group(1));
      assertTrue(v != null, "no property " + m.group(1));
      m.appendReplacement(sb, Matcher.quoteReplacement(resolve(v, props)));
    }
    return m.appendTail(sb).toString();
  }

  static Element pom(Path file) throws Exception {
    return DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(file.toFile()).getDocumentElement();
  }

  static Element child(Element parent, String name) {
    for (Node n = parent.getFirstChild(); n != null; n = n.getNextSibling()) {
      if (n instanceof Element e && e.getTagName().equals(name)) {
        return e;
      }
    }
    return null;
  }

  static String text(Element parent, String name) {
    Element e = child(parent, name);
    return e == null ? null : e.getTextContent().strip();
  }

  static List<Element> descendants(Element parent, String name) {
    List<Element> out = new ArrayList<>();
    var list = parent.getElementsByTagName(name);
    for (int i = 0; i < list.getLength(); i++) {
      out.add((Element) list.item(i));
    }
    return out;
  }
}
