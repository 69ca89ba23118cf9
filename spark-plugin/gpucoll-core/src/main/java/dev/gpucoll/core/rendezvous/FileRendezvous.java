package dev.gpucoll.core.rendezvous;

import dev.gpucoll.api.CollectiveTimeoutException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.LockSupport;
import java.util.zip.CRC32;

/**
 * Rendezvous for processes of one host through files in a directory (tests and benchmarks
 * without Spark). Round n of rank r is the file {@code r<n>-<rank>} in the group's folder, written
 * under a temporary name and renamed atomically, so readers never see half a payload. Each file
 * carries a magic number, version, rank, round, length and CRC, all checked.
 *
 * <p>Use a fresh directory (or group id) per group: files of an old group with the same id would be
 * read as this group's rounds. A rank deletes its round-(n-1) file once round n is complete (by
 * then every rank has read round n-1), so at most two rounds per rank stay on disk.
 */
public final class FileRendezvous implements Rendezvous {
  private static final int MAGIC = 0x4743465A; // "GCFZ"
  private static final short VERSION = 1;
  private static final int HEADER = 4 + 2 + 4 + 8 + 4 + 4 + 8;

  private final Path folder;
  private final String groupId;
  private final int rank;
  private final int size;
  private long round;

  public FileRendezvous(Path dir, String groupId, int rank, int size) {
    if (size < 1 || rank < 0 || rank >= size) {
      throw new IllegalArgumentException("rank " + rank + " is not in a group of " + size);
    }
    this.groupId = groupId;
    this.rank = rank;
    this.size = size;
    this.folder = dir.resolve(groupId.replaceAll("[^A-Za-z0-9._-]", "_"));
    try {
      Files.createDirectories(folder);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot create rendezvous folder " + folder, e);
    }
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

  @Override
  public List<byte[]> allGather(byte[] payload, Duration timeout) {
    RendezvousLimits.check(groupId, rank, payload);
    long n = round++;
    long deadline = System.nanoTime() + timeout.toNanos();
    write(n, payload);
    byte[][] got = new byte[size][];
    int have = 0;
    long park = 20_000;
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
      if (System.nanoTime() - deadline > 0) {
        List<Integer> missing = new ArrayList<>();
        for (int r = 0; r < size; r++) {
          if (got[r] == null) {
            missing.add(r);
          }
        }
        throw new CollectiveTimeoutException(rank, null, missing, "rendezvous " + groupId + " round " + n
            + ": ranks " + missing + " did not arrive within " + timeout + " (folder " + folder + ")");
      }
      LockSupport.parkNanos(park);
      park = Math.min(park * 2, 2_000_000);
    }
    if (n > 0) {
      try {
        Files.deleteIfExists(file(n - 1, rank));
      } catch (IOException e) {
        // harmless: a stale file of a finished round
      }
    }
    List<byte[]> out = new ArrayList<>(size);
    for (byte[] b : got) {
      out.add(b);
    }
    return out;
  }

  private void write(long n, byte[] payload) {
    ByteBuffer b = ByteBuffer.allocate(HEADER + payload.length);
    CRC32 crc = new CRC32();
    crc.update(payload);
    b.putInt(MAGIC).putShort(VERSION).putInt(rank).putLong(n).putInt(size).putInt(payload.length)
        .putLong(crc.getValue()).put(payload);
    Path tmp = folder.resolve(".tmp-r" + n + "-" + rank + "-" + ProcessHandle.current().pid());
    try {
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

  /** Rank r's round-n payload, or null when it has not arrived. */
  private byte[] read(long n, int r) {
    byte[] all;
    try {
      all = Files.readAllBytes(file(n, r));
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
    int fileRank = b.getInt();
    long fileRound = b.getLong();
    int fileSize = b.getInt();
    int len = b.getInt();
    long crc = b.getLong();
    if (fileRank != r || fileRound != n || fileSize != size) {
      throw new IllegalStateException(where + "says rank " + fileRank + ", round " + fileRound + ", size "
          + fileSize + ": a stale folder from another group?");
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
}
