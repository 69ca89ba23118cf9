package dev.gpucoll.cuda.nccl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class NcclLibraryTest {
  @Test
  void versionTextReadsBothEncodings() {
    assertEquals("2.28.3", NcclLibrary.versionText(22803));
    assertEquals("2.8.4", NcclLibrary.versionText(2804));
    assertEquals("none", NcclLibrary.versionText(0));
  }

  @Test
  void capabilityTableKeepsNewerEntryPointsFrom2283() {
    assertTrue(NcclCapability.ALL_TO_ALL.availableIn(22803));
    assertTrue(NcclCapability.WINDOW_REGISTER.availableIn(22803));
    assertFalse(NcclCapability.COMM_QUERY_PROPERTIES.availableIn(22803), "ncclCommQueryProperties is 2.29+");
    assertFalse(NcclCapability.CTA_POLICY_ENV_NAMES.availableIn(22803));
    assertFalse(NcclCapability.ALL_TO_ALL.availableIn(22703));
  }

  @Test
  void withoutNcclTheReasonIsCleanAndNothingCrashes() {
    // CI has no driver and no libnccl; a GPU machine passes too, so only check the shape of the answer.
    if (NcclLibrary.unavailableReason().isPresent()) {
      String why = NcclLibrary.unavailableReason().get();
      assertTrue(why.startsWith("NCCL unavailable: "), why);
      NcclUnavailableException e = assertThrows(NcclUnavailableException.class, NcclLibrary::get);
      assertEquals(why, e.getMessage());
      assertThrows(NcclUnavailableException.class, () -> NcclCommunicator.requireLibrary());
    } else {
      assertTrue(NcclLibrary.get().version() >= 21400);
    }
  }
}
