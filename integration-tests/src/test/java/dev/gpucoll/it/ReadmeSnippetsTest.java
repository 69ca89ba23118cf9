package dev.gpucoll.it;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.gpucoll.core.config.GpuCollConf;
import dev.gpucoll.core.config.InvalidSettingException;
import java.io.IOException;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;

/**
 * Every Java snippet of README.md and docs/api.md compiles as written, imports included, against the API a user
 * compiles against (gpucoll-api, -core, -cuda, -spark and Spark: this module's test class path).
 *
 * <p>The rules for README's Java blocks (fenced with three backticks and {@code java}):
 * <ul>
 *   <li>Each block is one compilation unit a user could paste into a file: its imports, then one
 *       or more types (the public one, if any, names the file). No fragments that lean on names the
 *       block does not declare: pass them in as parameters instead.
 *   <li>A block that needs classes this class path lacks (cuDF, say) is marked on the line right
 *       before its fence with {@code <!-- readme-snippet: skip REASON -->}, REASON saying what it
 *       needs; such a block is not compiled, and a marker without a reason fails this test. Prefer
 *       compiling: a class of gpucoll-api, -core, -cuda or -spark needs no marker.
 * </ul>
 *
 * <p>Likewise README's Scala blocks are files the build compiles, its install commands work from a
 * fresh clone, and every {@code spark.gpucoll.KEY=VALUE} of README.md and docs/ is a setting
 * GpuCollConf accepts.
 */
class ReadmeSnippetsTest {
  private static final Pattern FENCE = Pattern.compile("(?m)^```java\\s*$");
  private static final Pattern SKIP = Pattern.compile("<!--\\s*readme-snippet:\\s*skip\\b(.*?)-->");
  private static final Pattern PUBLIC_TYPE =
      Pattern.compile("(?m)^public\\s+(?:final\\s+|abstract\\s+)*(?:class|record|interface|enum)\\s+(\\w+)");

  record Snippet(int line, String code, String skipReason) {}

  static List<Snippet> javaSnippets(String markdown) {
    List<Snippet> out = new ArrayList<>();
    Matcher m = FENCE.matcher(markdown);
    while (m.find()) {
      int bodyStart = markdown.indexOf('\n', m.start()) + 1;
      int end = markdown.indexOf("\n```", bodyStart - 1);
      if (end < 0) {
        fail("README.md: the java block at line " + lineOf(markdown, m.start()) + " is never closed");
      }
      String before = markdown.substring(0, m.start()).stripTrailing();
      String previousLine = before.substring(before.lastIndexOf('\n') + 1);
      Matcher skip = SKIP.matcher(previousLine);
      String reason = skip.find() ? skip.group(1).trim() : null;
      out.add(new Snippet(lineOf(markdown, m.start()), markdown.substring(bodyStart, end + 1), reason));
    }
    return out;
  }

  private static int lineOf(String text, int offset) {
    return (int) text.substring(0, offset).chars().filter(c -> c == '\n').count() + 1;
  }

  /** README.md and the page of the API in detail, whose Java blocks follow the same rules. */
  static final List<Path> DOCUMENTS = List.of(Path.of(System.getProperty("gpucoll.readme", "../README.md")),
      Path.of("../docs/api.md"));

  @Test
  void everyJavaSnippetOfTheReadmeCompiles() throws IOException {
    JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
    String classPath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    List<String> failures = new ArrayList<>();
    for (Path document : DOCUMENTS) {
      List<Snippet> snippets = javaSnippets(Files.readString(document));
      assertFalse(snippets.isEmpty(), document + " has no java block: is the path right?");
      for (Snippet s : snippets) {
        if (s.skipReason() != null) {
          if (s.skipReason().isEmpty()) {
            failures.add(document + " line " + s.line() + ": a readme-snippet skip marker must say what the block needs");
          }
          continue;
        }
        Matcher type = PUBLIC_TYPE.matcher(s.code());
        String name = type.find() ? type.group(1) : "ReadmeSnippetAtLine" + s.line();
        Path dir = Files.createTempDirectory("readme-snippet");
        Path source = dir.resolve(name + ".java");
        Files.writeString(source, s.code());
        StringWriter errors = new StringWriter();
        boolean ok = javac.getTask(errors, null, null,
            List.of("-classpath", classPath, "-d", dir.toString(), "-Xlint:none", "-proc:none"),
            null, javac.getStandardFileManager(null, null, null).getJavaFileObjects(source.toFile())).call();
        if (!ok) {
          failures.add(document + " line " + s.line() + " (" + name + ".java):\n" + errors);
        }
      }
    }
    if (!failures.isEmpty()) {
      fail(failures.size() + " Java snippet(s) do not compile as written:\n" + String.join("\n", failures));
    }
  }

  /** Where README's Scala blocks live as files that gpucoll-spark's test build compiles. */
  static final Path SCALA_SNIPPETS = Path.of("../spark-plugin/gpucoll-spark/src/test/scala/readme");

  /**
   * Every Scala block of README.md is, as written, one file of {@link #SCALA_SNIPPETS} (less its
   * leading comment lines), which the build compiles; and every such file is in README.
   */
  @Test
  void everyScalaSnippetOfTheReadmeIsAFileTheBuildCompiles() throws IOException {
    String readme = Files.readString(Path.of(System.getProperty("gpucoll.readme", "../README.md")));
    List<String> blocks = new ArrayList<>();
    Matcher m = Pattern.compile("(?ms)^```scala\\n(.*?)^```").matcher(readme);
    while (m.find()) {
      blocks.add(m.group(1));
    }
    assertFalse(blocks.isEmpty(), "README.md has no scala block: is the path right?");
    List<String> files = new ArrayList<>();
    try (var listing = Files.list(SCALA_SNIPPETS)) {
      for (Path f : listing.filter(p -> p.toString().endsWith(".scala")).sorted().toList()) {
        files.add(Files.readString(f).replaceFirst("\\A(?://[^\\n]*\\n)+", ""));
      }
    }
    for (String block : blocks) {
      assertTrue(files.contains(block), "README.md's Scala block is in no file of " + SCALA_SNIPPETS
          + " (copy it there as written, so that the build compiles it):\n" + block);
    }
    for (String file : files) {
      assertTrue(blocks.contains(file), "a file of " + SCALA_SNIPPETS + " is no longer in README.md:\n" + file);
    }
  }

  /**
   * README's install steps work from a fresh clone: a {@code git checkout} names only a ref this
   * clone has (a clone of main has no release tag until one is pushed), and every {@code mvn ...
   * install} gives the sources and javadoc jars README promises (the root POM's {@code release}
   * profile attaches them).
   */
  @Test
  void installCommandsWorkFromAFreshClone() throws Exception {
    Path readmePath = Path.of(System.getProperty("gpucoll.readme", "../README.md"));
    String readme = Files.readString(readmePath);
    Matcher checkout = Pattern.compile("git checkout ([^\\s`&;]+)").matcher(readme);
    while (checkout.find()) {
      String ref = checkout.group(1);
      Process git = new ProcessBuilder("git", "rev-parse", "-q", "--verify", ref + "^{commit}")
          .directory(readmePath.toAbsolutePath().getParent().toFile()).redirectErrorStream(true).start();
      git.getInputStream().readAllBytes();
      assertTrue(git.waitFor() == 0, "README.md runs 'git checkout " + ref + "', which this clone does not have");
    }
    String pom = Files.readString(readmePath.toAbsolutePath().getParent().resolve("pom.xml"));
    assertTrue(Pattern.compile("(?s)<id>release</id>.*maven-source-plugin.*maven-javadoc-plugin").matcher(pom).find(),
        "the release profile no longer attaches sources and javadoc");
    Matcher install = Pattern.compile("(?m)^\\s*mvn [^\\n]*\\binstall\\b[^\\n]*$").matcher(readme);
    int installs = 0;
    while (install.find()) {
      installs++;
      if (readme.contains("sources and javadoc")) {
        assertTrue(install.group().contains("-Prelease"),
            "README promises sources and javadoc jars but installs without -Prelease: " + install.group().trim());
      }
    }
    assertTrue(installs > 0, "README.md has no mvn install command: is the path right?");
  }

  /** {@code spark.gpucoll.KEY=VALUE}, as in {@code --conf}, a properties file or prose (a sentence's full stop left out). */
  private static final Pattern SETTING_EXAMPLE =
      Pattern.compile("(spark\\.gpucoll\\.[A-Za-z0-9.]*[A-Za-z0-9])=([^\\s`'\",;)}\\]]*[^\\s`'\",;)}\\].])");

  /** Examples the documents give as wrong on purpose, each with the page that says so. */
  static final Map<String, String> WRONG_ON_PURPOSE = Map.of(
      "spark.gpucoll.algorithm=gpu-pipe", "docs/spark-gpu.md: the wrong setting whose refusal it records");

  /** Every {@code spark.gpucoll.KEY=VALUE} example of these documents, with where it is. */
  static Map<String, String> settingExamples(Map<Path, String> documents) {
    Map<String, String> out = new TreeMap<>();
    documents.forEach((path, text) -> {
      Matcher m = SETTING_EXAMPLE.matcher(text);
      while (m.find()) {
        // A value with '*' names a family in prose (gpu-*), not a value to set.
        if (!m.group(2).contains("*")) {
          out.putIfAbsent(m.group(), path + " line " + lineOf(text, m.start()));
        }
      }
    });
    return out;
  }

  /**
   * A reader who copies a setting from README.md or docs/ gets one that GpuCollConf knows and
   * accepts: the key exists and the value parses (a timeout of 500us, say, would fail the start).
   */
  @Test
  void everySettingExampleOfTheDocumentsParses() throws IOException {
    Path root = Path.of(System.getProperty("gpucoll.readme", "../README.md")).toAbsolutePath().normalize().getParent();
    List<Path> pages = new ArrayList<>(List.of(root.resolve("README.md"), root.resolve("python/README.md")));
    try (var listing = Files.list(root.resolve("docs"))) {
      pages.addAll(listing.filter(p -> p.toString().endsWith(".md")).sorted().toList());
    }
    Map<Path, String> documents = new TreeMap<>();
    for (Path page : pages) {
      documents.put(root.relativize(page), Files.readString(page));
    }
    Map<String, String> examples = settingExamples(documents);
    assertTrue(examples.containsKey("spark.gpucoll.rendezvous=allgather"),
        "the documents' settings were not found: is the pattern right? " + examples.keySet());
    List<String> failures = new ArrayList<>();
    examples.forEach((example, where) -> {
      String key = example.substring(0, example.indexOf('='));
      GpuCollConf conf = GpuCollConf.of(Map.of(key, example.substring(key.length() + 1)));
      String problem = null;
      if (!conf.unknownKeys().isEmpty()) {
        problem = "no such setting";
      } else {
        try {
          conf.validate();
        } catch (InvalidSettingException e) {
          problem = e.getMessage();
        }
      }
      if (WRONG_ON_PURPOSE.containsKey(example)) {
        if (problem == null) {
          failures.add(where + ": " + example + " is listed as wrong on purpose (" + WRONG_ON_PURPOSE.get(example)
              + ") but parses");
        }
      } else if (problem != null) {
        failures.add(where + ": " + example + ": " + problem);
      }
    });
    WRONG_ON_PURPOSE.keySet().stream().filter(e -> !examples.containsKey(e))
        .forEach(e -> failures.add(e + " is listed as wrong on purpose but no document has it any more"));
    if (!failures.isEmpty()) {
      fail(failures.size() + " setting example(s) a reader cannot use as written:\n" + String.join("\n", failures));
    }
  }

  @Test
  void theSettingExtractorFindsValuesAndLeavesFamiliesOut() {
    Map<String, String> found = settingExamples(Map.of(Path.of("page.md"),
        "set `spark.gpucoll.timeout=500us`, or --conf spark.gpucoll.report=verbose \\\n"
            + "(not `spark.gpucoll.algorithm=gpu-*`); spark.gpucoll.backend=gpu."));
    assertTrue(found.keySet().equals(Set.of("spark.gpucoll.timeout=500us", "spark.gpucoll.report=verbose",
        "spark.gpucoll.backend=gpu")), found.toString());
    assertTrue(found.get("spark.gpucoll.report=verbose").equals("page.md line 1"), found.toString());
    GpuCollConf tooShort = GpuCollConf.of(Map.of("spark.gpucoll.timeout", "500us"));
    assertThrows(InvalidSettingException.class, tooShort::validate);
  }

  @Test
  void theExtractorFindsBlocksAndSkipMarkers() {
    String md = "text\n```java\nclass A {}\n```\n<!-- readme-snippet: skip needs cuDF -->\n```java\nclass B {}\n```\n"
        + "```scala\nval x = 1\n```\n<!-- readme-snippet: skip -->\n```java\nclass C {}\n```\n";
    List<Snippet> s = javaSnippets(md);
    assertTrue(s.size() == 3, s.toString());
    assertTrue(s.get(0).code().equals("class A {}\n") && s.get(0).skipReason() == null && s.get(0).line() == 2, s.toString());
    assertTrue("needs cuDF".equals(s.get(1).skipReason()), s.toString());
    assertTrue("".equals(s.get(2).skipReason()), s.toString());
  }
}
