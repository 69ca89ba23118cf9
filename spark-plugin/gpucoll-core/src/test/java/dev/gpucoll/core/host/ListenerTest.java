package dev.gpucoll.core.host;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CollectiveListener;
import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.LocOp;
import dev.gpucoll.api.PairType;
import dev.gpucoll.api.ProcessGrid;
import dev.gpucoll.api.ReduceOp;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * What a listener hears on the host backend: a MAXLOC / MINLOC call as such, once (not as the
 * gather it runs); the calls of each communicator split from the observed one, ProcessGrid's rows
 * and columns included, through the listener it gave for that split.
 */
class ListenerTest {
  @Test
  void aLocCallIsHeardAsSuchAndEachSplitsCallsThroughItsOwnListener() {
    List<List<String>> heard = Ranks.values(Ranks.run(4, Ranks.conf(), comm -> {
      List<String> events = new CopyOnWriteArrayList<>();
      comm.addListener(new Recorder("", events));
      ByteBuffer send = ByteBuffer.allocate(8).order(ByteOrder.nativeOrder());
      send.putFloat(0, comm.rank()).putInt(4, comm.rank());
      ByteBuffer recv = ByteBuffer.allocate(8).order(ByteOrder.nativeOrder());
      comm.allReduce(CommBuffer.of(send), CommBuffer.of(recv), 1, PairType.FLOAT32_INT32, LocOp.MINLOC);
      try (Communicator odd = comm.split(comm.rank() % 2 == 1 ? 0 : -1, 0)) {
        if (odd != null) {
          odd.barrier();
        }
      }
      try (ProcessGrid<Communicator> grid = ProcessGrid.of(comm, 2, 2)) {
        grid.row().allReduce(new int[] {1}, ReduceOp.SUM);
        grid.column().broadcast(new int[] {1}, 0);
      }
      return events;
    }));
    for (int r = 0; r < 4; r++) {
      List<String> expected = new java.util.ArrayList<>(List.of("MINLOC 32 B"));
      if (r % 2 == 1) {
        expected.add("split 1: barrier");
      }
      expected.addAll(List.of("allReduce", "split 2: allReduce", "split 3: broadcast"));
      assertEquals(expected, heard.get(r), "rank " + r);
    }
  }

  private record Recorder(String prefix, List<String> events) implements CollectiveListener {
    @Override
    public void onCollective(Collective c, String algorithm, long bytes, long nanos) {
      events.add(prefix + c.apiName());
    }

    @Override
    public void onLocCollective(LocOp op, String algorithm, long bytes, long nanos) {
      events.add(prefix + op + " " + bytes + " B");
    }

    @Override
    public CollectiveListener onSplit(int split) {
      return new Recorder("split " + split + ": ", events);
    }
  }
}
