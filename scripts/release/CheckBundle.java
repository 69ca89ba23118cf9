import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;
import javax.xml.parsers.DocumentBuilderFactory;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.Node;

/**
 * Checks the bundle the release profile builds for Maven Central (docs/releasing.md), without
 * uploading it:
 * <pre>
 *   java scripts/release/CheckBundle.java target/central-publishing/central-bundle.zip [--signed]
 * </pre>
 * The modules that must be in it come from the POMs themselves: every module of the reactor except
 * the release profile's {@code excludeArtifacts}. Each published jar module must have its jar,
 * sources jar, javadoc jar and POM; a POM module its POM. Every file must carry md5, sha1, sha256
 * and sha512 checksums that match (and, with {@code --signed}, an .asc signature). Every POM, with
 * what it inherits from its parents in the bundle, must have the metadata Central requires: name,
 * description, url, a license with name and url, a developer, scm connection and url. Exit status 1
 * with every problem listed, 0 with a summary.
 */
public final class CheckBundle {
  private static final List<String> CHECKSUMS = List.of("md5", "sha1", "sha256", "sha512");
  /** The profiles, besides release, that a release runs with (docs/releasing.md). */
  private static final Set<String> RELEASE_PROFILES = Set.of("spark-lines", "cudf");
  private static final Map<String, String> DIGESTS =
      Map.of("md5", "MD5", "sha1", "SHA-1", "sha256", "SHA-256", "sha512", "SHA-512");

  private final List<String> problems = new ArrayList<>();
  private final Map<String, String> rootProperties = new TreeMap<>();

  public static void main(String[] args) throws Exception {
    if (args.length < 1) {
      System.err.println("usage: java scripts/release/CheckBundle.java BUNDLE.zip [--signed]");
      System.exit(2);
    }
    boolean signed = args.length > 1 && args[1].equals("--signed");
    CheckBundle check = new CheckBundle();
    int modules = check.run(Path.of(args[0]), Path.of("pom.xml").toAbsolutePath(), signed);
    if (!check.problems.isEmpty()) {
      System.err.println("release bundle " + args[0] + ": " + check.problems.size() + " problem(s)");
      check.problems.forEach(p -> System.err.println("  - " + p));
      System.exit(1);
    }
    System.out.println("release bundle " + args[0] + ": " + modules + " modules, each with its POM"
        + " metadata, jars, checksums" + (signed ? " and signatures" : "") + ": OK");
  }

  /** The published modules: artifactId to packaging, from the reactor's POMs. */
  private Map<String, String> expectedModules(Path rootPom) throws Exception {
    Document root = parse(Files.readAllBytes(rootPom));
    Element props = child(root.getDocumentElement(), "properties");
    if (props != null) {
      for (Node n = props.getFirstChild(); n != null; n = n.getNextSibling()) {
        if (n instanceof Element e) {
          rootProperties.put(e.getTagName(), e.getTextContent().trim());
        }
      }
    }
    Set<String> excluded = new TreeSet<>();
    for (Element e : descendants(root.getDocumentElement(), "excludeArtifact")) {
      excluded.add(expand(e.getTextContent().trim()));
    }
    Map<String, String> out = new TreeMap<>();
    collectModules(rootPom, out);
    excluded.forEach(out::remove);
    return out;
  }

  private void collectModules(Path pom, Map<String, String> out) throws Exception {
    Element project = parse(Files.readAllBytes(pom)).getDocumentElement();
    String packaging = text(project, "packaging");
    out.put(expand(text(project, "artifactId")), packaging == null ? "jar" : packaging);
    List<Element> moduleLists = new ArrayList<>();
    Element modules = child(project, "modules");
    if (modules != null) {
      moduleLists.add(modules);
    }
    // A release builds every Spark line and the cuDF module (-Prelease,spark-lines,cudf): those
    // profiles' modules are published too.
    Element profiles = child(project, "profiles");
    if (profiles != null) {
      for (Element profile : children(profiles, "profile")) {
        Element profileModules = child(profile, "modules");
        if (RELEASE_PROFILES.contains(text(profile, "id")) && profileModules != null) {
          moduleLists.add(profileModules);
        }
      }
    }
    for (Element list : moduleLists) {
      for (Element m : children(list, "module")) {
        collectModules(pom.getParent().resolve(m.getTextContent().trim()).resolve("pom.xml"), out);
      }
    }
  }

  private int run(Path bundle, Path rootPom, boolean signed) throws Exception {
    Map<String, String> expected = expectedModules(rootPom);
    // Files of each artifact directory (group/artifact/version/), by name.
    Map<String, Map<String, byte[]>> dirs = new TreeMap<>();
    try (ZipFile zip = new ZipFile(bundle.toFile())) {
      for (ZipEntry e : zip.stream().toList()) {
        if (e.isDirectory()) {
          continue;
        }
        String name = e.getName();
        int slash = name.lastIndexOf('/');
        dirs.computeIfAbsent(name.substring(0, slash + 1), d -> new TreeMap<>())
            .put(name.substring(slash + 1), zip.getInputStream(e).readAllBytes());
      }
    }
    Map<String, Element> poms = new LinkedHashMap<>();
    Set<String> found = new TreeSet<>();
    for (Map.Entry<String, Map<String, byte[]>> d : dirs.entrySet()) {
      String[] parts = d.getKey().split("/");
      if (parts.length < 3) {
        problems.add("file outside group/artifact/version/: " + d.getKey());
        continue;
      }
      String artifact = parts[parts.length - 2];
      String version = parts[parts.length - 1];
      found.add(artifact);
      String packaging = expected.get(artifact);
      if (packaging == null) {
        problems.add(artifact + " is in the bundle but is not a published module");
        continue;
      }
      if (version.endsWith("-SNAPSHOT")) {
        problems.add(artifact + ": version " + version + " is a SNAPSHOT; Central takes releases only");
      }
      String base = artifact + "-" + version;
      List<String> required = new ArrayList<>(List.of(base + ".pom"));
      if (packaging.equals("jar")) {
        required.addAll(List.of(base + ".jar", base + "-sources.jar", base + "-javadoc.jar"));
      }
      Map<String, byte[]> files = d.getValue();
      for (String r : required) {
        if (!files.containsKey(r)) {
          problems.add(artifact + ": missing " + r);
        }
      }
      for (Map.Entry<String, byte[]> f : files.entrySet()) {
        String file = f.getKey();
        if (file.endsWith(".asc") || CHECKSUMS.stream().anyMatch(c -> file.endsWith("." + c))) {
          continue;
        }
        checkSums(artifact, file, f.getValue(), files);
        if (signed && !files.containsKey(file + ".asc")) {
          problems.add(artifact + ": " + file + " has no .asc signature");
        }
        if (file.endsWith(".jar") && f.getValue().length < 22) {
          problems.add(artifact + ": " + file + " is not a jar");
        }
      }
      byte[] pom = files.get(base + ".pom");
      if (pom != null) {
        poms.put(artifact, parse(pom).getDocumentElement());
      }
    }
    for (String artifact : expected.keySet()) {
      if (!found.contains(artifact)) {
        problems.add(artifact + " is a published module but is not in the bundle");
      }
    }
    for (Map.Entry<String, Element> p : poms.entrySet()) {
      checkMetadata(p.getKey(), p.getValue(), poms);
    }
    return found.size();
  }

  private void checkSums(String artifact, String file, byte[] content, Map<String, byte[]> files)
      throws NoSuchAlgorithmException {
    for (String c : CHECKSUMS) {
      byte[] sum = files.get(file + "." + c);
      if (sum == null) {
        problems.add(artifact + ": " + file + " has no ." + c);
        continue;
      }
      String want = HexFormat.of().formatHex(MessageDigest.getInstance(DIGESTS.get(c)).digest(content));
      String got = new String(sum, StandardCharsets.US_ASCII).trim().split("\\s+")[0];
      if (!want.equalsIgnoreCase(got)) {
        problems.add(artifact + ": " + file + "." + c + " does not match the file");
      }
    }
  }

  /** Central's required POM elements, looked up through the parents held in the bundle. */
  private void checkMetadata(String artifact, Element pom, Map<String, Element> poms) {
    List<Element> chain = new ArrayList<>();
    for (Element p = pom; p != null; ) {
      chain.add(p);
      Element parent = child(p, "parent");
      if (parent == null) {
        break;
      }
      String parentId = text(parent, "artifactId");
      p = poms.get(parentId);
      if (p == null) {
        problems.add(artifact + ": its parent " + parentId + " is not in the bundle");
      }
    }
    for (String path : List.of("name", "description", "url", "licenses/license/name",
        "licenses/license/url", "developers/developer/name", "scm/connection", "scm/url")) {
      if (chain.stream().noneMatch(p -> !textAt(p, path).isEmpty())) {
        problems.add(artifact + ": POM has no " + path.replace('/', '>') + " (nor inherits one)");
      }
    }
    if (child(pom, "groupId") == null && chain.size() < 2) {
      problems.add(artifact + ": POM has no groupId");
    }
  }

  private String expand(String s) {
    for (Map.Entry<String, String> p : rootProperties.entrySet()) {
      s = s.replace("${" + p.getKey() + "}", p.getValue());
    }
    return s;
  }

  private static Document parse(byte[] xml) throws Exception {
    DocumentBuilderFactory f = DocumentBuilderFactory.newInstance();
    f.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
    try {
      return f.newDocumentBuilder().parse(new ByteArrayInputStream(xml));
    } catch (IOException e) {
      throw new IllegalStateException("cannot parse a POM", e);
    }
  }

  private static Element child(Element parent, String tag) {
    List<Element> c = children(parent, tag);
    return c.isEmpty() ? null : c.get(0);
  }

  private static List<Element> children(Element parent, String tag) {
    List<Element> out = new ArrayList<>();
    for (Node n = parent.getFirstChild(); n != null; n = n.getNextSibling()) {
      if (n instanceof Element e && e.getTagName().equals(tag)) {
        out.add(e);
      }
    }
    return out;
  }

  private static List<Element> descendants(Element parent, String tag) {
    List<Element> out = new ArrayList<>();
    var list = parent.getElementsByTagName(tag);
    for (int i = 0; i < list.getLength(); i++) {
      out.add((Element) list.item(i));
    }
    return out;
  }

  private static String text(Element parent, String tag) {
    Element c = child(parent, tag);
    return c == null ? null : c.getTextContent().trim();
  }

  /** The text at a slash-separated path of child elements, or "" when absent or empty. */
  private static String textAt(Element e, String path) {
    Element at = e;
    for (String step : path.split("/")) {
      at = child(at, step);
      if (at == null) {
        return "";
      }
    }
    return at.getTextContent().trim();
  }
}
