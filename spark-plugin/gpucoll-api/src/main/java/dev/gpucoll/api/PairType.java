package dev.gpucoll.api;

/**
 * Value-index pairs for {@link LocOp#MAXLOC} and {@link LocOp#MINLOC}, as MPI's pair types
 * ({@code MPI_FLOAT_INT}, {@code MPI_DOUBLE_INT}, {@code MPI_2INT}, {@code MPI_LONG_INT}, ...).
 *
 * <p>Layout (the C struct {@code {value; index;}} of the two types, as MPI and a CUDA kernel see it):
 * each pair is two slots of the wider of the two types, the value in the first slot, the index in
 * the second, each at the start of its slot, in native byte order; pairs follow each other with no
 * gap. So FLOAT32_INT32 and INT32_INT32 pairs are 8 bytes (index at byte 4), every other pair type
 * 16 bytes (index at byte 8; the 4 bytes after a 4-byte member are padding, not read). On the host
 * the pairs travel in a {@link java.nio.ByteBuffer} (read in native byte order whatever its own
 * order, like every ByteBuffer of this API), e.g. for FLOAT64_INT32 pair i:
 * {@code buf.putDouble(16 * i, value).putInt(16 * i + 8, index)}.
 */
public enum PairType {
  FLOAT32_INT32(DataType.FLOAT32, DataType.INT32),
  FLOAT32_INT64(DataType.FLOAT32, DataType.INT64),
  FLOAT64_INT32(DataType.FLOAT64, DataType.INT32),
  FLOAT64_INT64(DataType.FLOAT64, DataType.INT64),
  INT32_INT32(DataType.INT32, DataType.INT32),
  INT32_INT64(DataType.INT32, DataType.INT64),
  INT64_INT32(DataType.INT64, DataType.INT32),
  INT64_INT64(DataType.INT64, DataType.INT64);

  private final DataType value;
  private final DataType index;

  PairType(DataType value, DataType index) {
    this.value = value;
    this.index = index;
  }

  /** The value's type: FLOAT32, FLOAT64, INT32 or INT64. */
  public DataType value() {
    return value;
  }

  /** The index's type: INT32 or INT64 (signed). */
  public DataType index() {
    return index;
  }

  /** Byte offset of the index inside a pair: the width of the wider member. */
  public int indexOffset() {
    return Math.max(value.byteSize(), index.byteSize());
  }

  /** Bytes per pair, padding included: 8 or 16. */
  public int byteSize() {
    return 2 * indexOffset();
  }
}
