package dev.gpucoll.core.rendezvous;

import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.core.config.Durations;
import dev.gpucoll.api.CollectiveTimeoutException;
import dev.gpucoll.core.wait.CallBounds;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.channels.SeekableByteChannel;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;
import java.util.concurrent.locks.LockSupport;
import java.util.zip.CRC32;

/**
 * Rendezvous for processes of one host through files in a directory (tests and benchmarks
 * without Spark). The group's folder (mode 0700, files 0600) is named by an injective encoding of
 * the group id, so no two ids share a folder and none escapes the directory.
 *
 * <p>Each instance claims its rank with a file {@code claim-<rank>} created exclusively and holding a
 * random nonce and its pid; round n of rank r is the file {@code r<n>-<rank>}, written under a
 * temporary name and renamed atomically, and carries the writer's nonce (and magic, version, rank,
 * round, length, CRC, all checked). A file whose nonce is not the one rank r claimed with is a
 * leftover of an earlier group and is ignored, so a directory can be reused; a claim held by a live
 * process fails the second group with the same id clearly, and a dead process's claim is taken
 * over. A rank deletes its round-(n-1) file once round n is complete; {@link #close()} waits until
 * every rank has finished reading (each posts {@code bye-<rank>}), then deletes this rank's files,
 * and the last one out the folder.
 */
public final class FileRendezvous implements Rendezvous {
  private static final int MAGIC = 0x4743465A; // "GCFZ"
  private static final short VERSION = 2;
  private static final int HEADER = 4 + 2 + 8 + 4 + 8 + 4 + 4 + 8;
  private static final FileAttribute<Set<PosixFilePermission>> FILE_0600 =
      PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------"));
  private static final Set<PosixFilePermission> DIR_0700 = PosixFilePermissions.fromString("rwx------");
  /** Longest sleep between looks at the folder. */
  private static final long MAX_PARK_NANOS = 2_000_000;
  /** Longest folder name; longer encodings keep a prefix and add a hash. */
  private static final int MAX_NAME = 160;

  private final Path folder;
  private final String groupId;
  private final int rank;
  private final int size;
  private final long nonce;
  /** Nonce each rank claimed with, 0 until read from a live claim. */
  private final long[] peerNonce;
  /** Process of each rank's claim, once read. */
  private final ProcessHandle[] peerProcess;
  private long round;
  private Duration lastTimeout;
  private boolean closed;

  public FileRendezvous(Path dir, String groupId, int rank, int size) {
    if (size < 1 || rank < 0 || rank >= size) {
      throw new IllegalArgumentException("rank " + rank + " is not in a group of " + size);
    }
    if (groupId == null || groupId.isEmpty()) {
      throw new IllegalArgumentException("rendezvous group id is empty");
    }
    this.groupId = groupId;
    this.rank = rank;
    this.size = size;
    this.folder = dir.toAbsolutePath().normalize().resolve(folderName(groupId));
    this.peerNonce = new long[size];
    this.peerProcess = new ProcessHandle[size];
    long n;
    do {
      n = new SecureRandom().nextLong();
    } while (n == 0);
    this.nonce = n;
    makeFolder();
    claim();
    peerNonce[rank] = nonce;
  }

  /**
   * The folder of a group id: letters, digits and '-' kept, every other byte of its UTF-8 form as
   * '_' and two hex digits, after a "g-" prefix (so never "." or ".."); injective. Names longer than
   * {@value #MAX_NAME} keep a prefix and end in "_h" and the id's SHA-256 ('h' is no hex digit, so a
   * hashed name never equals a plain one).
   */
  static String folderName(String groupId) {
    StringBuilder sb = new StringBuilder("g-");
    for (byte b : groupId.getBytes(StandardCharsets.UTF_8)) {
      int c = b & 0xFF;
      if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-') {
        sb.append((char) c);
      } else {
        sb.append('_').append(HexFormat.of().toHexDigits((byte) c));
      }
    }
    if (sb.length() <= MAX_NAME) {
      return sb.toString();
    }
    try {
      byte[] sha = MessageDigest.getInstance("SHA-256").digest(groupId.getBytes(StandardCharsets.UTF_8));
      return sb.substring(0, MAX_NAME - 66) + "_h" + HexFormat.of().formatHex(sha);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  private void makeFolder() {
    try {
      Files.createDirectories(folder.getParent());
      try {
        Files.createDirectory(folder, PosixFilePermissions.asFileAttribute(DIR_0700));
      } catch (FileAlreadyExistsException e) {
        // checked below
      }
      PosixFileAttributes a = Files.readAttributes(folder, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
      String me = System.getProperty("user.name");
      if (!a.isDirectory() || !a.owner().getName().equals(me)) {
        throw new IllegalStateException("rendezvous folder " + folder + " is not a directory of user " + me
            + (a.isSymbolicLink() ? " (it is a symbolic link)" : " (owner " + a.owner().getName() + ")"));
      }
      if (!a.permissions().equals(DIR_0700)) {
        Files.setPosixFilePermissions(folder, DIR_0700);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot create rendezvous folder " + folder, e);
    }
  }

  /**
   * Claims this rank: claim-<rank> appears complete and only if absent (a hard link to a written
   * temporary file). A live holder fails this instance; a dead holder's claim is moved aside
   * atomically (so two claimants cannot both take it over) and its files deleted.
   */
  private void claim() {
    Path claim = claimFile(rank);
    Path mine = folder.resolve(".claim-" + rank + "-" + Long.toHexString(nonce));
    try {
      Files.deleteIfExists(mine);
      Files.createFile(mine, FILE_0600);
      Files.write(mine, ByteBuffer.allocate(16).putLong(nonce).putLong(ProcessHandle.current().pid()).array());
      for (int attempt = 0; attempt < 5; attempt++) {
        try {
          Files.createLink(claim, mine);
          return;
        } catch (FileAlreadyExistsException e) {
          long[] held = readClaim(claim);
          if (held != null && alive(held[1])) {
            throw taken(held[1]);
          }
          Path aside = folder.resolve(".stale-" + rank + "-" + Long.toHexString(nonce));
          try {
            Files.move(claim, aside, StandardCopyOption.ATOMIC_MOVE);
          } catch (NoSuchFileException gone) {
            continue;
          }
          long[] moved = readClaim(aside);
          if (moved != null && alive(moved[1])) { // claimed by a live process just now: give it back
            try {
              Files.createLink(claim, aside);
            } catch (FileAlreadyExistsException ignored) {
              // someone else holds it now
            }
            Files.deleteIfExists(aside);
            throw taken(moved[1]);
          }
          Files.deleteIfExists(aside);
          deleteLeftovers(rank);
        }
      }
      throw new IllegalStateException("rendezvous " + groupId + ": could not claim rank " + rank + " in " + folder);
    } catch (IOException e) {
      throw new UncheckedIOException("rendezvous " + groupId + ": cannot claim rank " + rank + " in " + folder, e);
    } finally {
      try {
        Files.deleteIfExists(mine);
      } catch (IOException e) {
        // a stray temporary file; the next claimant of this rank deletes it
      }
    }
  }

  private IllegalStateException taken(long pid) {
    return new IllegalStateException("rendezvous " + groupId + ": rank " + rank + " is already taken by live"
        + " process " + pid + " (folder " + folder + "): another group with the same id is running; give"
        + " each concurrent group its own id");
  }

  private static boolean alive(long pid) {
    return ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false);
  }

  /** {nonce, pid} of a claim file, or null when there is none. */
  private long[] readClaim(Path f) {
    try {
      byte[] all = readRegular(f, 16);
      if (all.length != 16) {
        return null;
      }
      ByteBuffer b = ByteBuffer.wrap(all);
      return new long[] {b.getLong(), b.getLong()};
    } catch (NoSuchFileException e) {
      return null;
    } catch (IOException e) {
      throw new UncheckedIOException("rendezvous " + groupId + ": cannot read the claim " + f, e);
    }
  }

  /** The nonce rank r holds its claim with, 0 while no live process claims it. */
  private long nonceOf(int r) {
    if (peerNonce[r] == 0) {
      long[] held = readClaim(claimFile(r));
      if (held != null && held[0] != 0 && alive(held[1])) {
        peerNonce[r] = held[0];
        peerProcess[r] = ProcessHandle.of(held[1]).orElse(null);
      }
    }
    return peerNonce[r];
  }

  @Override
  public String groupId() {
    return groupId;
  }

  @Override
  public int rank() {
    return rank;
  }

  @Override
  public int size() {
    return size;
  }

  @Override
  public String kind() {
    return "local-files";
  }

  private Path file(long n, int r) {
    return folder.resolve("r" + n + "-" + r);
  }

  private Path claimFile(int r) {
    return folder.resolve("claim-" + r);
  }

  private Path byeFile(int r) {
    return folder.resolve("bye-" + r);
  }

  @Override
  public List<byte[]> allGather(byte[] payload, Duration timeout) {
    if (closed) {
      throw new IllegalStateException("rendezvous " + groupId + " is closed");
    }
    RendezvousLimits.check(groupId, rank, payload);
    long n = round++;
    lastTimeout = timeout;
    long deadline = System.nanoTime() + timeout.toNanos();
    // The thread's interrupt and the task's kill (bound by the caller) end the wait too.
    CallBounds bounds = CallBounds.current(timeout);
    write(n, payload);
    byte[][] got = new byte[size][];
    int have = 0;
    long park = 20_000;
    long nextLivenessCheck = System.nanoTime();
    while (true) {
      for (int r = 0; r < size; r++) {
        if (got[r] == null) {
          got[r] = read(n, r);
          if (got[r] != null) {
            have++;
          }
        }
      }
      if (have == size) {
        break;
      }
      if (System.nanoTime() - nextLivenessCheck > 0) {
        nextLivenessCheck = System.nanoTime() + 50_000_000;
        for (int r = 0; r < size; r++) {
          ProcessHandle p = peerProcess[r];
          if (got[r] == null && p != null && !p.isAlive()) {
            throw new CollectiveTimeoutException(rank, null, List.of(r), "rendezvous " + groupId + " round " + n
                + ": rank " + r + " is gone: its process (pid " + p.pid() + ") died (folder " + folder + ")");
          }
        }
      }
      if (System.nanoTime() - deadline > 0) {
        List<Integer> missing = missing(got);
        throw new CollectiveTimeoutException(rank, null, missing, "rendezvous " + groupId + " round " + n
            + ": ranks " + missing + " did not arrive within " + Durations.format(timeout) + " (folder " + folder + ")");
      }
      String cancelled = bounds.cancellation();
      if (cancelled != null) {
        throw new CollectiveException(rank, null, "rendezvous " + groupId + " round " + n + " cancelled (" + cancelled
            + ") while waiting for ranks " + missing(got) + " (folder " + folder + ")");
      }
      LockSupport.parkNanos(park);
      park = Math.min(park * 2, MAX_PARK_NANOS);
    }
    if (n > 0) {
      try {
        Files.deleteIfExists(file(n - 1, rank));
      } catch (IOException e) {
        // harmless: a stale file of a finished round, deleted at close
      }
    }
    List<byte[]> out = new ArrayList<>(size);
    for (byte[] b : got) {
      out.add(b);
    }
    return out;
  }

  private List<Integer> missing(byte[][] got) {
    List<Integer> missing = new ArrayList<>();
    for (int r = 0; r < size; r++) {
      if (got[r] == null) {
        missing.add(r);
      }
    }
    return missing;
  }

  private void write(long n, byte[] payload) {
    ByteBuffer b = ByteBuffer.allocate(HEADER + payload.length);
    CRC32 crc = new CRC32();
    crc.update(payload);
    b.putInt(MAGIC).putShort(VERSION).putLong(nonce).putInt(rank).putLong(n).putInt(size).putInt(payload.length)
        .putLong(crc.getValue()).put(payload);
    Path tmp = folder.resolve(".tmp-r" + n + "-" + rank + "-" + Long.toHexString(nonce));
    try {
      Files.deleteIfExists(tmp);
      Files.createFile(tmp, FILE_0600);
      Files.write(tmp, b.array());
      try {
        Files.move(tmp, file(n, rank), StandardCopyOption.ATOMIC_MOVE);
      } catch (AtomicMoveNotSupportedException e) {
        throw new IOException("folder " + folder + " does not support atomic rename", e);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("rendezvous " + groupId + ", rank " + rank + ": cannot write round " + n, e);
    }
  }

  /**
   * The bytes of {@code f}, which must be a regular file: anything else planted under one of our
   * names (a FIFO, whose open would block until a writer comes; a device; a symbolic link) is
   * refused with an error naming it, never opened. The type is checked without following links and
   * the open refuses links, so nothing but a regular file is ever opened. Reads at most
   * {@code max} + 1 bytes, so a larger file shows as too long without being read whole.
   */
  private byte[] readRegular(Path f, int max) throws IOException {
    BasicFileAttributes a = Files.readAttributes(f, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
    if (!a.isRegularFile()) {
      String kind = a.isSymbolicLink() ? "a symbolic link" : a.isDirectory() ? "a directory"
          : "a FIFO, socket or device";
      throw new IllegalStateException("rendezvous " + groupId + ", rank " + rank + ": " + f + " is " + kind
          + ", not a regular file; refusing to open it (someone else writes into the rendezvous folder " + folder
          + ")");
    }
    try (SeekableByteChannel ch = Files.newByteChannel(f, StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS)) {
      ByteBuffer b = ByteBuffer.allocate((int) Math.min(a.size(), (long) max + 1));
      while (b.hasRemaining() && ch.read(b) >= 0) {
        // a file renamed over this one is read from the inode opened
      }
      return java.util.Arrays.copyOf(b.array(), b.position());
    }
  }

  /** Rank r's round-n payload, or null when it has not arrived (or only a stale file is there). */
  private byte[] read(long n, int r) {
    long expected = nonceOf(r);
    if (expected == 0) {
      return null;
    }
    byte[] all;
    try {
      all = readRegular(file(n, r), HEADER + RendezvousLimits.MAX_PAYLOAD_BYTES);
    } catch (NoSuchFileException e) {
      return null;
    } catch (IOException e) {
      throw new UncheckedIOException("rendezvous " + groupId + ", rank " + rank + ": cannot read rank " + r
          + "'s round " + n, e);
    }
    ByteBuffer b = ByteBuffer.wrap(all);
    String where = "rendezvous " + groupId + ", rank " + rank + ": rank " + r + "'s round " + n + " file ";
    if (all.length < HEADER || b.getInt() != MAGIC) {
      throw new IllegalStateException(where + "is not a gpucoll rendezvous file");
    }
    short version = b.getShort();
    if (version != VERSION) {
      throw new IllegalStateException(where + "has version " + version + ", this build reads " + VERSION);
    }
    if (b.getLong() != expected) {
      return null; // left by an earlier instance of rank r: not this group's
    }
    int fileRank = b.getInt();
    long fileRound = b.getLong();
    int fileSize = b.getInt();
    int len = b.getInt();
    long crc = b.getLong();
    if (fileRank != r || fileRound != n || fileSize != size) {
      throw new IllegalStateException(where + "says rank " + fileRank + ", round " + fileRound + ", size "
          + fileSize + ": the ranks disagree on the group");
    }
    if (len < 0 || len > RendezvousLimits.MAX_PAYLOAD_BYTES || len != b.remaining()) {
      throw new IllegalStateException(where + "has a bad length " + len + " (" + b.remaining() + " bytes follow)");
    }
    byte[] payload = new byte[len];
    b.get(payload);
    CRC32 check = new CRC32();
    check.update(payload);
    if (check.getValue() != crc) {
      throw new IllegalStateException(where + "fails its CRC check");
    }
    return payload;
  }

  /**
   * Posts {@code bye-<rank>}, waits (at most the last round's timeout) until every rank has posted its bye
   * or is gone, so nobody still needs this rank's last round, then deletes this rank's files and,
   * when it is empty, the folder.
   */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    try {
      if (round > 0) {
        Path bye = byeFile(rank);
        Files.deleteIfExists(bye);
        Files.createFile(bye, FILE_0600);
        Files.write(bye, ByteBuffer.allocate(8).putLong(nonce).array());
        long deadline = System.nanoTime() + lastTimeout.toNanos();
        long park = 20_000;
        CallBounds bounds = CallBounds.current(lastTimeout);
        for (int r = 0; r < size; r++) {
          // A cancelled caller stops waiting: the peers then read a missing claim as "gone".
          while (!finished(r) && System.nanoTime() - deadline < 0 && bounds.cancellation() == null) {
            LockSupport.parkNanos(park);
            park = Math.min(park * 2, MAX_PARK_NANOS);
          }
        }
      }
    } catch (IOException e) {
      // the peers will time out on a missing bye; deleting below still cleans up
    } finally {
      deleteLeftovers(rank);
      try {
        Files.deleteIfExists(claimFile(rank)); // last: readers take a missing claim as "gone"
        Files.deleteIfExists(folder); // fails while other ranks' files remain: the last one deletes it
      } catch (IOException e) {
        // not empty yet
      }
    }
  }

  /** Rank r posted its bye, or no longer holds the claim it held in this group. */
  private boolean finished(int r) {
    if (r == rank) {
      return true;
    }
    long[] held = readClaim(claimFile(r));
    if (held == null || held[0] != peerNonce[r] || !alive(held[1])) {
      return true;
    }
    try {
      byte[] b = readRegular(byeFile(r), 8);
      return b.length == 8 && ByteBuffer.wrap(b).getLong() == peerNonce[r];
    } catch (NoSuchFileException e) {
      return false;
    } catch (IOException e) {
      return true;
    }
  }

  /** Deletes rank r's rounds, temporary files and bye (not its claim). */
  private void deleteLeftovers(int r) {
    try (DirectoryStream<Path> files = Files.newDirectoryStream(folder)) {
      for (Path f : files) {
        String name = f.getFileName().toString();
        if (name.matches("r[0-9]+-" + r) || name.matches("\\.tmp-r[0-9]+-" + r + "-[0-9a-f]+")
            || name.equals("bye-" + r)) {
          Files.deleteIfExists(f);
        }
      }
    } catch (IOException e) {
      // best effort: a later claimant of rank r deletes leftovers
    }
  }
}
