package dev.gpucoll.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.core.config.GpuCollConf;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** docs/configs.md must be what GpuCollConf generates. */
class ConfigDocsTest {

  @Test
  void docsConfigsMdIsUpToDate() throws Exception {
    Path docs = repoRoot().resolve("docs/configs.md");
    assertTrue(Files.exists(docs), docs + " is missing");
    assertEquals(GpuCollConf.markdown(), Files.readString(docs),
        "docs/configs.md is stale; regenerate it from the repository root with: java -cp"
            + " spark-plugin/gpucoll-core/target/classes dev.gpucoll.core.config.ConfigDocs"
            + " docs/configs.md");
  }

  /** The top-most folder with a pom.xml above the module's working directory. */
  static Path repoRoot() {
    Path dir = Path.of("").toAbsolutePath();
    Path root = dir;
    while (dir != null) {
      if (Files.exists(dir.resolve("pom.xml"))) {
        root = dir;
      }
      dir = dir.getParent();
    }
    return root;
  }
}
