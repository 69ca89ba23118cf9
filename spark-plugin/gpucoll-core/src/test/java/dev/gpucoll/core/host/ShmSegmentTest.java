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
      assertEquals(ShmSegment.totalBytes(3, 4096), Files.size(a.path));
      ShmSegment b = ShmSegment.open(dir, a.path, 3);
      try {
        // one memory: what rank 1 publishes through one mapping is seen through the other
        b.setState(1, ShmSegment.STATE_ABORTED, "gave up waiting for rank 2");
        assertEquals(ShmSegment.STATE_ABORTED, a.state(1));
        assertEquals("gave up waiting for rank 2", a.reason(1));
        assertEquals(ShmSegment.STATE_ALIVE, a.state(0));
        assertEquals(-1, a.abortedBy());
        b.abortGroup(2);
        a.abortGroup(0);
        assertEquals(2, a.abortedBy(), "the first rank that gave up is kept");
      } finally {
        b.close();
      }
      IOException wrongSize = assertThrows(IOException.class, () -> ShmSegment.open(dir, a.path, 4));
      assertTrue(wrongSize.getMessage().contains("made for 3 ranks"), wrongSize.getMessage());
      Path junk = dir.resolve("gpucoll-junk.shm");
      Files.write(junk, new byte[8192]);
      Files.setPosixFilePermissions(junk, PosixFilePermissions.fromString("rw-------"));
      IOException notOurs = assertThrows(IOException.class, () -> ShmSegment.open(dir, junk, 3));
      assertTrue(notOurs.getMessage().contains("not a gpucoll segment"), notOurs.getMessage());
    } finally {
      Files.deleteIfExists(a.path);
      a.close();
    }
    assertFalse(Files.exists(a.path));
  }

  /**
   * Every page of a new segment is allocated when it is created (no sparse file), so a file
   * system short of space fails the formation, never a collective touching a page later.
   */
  @Test
  void segmentPagesAreAllocatedAtCreation() throws Exception {
    ShmSegment a = ShmSegment.create(dir, 3, 16, 512 << 10);
    try {
      Process stat = new ProcessBuilder("stat", "-c", "%b %B", a.path.toString()).redirectErrorStream(true).start();
      String[] blocks = new String(stat.getInputStream().readAllBytes()).trim().split(" ");
      assertEquals(0, stat.waitFor(), String.join(" ", blocks));
      long allocated = Long.parseLong(blocks[0]) * Long.parseLong(blocks[1]);
      assertTrue(allocated >= a.size(), "allocated " + allocated + " of " + a.size() + " bytes");
    } finally {
      Files.deleteIfExists(a.path);
      a.close();
    }
  }

  /** A peer names the path to map: only a 0600 segment file of ours, directly in the shm directory. */
  @Test
  void openRefusesSymlinksForeignPathsAndLooseModes() throws IOException {
    ShmSegment a = ShmSegment.create(dir, 2, 16, 4096);
    try {
      Path link = dir.resolve("gpucoll-link.shm");
      Files.createSymbolicLink(link, a.path);
      IOException symlink = assertThrows(IOException.class, () -> ShmSegment.open(dir, link, 2));
      assertTrue(symlink.getMessage().contains("symbolic") || symlink.getMessage().contains("ELOOP")
          || symlink.getMessage().contains("many levels"), symlink.getMessage());
      Path other = Files.createDirectory(dir.resolve("elsewhere"));
      Path moved = Files.copy(a.path, other.resolve(a.path.getFileName()));
      IOException outside = assertThrows(IOException.class, () -> ShmSegment.open(dir, moved, 2));
      assertTrue(outside.getMessage().contains("not a segment file in the shm directory"), outside.getMessage());
      Path dotdot = dir.resolve("elsewhere/../" + a.path.getFileName());
      assertThrows(IOException.class, () -> ShmSegment.open(dir, dotdot, 2));
      Path loose = dir.resolve("gpucoll-loose.shm");
      Files.copy(a.path, loose);
      Files.setPosixFilePermissions(loose, PosixFilePermissions.fromString("rw-rw-rw-"));
      IOException mode = assertThrows(IOException.class, () -> ShmSegment.open(dir, loose, 2));
      assertTrue(mode.getMessage().contains("mode 0600"), mode.getMessage());
    } finally {
      Files.deleteIfExists(a.path);
      a.close();
    }
  }

  /** A segment left by a creator that died before its members unlinked it is swept; live ones stay. */
  @Test
  void creatingSweepsSegmentsOfDeadCreators() throws Exception {
    Process gone = new ProcessBuilder("true").start();
    gone.waitFor();
    long deadPid = gone.pid();
    ShmSegment live = ShmSegment.create(dir, 2, 16, 4096);
    ShmSegment victim = ShmSegment.create(dir, 2, 16, 4096);
    String name = victim.path.getFileName().toString();
    String self = "-" + ProcessHandle.current().pid() + "-";
    Path stale = dir.resolve(name.replace(self, "-" + deadPid + "-"));
    Files.move(victim.path, stale);
    victim.close();
    ShmSegment next = ShmSegment.create(dir, 2, 16, 4096);
    try {
      assertFalse(Files.exists(stale), "segment of dead pid " + deadPid + " swept");
      assertTrue(Files.exists(live.path), "a live creator's segment stays");
    } finally {
      for (ShmSegment s : new ShmSegment[] {live, next}) {
        Files.deleteIfExists(s.path);
        s.close();
      }
    }
  }

  @Test
  void stepHeadersShareOneCacheLineWithTheirPayload() throws IOException {
    ShmSegment a = ShmSegment.create(dir, 3, 16, 512 << 10);
    try {
      for (int r = 0; r < 3; r++) {
        for (int h = 0; h < 2; h++) {
          assertEquals(0, a.headerOff(r, h) % 64, "header of rank " + r + ", half " + h + " starts a cache line");
        }
      }
      assertTrue(ShmSegment.INLINE_OFF + ShmSegment.INLINE_BYTES <= 64, "the payload sits in the flag's line");
    } finally {
      a.close();
    }
    assertThrows(IllegalArgumentException.class, () -> ShmSegment.create(dir, 2, 24, 4096));
  }
}
