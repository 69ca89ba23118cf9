package dev.gpucoll.core.host;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.gpucoll.api.ReduceOp;
import java.util.List;
import org.junit.jupiter.api.Test;

class SmokeTest {
  @Test
  void allReduceSmallAndLarge() {
    for (int n : new int[] {2, 3}) {
      for (int count : new int[] {1, 7, 20000, 300000}) {
        List<float[]> out = Ranks.values(Ranks.run(n, Ranks.conf(), comm -> {
          float[] a = new float[count];
          for (int i = 0; i < count; i++) {
            a[i] = comm.rank() * 1000 + i % 100;
          }
          for (int k = 0; k < 3; k++) {
            comm.allReduce(a, ReduceOp.SUM);
            for (int i = 0; i < count; i++) {
              a[i] = comm.rank() * 1000 + i % 100;
            }
          }
          comm.allReduce(a, ReduceOp.SUM);
          assertEquals("host-shm", comm.backend());
          return a;
        }));
        for (int i = 0; i < count; i++) {
          float want = 0;
          for (int r = 0; r < n; r++) {
            want += r * 1000 + i % 100;
          }
          assertEquals(want, out.get(0)[i], "n=" + n + " count=" + count + " i=" + i);
        }
        for (float[] o : out) {
          assertArrayEquals(out.get(0), o);
        }
      }
    }
  }
}
