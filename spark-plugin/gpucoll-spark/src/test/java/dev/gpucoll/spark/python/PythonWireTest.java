package dev.gpucoll.spark.python;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.spark.GpuCollectivesPlugin;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** The Python package's version is the jar's (its wire is generated from python-wire.txt, checked by the build). */
class PythonWireTest {
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
