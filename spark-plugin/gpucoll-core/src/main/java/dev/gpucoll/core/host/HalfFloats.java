package dev.gpucoll.core.host;

/**
 * IEEE binary16 and bfloat16 conversions, written by hand because Java 17 has no
 * Float.float16ToFloat. Narrowing rounds to nearest, ties to even, like CUDA's __float2half_rn and
 * __float2bfloat16_rn; NaN stays NaN (quiet), overflow goes to infinity.
 */
public final class HalfFloats {
  private HalfFloats() {}

  public static float fp16ToFloat(short h) {
    int bits = h & 0xFFFF;
    int sign = (bits & 0x8000) << 16;
    int exp = (bits >>> 10) & 0x1F;
    int mant = bits & 0x3FF;
    if (exp == 0x1F) { // inf or NaN
      return Float.intBitsToFloat(sign | 0x7F800000 | (mant << 13));
    }
    if (exp == 0) {
      if (mant == 0) {
        return Float.intBitsToFloat(sign);
      }
      // subnormal: value = mant * 2^-24, exact in float
      float v = mant * 0x1p-24f;
      return sign == 0 ? v : -v;
    }
    return Float.intBitsToFloat(sign | ((exp + 112) << 23) | (mant << 13));
  }

  public static short floatToFp16(float f) {
    int bits = Float.floatToRawIntBits(f);
    int sign = (bits >>> 16) & 0x8000;
    int exp = (bits >>> 23) & 0xFF;
    int mant = bits & 0x7FFFFF;
    if (exp == 0xFF) {
      return (short) (sign | 0x7C00 | (mant != 0 ? 0x200 | (mant >>> 13) : 0));
    }
    int e = exp - 127 + 15; // rebias
    if (e >= 0x1F) {
      return (short) (sign | 0x7C00);
    }
    if (e <= 0) {
      // subnormal or zero in fp16: shift the full significand (with its implicit 1) right.
      if (e < -10) {
        return (short) sign; // below half of the smallest subnormal: rounds to zero
      }
      int sig = mant | 0x800000;
      int shift = 14 - e; // 13 to drop float's extra bits, plus 1 - e for the subnormal scale
      int half = sig >>> shift;
      int rem = sig & ((1 << shift) - 1);
      int halfway = 1 << (shift - 1);
      if (rem > halfway || (rem == halfway && (half & 1) != 0)) {
        half++; // may carry into the smallest normal, which is the right answer
      }
      return (short) (sign | half);
    }
    int half = (e << 10) | (mant >>> 13);
    int rem = mant & 0x1FFF;
    if (rem > 0x1000 || (rem == 0x1000 && (half & 1) != 0)) {
      half++; // a carry out of the mantissa bumps the exponent; up to 0x7C00 = inf, correct
    }
    return (short) (sign | half);
  }

  public static float bf16ToFloat(short b) {
    return Float.intBitsToFloat((b & 0xFFFF) << 16);
  }

  public static short floatToBf16(float f) {
    int bits = Float.floatToRawIntBits(f);
    if ((bits & 0x7FFFFFFF) > 0x7F800000) {
      return (short) ((bits >>> 16) | 0x40); // quiet NaN, keep sign and payload top bits
    }
    int lsb = (bits >>> 16) & 1;
    return (short) ((bits + 0x7FFF + lsb) >>> 16);
  }
}
