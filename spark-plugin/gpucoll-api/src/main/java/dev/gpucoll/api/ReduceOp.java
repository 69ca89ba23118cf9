package dev.gpucoll.api;

/**
 * Reductions. AVG is SUM followed by one division by the group size; on integer types it
 * truncates toward zero, as NCCL's ncclAvg does.
 */
public enum ReduceOp {
  SUM,
  PROD,
  MIN,
  MAX,
  AVG
}
