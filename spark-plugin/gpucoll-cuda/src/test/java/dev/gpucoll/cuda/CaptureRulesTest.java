package dev.gpucoll.cuda;

import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.cuda.GroupRoute.Kind;
import org.junit.jupiter.api.Test;

/** What a graph capture refuses, and that every refusal says why; device work on any path is accepted. */
class CaptureRulesTest {
  private static final CommBuffer DEV = CommBuffer.device(0x1000, 1 << 20);
  private static final CommBuffer HOST = CommBuffer.of(new float[4]);

  @Test
  void deviceCollectivesOnKernelsNcclAndOneRankAreCaptured() {
    for (Kind k : new Kind[] {Kind.KERNEL, Kind.NCCL, Kind.ONE_RANK}) {
      for (Collective c : Collective.values()) {
        if (c != Collective.BARRIER) {
          assertNull(CaptureRules.refusal(c, DEV, DEV, k), c + " on " + k);
        }
      }
    }
  }

  @Test
  void hostWaitsAreRefusedWithTheirReason() {
    assertTrue(CaptureRules.refusal(Collective.ALL_REDUCE, HOST, DEV, Kind.KERNEL).contains("host buffers"));
    assertTrue(CaptureRules.refusal(Collective.ALL_GATHER, DEV, HOST, Kind.NCCL).contains("host buffers"));
    assertTrue(CaptureRules.refusal(Collective.ALL_REDUCE, DEV, DEV, Kind.STAGED).contains("gpu-staged-host"));
    assertTrue(CaptureRules.refusal(Collective.BARRIER, null, null, Kind.KERNEL).contains("barrier()"));
    for (String m : new String[] {"synchronize", "setStream", "split", "allocSymmetric", "capture"}) {
      String why = CaptureRules.refusal(m);
      assertTrue(why != null && !why.isBlank(), m);
      assertTrue(CaptureRules.message(why).startsWith("cannot be captured into a CUDA graph: "), m);
    }
  }
}
