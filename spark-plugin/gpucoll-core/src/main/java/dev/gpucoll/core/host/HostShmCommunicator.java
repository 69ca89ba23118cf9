package dev.gpucoll.core.host;

import dev.gpucoll.core.config.Durations;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.core.config.GpuCollConf;
import dev.gpucoll.core.spi.GroupContext;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;

/**
 * Ranks of one host over one shared-memory segment: the recipes of {@link FlatHostCommunicator}
 * over the segment's steps ({@link ShmSteps}); here only the group's formation, split, findings
 * and its end.
 */
final class HostShmCommunicator extends FlatHostCommunicator<ShmSteps> {
  static final String BACKEND = "host-shm";
  /**
   * Largest payload carried in the step header (LL), in the cache line of its epoch flag: what
   * fits before the header's error text ({@link ShmSegment#INLINE_BYTES}). Larger payloads are one
   * bulk copy published by the same flag, one more cache line per peer.
   */
  static final int LL_MAX_BYTES = ShmSegment.INLINE_BYTES;
  /** Bulk region per rank and half: the chunk size of large messages. */
  static final int BULK_BYTES = 512 << 10;

  private final ShmSegment seg;

  HostShmCommunicator(ShmSegment seg, int rank, String groupId, String host, String rendezvousKind,
      GpuCollConf conf) {
    super(rank, seg.ranks, groupId, host, rendezvousKind, conf,
        HostRoute.oneHost(seg.ranks, host, seg.size(), seg.llBytes, seg.bulkBytes, conf),
        self -> new ShmSteps(self, seg, self.route()));
    this.seg = seg;
  }

  /** Forms the group's segment through the rendezvous (two rounds) and returns this rank's communicator. */
  static HostShmCommunicator create(GroupContext group) {
    GpuCollConf conf = group.conf();
    HostRoute.checkForced(conf, group.rank(), HostRoute.Between.NONE, BACKEND, List.of());
    Duration timeout = conf.get(GpuCollConf.TIMEOUT);
    int n = group.size();
    int[] members = new int[n];
    Arrays.setAll(members, i -> i);
    ShmSegment seg = SegmentSetup.establish(p -> group.rendezvous().allGather(p, timeout), group.rank(),
        members, Path.of(conf.get(GpuCollConf.SHM_DIR)), llBytesFor(conf), BULK_BYTES);
    return new HostShmCommunicator(seg, group.rank(), group.rendezvous().groupId(), group.self().host(),
        group.rendezvous().kind(), conf);
  }

  static int llBytesFor(GpuCollConf conf) {
    long oneShot = conf.get(GpuCollConf.HOST_ONE_SHOT_MAX_BYTES);
    long capped = Math.min(Math.max(oneShot, 8), LL_MAX_BYTES);
    return (int) ((capped + 7) / 8 * 8);
  }

  @Override
  public String backend() {
    return BACKEND;
  }

  @Override
  List<String> findings() {
    return List.of(
        "shm segment " + seg.path + " (" + seg.size() + " bytes, unlinked once every rank mapped it)",
        "LL limit " + seg.llBytes + " bytes, bulk chunk " + seg.bulkBytes + " bytes, one-shot up to "
            + conf.get(GpuCollConf.HOST_ONE_SHOT_MAX_BYTES) + " bytes",
        "timeout " + Durations.format(timeout) + " per wait without progress",
        "waits " + (steps.oversubscribed() ? "yield from the first look (" + size + " ranks on "
            + Backoff.hostCores() + " cores)" : "spin, then yield, then park"));
  }

  @Override
  Communicator splitGroup(int color, int key) {
    // Round 0: colors and keys.
    ByteBuffer mine = ByteBuffer.allocate(8).putInt(color).putInt(key);
    List<byte[]> all = steps.allGatherBytes(Signature.setup(1), mine.array());
    int[] members = splitMembers(all, color);
    ShmSegment child = SegmentSetup.establish(p -> steps.allGatherBytes(Signature.setup(2), p), rank,
        members, seg.path.getParent(), seg.llBytes, seg.bulkBytes);
    if (child == null) {
      return null;
    }
    int newRank = 0;
    while (members[newRank] != rank) {
      newRank++;
    }
    return new HostShmCommunicator(child, newRank, groupId + "/split(" + color + ")", host, rendezvousKind,
        conf);
  }

  @Override
  void abandonGroup(String reason) {
    steps.abort(reason);
  }

  /**
   * Gives up on the group from outside a call (a communicator built on this one failed): the
   * ranks waiting in this segment fail naming this rank instead of waiting out their timeout.
   */
  void abandon(String why) {
    markBroken(why);
    steps.abort(why);
  }

  @Override
  void closeTransport() {
    if (seg.state(rank) != ShmSegment.STATE_ABORTED) { // peers still learn why this rank gave up
      seg.setState(rank, ShmSegment.STATE_CLOSED, "rank " + rank + " closed its communicator");
    }
    seg.close();
  }
}
