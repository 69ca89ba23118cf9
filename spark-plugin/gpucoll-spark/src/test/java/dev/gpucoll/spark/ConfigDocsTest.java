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

  /** The repository root: the first folder above the working directory with pom.xml and spark-plugin/. */
  static Path repoRoot() {
    for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
      if (Files.exists(dir.resolve("pom.xml")) && Files.isDirectory(dir.resolve("spark-plugin"))) {
        return dir;
      }
    }
    throw new IllegalStateException("no repository root above " + Path.of("").toAbsolutePath());
  }
}
