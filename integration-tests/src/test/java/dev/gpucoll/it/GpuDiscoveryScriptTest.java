package dev.gpucoll.it;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** conf/getGpusResources.sh prints Spark's resource JSON, with or without GPUs. */
class GpuDiscoveryScriptTest {
  static final Path SCRIPT = Path.of("..", "conf", "getGpusResources.sh").toAbsolutePath().normalize();

  @TempDir
  Path bin;

  @Test
  void listsEveryGpuNvidiaSmiReportsAndHonoursCudaVisibleDevices() throws Exception {
    Path fake = bin.resolve("nvidia-smi");
    Files.writeString(fake, "#!/bin/sh\nprintf '0\\n1\\n2\\n'\n");
    Files.setPosixFilePermissions(fake, PosixFilePermissions.fromString("rwxr-xr-x"));
    String path = bin.toString(); // only the fake: a real nvidia-smi must not leak in
    assertEquals("{\"name\": \"gpu\", \"addresses\": [\"0\",\"1\",\"2\"]}",
        run(Map.of("PATH", path)));
    assertEquals("{\"name\": \"gpu\", \"addresses\": [\"0\",\"2\"]}",
        run(Map.of("PATH", path, "CUDA_VISIBLE_DEVICES", "0,2")));
  }

  @Test
  void noGpuMeansNoAddresses() throws Exception {
    assertEquals("{\"name\": \"gpu\", \"addresses\": []}", run(Map.of("PATH", bin.toString())));
  }

  private static String run(Map<String, String> env) throws IOException, InterruptedException {
    ProcessBuilder pb = new ProcessBuilder("/bin/bash", SCRIPT.toString()).redirectErrorStream(true);
    pb.environment().clear();
    pb.environment().putAll(env);
    Process p = pb.start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
    assertEquals(0, p.waitFor(), out);
    return out;
  }
}
