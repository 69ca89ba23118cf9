package dev.gpucoll.core.host;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.InvalidArgumentException;
import dev.gpucoll.api.CollectiveMismatchException;
import dev.gpucoll.api.CollectiveTimeoutException;
import dev.gpucoll.core.Algorithm;
import dev.gpucoll.core.buffers.HostBuffers;
import dev.gpucoll.core.config.Durations;
import dev.gpucoll.core.rendezvous.Rendezvous;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Steps through the rendezvous channel, for a group that spans hosts without UCX: each step is an
 * all-gather of every rank's whole payload, in rounds of {@link #CHUNK_BYTES}. Correct and slow.
 */
final class RelaySteps extends Steps {
  /** Payload bytes per rendezvous round; with the round header it stays under 64 KiB. */
  static final int CHUNK_BYTES = 60 << 10;
  private static final int MAGIC = 0x4743524C; // "GCRL"
  private static final int VERSION = 1;
  private static final int HEADER_BYTES = 50;

  private final AbstractHostCommunicator owner;
  private final Rendezvous rendezvous;
  private byte[] mine = new byte[0];
  private List<byte[]> received = List.of();

  RelaySteps(AbstractHostCommunicator owner, Rendezvous rendezvous) {
    super(owner.rank, owner.size);
    this.owner = owner;
    this.rendezvous = rendezvous;
  }

  @Override
  int maxPayload() {
    return Integer.MAX_VALUE;
  }

  @Override
  HostBuffers.Views open(int bytes) {
    mine = new byte[bytes];
    base = 0;
    return new HostBuffers.Views(ByteBuffer.wrap(mine));
  }

  @Override
  void exchange(Collective c, Signature sig) {
    received = exchange(c, sig, null, mine);
  }

  @Override
  HostBuffers.Views peer(Collective c, int p, int off, int len) {
    byte[] theirs = received.get(p);
    if (off + len > theirs.length) {
      throw new CollectiveException(rank, c, "rank " + p + " published " + theirs.length
          + " payload bytes in " + owner.callLabel() + ", this rank needs " + (off + len));
    }
    base = 0;
    return new HostBuffers.Views(ByteBuffer.wrap(theirs));
  }

  @Override
  Algorithm refuse(Collective c, Signature sig, String problem) {
    exchange(c, sig, problem, new byte[0]);
    throw new IllegalStateException("unreachable: a relay step with a problem must throw");
  }

  @Override
  List<byte[]> allGatherBytes(Signature sig, byte[] payload) {
    return exchange(null, sig, null, payload);
  }

  /**
   * All-gathers every rank's bytes through the rendezvous in rounds of {@link #CHUNK_BYTES}; the
   * first round carries each rank's signature and status, so a problem or a mismatch fails every
   * rank alike before any data round.
   */
  private List<byte[]> exchange(Collective c, Signature sig, String problem, byte[] data) {
    byte[][] whole = new byte[ranks][];
    int[] filled = new int[ranks];
    int rounds = 1;
    for (int round = 0; round < rounds; round++) {
      int from = Math.min(data.length, round * CHUNK_BYTES);
      int len = Math.min(CHUNK_BYTES, data.length - from);
      byte[] err = problem == null ? new byte[0] : ShmSegment.truncate(problem, 1000);
      ByteBuffer out = ByteBuffer.allocate(HEADER_BYTES + err.length + len);
      out.putInt(MAGIC).putShort((short) VERSION).putInt(round).putInt(sig.code()).putLong(sig.count())
          .putInt(sig.type()).putInt(sig.op()).putInt(sig.root()).putInt(problem == null ? 0 : 1)
          .putInt(data.length).putInt(err.length).put(err).putInt(len).put(data, from, len);
      List<byte[]> got = gather(c, out.array());
      List<String> errors = new ArrayList<>();
      Signature first = null;
      String mismatch = null;
      for (int p = 0; p < ranks; p++) {
        ByteBuffer in = ByteBuffer.wrap(got.get(p));
        if (in.remaining() < HEADER_BYTES || in.getInt() != MAGIC || in.getShort() != VERSION || in.getInt() != round) {
          throw broken(new CollectiveException(rank, c, "rank " + p
              + " sent a relay message this build cannot read (round " + round + ")"));
        }
        Signature s = new Signature(in.getInt(), in.getLong(), in.getInt(), in.getInt(), in.getInt());
        int status = in.getInt();
        int total = in.getInt();
        byte[] text = new byte[in.getInt()];
        in.get(text);
        int chunk = in.getInt();
        if (status != 0) {
          errors.add("rank " + p + " rejected its call: " + new String(text, StandardCharsets.UTF_8));
        }
        if (first == null) {
          first = s;
        } else if (!s.equals(first) && mismatch == null) {
          mismatch = "ranks called different collectives: rank 0 called " + first.describe() + " but rank "
              + p + " called " + s.describe();
        }
        if (round == 0) {
          whole[p] = new byte[Math.max(0, total)];
          rounds = Math.max(rounds, (total + CHUNK_BYTES - 1) / CHUNK_BYTES);
        }
        if (chunk < 0 || chunk > in.remaining() || filled[p] + chunk > whole[p].length) {
          throw broken(new CollectiveException(rank, c, "rank " + p + " sent a bad relay chunk"));
        }
        in.get(whole[p], filled[p], chunk);
        filled[p] += chunk;
      }
      if (round == 0) {
        if (problem != null) {
          throw new InvalidArgumentException(rank, c, problem);
        }
        if (!errors.isEmpty()) {
          throw new CollectiveException(rank, c, String.join("; ", errors));
        }
        if (mismatch != null) {
          throw new CollectiveMismatchException(rank, c, mismatch);
        }
      }
    }
    return List.of(whole);
  }

  private List<byte[]> gather(Collective c, byte[] payload) {
    // Each round is one step of progress: the timeout bounds a round, not the whole call.
    var bounds = owner.bounds;
    try {
      return rendezvous.allGather(payload, bounds.timeout());
    } catch (CollectiveTimeoutException e) {
      throw broken(new CollectiveTimeoutException(rank, c, e.missingRanks(),
          (e.missingRanks().size() == 1 ? "rank " + e.missingRanks().get(0) : "ranks " + e.missingRanks())
              + " did not arrive within " + Durations.format(bounds.timeout())
              + " (relay through " + owner.rendezvousKind + ")"));
    } catch (RuntimeException e) {
      throw broken(new CollectiveException(rank, c, "relay through " + owner.rendezvousKind + " failed: " + e, e));
    }
  }

  private CollectiveException broken(CollectiveException e) {
    owner.markBroken(e.getMessage());
    return e;
  }
}
