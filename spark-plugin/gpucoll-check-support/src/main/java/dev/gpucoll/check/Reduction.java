package dev.gpucoll.check;

import dev.gpucoll.api.DataType;
import dev.gpucoll.api.ReduceOp;
import java.nio.ByteBuffer;

/**
 * The reduction rules every implementation must meet, checked per output element from every
 * rank's input bits: integers exact (wrapping in their width; AVG truncates toward zero, as
 * ncclAvg), MIN and MAX exact, float sums, averages and products within a rounding bound of the
 * float64 reference. {@link #fold} is the exact result of our kernels and the host backend: a
 * fold over ranks 0..n-1, 16-bit floats accumulated in fp32 and rounded once.
 */
public final class Reduction {
  private Reduction() {}

  /** How an implementation may accumulate, which sets the rounding bound of float results. */
  public enum Accumulation {
    /** 16-bit floats in fp32, others in their own type: our kernels and the host backend. */
    WIDE_16_BIT,
    /** Every type in its own width: any path, NCCL included (it may accumulate fp16 in fp16). */
    ELEMENT_TYPE
  }

  /** The exact rank-order fold of {@code terms} (rank r's bits at index r), as bits of {@code t}. */
  public static long fold(DataType t, ReduceOp op, long[] terms) {
    int n = terms.length;
    switch (t) {
      case FLOAT32, FLOAT16, BFLOAT16 -> {
        float acc = (float) Elements.value(t, terms[0]);
        for (int r = 1; r < n; r++) {
          float x = (float) Elements.value(t, terms[r]);
          acc = switch (op) {
            case SUM, AVG -> acc + x;
            case PROD -> acc * x;
            case MIN -> x < acc ? x : acc;
            case MAX -> acc < x ? x : acc;
          };
        }
        return Elements.fromDouble(t, op == ReduceOp.AVG ? acc / n : acc);
      }
      case FLOAT64 -> {
        double acc = Elements.value(t, terms[0]);
        for (int r = 1; r < n; r++) {
          double x = Elements.value(t, terms[r]);
          acc = switch (op) {
            case SUM, AVG -> acc + x;
            case PROD -> acc * x;
            case MIN -> x < acc ? x : acc;
            case MAX -> acc < x ? x : acc;
          };
        }
        return Double.doubleToRawLongBits(op == ReduceOp.AVG ? acc / n : acc);
      }
      case INT64 -> {
        long acc = terms[0];
        for (int r = 1; r < n; r++) {
          acc = combine(op, acc, terms[r]);
        }
        return op == ReduceOp.AVG ? acc / n : acc;
      }
      default -> {
        // int32 and the 8-bit integers in int: wrapping at the end equals wrapping each step.
        long acc = (long) Elements.value(t, terms[0]);
        for (int r = 1; r < n; r++) {
          acc = (int) combine(op, acc, (long) Elements.value(t, terms[r]));
        }
        if (op == ReduceOp.AVG) {
          acc = (long) Elements.value(t, Elements.fromDouble(t, acc)) / n;
        }
        return Elements.fromDouble(t, acc);
      }
    }
  }

  private static long combine(ReduceOp op, long acc, long x) {
    return switch (op) {
      case SUM, AVG -> acc + x;
      case PROD -> acc * x;
      case MIN -> Math.min(acc, x);
      case MAX -> Math.max(acc, x);
    };
  }

  /** Unit roundoff of a float type's storage; 0 for integers. */
  public static double unitRoundoff(DataType t) {
    return switch (t) {
      case FLOAT32 -> 0x1p-24;
      case FLOAT64 -> 0x1p-53;
      case FLOAT16 -> 0x1p-11;
      case BFLOAT16 -> 0x1p-8;
      default -> 0;
    };
  }

  /**
   * Checks {@code count} reduced elements: element {@code i} of {@code out} against element
   * {@code inAt + i} of every rank's input ({@code in[r]}), each by {@link #check}.
   *
   * @return null when all are right, else the first wrong index and what is wrong with it
   */
  public static String firstWrong(DataType t, ReduceOp op, ByteBuffer[] in, long inAt, ByteBuffer out, long count,
      Accumulation accumulation) {
    long[] terms = new long[in.length];
    for (long i = 0; i < count; i++) {
      for (int r = 0; r < in.length; r++) {
        terms[r] = Elements.bits(in[r], t, inAt + i);
      }
      String bad = check(t, op, terms, Elements.bits(out, t, i), accumulation);
      if (bad != null) {
        return i + ": " + bad;
      }
    }
    return null;
  }

  /**
   * Checks one reduced element: integers and MIN/MAX against the exact fold; float sums, averages
   * and products within 2n roundings of the accumulation type on the terms' magnitude, one
   * rounding to the output type, and the output type's smallest subnormal step.
   *
   * @param terms rank r's input bits at index r
   * @return null when right, else what was expected and what came
   */
  public static String check(DataType t, ReduceOp op, long[] terms, long outBits, Accumulation accumulation) {
    if (!t.isFloatingPoint()) {
      long expect = fold(t, op, terms);
      return expect == outBits ? null
          : "expected " + (long) Elements.value(t, expect) + ", got " + (long) Elements.value(t, outBits);
    }
    int n = terms.length;
    double ref = op == ReduceOp.PROD ? 1 : op == ReduceOp.MIN || op == ReduceOp.MAX ? Elements.value(t, terms[0]) : 0;
    double magnitude = 0;
    for (long bits : terms) {
      double x = Elements.value(t, bits);
      switch (op) {
        case SUM, AVG -> {
          ref += x;
          magnitude += Math.abs(x);
        }
        case PROD -> ref *= x;
        case MIN -> ref = Math.min(ref, x);
        case MAX -> ref = Math.max(ref, x);
      }
    }
    if (op == ReduceOp.AVG) {
      ref /= n;
      magnitude /= n;
    } else if (op == ReduceOp.PROD) {
      magnitude = Math.abs(ref);
    }
    double out = Elements.value(t, outBits);
    if (Double.isNaN(out)) {
      return "NaN (reference " + ref + ")";
    }
    if (op == ReduceOp.MIN || op == ReduceOp.MAX) {
      return out == ref ? null : "expected " + ref + ", got " + out;
    }
    double accU = accumulation == Accumulation.ELEMENT_TYPE || t == DataType.FLOAT64 ? unitRoundoff(t) : 0x1p-24;
    double subnormalStep = t == DataType.FLOAT16 ? 0x1p-24 : t == DataType.BFLOAT16 ? 0x1p-133 : Double.MIN_NORMAL;
    double bound = 2 * n * accU * magnitude + unitRoundoff(t) * Math.abs(ref) * 1.0001 + subnormalStep;
    double err = Math.abs(out - ref);
    return err <= bound ? null : "expected " + ref + ", got " + out + " (|err| " + err + " > bound " + bound + ")";
  }
}
