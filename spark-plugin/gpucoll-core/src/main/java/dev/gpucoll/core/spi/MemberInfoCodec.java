package dev.gpucoll.core.spi;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.LinkedHashMap;
import java.util.Map;

/** Versioned, size-checked wire form of {@link MemberInfo} for rendezvous payloads. */
public final class MemberInfoCodec {
  private static final int MAGIC = 0x47434D31; // "GCM1"
  private static final int VERSION = 1;
  /** Rendezvous payloads are small; anything larger is a bug or a foreign message. */
  public static final int MAX_BYTES = 64 * 1024;

  private MemberInfoCodec() {}

  public static byte[] encode(MemberInfo m) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      out.writeInt(MAGIC);
      out.writeShort(VERSION);
      out.writeInt(m.rank());
      out.writeUTF(m.host());
      out.writeUTF(m.processId());
      out.writeInt(m.facts().size());
      for (Map.Entry<String, String> e : new java.util.TreeMap<>(m.facts()).entrySet()) {
        out.writeUTF(e.getKey());
        out.writeUTF(e.getValue());
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    if (bytes.size() > MAX_BYTES) {
      throw new IllegalArgumentException("member info is " + bytes.size() + " bytes, limit " + MAX_BYTES);
    }
    return bytes.toByteArray();
  }

  public static MemberInfo decode(byte[] payload) {
    if (payload == null || payload.length < 10 || payload.length > MAX_BYTES) {
      throw new IllegalArgumentException("member info payload has a bad size: "
          + (payload == null ? "null" : payload.length + " bytes"));
    }
    try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(payload))) {
      if (in.readInt() != MAGIC) {
        throw new IllegalArgumentException("member info payload has a bad magic number");
      }
      int version = in.readShort();
      if (version != VERSION) {
        throw new IllegalArgumentException("member info version " + version + ", this build reads "
            + VERSION + ": are all executors on the same gpucoll jar?");
      }
      int rank = in.readInt();
      String host = in.readUTF();
      String pid = in.readUTF();
      int n = in.readInt();
      if (n < 0 || n > 4096) {
        throw new IllegalArgumentException("member info has " + n + " facts");
      }
      Map<String, String> facts = new LinkedHashMap<>();
      for (int i = 0; i < n; i++) {
        facts.put(in.readUTF(), in.readUTF());
      }
      return new MemberInfo(rank, host, pid, facts);
    } catch (IOException e) {
      throw new IllegalArgumentException("member info payload is truncated", e);
    }
  }
}
