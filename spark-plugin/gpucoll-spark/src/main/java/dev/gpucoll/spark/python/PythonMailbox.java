package dev.gpucoll.spark.python;

import java.io.IOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;

/**
 * The shared memory between one Python task and its executor: a header (sequence words, the
 * request, the response) and a data area the Python side fills with call records and buffers. A
 * call costs two cache-line handoffs, no system call: the Python side writes the request and bumps
 * {@code reqSeq}; the session sees it, runs the call on the task's communicator straight over the
 * data area and publishes {@code respSeq}. The layout is {@link PythonWire}'s, generated from
 * python-wire.txt as {@code python/gpucoll/_wire.py} is.
 */
final class PythonMailbox implements AutoCloseable {
  static final long MAGIC = PythonWire.MAGIC;
  static final int HEADER_BYTES = PythonWire.HEADER_BYTES;
  static final int OFF_MAGIC = PythonWire.OFF_MAGIC;
  static final int OFF_REQ_SEQ = PythonWire.OFF_REQ_SEQ;
  static final int OFF_RESP_SEQ = PythonWire.OFF_RESP_SEQ;
  /** 1 while the session blocks on the socket: the Python side then sends one wake byte. */
  static final int OFF_SLEEPING = PythonWire.OFF_SLEEPING;
  static final int OFF_REQUEST = PythonWire.OFF_REQUEST;
  static final int OFF_RESPONSE = PythonWire.OFF_RESPONSE;
  static final int OFF_MESSAGE = PythonWire.OFF_MESSAGE;
  static final int MAX_MESSAGE = HEADER_BYTES - OFF_MESSAGE;
  /** One call record in the data area: see {@link PythonSession#call}. */
  static final int RECORD_BYTES = PythonWire.RECORD_BYTES;

  private static final VarHandle LONGS = MethodHandles.byteBufferViewVarHandle(long[].class, ByteOrder.nativeOrder());
  private static final VarHandle INTS = MethodHandles.byteBufferViewVarHandle(int[].class, ByteOrder.nativeOrder());

  final Path path;
  final long dataBytes;
  private final MappedByteBuffer map;
  private boolean unlinked;

  private PythonMailbox(Path path, long dataBytes, MappedByteBuffer map) {
    this.path = path;
    this.dataBytes = dataBytes;
    this.map = map;
  }

  /** Names tried before {@link #createPrivate} gives up: each is a fresh random one. */
  private static final int NAME_ATTEMPTS = 16;
  private static final java.security.SecureRandom NAMES = new java.security.SecureRandom();

  /** A file just made by {@link #createPrivate}, open for reading and writing. */
  record PrivateFile(Path path, FileChannel channel) {}

  /**
   * A new owner-only (0600) file in {@code dir}, a shared directory such as /dev/shm: {@code
   * prefix}, then a random part nobody can predict, made with O_CREAT|O_EXCL, so that nothing
   * planted there under a name of ours (a file, a directory, a link) is ever opened, followed or
   * removed; a taken name means another random one.
   */
  static PrivateFile createPrivate(Path dir, String prefix) throws IOException {
    for (int i = 0; i < NAME_ATTEMPTS; i++) {
      Path path = dir.resolve(prefix + "-" + Long.toHexString(NAMES.nextLong() & Long.MAX_VALUE));
      try {
        return new PrivateFile(path, FileChannel.open(path, java.util.Set.of(StandardOpenOption.CREATE_NEW,
            StandardOpenOption.READ, StandardOpenOption.WRITE),
            PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------"))));
      } catch (java.nio.file.FileAlreadyExistsException taken) {
        // someone has a file of that name: another random one
      }
    }
    throw new IOException(NAME_ATTEMPTS + " random names for a new file in " + dir + " were all taken (some"
        + " process creates files there under this executor's names)");
  }

  /** A new owner-only mailbox file of {@code dataBytes} data in {@code dir}, mapped; {@code name} begins its name. */
  static PythonMailbox create(Path dir, String name, long dataBytes) throws IOException {
    long total = HEADER_BYTES + dataBytes;
    if (total > Integer.MAX_VALUE) {
      throw new IllegalArgumentException("a Python call's buffers need " + dataBytes + " bytes of shared memory;"
          + " at most " + (Integer.MAX_VALUE - HEADER_BYTES) + " fit one call: split it into smaller calls");
    }
    PrivateFile file = createPrivate(dir, name);
    Path path = file.path();
    try (FileChannel ch = file.channel()) {
      ch.truncate(total);
      ch.write(ByteBuffer.wrap(new byte[] {0}), total - 1);
      MappedByteBuffer map = ch.map(FileChannel.MapMode.READ_WRITE, 0, total);
      map.order(ByteOrder.nativeOrder());
      PythonMailbox box = new PythonMailbox(path, dataBytes, map);
      LONGS.setVolatile(map, OFF_MAGIC, MAGIC);
      return box;
    } catch (IOException | RuntimeException e) {
      Files.deleteIfExists(path);
      throw e;
    }
  }

  long reqSeq() {
    return (long) LONGS.getVolatile(map, OFF_REQ_SEQ);
  }

  void publish(long seq) {
    LONGS.setVolatile(map, OFF_RESP_SEQ, seq);
  }

  void sleeping(boolean asleep) {
    INTS.setVolatile(map, OFF_SLEEPING, asleep ? 1 : 0);
  }

  int requestInt(int index) {
    return map.getInt(OFF_REQUEST + 4 * index);
  }

  long requestLong(int index) {
    return map.getLong(OFF_REQUEST + 16 + 8 * index);
  }

  /** The response of the request in flight: a status (0 ok), four numbers and a message. */
  void respond(int status, long r0, long r1, long r2, String message) {
    byte[] text = message == null ? new byte[0] : message.getBytes(StandardCharsets.UTF_8);
    int n = Math.min(text.length, MAX_MESSAGE);
    map.put(OFF_MESSAGE, text, 0, n);
    map.putInt(OFF_RESPONSE, status);
    map.putInt(OFF_RESPONSE + 4, n);
    map.putLong(OFF_RESPONSE + 8, r0);
    map.putLong(OFF_RESPONSE + 16, r1);
    map.putLong(OFF_RESPONSE + 24, r2);
  }

  /** Field {@code field} (0..11, eight bytes each) of call record {@code record}; the caller checked the record fits. */
  long recordLong(int record, int field) {
    return map.getLong(HEADER_BYTES + record * RECORD_BYTES + 8 * field);
  }

  /** Bytes {@code [offset, offset + bytes)} of the data area as a buffer of their own, or null when out of range. */
  ByteBuffer data(long offset, long bytes) {
    if (offset < 0 || bytes < 0 || offset + bytes > dataBytes) {
      return null;
    }
    return map.slice(HEADER_BYTES + (int) offset, (int) bytes).order(ByteOrder.nativeOrder());
  }

  /** Removes the file once the Python side has mapped it: nothing is left behind if either side dies. */
  void unlink() {
    if (!unlinked) {
      try {
        Files.deleteIfExists(path);
        unlinked = true;
      } catch (IOException e) {
        // the next unlink() or close() tries again
      }
    }
  }

  @Override
  public void close() {
    unlink();
  }
}
