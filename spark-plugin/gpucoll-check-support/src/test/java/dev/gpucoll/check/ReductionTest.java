package dev.gpucoll.check;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.check.Reduction.Accumulation;
import dev.gpucoll.core.CommunicatorFactory;
import dev.gpucoll.core.config.GpuCollConf;
import dev.gpucoll.core.rendezvous.LocalRendezvous;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class ReductionTest {
  private static final DataType[] REDUCE_TYPES = {DataType.FLOAT32, DataType.FLOAT64, DataType.FLOAT16,
      DataType.BFLOAT16, DataType.INT32, DataType.INT64, DataType.INT8, DataType.UINT8};

  @Test
  void theCheckAcceptsTheFoldAndCatchesAWrongResult() {
    int n = 5;
    long count = 200;
    for (DataType t : REDUCE_TYPES) {
      for (ReduceOp op : ReduceOp.values()) {
        ByteBuffer[] in = inputs(11, n, t, op, count);
        long[] terms = new long[n];
        for (long i = 0; i < count; i++) {
          for (int r = 0; r < n; r++) {
            terms[r] = Elements.bits(in[r], t, i);
          }
          long right = Reduction.fold(t, op, terms);
          for (Accumulation a : Accumulation.values()) {
            assertNull(Reduction.check(t, op, terms, right, a), t + " " + op + " " + a + " element " + i);
            long wrong = t.isFloatingPoint()
                ? Elements.fromDouble(t, Elements.value(t, right) + 1 + Math.abs(Elements.value(t, right)))
                : t == DataType.INT64 ? right + 1 : Elements.fromDouble(t, Elements.value(t, right) + 1);
            assertNotNull(Reduction.check(t, op, terms, wrong, a), t + " " + op + " " + a + " element " + i);
          }
        }
      }
    }
  }

  @Test
  void firstWrongNamesTheFirstWrongElementFromTheInputOffset() {
    int n = 3;
    DataType t = DataType.INT32;
    ByteBuffer[] in = inputs(5, n, t, ReduceOp.SUM, 20);
    ByteBuffer out = ByteBuffer.allocate(10 * 4).order(java.nio.ByteOrder.nativeOrder());
    long[] terms = new long[n];
    for (int i = 0; i < 10; i++) {
      for (int r = 0; r < n; r++) {
        terms[r] = Elements.bits(in[r], t, 10 + i);
      }
      out.putInt(i * 4, (int) Reduction.fold(t, ReduceOp.SUM, terms));
    }
    assertNull(Reduction.firstWrong(t, ReduceOp.SUM, in, 10, out, 10, Accumulation.ELEMENT_TYPE));
    assertNotNull(Reduction.firstWrong(t, ReduceOp.SUM, in, 0, out, 10, Accumulation.ELEMENT_TYPE), "offset 0");
    out.putInt(7 * 4, out.getInt(7 * 4) + 1);
    String bad = Reduction.firstWrong(t, ReduceOp.SUM, in, 10, out, 10, Accumulation.ELEMENT_TYPE);
    assertTrue(bad != null && bad.startsWith("7: expected "), bad);
  }

  @Test
  void integersWrapInTheirWidthAndAveragesTruncateTowardZero() {
    assertEquals(0x00, Reduction.fold(DataType.UINT8, ReduceOp.SUM, new long[] {0xFF, 0x01}));
    assertEquals(0x80, Reduction.fold(DataType.INT8, ReduceOp.SUM, new long[] {0x7F, 0x01}), "127 + 1 wraps to -128");
    assertEquals(0xFFFFFFFFL, Reduction.fold(DataType.INT32, ReduceOp.AVG, new long[] {0xFFFFFFFDL, 0x00000001L}),
        "(-3 + 1) / 2 = -1");
    assertEquals(-1L, Reduction.fold(DataType.INT64, ReduceOp.AVG, new long[] {-4, 1}), "-3 / 2 truncates to -1");
    assertEquals(Long.MIN_VALUE, Reduction.fold(DataType.INT64, ReduceOp.SUM, new long[] {Long.MAX_VALUE, 1}));
  }

  @Test
  void sixteenBitFloatsAccumulateWideForOurKernelsOnly() {
    // 2048 + 1 + 1 in fp16: one fp32 accumulation rounds once to 2050; fp16 steps would give 2048.
    long big = Elements.fromDouble(DataType.FLOAT16, 2048);
    long one = Elements.fromDouble(DataType.FLOAT16, 1);
    long[] terms = {big, one, one};
    assertEquals(Elements.fromDouble(DataType.FLOAT16, 2050), Reduction.fold(DataType.FLOAT16, ReduceOp.SUM, terms));
    assertNull(Reduction.check(DataType.FLOAT16, ReduceOp.SUM, terms, big, Accumulation.ELEMENT_TYPE));
    assertNotNull(Reduction.check(DataType.FLOAT16, ReduceOp.SUM, terms, Elements.fromDouble(DataType.FLOAT16, 2044),
        Accumulation.WIDE_16_BIT));
  }

  /** The host backend reduces in the same order and accumulation as the reference's fold: bit for bit. */
  @Test
  void theHostBackendMatchesTheFoldBitForBit() throws Exception {
    int n = 3;
    long count = 1009;
    ExecutorService pool = Executors.newFixedThreadPool(n);
    try {
      List<Future<String>> futures = new ArrayList<>();
      for (int rank = 0; rank < n; rank++) {
        int r = rank;
        futures.add(pool.submit(() -> {
          GpuCollConf conf = GpuCollConf.of(Map.of("spark.gpucoll.backend", "host", "spark.gpucoll.timeout", "30s"));
          try (LocalRendezvous rv = LocalRendezvous.join("reduction-reference", r, n);
              Communicator comm = CommunicatorFactory.create(rv, conf, "localhost")) {
            long seed = 0;
            for (DataType t : REDUCE_TYPES) {
              for (ReduceOp op : ReduceOp.values()) {
                seed++;
                ByteBuffer[] in = inputs(seed, n, t, op, count);
                ByteBuffer out = ByteBuffer.allocateDirect((int) (count * t.byteSize())).order(in[r].order());
                ByteBuffer send = ByteBuffer.allocateDirect(in[r].capacity()).order(in[r].order());
                send.put(0, in[r], 0, in[r].capacity());
                comm.allReduce(CommBuffer.of(send), CommBuffer.of(out), count, t, op);
                long[] terms = new long[n];
                for (long i = 0; i < count; i++) {
                  for (int q = 0; q < n; q++) {
                    terms[q] = Elements.bits(in[q], t, i);
                  }
                  long got = Elements.bits(out, t, i);
                  if (got != Reduction.fold(t, op, terms)) {
                    return "rank " + r + " " + t + " " + op + " [" + i + "]: " + Elements.value(t, got) + " != fold "
                        + Elements.value(t, Reduction.fold(t, op, terms));
                  }
                }
              }
            }
          }
          return null;
        }));
      }
      for (Future<String> f : futures) {
        assertNull(f.get(120, TimeUnit.SECONDS));
      }
    } finally {
      pool.shutdownNow();
    }
  }

  private static ByteBuffer[] inputs(long seed, int n, DataType t, ReduceOp op, long count) {
    ByteBuffer[] in = new ByteBuffer[n];
    for (int r = 0; r < n; r++) {
      in[r] = Elements.input(seed, r, t, op, count);
    }
    return in;
  }
}
