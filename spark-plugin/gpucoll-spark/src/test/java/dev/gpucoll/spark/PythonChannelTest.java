package dev.gpucoll.spark;

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

  private static PythonChannel open(Path dir) throws IOException {
    return PythonChannel.openIn(dir, dir);
  }
}
