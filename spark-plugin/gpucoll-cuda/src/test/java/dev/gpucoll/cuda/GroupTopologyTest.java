package dev.gpucoll.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.core.spi.MemberInfo;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class GroupTopologyTest {
  static MemberInfo m(int rank, String process, String uuid) {
    return new MemberInfo(rank, "host-a", process, Map.of(DeviceFacts.KEY_UUID, uuid));
  }

  @Test
  void threadsOfOneProcessOnOneGpuMaySpin() {
    GroupTopology t = new GroupTopology(List.of(m(0, "p1", "GPU-a"), m(1, "p1", "GPU-a"), m(2, "p1", "GPU-a")));
    assertFalse(t.mustNotSpin());
    assertEquals(GroupTopology.PeerAccess.SELF, t.access(1, 1));
    assertEquals(GroupTopology.PeerAccess.SAME_PROCESS, t.access(0, 2));
    assertEquals("3 ranks, 1 process(es), 1 GPU(s)", t.describe());
  }

  @Test
  void processesOnDistinctGpusUseIpcAndSpin() {
    GroupTopology t = new GroupTopology(List.of(m(0, "p1", "GPU-a"), m(1, "p2", "GPU-b")));
    assertFalse(t.mustNotSpin());
    assertEquals(GroupTopology.PeerAccess.IPC, t.access(0, 1));
  }

  @Test
  void twoProcessesOnOneGpuMustNotSpin() {
    GroupTopology t = new GroupTopology(List.of(m(0, "p1", "GPU-a"), m(1, "p2", "GPU-a"), m(2, "p2", "GPU-b")));
    assertTrue(t.mustNotSpin());
    assertEquals(1, t.crossProcessSharedGpus().size());
    assertTrue(t.crossProcessSharedGpus().get(0).contains("ranks 0,1 share GPU-a"));
    assertTrue(t.describe().contains("different processes"), t.describe());
  }

  @Test
  void ranksOnDifferentHostsNeverShareAGpu() {
    // Hosts simulated on one machine: every rank reports the machine's one GPU.
    GroupTopology t = new GroupTopology(List.of(new MemberInfo(0, "host-a", "p1@host-a", Map.of(DeviceFacts.KEY_UUID, "GPU-a")),
        new MemberInfo(1, "host-b", "p2@host-b", Map.of(DeviceFacts.KEY_UUID, "GPU-a"))));
    assertFalse(t.sameGpu(0, 1));
    assertFalse(t.mustNotSpin());
    assertEquals(2, t.gpuCount());
    assertEquals("2 ranks, 2 process(es), 2 GPU(s)", t.describe());
  }

  @Test
  void missingUuidIsAProblem() {
    GroupTopology t = new GroupTopology(List.of(m(0, "p1", "GPU-a"),
        new MemberInfo(1, "host-a", "p1", Map.of())));
    assertEquals(List.of("rank 1 reported no GPU UUID"), t.problems());
  }

  @Test
  void uuidSpelling() {
    byte[] b = new byte[16];
    for (int i = 0; i < 16; i++) {
      b[i] = (byte) (0xf0 + i);
    }
    assertEquals("GPU-f0f1f2f3-f4f5-f6f7-f8f9-fafbfcfdfeff", DeviceFacts.uuidText(b));
  }
}
