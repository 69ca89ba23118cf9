package dev.gpucoll.api;

/**
 * Reductions, combined over ranks 0..n-1 in rank order so every rank gets the same bits.
 *
 * <p>Integer semantics (INT8, UINT8, INT32, INT64), as NCCL's: SUM and PROD wrap around in two's
 * complement (no overflow error, no saturation); UINT8 wraps modulo 256. AVG is the wrapped SUM
 * followed by one integer division by the group size, truncating toward zero (so the average of
 * values whose sum overflows is the average of the wrapped sum). Floating-point AVG divides the
 * rank-ordered sum once.
 */
public enum ReduceOp {
  SUM,
  PROD,
  MIN,
  MAX,
  AVG
}
