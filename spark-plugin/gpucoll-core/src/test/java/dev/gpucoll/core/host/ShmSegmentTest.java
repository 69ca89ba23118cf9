package dev.gpucoll.core.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ShmSegmentTest {
  @TempDir
  Path dir;

  @Test
  void segmentIsPrivateSharedAndCheckedOnOpen() throws IOException {
    ShmSegment a = ShmSegment.create(dir, 3, 16, 4096);
    try {
      assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(a.path)));
      assertEquals(ShmSegment.totalBytes(3, 16, 4096), Files.size(a.path));
      ShmSegment b = ShmSegment.open(a.path, 3);
      try {
        // one memory: what rank 1 publishes through one mapping is seen through the other
        b.setState(1, ShmSegment.STATE_ABORTED, "gave up waiting for rank 2");
        assertEquals(ShmSegment.STATE_ABORTED, a.state(1));
        assertEquals("gave up waiting for rank 2", a.reason(1));
        assertEquals(ShmSegment.STATE_ALIVE, a.state(0));
      } finally {
        b.close();
      }
      IOException wrongSize = assertThrows(IOException.class, () -> ShmSegment.open(a.path, 4));
      assertTrue(wrongSize.getMessage().contains("made for 3 ranks"), wrongSize.getMessage());
      Path junk = dir.resolve("junk");
      Files.write(junk, new byte[8192]);
      IOException notOurs = assertThrows(IOException.class, () -> ShmSegment.open(junk, 3));
      assertTrue(notOurs.getMessage().contains("not a gpucoll segment"), notOurs.getMessage());
    } finally {
      a.unlink();
      a.close();
    }
    assertFalse(Files.exists(a.path));
  }
}
