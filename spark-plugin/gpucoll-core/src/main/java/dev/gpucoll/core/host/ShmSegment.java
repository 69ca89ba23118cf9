package dev.gpucoll.core.host;

import java.io.IOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;

/**
 * One group's shared-memory segment: a file under the shm directory (mode 0600) that every rank
 * maps. The creator unlinks it once every rank has mapped it, so a JVM that dies later leaks
 * nothing; {@link #close()} unmaps.
 *
 * <p>Layout (every offset 8-byte aligned, blocks 4 KiB aligned):
 * <pre>
 *   global header (4 KiB): magic, version, ranks, llBytes, bulkBytes, rankStride
 *   rank block r (rankStride bytes), written only by rank r:
 *     control (512 B): state (alive / closed / aborted) and the abort reason
 *     half 0 and half 1 (epoch parity), each:
 *       step header (256 B): epoch flag, call signature, status, payload mode and size, error text
 *       LL slots (2 * llBytes): 16-byte slots, 8 B data then an 8 B epoch flag
 *       bulk region (bulkBytes): plain data, published by the header's flag
 * </pre>
 * A fresh file is zero-filled: that is the sentinel prefill, since no flag ever holds epoch 0 and
 * epochs only grow, so a stale slot can never look current and slots need no re-prefill.
 */
final class ShmSegment implements AutoCloseable {
  static final VarHandle LONGS =
      MethodHandles.byteBufferViewVarHandle(long[].class, ByteOrder.nativeOrder());

  private static final long MAGIC = 0x4750434F4C4C5348L; // "GPCOLLSH"
  private static final int VERSION = 1;
  static final int GLOBAL_BYTES = 4096;
  static final int CONTROL_BYTES = 512;
  static final int HEADER_BYTES = 256;

  static final long STATE_ALIVE = 0;
  static final long STATE_CLOSED = 1;
  static final long STATE_ABORTED = 2;
  static final int REASON_MAX = 400;

  final Path path;
  final MappedByteBuffer buf;
  final int ranks;
  final int llBytes;
  final int bulkBytes;
  final int halfStride;
  final int rankStride;
  private boolean unmapped;

  private ShmSegment(Path path, MappedByteBuffer buf, int ranks, int llBytes, int bulkBytes) {
    this.path = path;
    this.buf = buf;
    this.ranks = ranks;
    this.llBytes = llBytes;
    this.bulkBytes = bulkBytes;
    this.halfStride = HEADER_BYTES + 2 * llBytes + bulkBytes;
    this.rankStride = roundUp(CONTROL_BYTES + 2 * halfStride, 4096);
  }

  static long totalBytes(int ranks, int llBytes, int bulkBytes) {
    long half = HEADER_BYTES + 2L * llBytes + bulkBytes;
    return GLOBAL_BYTES + ranks * (long) roundUp(CONTROL_BYTES + 2 * half, 4096);
  }

  /** Creates and maps a new segment file in {@code dir}, mode 0600. */
  static ShmSegment create(Path dir, int ranks, int llBytes, int bulkBytes) throws IOException {
    if (llBytes % 8 != 0 || bulkBytes % 8 != 0) {
      throw new IllegalArgumentException("segment regions must be multiples of 8 bytes");
    }
    long total = totalBytes(ranks, llBytes, bulkBytes);
    if (total > Integer.MAX_VALUE) {
      throw new IllegalArgumentException("segment for " + ranks + " ranks would be " + total
          + " bytes; limit 2 GiB");
    }
    Path path = newPath(dir);
    try (FileChannel ch = FileChannel.open(path, java.util.Set.of(StandardOpenOption.CREATE_NEW,
            StandardOpenOption.READ, StandardOpenOption.WRITE),
        PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")))) {
      ch.truncate(0);
      // Sparse on tmpfs: pages appear, zero-filled, when first touched.
      ch.write(ByteBuffer.allocate(1), total - 1);
      MappedByteBuffer b = ch.map(FileChannel.MapMode.READ_WRITE, 0, total);
      b.order(ByteOrder.nativeOrder());
      b.putLong(0, MAGIC);
      b.putInt(8, VERSION);
      b.putInt(12, ranks);
      b.putInt(16, llBytes);
      b.putInt(20, bulkBytes);
      return new ShmSegment(path, b, ranks, llBytes, bulkBytes);
    } catch (IOException | RuntimeException e) {
      Files.deleteIfExists(path);
      throw e;
    }
  }

  /** Maps a segment another rank created and checks it is one of ours, for {@code ranks} ranks. */
  static ShmSegment open(Path path, int ranks) throws IOException {
    try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
      long size = ch.size();
      if (size < GLOBAL_BYTES) {
        throw new IOException(path + " is " + size + " bytes: not a gpucoll segment");
      }
      MappedByteBuffer b = ch.map(FileChannel.MapMode.READ_WRITE, 0, size);
      b.order(ByteOrder.nativeOrder());
      if (b.getLong(0) != MAGIC || b.getInt(8) != VERSION) {
        unmap(b);
        throw new IOException(path + " is not a gpucoll segment of version " + VERSION
            + " (are all ranks on the same gpucoll jar?)");
      }
      int n = b.getInt(12);
      int ll = b.getInt(16);
      int bulk = b.getInt(20);
      if (n != ranks || totalBytes(n, ll, bulk) != size) {
        unmap(b);
        throw new IOException(path + " was made for " + n + " ranks (" + size + " bytes), this group has "
            + ranks);
      }
      return new ShmSegment(path, b, n, ll, bulk);
    }
  }

  private static Path newPath(Path dir) throws IOException {
    SecureRandom random = new SecureRandom();
    for (int i = 0; i < 10; i++) {
      Path p = dir.resolve("gpucoll-" + ProcessHandle.current().pid() + "-"
          + Long.toHexString(random.nextLong() & Long.MAX_VALUE) + ".shm");
      if (!Files.exists(p)) {
        return p;
      }
    }
    throw new FileAlreadyExistsException(dir + ": could not pick a fresh segment name");
  }

  void unlink() throws IOException {
    Files.deleteIfExists(path);
  }

  int controlOff(int rank) {
    return GLOBAL_BYTES + rank * rankStride;
  }

  int headerOff(int rank, int half) {
    return controlOff(rank) + CONTROL_BYTES + half * halfStride;
  }

  int llOff(int rank, int half) {
    return headerOff(rank, half) + HEADER_BYTES;
  }

  int bulkOff(int rank, int half) {
    return llOff(rank, half) + 2 * llBytes;
  }

  long size() {
    return buf.capacity();
  }

  /** Publishes this rank's state (closed or aborted, with a reason) for peers waiting on it. */
  void setState(int rank, long state, String reason) {
    if (unmapped) {
      return;
    }
    int off = controlOff(rank);
    byte[] text = reason == null ? new byte[0] : truncate(reason, REASON_MAX);
    buf.putInt(off + 8, text.length);
    buf.put(off + 12, text);
    LONGS.setRelease(buf, off, state);
  }

  long state(int rank) {
    return (long) LONGS.getAcquire(buf, controlOff(rank));
  }

  String reason(int rank) {
    int off = controlOff(rank);
    int len = Math.max(0, Math.min(REASON_MAX, buf.getInt(off + 8)));
    byte[] text = new byte[len];
    buf.get(off + 12, text);
    return new String(text, java.nio.charset.StandardCharsets.UTF_8);
  }

  static byte[] truncate(String s, int max) {
    byte[] b = s.getBytes(java.nio.charset.StandardCharsets.UTF_8);
    return b.length <= max ? b : java.util.Arrays.copyOf(b, max);
  }

  /** Unmaps now (not at some later GC), so the memory is returned when the group closes. */
  @Override
  public void close() {
    if (!unmapped) {
      unmapped = true;
      unmap(buf);
    }
  }

  private static final Object UNSAFE;
  private static final Method INVOKE_CLEANER;

  static {
    Object unsafe = null;
    Method cleaner = null;
    try {
      Class<?> c = Class.forName("sun.misc.Unsafe");
      Field f = c.getDeclaredField("theUnsafe");
      f.setAccessible(true);
      unsafe = f.get(null);
      cleaner = c.getMethod("invokeCleaner", ByteBuffer.class);
    } catch (ReflectiveOperationException | RuntimeException e) {
      // Without it the mapping goes away when the buffer is garbage collected.
    }
    UNSAFE = unsafe;
    INVOKE_CLEANER = cleaner;
  }

  private static void unmap(MappedByteBuffer b) {
    if (INVOKE_CLEANER != null) {
      try {
        INVOKE_CLEANER.invoke(UNSAFE, b);
      } catch (ReflectiveOperationException e) {
        // left to the garbage collector
      }
    }
  }

  private static int roundUp(long v, int to) {
    return (int) ((v + to - 1) / to * to);
  }
}
