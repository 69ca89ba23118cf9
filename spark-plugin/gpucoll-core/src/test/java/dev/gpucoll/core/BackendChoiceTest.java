package dev.gpucoll.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.core.spi.MemberInfo;
import dev.gpucoll.core.spi.MemberInfoCodec;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Each rank's reason for an unusable backend reaches every rank: in the error and the findings. */
class BackendChoiceTest {
  private static final String NO_DRIVER = "libcuda.so.1: cannot open shared object file";

  private static MemberInfo member(int rank, String backends, Map<String, String> more) {
    Map<String, String> facts = new java.util.HashMap<>(more);
    facts.put(CommunicatorFactory.FACT_BACKENDS, backends);
    // Through the wire form, as at rendezvous.
    return MemberInfoCodec.decode(MemberInfoCodec.encode(new MemberInfo(rank, "h", "p" + rank, facts)));
  }

  private static final List<MemberInfo> NO_GPU_ANYWHERE = List.of(
      member(0, "host", Map.of("unusable.gpu", NO_DRIVER)),
      member(1, "host", Map.of("unusable.gpu", NO_DRIVER)),
      member(2, "host", Map.of()));

  @Test
  void forcingGpuNamesEachRanksReason() {
    CollectiveException e = assertThrows(CollectiveException.class,
        () -> CommunicatorFactory.chooseBackend("gpu", NO_GPU_ANYWHERE, 1));
    String m = e.getMessage();
    assertTrue(m.contains("backend 'gpu' is not usable on ranks [0, 1, 2]"), m);
    assertTrue(m.contains("ranks [0, 1]: " + NO_DRIVER), m);
    assertTrue(m.contains("rank 2: no 'gpu' backend on its class path"), m);
    assertTrue(m.contains("spark.gpucoll.backend=gpu"), m);
  }

  @Test
  void autoFallsBackToHostAndSaysWhy() {
    CommunicatorFactory.Choice c = CommunicatorFactory.chooseBackend("auto", NO_GPU_ANYWHERE, 0);
    assertEquals("host", c.backend());
    assertEquals(1, c.skipped().size(), c.skipped().toString());
    assertTrue(c.skipped().get(0).contains("ranks [0, 1]: " + NO_DRIVER), c.skipped().toString());
  }

  @Test
  void aGroupWhereEveryRankHasTheGpuReportsNothingSkipped() {
    List<MemberInfo> all = List.of(member(0, "gpu,host", Map.of()), member(1, "gpu,host", Map.of()));
    CommunicatorFactory.Choice c = CommunicatorFactory.chooseBackend("auto", all, 0);
    assertEquals("gpu", c.backend());
    assertEquals(List.of(), c.skipped());
  }
}
