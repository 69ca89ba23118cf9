package dev.gpucoll.cuda;

import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.core.rendezvous.Rendezvous;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The rendezvous of one child group of a split, run over the parent's rendezvous while the other
 * children (other colors) form theirs. Every parent round carries each rank's tagged message: a
 * child round ({@code ROUND}) or "this rank has finished forming its child" ({@code DONE}); a child
 * round keeps only its members' messages. Children may need different numbers of rounds (one forms
 * NCCL, another does not), so after forming its child every rank calls {@link #finish}, which keeps
 * answering parent rounds with DONE until every rank of the parent is done. Only formation uses it:
 * after {@link #finish} a round fails.
 */
final class SplitRendezvous implements Rendezvous {
  private static final byte ROUND = 1;
  private static final byte DONE = 2;

  private final Rendezvous parent;
  private final String groupId;
  /** Parent ranks of the child's members, in child-rank order; empty for a rank that joins no child. */
  private final int[] members;
  private final int rank;
  private boolean finished;

  /**
   * @param members parent ranks of this child's members in child order (must contain the parent's own
   *                rank), or empty when this rank takes part in no child (negative color)
   */
  SplitRendezvous(Rendezvous parent, String groupId, int[] members) {
    this.parent = parent;
    this.groupId = groupId;
    this.members = members.clone();
    int me = -1;
    for (int i = 0; i < members.length; i++) {
      if (members[i] == parent.rank()) {
        me = i;
      }
    }
    if (members.length > 0 && me < 0) {
      throw new IllegalArgumentException("parent rank " + parent.rank() + " is not among the members "
          + Arrays.toString(members));
    }
    this.rank = me;
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
    return members.length;
  }

  @Override
  public String kind() {
    return parent.kind() + "/split";
  }

  @Override
  public List<byte[]> allGather(byte[] payload, Duration timeout) {
    if (finished || members.length == 0) {
      throw new IllegalStateException("the rendezvous of split group " + groupId + " serves only its formation");
    }
    List<byte[]> all = parent.allGather(tagged(ROUND, payload), timeout);
    List<byte[]> out = new ArrayList<>(members.length);
    for (int i = 0; i < members.length; i++) {
      byte[] m = all.get(members[i]);
      if (m.length == 0 || m[0] != ROUND) {
        throw new CollectiveException(rank, null, "split group " + groupId + ": rank " + i + " (parent rank "
            + members[i] + ") stopped forming the group (it failed or called finish early)");
      }
      out.add(Arrays.copyOfRange(m, 1, m.length));
    }
    return out;
  }

  /** Answers parent rounds with DONE until every parent rank has finished; idempotent. */
  void finish(Duration timeout) {
    if (finished) {
      return;
    }
    finished = true;
    while (true) {
      List<byte[]> all = parent.allGather(new byte[] {DONE}, timeout);
      if (all.stream().allMatch(m -> m.length > 0 && m[0] == DONE)) {
        return;
      }
    }
  }

  private static byte[] tagged(byte tag, byte[] payload) {
    return ByteBuffer.allocate(1 + payload.length).put(tag).put(payload).array();
  }
}
