package dev.gpucoll.cuda.nccl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class NcclDebugLogTest {
  @Test
  void findsThisPidsFileWhateverTheHostName(@TempDir Path dir) throws Exception {
    Files.writeString(dir.resolve("nccl.vm.456.log"), "vm:456:456 [0] NCCL INFO NCCL version 2.28.3+cuda13.0\n");
    Files.writeString(dir.resolve("nccl.vm.4567.log"), "other process\n");
    String pattern = dir.resolve("nccl.%h.%p.log").toString();
    assertEquals(dir.resolve("nccl.vm.456.log"), NcclDebugLog.find(pattern, 456).orElseThrow().file());
    assertEquals("2.28.3+cuda13.0", NcclDebugLog.find(pattern, 456).orElseThrow().parse().version());
    assertTrue(NcclDebugLog.find(pattern, 45).isEmpty());
    assertTrue(NcclDebugLog.find(dir.resolve("missing/nccl.%p").toString(), 456).isEmpty());
  }

  @Test
  void saysWhatTheEnvironmentLacks() {
    assertTrue(NcclDebugLog.missingSetup(Map.of()).orElseThrow().contains("NCCL_DEBUG"));
    assertTrue(NcclDebugLog.missingSetup(Map.of("NCCL_DEBUG", "INFO", "NCCL_DEBUG_SUBSYS", "COLL"))
        .orElseThrow().contains("INIT"));
    assertTrue(NcclDebugLog.missingSetup(Map.of("NCCL_DEBUG", "INFO")).orElseThrow().contains("NCCL_DEBUG_FILE"));
    Map<String, String> ok = NcclDebugLog.environment("/tmp/x", 22803);
    assertTrue(NcclDebugLog.missingSetup(ok).isEmpty());
    assertTrue(NcclDebugLog.tuningLogged(ok));
    assertFalse(NcclDebugLog.tuningLogged(Map.of("NCCL_DEBUG_SUBSYS", "INIT")));
    assertEquals(List.of("spark.executorEnv.NCCL_DEBUG", "spark.executorEnv.NCCL_DEBUG_SUBSYS",
        "spark.executorEnv.NCCL_DEBUG_FILE"), List.copyOf(NcclDebugLog.sparkExecutorEnv("/tmp/x").keySet()));
    assertEquals("/tmp/x/nccl.%h.%p.log", NcclDebugLog.sparkExecutorEnv("/tmp/x").get("spark.executorEnv.NCCL_DEBUG_FILE"));
  }
}
