package dev.gpucoll.core.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigDecimal;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class HalfFloatsTest {
  /** Every fp16 value widens exactly and narrows back to itself (NaNs stay NaN). */
  @Test
  void fp16RoundTripsEveryValue() {
    for (int h = 0; h < 0x10000; h++) {
      float f = HalfFloats.fp16ToFloat((short) h);
      int back = HalfFloats.floatToFp16(f) & 0xFFFF;
      if ((h & 0x7C00) == 0x7C00 && (h & 0x3FF) != 0) {
        assertTrue(Float.isNaN(f));
        assertEquals(0x7C00, back & 0x7C00);
        assertTrue((back & 0x3FF) != 0);
      } else {
        assertEquals(h, back, "fp16 " + Integer.toHexString(h));
      }
    }
  }

  @Test
  void fp16KnownValues() {
    assertEquals(1.0f, HalfFloats.fp16ToFloat((short) 0x3C00));
    assertEquals(65504f, HalfFloats.fp16ToFloat((short) 0x7BFF));
    assertEquals(0x1p-24f, HalfFloats.fp16ToFloat((short) 0x0001));
    assertEquals((short) 0x7C00, HalfFloats.floatToFp16(65520f)); // rounds up to infinity
    assertEquals((short) 0x7BFF, HalfFloats.floatToFp16(65519f));
    assertEquals((short) 0x0000, HalfFloats.floatToFp16(0x1p-25f)); // tie to even: 0
    assertEquals((short) 0x0001, HalfFloats.floatToFp16(0x1.0p-25f * 1.0001f));
    assertEquals((short) 0x8000, HalfFloats.floatToFp16(-0f));
    assertEquals((short) 0x3C00, HalfFloats.floatToFp16(1 + 0x1p-11f)); // tie to even: down
    assertEquals((short) 0x3C02, HalfFloats.floatToFp16(1 + 3 * 0x1p-11f)); // tie to even: up
  }

  /** Random floats narrow to the nearest fp16 / bf16, ties to even: checked against neighbours exactly. */
  @Test
  void narrowingIsNearestTiesToEven() {
    SplittableRandom rnd = new SplittableRandom(3);
    for (int k = 0; k < 200_000; k++) {
      float f = Float.intBitsToFloat(rnd.nextInt());
      if (Float.isNaN(f) || Float.isInfinite(f)) {
        continue;
      }
      checkNearest(f, HalfFloats.floatToFp16(f), false);
      checkNearest(f, HalfFloats.floatToBf16(f), true);
      float small = (float) (rnd.nextDouble(-70000, 70000));
      checkNearest(small, HalfFloats.floatToFp16(small), false);
      float tiny = (float) (rnd.nextDouble(-1e-4, 1e-4));
      checkNearest(tiny, HalfFloats.floatToFp16(tiny), false);
    }
  }

  private static void checkNearest(float f, short h, boolean bf16) {
    float got = bf16 ? HalfFloats.bf16ToFloat(h) : HalfFloats.fp16ToFloat(h);
    if (Float.isInfinite(got)) {
      float max = bf16 ? HalfFloats.bf16ToFloat((short) 0x7F7F) : 65504f;
      float ulp = bf16 ? 0x1p120f : 32f; // spacing of the largest finite value
      assertTrue(Math.abs(f) >= max + ulp / 2, f + " overflowed");
      return;
    }
    BigDecimal exact = new BigDecimal(f);
    BigDecimal err = exact.subtract(new BigDecimal(got)).abs();
    for (int d : new int[] {-1, 1}) {
      short nb = (short) (h + d);
      float other = bf16 ? HalfFloats.bf16ToFloat(nb) : HalfFloats.fp16ToFloat(nb);
      if (Float.isNaN(other) || Float.isInfinite(other) || Math.signum(other) * Math.signum(got) < 0) {
        continue;
      }
      int cmp = err.compareTo(exact.subtract(new BigDecimal(other)).abs());
      assertTrue(cmp < 0 || (cmp == 0 && (h & 1) == 0),
          f + " -> " + got + " but " + other + " is nearer or the even tie (bf16=" + bf16 + ")");
    }
  }
}
