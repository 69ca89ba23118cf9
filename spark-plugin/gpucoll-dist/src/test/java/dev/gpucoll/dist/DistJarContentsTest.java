package dev.gpucoll.dist;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Checks the shaded jar after {@code package}: everything a Spark cluster lacks is inside, nothing
 * Spark provides and no GPU-machine harness is.
 */
class DistJarContentsTest {
  /**
   * Top-level folders the jar may hold: ours, our UI shim (Spark's UI types are private[spark], so it
   * lives in a package of Spark's), JavaCPP's, JUCX's (its classes and, at the jar root, its JNI
   * library) and jar metadata.
   */
  private static final List<String> ALLOWED_PREFIXES = List.of("dev/gpucoll/", "org/apache/spark/gpucoll/",
      "org/bytedeco/", "org/openucx/", "libjucx_amd64.so", "META-INF/");

  /** Programs for the GPU machine (they ship in the GPU bundle) and their reference and correctness matrix. */
  private static final List<String> HARNESS_PREFIXES =
      List.of("dev/gpucoll/cuda/check/", "dev/gpucoll/cuda/nccl/NcclSelfCheck", "dev/gpucoll/check/");

  private static final List<String> REQUIRED = List.of(
      "dev/gpucoll/api/Communicator.class",
      "dev/gpucoll/core/CommunicatorFactory.class",
      "dev/gpucoll/core/host/HostBackend.class",
      "dev/gpucoll/cuda/GpuBackend.class",
      "dev/gpucoll/spark/GpuCollectivesPlugin.class",
      "dev/gpucoll/linalg/Lu.class",
      "dev/gpucoll/native/gpucoll_kernels.fatbin",
      "dev/gpucoll/native/kernel_abi.h",
      "org/bytedeco/javacpp/Loader.class",
      "org/bytedeco/javacpp/linux-x86_64/libjnijavacpp.so",
      "org/bytedeco/cuda/global/cudart.class",
      "org/bytedeco/cuda/global/nccl.class",
      "org/bytedeco/cuda/linux-x86_64/libjnicudart.so",
      "org/bytedeco/cuda/linux-x86_64/libjninccl.so",
      "org/apache/spark/gpucoll/GpuCollHistoryServerPlugin.class",
      "org/openucx/jucx/ucp/UcpWorker.class",
      "libjucx_amd64.so",
      "META-INF/services/dev.gpucoll.core.spi.CommunicatorBackend",
      "META-INF/services/org.apache.spark.status.AppHistoryServerPlugin");

  private static Path jar;
  private static Set<String> entries;

  @BeforeAll
  static void open() throws IOException {
    String path = System.getProperty("gpucoll.dist.jar");
    assertTrue(path != null && !path.isBlank(), "gpucoll.dist.jar is not set (the module's pom sets it)");
    jar = Path.of(path);
    assertTrue(Files.isRegularFile(jar), jar + " does not exist: the check runs after package");
    entries = new TreeSet<>();
    try (JarFile f = new JarFile(jar.toFile())) {
      f.stream().filter(e -> !e.isDirectory()).forEach(e -> entries.add(e.getName()));
    }
  }

  @Test
  void holdsOnlyOurClassesJavaCppAndMetadata() {
    List<String> foreign = entries.stream()
        .filter(e -> ALLOWED_PREFIXES.stream().noneMatch(e::startsWith)).toList();
    assertEquals(List.of(), foreign, "classes Spark provides (Spark, Scala, Kryo, Jackson, metrics,"
        + " slf4j) or other foreign files must not be in " + jar.getFileName());
  }

  @Test
  void holdsNoHarnessClasses() {
    List<String> harness = entries.stream()
        .filter(e -> HARNESS_PREFIXES.stream().anyMatch(e::startsWith)).toList();
    assertEquals(List.of(), harness, "GPU-machine programs must not ship in the product jar");
  }

  @Test
  void holdsEverythingTheClusterLacks() {
    List<String> missing = new ArrayList<>();
    for (String r : REQUIRED) {
      if (!entries.contains(r)) {
        missing.add(r);
      }
    }
    assertEquals(List.of(), missing, "entries missing from " + jar.getFileName());
  }

  @Test
  void holdsTheClassesOfThisBuildNotStaleOnes() throws IOException {
    Path spark = Path.of(System.getProperty("gpucoll.spark.jar"));
    List<String> differing = new ArrayList<>();
    int compared = 0;
    try (JarFile thin = new JarFile(spark.toFile()); JarFile dist = new JarFile(jar.toFile())) {
      for (JarEntry e : thin.stream().filter(e -> e.getName().endsWith(".class")).toList()) {
        JarEntry shaded = dist.getJarEntry(e.getName());
        try (InputStream a = thin.getInputStream(e)) {
          byte[] want = a.readAllBytes();
          byte[] got = null;
          if (shaded != null) {
            try (InputStream b = dist.getInputStream(shaded)) {
              got = b.readAllBytes();
            }
          }
          if (!java.util.Arrays.equals(want, got)) {
            differing.add(e.getName());
          }
          compared++;
        }
      }
    }
    assertTrue(compared > 10, "compared only " + compared + " classes of " + spark);
    assertEquals(List.of(), differing, "classes of " + jar.getFileName() + " that differ from "
        + spark.getFileName() + " of the same build");
  }

  /**
   * The UI page class of every Spark line this jar serves (gpucoll.dist.pages, from the module's
   * pom: Scala 2.13 serves 3.5 and 4.x, Scala 2.12 only 3.5), and no other: GpuCollUi picks one
   * at run time.
   */
  @Test
  void holdsThePageClassOfEverySparkLineItServes() {
    String lines = System.getProperty("gpucoll.dist.pages", "");
    assertTrue(!lines.isBlank(), "gpucoll.dist.pages is not set (the module's pom sets it)");
    List<String> want = java.util.Arrays.stream(lines.split(","))
        .map(l -> "org/apache/spark/gpucoll/shim/" + l.strip() + "/GpuCollWebPage.class").sorted().toList();
    List<String> pages = entries.stream()
        .filter(e -> e.startsWith("org/apache/spark/gpucoll/shim/") && e.endsWith("/GpuCollWebPage.class")).toList();
    assertEquals(want, pages, "the page classes in " + jar.getFileName());
  }

  @Test
  void servicesOfBothBackendsAreMerged() throws IOException {
    try (JarFile f = new JarFile(jar.toFile())) {
      JarEntry e = f.getJarEntry("META-INF/services/dev.gpucoll.core.spi.CommunicatorBackend");
      try (InputStream in = f.getInputStream(e)) {
        String services = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        for (String backend : List.of("dev.gpucoll.core.host.HostBackend", "dev.gpucoll.cuda.GpuBackend")) {
          if (!services.contains(backend)) {
            fail("the merged service file lacks " + backend + ":\n" + services);
          }
        }
      }
    }
  }
}
