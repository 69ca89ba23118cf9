import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import javax.xml.parsers.DocumentBuilderFactory;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

/**
 * Prints one line per test class that skipped tests in this build, with the reasons its tests gave
 * (a missing library and its install line, say), from Surefire's XML reports: the console shows only
 * how many were skipped. Run by the build after each module's tests:
 * {@code java SkipReasons.java <surefire-reports dir> <build start, ISO-8601>}.
 */
public class SkipReasons {
  public static void main(String[] args) throws Exception {
    Path dir = Path.of(args[0]);
    if (!Files.isDirectory(dir)) {
      return;
    }
    // Reports of earlier builds stay in the folder: only this build's count.
    Instant since = args.length > 1 ? Instant.parse(args[1]).minusSeconds(1) : Instant.EPOCH;
    Map<String, Set<String>> reasons = new LinkedHashMap<>();
    List<Path> reports;
    try (var files = Files.list(dir)) {
      reports = files.filter(p -> p.getFileName().toString().matches("TEST-.*\\.xml")).sorted().toList();
    }
    DocumentBuilderFactory factory = DocumentBuilderFactory.newInstance();
    for (Path report : reports) {
      if (Files.getLastModifiedTime(report).toInstant().isBefore(since)) {
        continue;
      }
      NodeList cases = factory.newDocumentBuilder().parse(new File(report.toString())).getElementsByTagName("testcase");
      for (int i = 0; i < cases.getLength(); i++) {
        Element c = (Element) cases.item(i);
        NodeList skipped = c.getElementsByTagName("skipped");
        if (skipped.getLength() > 0) {
          Element skip = (Element) skipped.item(0);
          // JUnit 5's aborted tests carry the reason as the first line of the exception's text.
          String why = skip.hasAttribute("message") ? skip.getAttribute("message")
              : skip.getTextContent().strip().lines().findFirst().orElse("").replaceFirst("^[\\w.$]+Exception: ", "");
          why = why.strip().replaceFirst("^skipped: ", "").replaceAll("\\s+", " ");
          reasons.computeIfAbsent(c.getAttribute("classname"), k -> new LinkedHashSet<>())
              .add(why.isEmpty() ? "no reason given" : why);
        }
      }
    }
    reasons.forEach((cls, why) -> System.out.println("Skipped " + cls.substring(cls.lastIndexOf('.') + 1) + ": "
        + String.join("; ", why)));
  }
}
