package dev.gpucoll.core.host;

import dev.gpucoll.core.config.GpuCollConf;
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
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;

/**
 * One group's shared-memory segment: a file under the shm directory (mode 0600) that every rank
 * maps. Every member unlinks it once every rank has mapped it, so a JVM that dies later leaks
 * nothing; {@link #close()} unmaps. The name carries the creator's pid namespace and pid, so a
 * segment whose creator died during setup is swept by the next {@link #create} in the directory.
 *
 * <p>Layout (every offset 8-byte aligned, blocks 4 KiB aligned):
 * <pre>
 *   global header (4 KiB): magic, version, ranks, llBytes, bulkBytes; at 64 the group's abort
 *     word (0, or 1 + the first rank that gave up on the group)
 *   rank block r (rankStride bytes), written only by rank r:
 *     control (512 B): state (alive / closed / aborted), the abort reason, at 448 the pid
 *     half 0 and half 1 (epoch parity), each:
 *       step header (256 B, 64-byte aligned): epoch flag, call signature, count, payload mode and
 *         size with the status; at 32 a payload of up to llBytes (at most {@link #INLINE_BYTES}),
 *         so flag and payload share one cache line; a refused call's step carries no payload but
 *         its error text (length at 44, text from 48)
 *       bulk region (bulkBytes): plain data, published by the header's flag
 * </pre>
 * Every page is written (zeros) at creation, so a file system short of space fails the formation,
 * never a later call. A fresh file is zero-filled: that is the sentinel prefill, since no flag ever holds epoch 0 and
 * epochs only grow, so a stale slot can never look current and slots need no re-prefill.
 */
final class ShmSegment implements AutoCloseable {
  static final VarHandle LONGS =
      MethodHandles.byteBufferViewVarHandle(long[].class, ByteOrder.nativeOrder());

  private static final long MAGIC = 0x4750434F4C4C5348L; // "GPCOLLSH"
  private static final int VERSION = 2;
  static final int GLOBAL_BYTES = 4096;
  static final int CONTROL_BYTES = 512;
  static final int HEADER_BYTES = 256;
  /** Where a step header carries a payload of up to INLINE_BYTES: within the cache line of its flag. */
  static final int INLINE_OFF = 32;
  static final int INLINE_BYTES = 16;

  static final long STATE_ALIVE = 0;
  static final long STATE_CLOSED = 1;
  static final long STATE_ABORTED = 2;
  static final int REASON_MAX = 400;
  private static final int ABORT_OFF = 64;
  private static final int PID_OFF = 448;
  private static final int PID_NS_OFF = 456;
  private static final String PREFIX = "gpucoll-";
  private static final String SUFFIX = ".shm";

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
    this.halfStride = HEADER_BYTES + bulkBytes;
    this.rankStride = roundUp(CONTROL_BYTES + 2 * halfStride, 4096);
  }

  static long totalBytes(int ranks, int bulkBytes) {
    long half = HEADER_BYTES + (long) bulkBytes;
    return GLOBAL_BYTES + ranks * (long) roundUp(CONTROL_BYTES + 2 * half, 4096);
  }

  /** Creates and maps a new segment file in {@code dir}, mode 0600. */
  static ShmSegment create(Path dir, int ranks, int llBytes, int bulkBytes) throws IOException {
    if (llBytes % 8 != 0 || llBytes > INLINE_BYTES || bulkBytes % 64 != 0) {
      throw new IllegalArgumentException("segment regions: llBytes a multiple of 8 up to " + INLINE_BYTES
          + ", bulkBytes a multiple of 64 (headers stay cache-line aligned)");
    }
    long total = totalBytes(ranks, bulkBytes);
    if (total > Integer.MAX_VALUE) {
      throw new IllegalArgumentException("segment for " + ranks + " ranks would be " + total
          + " bytes; limit 2 GiB");
    }
    sweepStale(dir);
    requireSpace(dir, total, ranks);
    Path path = newPath(dir);
    try (FileChannel ch = FileChannel.open(path, java.util.Set.of(StandardOpenOption.CREATE_NEW,
            StandardOpenOption.READ, StandardOpenOption.WRITE),
        PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")))) {
      ch.truncate(0);
      reserve(ch, dir, total, ranks);
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

  /**
   * Fails before creating anything when {@code dir} has less room than a segment needs, naming
   * what is needed, what is free and the setting that moves the segments.
   */
  private static void requireSpace(Path dir, long total, int ranks) throws IOException {
    long free = Files.getFileStore(dir).getUsableSpace();
    if (free < total) {
      throw new IOException(noRoom(dir, total, ranks, free + " bytes are free"));
    }
  }

  private static String noRoom(Path dir, long total, int ranks, String free) {
    return "the shared-memory directory " + dir.toAbsolutePath().normalize() + " has no room for a segment of "
        + ranks + " ranks: it needs " + total + " bytes, " + free + " (give it more space, e.g. a larger"
        + " /dev/shm, or point " + GpuCollConf.SHM_DIR.key() + " at a directory with room)";
  }

  /**
   * Writes every page of the file, so the file system allocates them now. A sparse segment would
   * take its pages when a collective first touches them, and a file system that runs out then
   * raises SIGBUS in the middle of a call; here running out is an IOException at formation.
   */
  private static void reserve(FileChannel ch, Path dir, long total, int ranks) throws IOException {
    ByteBuffer zeros = ByteBuffer.allocateDirect((int) Math.min(total, RESERVE_CHUNK));
    long pos = 0;
    try {
      while (pos < total) {
        zeros.clear().limit((int) Math.min(zeros.capacity(), total - pos));
        pos += ch.write(zeros, pos);
      }
    } catch (IOException e) {
      long free;
      try {
        free = Files.getFileStore(dir).getUsableSpace();
      } catch (IOException | RuntimeException again) {
        free = -1;
      }
      throw new IOException(noRoom(dir, total, ranks, "writing it failed after " + pos + " bytes ("
          + e.getMessage() + "; " + (free < 0 ? "free space unknown" : free + " bytes free now") + ")"), e);
    }
  }

  private static final int RESERVE_CHUNK = 1 << 20;

  /**
   * Maps a segment another rank created and checks it is one of ours, for {@code ranks} ranks. The
   * path came from a peer, so it must name a segment file directly in {@code dir}, be no symbolic
   * link (opened with O_NOFOLLOW), be a regular file of this process's user with mode 0600.
   */
  static ShmSegment open(Path dir, Path path, int ranks) throws IOException {
    Path d = dir.toAbsolutePath().normalize();
    Path p = path.toAbsolutePath().normalize();
    String name = p.getFileName() == null ? "" : p.getFileName().toString();
    if (!p.equals(path) || !d.equals(p.getParent()) || !name.startsWith(PREFIX) || !name.endsWith(SUFFIX)) {
      throw new IOException(path + " is not a segment file in the shm directory " + d);
    }
    try (FileChannel ch = FileChannel.open(p, StandardOpenOption.READ, StandardOpenOption.WRITE,
        LinkOption.NOFOLLOW_LINKS)) {
      PosixFileAttributes a = Files.readAttributes(p, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
      String me = System.getProperty("user.name");
      if (!a.isRegularFile() || !a.owner().getName().equals(me)
          || !a.permissions().equals(PosixFilePermissions.fromString("rw-------"))) {
        throw new IOException(p + " is not a regular file of user " + me + " with mode 0600 (owner "
            + a.owner().getName() + ", mode " + PosixFilePermissions.toString(a.permissions()) + ")");
      }
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
      if (n != ranks || totalBytes(n, bulk) != size) {
        unmap(b);
        throw new IOException(path + " was made for " + n + " ranks (" + size + " bytes), this group has "
            + ranks);
      }
      return new ShmSegment(path, b, n, ll, bulk);
    }
  }

  /**
   * Deletes segment files in {@code dir} whose creator (named in the file name, in this pid
   * namespace) is gone: a creator killed between creating a segment and its members' unlink
   * leaves one. Files of other namespaces and of live processes are left alone.
   */
  static void sweepStale(Path dir) {
    String mine = PREFIX + PID_NAMESPACE + "-";
    try (var files = Files.newDirectoryStream(dir, PREFIX + "*" + SUFFIX)) {
      for (Path f : files) {
        String name = f.getFileName().toString();
        if (!name.startsWith(mine)) {
          continue;
        }
        String[] parts = name.substring(mine.length()).split("-");
        try {
          long pid = Long.parseLong(parts[0]);
          if (ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)) {
            continue;
          }
          Files.deleteIfExists(f);
        } catch (NumberFormatException | IOException e) {
          // not ours to judge, or already gone
        }
      }
    } catch (IOException | RuntimeException e) {
      // an unreadable directory: create() reports the real problem
    }
  }

  /** This process's pid namespace ("pid:[4026531836]" → "4026531836"), "0" when unknown. */
  private static final String PID_NAMESPACE = pidNamespace();

  private static String pidNamespace() {
    try {
      String link = Files.readSymbolicLink(Path.of("/proc/self/ns/pid")).toString();
      return link.replaceAll("[^0-9]", "");
    } catch (IOException | RuntimeException e) {
      return "0";
    }
  }

  private static Path newPath(Path dir) throws IOException {
    SecureRandom random = new SecureRandom();
    for (int i = 0; i < 10; i++) {
      Path p = dir.toAbsolutePath().normalize().resolve(PREFIX + PID_NAMESPACE + "-"
          + ProcessHandle.current().pid() + "-" + Long.toHexString(random.nextLong() & Long.MAX_VALUE) + SUFFIX);
      if (!Files.exists(p)) {
        return p;
      }
    }
    throw new FileAlreadyExistsException(dir + ": could not pick a fresh segment name");
  }

  int controlOff(int rank) {
    return GLOBAL_BYTES + rank * rankStride;
  }

  int headerOff(int rank, int half) {
    return controlOff(rank) + CONTROL_BYTES + half * halfStride;
  }

  int bulkOff(int rank, int half) {
    return headerOff(rank, half) + HEADER_BYTES;
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

  /** Records this rank's process (and pid namespace), so peers waiting on it can tell that it died. */
  void setPid(int rank, long pid) {
    LONGS.setRelease(buf, controlOff(rank) + PID_NS_OFF, pidNamespaceNumber());
    LONGS.setRelease(buf, controlOff(rank) + PID_OFF, pid);
  }

  /** Whether rank's recorded pid is one this process can look up (same pid namespace). */
  boolean pidVisible(int rank) {
    long ns = (long) LONGS.getAcquire(buf, controlOff(rank) + PID_NS_OFF);
    return ns != 0 && ns == pidNamespaceNumber();
  }

  private static long pidNamespaceNumber() {
    try {
      return Long.parseLong(PID_NAMESPACE);
    } catch (NumberFormatException e) {
      return 0;
    }
  }

  /** Rank's process id, 0 until it recorded it. */
  long pid(int rank) {
    return (long) LONGS.getAcquire(buf, controlOff(rank) + PID_OFF);
  }

  /**
   * Marks the whole group failed, naming the first rank that gave up; later marks keep the first.
   * Volatile, paired with {@link #abortedBy()} after a rank published its step (see awaitHeaders).
   */
  void abortGroup(int rank) {
    if (!unmapped) {
      LONGS.compareAndSet(buf, ABORT_OFF, 0L, (long) rank + 1);
    }
  }

  /** The first rank that gave up on the group, or -1. */
  int abortedBy() {
    return (int) ((long) LONGS.getVolatile(buf, ABORT_OFF)) - 1;
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
