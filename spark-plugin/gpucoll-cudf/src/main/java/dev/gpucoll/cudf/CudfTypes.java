package dev.gpucoll.cudf;

import ai.rapids.cudf.DType;
import dev.gpucoll.api.DataType;

/**
 * How cuDF column types travel in collectives. Data moves (allGather, broadcast, allToAllv) take
 * any fixed-width type as bytes; reductions need an element type that means the same numbers
 * here and in cuDF. Strings, lists and structs (offsets and children) and null masks are refused
 * with an error naming the column and the reason.
 */
public final class CudfTypes {
  private CudfTypes() {}

  /** The element type an allReduce over a column of {@code type} uses. */
  public static DataType reduceType(String column, DType type) {
    requireFixedWidth(column, type);
    switch (type.getTypeId()) {
      case INT8:
        return DataType.INT8;
      case UINT8:
        return DataType.UINT8;
      case INT32:
        return DataType.INT32;
      case INT64:
        return DataType.INT64;
      case FLOAT32:
        return DataType.FLOAT32;
      case FLOAT64:
        return DataType.FLOAT64;
      default:
        throw new IllegalArgumentException(column + " has type " + type + ", which collectives"
            + " cannot reduce (reducible: INT8, UINT8, INT32, INT64, FLOAT32, FLOAT64); allGather,"
            + " broadcast and allToAllv move it as bytes");
    }
  }

  /** Bytes per row of a fixed-width column; refuses types with offsets or children. */
  public static int requireFixedWidth(String column, DType type) {
    if (type == null) {
      throw new IllegalArgumentException(column + " has no type (null)");
    }
    if (type.isNestedType() || type.hasOffsets() || type.getSizeInBytes() <= 0) {
      throw new IllegalArgumentException(column + " has type " + type + ", which is not"
          + " fixed-width: collectives move one data buffer per column, so strings, lists and"
          + " structs are not supported");
    }
    return type.getSizeInBytes();
  }

  /** Refuses a column with a null mask: the mask would be lost (or misaligned) in transit. */
  public static void requireNoNullMask(String column, boolean hasNullMask, long nullCount) {
    if (hasNullMask || nullCount > 0) {
      throw new IllegalArgumentException(column + " has a null mask (" + nullCount + " nulls):"
          + " collectives move the data buffer only; replace the nulls first"
          + " (ColumnView.replaceNulls) or drop the mask");
    }
  }

  /**
   * Rows per destination from cuDF's partition offsets ({@code PartitionedTable.getPartitions}):
   * each partition's start, and (cuDF 26.x) the end of the last one, which must be {@code rows}.
   */
  public static long[] partitionRows(int[] starts, long rows, int partitions) {
    if (starts == null || starts.length != partitions && starts.length != partitions + 1) {
      throw new IllegalArgumentException("expected " + partitions + " partition offsets (or "
          + (partitions + 1) + " with the end), got " + (starts == null ? "null" : starts.length));
    }
    if (starts.length == partitions + 1 && starts[partitions] != rows) {
      throw new IllegalArgumentException("the partition offsets end at " + starts[partitions]
          + ", the table has " + rows + " rows: " + java.util.Arrays.toString(starts));
    }
    long[] out = new long[partitions];
    for (int p = 0; p < partitions; p++) {
      long end = p + 1 < starts.length ? starts[p + 1] : rows;
      if (starts[p] < 0 || end < starts[p] || end > rows) {
        throw new IllegalArgumentException("partition offsets are not ascending within " + rows
            + " rows: " + java.util.Arrays.toString(starts));
      }
      out[p] = end - starts[p];
    }
    return out;
  }

  /** Exclusive prefix sums: where each peer's rows start. */
  public static long[] displacements(long[] counts) {
    long[] out = new long[counts.length];
    for (int i = 1; i < counts.length; i++) {
      out[i] = out[i - 1] + counts[i - 1];
    }
    return out;
  }

  /** {@code values} each multiplied by {@code factor} (rows to bytes). */
  static long[] times(long[] values, long factor) {
    long[] out = new long[values.length];
    for (int i = 0; i < values.length; i++) {
      out[i] = Math.multiplyExact(values[i], factor);
    }
    return out;
  }
}
