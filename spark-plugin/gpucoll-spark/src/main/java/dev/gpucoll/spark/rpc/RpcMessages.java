package dev.gpucoll.spark.rpc;

import dev.gpucoll.spark.metrics.LatencyHistogram;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Messages between the executor plugin and the driver plugin, and their wire form.
 *
 * <p>On the wire every message is a {@code byte[]} in our own encoding: Spark's RPC layer
 * deserializes plugin messages with a class loader that cannot see jars added with
 * {@code --jars}, so a class of ours on the RPC path kills the executor with a
 * ClassNotFoundException. The encoding starts with {@link #MAGIC}, {@link #VERSION} and a type
 * byte, so a peer on another gpucoll version fails with a message that says so.
 *
 * <p>Internal: public for the other packages of gpucoll-spark, not for users.
 */
public final class RpcMessages {
  /** "GCRP": gpucoll RPC. */
  static final int MAGIC = 0x47435250;
  /**
   * 6: every sealed message stamped ({@link Freshness}): a ticket, its sender and sequence number;
   * ticket requests. 5: rank reports, progress and metric totals sealed with the group credential too. 4:
   * rendezvous messages sealed with the group credential. 3: rank reports carry timings, reuse,
   * failure, predictions at used sizes and latency histograms; executor checks.
   */
  static final int VERSION = 6;
  /** Latency cells one rank report may hold: 16 collectives of 64 size classes each. */
  static final int MAX_LATENCY_CELLS = 16 * LatencyHistogram.SIZE_CLASSES;

  private static final byte ARRIVE = 1;
  private static final byte POLL = 2;
  private static final byte GIVE_UP = 3;
  private static final byte ROUND_STATE = 4;
  private static final byte RANK_REPORT = 5;
  private static final byte EXECUTOR_CHECK = 6;
  private static final byte RANK_PROGRESS = 7;
  private static final byte EXECUTOR_TOTALS = 8;
  private static final byte SEALED = 9;
  private static final byte TICKET_REQUEST = 10;
  private static final byte TICKET = 11;
  /** Most counts one executor's totals carry (its metrics number a few hundred). */
  static final int MAX_TOTALS = 4096;

  private RpcMessages() {}

  /**
   * A rank contributes its payload to round {@code round} of {@code groupId}. With
   * {@code noResult} the rank will not fetch the outcome (it already knows what it needs).
   */
  public record Arrive(String groupId, long round, int rank, int size, byte[] payload,
      long timeoutMillis, boolean noResult) {}

  /** A rank asks whether the round is complete. */
  public record Poll(String groupId, long round, int rank) {}

  /** A rank stopped waiting; the round fails for everybody, late arrivals included. */
  public record GiveUp(String groupId, long round, int rank, long waitedMillis) {}

  /**
   * The round as the driver sees it: complete (payloads by rank), failed (why), or still waiting
   * for {@code missingRanks}.
   */
  public record RoundState(List<byte[]> payloads, List<Integer> missingRanks, String failure) {
    public boolean complete() {
      return payloads != null;
    }
  }

  /**
   * One rank's description of its group after a stage, for the driver's path report; with a
   * non-empty {@code failure} the rank's task failed (before, while or after forming the group).
   *
   * @param formedIn the stage that formed the group, when this task reused it (else empty)
   * @param rendezvousNanos the wait until every rank had arrived
   * @param formationNanos the time to build the communicator after that (0 when reused)
   */
  public record RankReportMessage(
      String groupId,
      String stage,
      int rank,
      int size,
      String host,
      String executorId,
      long pid,
      String backend,
      String rendezvous,
      Map<String, Map<String, Long>> pathsByCollective,
      List<String> predicted,
      List<String> findings,
      String formedIn,
      boolean reused,
      long rendezvousNanos,
      long formationNanos,
      String failure,
      List<String> predictedUsed,
      List<LatencyHistogram.Cell> latency) {

    public boolean failed() {
      return !failure.isEmpty();
    }
  }

  /**
   * A rank's report while its task still runs (calls and latency so far, no predictions), sent
   * every few seconds for the tab's view of running groups; the {@link RankReportMessage} at the
   * task's end supersedes it.
   */
  public record RankProgressMessage(RankReportMessage report) {}

  /**
   * A message to the driver ({@code body}: an encoded Arrive, Poll or GiveUp; a rank report,
   * progress or metric totals) with its {@link Freshness.Stamp}, or the driver's answer to a
   * rendezvous request (a RoundState, stamped {@link Freshness.Stamp#NONE}), with the MAC of the
   * {@link GroupCredential} named {@code credentialId}.
   */
  public record Sealed(String credentialId, Freshness.Stamp stamp, byte[] body, byte[] mac) {}

  /** An executor asks the driver for a {@link Freshness.Ticket}. */
  public record TicketRequest() {}

  /** {@code request} sealed: the MAC covers the stamp and the request's encoded bytes. */
  public static Sealed seal(Object request, GroupCredential credential, Freshness.Stamp stamp) {
    byte[] body = encode(request);
    return new Sealed(credential.id(), stamp, body, credential.mac(stamp.bytes(), body));
  }

  /**
   * The driver's answer to the sealed request whose MAC is {@code requestMac}: the MAC covers
   * that MAC too, so an answer counts for its own request only.
   */
  public static byte[] sealReply(RoundState reply, GroupCredential credential, byte[] requestMac) {
    byte[] body = encode(reply);
    return encode(new Sealed(credential.id(), Freshness.Stamp.NONE, body, credential.mac(requestMac, body)));
  }

  /**
   * The request inside {@code s}, or null when its MAC does not verify with {@code credential}.
   * Whether it is fresh is the caller's to ask ({@link Freshness.Guard#admit}).
   */
  public static Object open(Sealed s, GroupCredential credential) {
    if (!s.credentialId().equals(credential.id()) || !credential.verifies(s.mac(), s.stamp().bytes(), s.body())) {
      return null;
    }
    return decode(s.body());
  }

  /** The answer inside {@code s} to the request of {@code requestMac}, or null when it does not verify. */
  public static RoundState openReply(Sealed s, GroupCredential credential, byte[] requestMac) {
    if (!s.credentialId().equals(credential.id()) || !credential.verifies(s.mac(), requestMac, s.body())) {
      return null;
    }
    return decode(s.body()) instanceof RoundState state ? state : null;
  }

  /** How the driver's logs name a message it dropped for failing the group credential. */
  public static String describeDropped(Object message) {
    return message instanceof Sealed s
        ? "a message sealed with credential '" + s.credentialId() + "' that does not verify"
        : "an unsealed " + message.getClass().getSimpleName();
  }

  /** How the driver's logs name a message whose MAC verified but that is no fresh one ({@code why}). */
  public static String describeStale(Sealed s, String why) {
    return "a message sealed with credential '" + s.credentialId() + "' that was no fresh one: " + why;
  }

  /**
   * What {@code s} says it carries, not verified: only for choosing who verifies it. Null when its
   * body is not a message of ours.
   */
  public static Object unverifiedBody(Sealed s) {
    try {
      return decode(s.body());
    } catch (IllegalArgumentException e) {
      return null;
    }
  }

  /** An executor's metric counts so far (ExecutorMetrics#totals), for the driver's sums. */
  public record ExecutorTotalsMessage(String executorId, Map<String, Long> totals) {}

  /**
   * An executor's check, at plugin start, of the backend its settings require: {@code
   * unavailableReason} is empty when the backend can run there.
   */
  public record ExecutorCheckMessage(String executorId, String host, String backend, String unavailableReason,
      List<String> gpus, Map<String, String> environment) {
    public boolean usable() {
      return unavailableReason.isEmpty();
    }
  }

  /** The wire form of one of the records above. */
  public static byte[] encode(Object message) {
    Writer w = new Writer();
    if (message instanceof Arrive m) {
      w.header(ARRIVE).string(m.groupId()).i64(m.round()).i32(m.rank()).i32(m.size())
          .bytes(m.payload()).i64(m.timeoutMillis()).bool(m.noResult());
    } else if (message instanceof Poll m) {
      w.header(POLL).string(m.groupId()).i64(m.round()).i32(m.rank());
    } else if (message instanceof GiveUp m) {
      w.header(GIVE_UP).string(m.groupId()).i64(m.round()).i32(m.rank()).i64(m.waitedMillis());
    } else if (message instanceof RoundState m) {
      w.header(ROUND_STATE).bool(m.payloads() != null);
      if (m.payloads() != null) {
        w.i32(m.payloads().size());
        m.payloads().forEach(w::bytes);
      }
      w.i32(m.missingRanks().size());
      m.missingRanks().forEach(w::i32);
      w.bool(m.failure() != null);
      if (m.failure() != null) {
        w.string(m.failure());
      }
    } else if (message instanceof RankReportMessage m) {
      writeRankReport(w.header(RANK_REPORT), m);
    } else if (message instanceof RankProgressMessage p) {
      writeRankReport(w.header(RANK_PROGRESS), p.report());
    } else if (message instanceof Sealed m) {
      w.header(SEALED).string(m.credentialId()).i64(m.stamp().issuedNanos()).bytes(m.stamp().ticketMac())
          .i64(m.stamp().sender()).i64(m.stamp().seq()).bytes(m.body()).bytes(m.mac());
    } else if (message instanceof TicketRequest) {
      w.header(TICKET_REQUEST);
    } else if (message instanceof Freshness.Ticket m) {
      w.header(TICKET).i64(m.issuedNanos()).bytes(m.mac());
    } else if (message instanceof ExecutorTotalsMessage m) {
      if (m.totals().size() > MAX_TOTALS) {
        throw new IllegalArgumentException("gpucoll executor totals: " + m.totals().size() + " counts, at most " + MAX_TOTALS);
      }
      w.header(EXECUTOR_TOTALS).string(m.executorId()).i32(m.totals().size());
      m.totals().forEach((name, value) -> w.string(name).i64(value));
    } else if (message instanceof ExecutorCheckMessage m) {
      w.header(EXECUTOR_CHECK).string(m.executorId()).string(m.host()).string(m.backend())
          .string(m.unavailableReason()).strings(m.gpus())
          .strings(List.copyOf(m.environment().keySet())).strings(List.copyOf(m.environment().values()));
    } else {
      throw new IllegalArgumentException("not a gpucoll RPC message: "
          + (message == null ? "null" : message.getClass().getName()));
    }
    return w.toByteArray();
  }

  private static void writeRankReport(Writer w, RankReportMessage m) {
    w.string(m.groupId()).string(m.stage()).i32(m.rank()).i32(m.size())
        .string(m.host()).string(m.executorId()).i64(m.pid()).string(m.backend())
        .string(m.rendezvous());
    w.i32(m.pathsByCollective().size());
    m.pathsByCollective().forEach((collective, byAlgorithm) -> {
      w.string(collective).i32(byAlgorithm.size());
      byAlgorithm.forEach((algorithm, calls) -> w.string(algorithm).i64(calls));
    });
    w.strings(m.predicted()).strings(m.findings()).string(m.formedIn()).bool(m.reused())
        .i64(m.rendezvousNanos()).i64(m.formationNanos()).string(m.failure()).strings(m.predictedUsed());
    if (m.latency().size() > MAX_LATENCY_CELLS) {
      throw new IllegalArgumentException("gpucoll rank report: " + m.latency().size()
          + " latency cells, at most " + MAX_LATENCY_CELLS);
    }
    w.i32(m.latency().size());
    for (LatencyHistogram.Cell c : m.latency()) {
      w.string(c.collective()).i32(c.sizeClass()).i64(c.maxNanos()).i32(c.counts().size());
      c.counts().forEach((bucket, n) -> w.i32(bucket).i64(n));
    }
  }

  /**
   * Reads what {@link #encode} wrote. Anything else (foreign bytes, another version, truncated
   * or trailing bytes, lengths beyond the message) is an IllegalArgumentException saying which.
   */
  public static Object decode(byte[] wire) {
    if (wire == null) {
      throw new IllegalArgumentException("gpucoll RPC message is null");
    }
    Reader r = new Reader(wire);
    try {
      int magic = r.buf.getInt();
      if (magic != MAGIC) {
        throw new IllegalArgumentException(String.format(
            "not a gpucoll RPC message (starts with 0x%08x, expected 0x%08x)", magic, MAGIC));
      }
      int version = r.buf.getInt();
      if (version != VERSION) {
        throw new IllegalArgumentException("gpucoll RPC message version " + version
            + ", this side speaks " + VERSION
            + ": are the driver and all executors on the same gpucoll jar?");
      }
      byte type = r.buf.get();
      Object out = switch (type) {
        case ARRIVE -> new Arrive(r.string(), r.buf.getLong(), r.buf.getInt(), r.buf.getInt(),
            r.bytes(), r.buf.getLong(), r.bool());
        case POLL -> new Poll(r.string(), r.buf.getLong(), r.buf.getInt());
        case GIVE_UP -> new GiveUp(r.string(), r.buf.getLong(), r.buf.getInt(), r.buf.getLong());
        case ROUND_STATE -> readRoundState(r);
        case RANK_REPORT -> readRankReport(r);
        case RANK_PROGRESS -> new RankProgressMessage(readRankReport(r));
        case EXECUTOR_TOTALS -> readExecutorTotals(r);
        case EXECUTOR_CHECK -> readExecutorCheck(r);
        case SEALED -> new Sealed(r.string(), new Freshness.Stamp(r.buf.getLong(), r.bytes(), r.buf.getLong(),
            r.buf.getLong()), r.bytes(), r.bytes());
        case TICKET_REQUEST -> new TicketRequest();
        case TICKET -> new Freshness.Ticket(r.buf.getLong(), r.bytes());
        default -> throw new IllegalArgumentException("gpucoll RPC message of unknown type " + type);
      };
      if (r.buf.hasRemaining()) {
        throw new IllegalArgumentException("gpucoll RPC message has " + r.buf.remaining()
            + " bytes after its end (" + wire.length + " bytes in all)");
      }
      return out;
    } catch (BufferUnderflowException e) {
      throw new IllegalArgumentException("gpucoll RPC message truncated: " + wire.length
          + " bytes end in the middle of a field", e);
    }
  }

  private static RoundState readRoundState(Reader r) {
    List<byte[]> payloads = null;
    if (r.bool()) {
      int n = r.count(4);
      payloads = new ArrayList<>(n);
      for (int i = 0; i < n; i++) {
        payloads.add(r.bytes());
      }
      payloads = Collections.unmodifiableList(payloads);
    }
    int missing = r.count(4);
    List<Integer> missingRanks = new ArrayList<>(missing);
    for (int i = 0; i < missing; i++) {
      missingRanks.add(r.buf.getInt());
    }
    String failure = r.bool() ? r.string() : null;
    return new RoundState(payloads, List.copyOf(missingRanks), failure);
  }

  private static ExecutorCheckMessage readExecutorCheck(Reader r) {
    String executorId = r.string();
    String host = r.string();
    String backend = r.string();
    String reason = r.string();
    List<String> gpus = r.strings();
    List<String> keys = r.strings();
    List<String> values = r.strings();
    if (keys.size() != values.size()) {
      throw new IllegalArgumentException("gpucoll RPC executor check has " + keys.size()
          + " environment keys but " + values.size() + " values");
    }
    Map<String, String> environment = new LinkedHashMap<>();
    for (int i = 0; i < keys.size(); i++) {
      environment.put(keys.get(i), values.get(i));
    }
    return new ExecutorCheckMessage(executorId, host, backend, reason, gpus, environment);
  }

  private static ExecutorTotalsMessage readExecutorTotals(Reader r) {
    String executorId = r.string();
    int n = r.count(12);
    if (n > MAX_TOTALS) {
      throw new IllegalArgumentException("gpucoll executor totals: " + n + " counts, at most " + MAX_TOTALS);
    }
    Map<String, Long> totals = new LinkedHashMap<>();
    for (int i = 0; i < n; i++) {
      totals.put(r.string(), r.buf.getLong());
    }
    return new ExecutorTotalsMessage(executorId, totals);
  }

  private static RankReportMessage readRankReport(Reader r) {
    String groupId = r.string();
    String stage = r.string();
    int rank = r.buf.getInt();
    int size = r.buf.getInt();
    String host = r.string();
    String executorId = r.string();
    long pid = r.buf.getLong();
    String backend = r.string();
    String rendezvous = r.string();
    int collectives = r.count(8);
    Map<String, Map<String, Long>> paths = new LinkedHashMap<>();
    for (int i = 0; i < collectives; i++) {
      String collective = r.string();
      int algorithms = r.count(12);
      Map<String, Long> byAlgorithm = new LinkedHashMap<>();
      for (int j = 0; j < algorithms; j++) {
        byAlgorithm.put(r.string(), r.buf.getLong());
      }
      paths.put(collective, byAlgorithm);
    }
    List<String> predicted = r.strings();
    List<String> findings = r.strings();
    String formedIn = r.string();
    boolean reused = r.bool();
    long rendezvousNanos = r.buf.getLong();
    long formationNanos = r.buf.getLong();
    String failure = r.string();
    List<String> predictedUsed = r.strings();
    int cells = r.count(20);
    if (cells > MAX_LATENCY_CELLS) {
      throw new IllegalArgumentException("gpucoll rank report: " + cells + " latency cells, at most "
          + MAX_LATENCY_CELLS);
    }
    List<LatencyHistogram.Cell> latency = new ArrayList<>(cells);
    for (int i = 0; i < cells; i++) {
      String collective = r.string();
      int sizeClass = r.buf.getInt();
      long maxNanos = r.buf.getLong();
      int buckets = r.count(12);
      if (buckets > LatencyHistogram.LATENCY_BUCKETS) {
        throw new IllegalArgumentException("gpucoll rank report: a latency cell of " + buckets
            + " buckets, at most " + LatencyHistogram.LATENCY_BUCKETS);
      }
      Map<Integer, Long> counts = new LinkedHashMap<>();
      for (int j = 0; j < buckets; j++) {
        counts.put(r.buf.getInt(), r.buf.getLong());
      }
      latency.add(new LatencyHistogram.Cell(collective, sizeClass, maxNanos, counts));
    }
    return new RankReportMessage(groupId, stage, rank, size, host, executorId, pid, backend,
        rendezvous, paths, predicted, findings, formedIn, reused, rendezvousNanos, formationNanos,
        failure, predictedUsed, List.copyOf(latency));
  }

  private static final class Writer {
    private final ByteArrayOutputStream bytes = new ByteArrayOutputStream(64);
    private final DataOutputStream out = new DataOutputStream(bytes);

    Writer header(byte type) {
      return i32(MAGIC).i32(VERSION).u8(type);
    }

    Writer u8(byte v) {
      return io(() -> out.writeByte(v));
    }

    Writer bool(boolean v) {
      return io(() -> out.writeBoolean(v));
    }

    Writer i32(int v) {
      return io(() -> out.writeInt(v));
    }

    Writer i64(long v) {
      return io(() -> out.writeLong(v));
    }

    Writer bytes(byte[] v) {
      if (v == null) {
        throw new IllegalArgumentException("gpucoll RPC: a byte[] field is null");
      }
      return io(() -> {
        out.writeInt(v.length);
        out.write(v);
      });
    }

    Writer string(String v) {
      if (v == null) {
        throw new IllegalArgumentException("gpucoll RPC: a string field is null");
      }
      return bytes(v.getBytes(StandardCharsets.UTF_8));
    }

    Writer strings(List<String> v) {
      i32(v.size());
      v.forEach(this::string);
      return this;
    }

    byte[] toByteArray() {
      return bytes.toByteArray();
    }

    private interface IoStep {
      void run() throws IOException;
    }

    private Writer io(IoStep step) {
      try {
        step.run();
      } catch (IOException e) {
        throw new UncheckedIOException(e); // a ByteArrayOutputStream does not throw
      }
      return this;
    }
  }

  private static final class Reader {
    final ByteBuffer buf;

    Reader(byte[] wire) {
      this.buf = ByteBuffer.wrap(wire);
    }

    boolean bool() {
      byte b = buf.get();
      if (b != 0 && b != 1) {
        throw new IllegalArgumentException("gpucoll RPC message: boolean field holds " + b);
      }
      return b == 1;
    }

    /** A count of elements of at least {@code minBytes} each, checked against what is left. */
    int count(int minBytes) {
      int n = buf.getInt();
      if (n < 0 || (long) n * minBytes > buf.remaining()) {
        throw new IllegalArgumentException("gpucoll RPC message truncated or corrupt: " + n
            + " elements announced, " + buf.remaining() + " bytes left");
      }
      return n;
    }

    byte[] bytes() {
      int n = count(1);
      byte[] v = new byte[n];
      buf.get(v);
      return v;
    }

    String string() {
      return new String(bytes(), StandardCharsets.UTF_8);
    }

    List<String> strings() {
      int n = count(4);
      List<String> out = new ArrayList<>(n);
      for (int i = 0; i < n; i++) {
        out.add(string());
      }
      return List.copyOf(out);
    }
  }
}
