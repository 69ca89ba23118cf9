package dev.gpucoll.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.core.CommunicatorFactory;
import dev.gpucoll.core.spi.CommunicatorBackend;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** The GPU backend on a machine without a usable GPU: it says why and never crashes. */
class GpuBackendFallbackTest {

  @Test
  void registeredThroughServiceLoader() {
    CommunicatorBackend gpu = CommunicatorFactory.backends().get("gpu");
    assertTrue(gpu instanceof GpuBackend, "ServiceLoader finds the gpu backend: " + CommunicatorFactory.backends());
  }

  @Test
  void realProbeNeverThrowsAndExplainsItself() {
    // On CI (no driver) this loads JavaCPP, fails on libcuda.so.1 and must turn that into a reason.
    CudaProbe p = CudaEnvironment.probe();
    if (p.available()) {
      assertTrue(p.deviceCount() > 0);
      assertTrue(p.driverVersion() >= CudaProbe.MIN_DRIVER_VERSION);
    } else {
      String why = p.unavailableReason().orElseThrow();
      assertFalse(why.isBlank());
      assertEquals(0, p.ncclVersion());
      assertTrue(new GpuBackend().localFacts().isEmpty(), "no facts without CUDA");
    }
    assertEquals(p, CudaEnvironment.probe(), "probed once per process");
  }

  @Test
  void missingDriverMakesBackendUnavailable() {
    CudaProbe none = CudaProbe.unavailable("CUDA libraries cannot be loaded: libcuda.so.1: cannot open shared object file");
    GpuBackend b = new GpuBackend(() -> none, () -> true);
    assertEquals(Optional.of(none.unavailableReason().get()), b.unavailableReason());
    assertTrue(b.localFacts().isEmpty());
  }

  @Test
  void missingKernelImageIsAReason() {
    CudaProbe ok = new CudaProbe(Optional.empty(), 13000, 13000, 1, 22803, Optional.empty());
    GpuBackend b = new GpuBackend(() -> ok, () -> false);
    assertTrue(b.unavailableReason().orElseThrow().contains(KernelImage.RESOURCE));
  }

  @Test
  void versionTexts() {
    assertEquals("13.0", CudaProbe.cudaVersionText(13000));
    assertEquals("13.1", CudaProbe.cudaVersionText(13010));
    assertEquals("2.28.3", CudaProbe.ncclVersionText(22803));
    assertEquals("none", CudaProbe.ncclVersionText(0));
  }
}
