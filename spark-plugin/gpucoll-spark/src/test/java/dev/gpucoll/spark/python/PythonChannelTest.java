package dev.gpucoll.spark.python;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The Python tasks' door: owner-only, and a wrong or unknown caller gets a reason, not a session. */
class PythonChannelTest {
  @TempDir
  Path tmp;

  private static String ask(Path socket, String hello) throws IOException {
    try (SocketChannel s = SocketChannel.open(StandardProtocolFamily.UNIX)) {
      s.connect(UnixDomainSocketAddress.of(socket));
      s.write(ByteBuffer.wrap(hello.getBytes(StandardCharsets.UTF_8)));
      ByteBuffer b = ByteBuffer.allocate(4096);
      while (s.read(b) >= 0 && (b.position() == 0 || b.get(b.position() - 1) != '\n')) {
        // until the answer's line ends
      }
      return new String(b.array(), 0, b.position(), StandardCharsets.UTF_8).trim();
    }
  }

  @Test
  void theDirectoryAndSocketAreTheOwnersAlone() throws IOException {
    Path dir = tmp.resolve("chan");
    Files.createDirectory(dir, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwxrwxrwx")));
    PythonChannel.ownPrivateDir(dir); // an existing directory of this user is narrowed to 0700
    assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(dir)));
    Path link = tmp.resolve("link");
    Files.createSymbolicLink(link, dir);
    IOException e = assertThrows(IOException.class, () -> PythonChannel.ownPrivateDir(link));
    assertTrue(e.getMessage().contains("link"), e.getMessage());
  }

  @Test
  void aWrongHelloOrAnUnknownTaskIsAnsweredWithTheReason() throws Exception {
    Path dir = tmp.resolve("chan2");
    PythonChannel.ownPrivateDir(dir);
    try (PythonChannel ch = PythonChannelTest.open(dir)) {
      assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(ch.socketPath())));
      String wrong = ask(ch.socketPath(), "GPUCOLL/0 7\n");
      assertTrue(wrong.startsWith("ERR IllegalStateException this executor speaks GPUCOLL/1"), wrong);
      String unknown = ask(ch.socketPath(), PythonChannel.HELLO + " 42\n");
      assertTrue(unknown.startsWith("ERR IllegalStateException task 42 is not a barrier task running on this executor"),
          unknown);
    }
  }

  /**
   * Whatever another local user plants in the shared directory under the names a mailbox used to
   * get (the executor's pid and a counter: a non-empty directory, a file, a link), a session's
   * mailbox is made beside it under a name nobody can predict, and the planted things stay as they were.
   */
  @Test
  void plantedNamesNeitherBlockNorRedirectAMailbox() throws IOException {
    Path shm = tmp.resolve("shm");
    Files.createDirectory(shm);
    Path elsewhere = Files.writeString(tmp.resolve("elsewhere"), "not the executor's");
    String name = "gpucoll-py-" + ProcessHandle.current().pid() + "-1";
    Files.createDirectories(shm.resolve(name + "-0").resolve("inside"));
    Files.writeString(shm.resolve(name + "-1"), "planted");
    Files.createSymbolicLink(shm.resolve(name + "-2"), elsewhere);
    java.util.Set<Path> boxes = new java.util.HashSet<>();
    for (int generation = 0; generation < 3; generation++) {
      try (PythonMailbox box = PythonMailbox.create(shm, name + "-" + generation, 4096)) {
        assertTrue(box.path.getFileName().toString().startsWith(name + "-" + generation + "-"), box.path.toString());
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(box.path)));
        assertEquals(PythonMailbox.HEADER_BYTES + 4096, Files.size(box.path));
        boxes.add(box.path);
      }
    }
    assertEquals(3, boxes.size());
    assertTrue(Files.isDirectory(shm.resolve(name + "-0").resolve("inside")));
    assertEquals("planted", Files.readString(shm.resolve(name + "-1")));
    assertEquals("not the executor's", Files.readString(elsewhere));
    assertTrue(Files.isSymbolicLink(shm.resolve(name + "-2")));
  }

  /**
   * Where another user took the channel directory's name first (a directory of theirs where the
   * test runs as root, a link otherwise), the executor opens its channel in a fresh private
   * directory beside it instead of giving up; a directory of its own stays the one.
   */
  @Test
  void aChannelDirectoryTakenByAnotherUserIsNoDeadEnd() throws IOException {
    Path taken = tmp.resolve("gpucoll-taken");
    Object uid = Files.getAttribute(Path.of("/proc/self"), "unix:uid");
    if (uid.equals(0)) {
      Files.createDirectory(taken, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwxrwxrwx")));
      Files.setAttribute(taken, "unix:uid", 65534); // user nobody's
    } else {
      Files.createSymbolicLink(taken, Files.createDirectory(tmp.resolve("theirs")));
    }
    Path dir = PythonChannel.usableDefaultDir(taken);
    assertTrue(dir.getFileName().toString().startsWith("gpucoll-taken-") && dir.getParent().equals(tmp), dir.toString());
    assertEquals("rwx------", PosixFilePermissions.toString(
        Files.getPosixFilePermissions(dir, java.nio.file.LinkOption.NOFOLLOW_LINKS)));
    try (PythonChannel ch = PythonChannel.openIn(dir, dir)) {
      String unknown = ask(ch.socketPath(), PythonChannel.HELLO + " 42\n");
      assertTrue(unknown.startsWith("ERR IllegalStateException task 42"), unknown);
    }
    Path mine = tmp.resolve("gpucoll-mine");
    assertEquals(mine, PythonChannel.usableDefaultDir(mine));
    assertEquals(mine, PythonChannel.usableDefaultDir(mine));
  }

  /** A connection that never says hello is closed after the hello's timeout: it holds no thread. */
  @Test
  void aConnectionThatNeverSaysHelloIsClosed() throws Exception {
    Path dir = tmp.resolve("chan3");
    PythonChannel.ownPrivateDir(dir);
    try (PythonChannel ch = PythonChannelTest.open(dir);
        SocketChannel s = SocketChannel.open(StandardProtocolFamily.UNIX)) {
      s.connect(UnixDomainSocketAddress.of(ch.socketPath()));
      long start = System.nanoTime();
      s.configureBlocking(false);
      try (java.nio.channels.Selector until = java.nio.channels.Selector.open()) {
        s.register(until, java.nio.channels.SelectionKey.OP_READ);
        until.select(PythonChannel.HELLO_TIMEOUT_MILLIS + 10_000); // until the executor closes it
      }
      int read = s.read(ByteBuffer.allocate(16));
      long waited = (System.nanoTime() - start) / 1_000_000;
      assertEquals(-1, read);
      assertTrue(waited >= PythonChannel.HELLO_TIMEOUT_MILLIS - 500 && waited < PythonChannel.HELLO_TIMEOUT_MILLIS + 10_000,
          "closed after " + waited + " ms");
    }
  }

  private static PythonChannel open(Path dir) throws IOException {
    return PythonChannel.openIn(dir, dir);
  }
}
