package dev.gpucoll.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.core.config.GpuCollConf;
import dev.gpucoll.core.spi.DeviceRoutes;
import dev.gpucoll.core.spi.MemberInfo;
import dev.gpucoll.cuda.eligibility.FactKeys;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The routes the executor gives a Python group: the same decisions as a Java group's, NCCL included. */
class GpuDeviceRoutesTest {
  private static final GpuCollConf CONF = GpuCollConf.of(Map.of()).validate();

  /** Python processes' facts as python/gpucoll/gpu reports them: one GPU per host, NCCL {@code nccl}. */
  private static List<MemberInfo> python(int hosts, int perHost, String nccl) {
    List<MemberInfo> out = new ArrayList<>();
    for (int h = 0; h < hosts; h++) {
      for (int g = 0; g < perHost; g++) {
        Map<String, String> f = new HashMap<>();
        f.put(FactKeys.GPU_UUID, "GPU-" + g); // hosts simulated on one machine report the same UUIDs
        f.put(FactKeys.GPU_PCI_BUS_ID, "0000:0" + g + ":00.0");
        f.put(FactKeys.NCCL_VERSION, nccl);
        if (nccl.equals("0")) {
          f.put(FactKeys.NCCL_PROBLEM, "no NCCL in this Python; pip install cupy-cuda13x");
        }
        out.add(new MemberInfo(out.size(), "host-" + h, (4000 + out.size()) + "@host-" + h, f));
      }
    }
    return out;
  }

  @Test
  void aPythonGroupAcrossHostsRunsEveryCollectiveOnNccl() {
    DeviceRoutes.Group g = new GpuDeviceRoutes().group(1, python(2, 1, "22809"), CONF);
    assertTrue(g.formsNccl());
    assertFalse(g.kernelsOn(), "a peer's workspace of another host cannot be mapped");
    for (Collective c : List.of(Collective.ALL_REDUCE, Collective.ALL_GATHER, Collective.REDUCE_SCATTER,
        Collective.ALL_TO_ALL, Collective.BROADCAST)) {
      for (long count : new long[] {1, 1 << 20}) {
        DeviceRoutes.Launch l = g.route(c, count, DataType.FLOAT32, ReduceOp.SUM);
        assertEquals(DeviceRoutes.Kind.NCCL, l.kind(), c + " " + count);
        assertTrue(l.algorithm().startsWith("nccl"), l.algorithm());
      }
    }
    assertTrue(g.findings().stream().anyMatch(f -> f.startsWith("our kernels are off: the group spans hosts")),
        g.findings().toString());
  }

  @Test
  void morePythonRanksThanOurKernelsServeRunOnNccl() {
    DeviceRoutes.Group g = new GpuDeviceRoutes().group(0, python(1, 17, "22809"), CONF);
    assertTrue(g.formsNccl() && !g.kernelsOn());
    assertEquals(DeviceRoutes.Kind.NCCL, g.route(Collective.ALL_REDUCE, 2, DataType.FLOAT32, ReduceOp.SUM).kind());
  }

  @Test
  void withoutNcclInThePythonProcessAGroupAcrossHostsIsRefusedSayingWhatToInstall() {
    CollectiveException e = assertThrows(CollectiveException.class,
        () -> new GpuDeviceRoutes().group(0, python(2, 1, "0"), CONF));
    assertTrue(e.getMessage().contains("the group spans hosts [host-0, host-1]")
        && e.getMessage().contains("pip install cupy-cuda13x"), e.getMessage());
  }

  @Test
  void insideAHostWithoutNcclOurKernelsServeAndNoNcclForms() {
    DeviceRoutes.Group g = new GpuDeviceRoutes().group(0, python(1, 2, "0"), CONF);
    assertFalse(g.formsNccl());
    assertTrue(g.kernelsOn());
    assertEquals(DeviceRoutes.Kind.KERNEL, g.route(Collective.ALL_REDUCE, 2, DataType.FLOAT32, ReduceOp.SUM).kind());
  }
}
