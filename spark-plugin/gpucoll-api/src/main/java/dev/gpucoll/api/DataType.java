package dev.gpucoll.api;

/** Element types a collective can carry. 16-bit floats are reduced in fp32 and rounded once. */
public enum DataType {
  FLOAT32(4, true),
  FLOAT64(8, true),
  FLOAT16(2, true),
  BFLOAT16(2, true),
  INT32(4, false),
  INT64(8, false),
  INT8(1, false),
  UINT8(1, false);

  private final int byteSize;
  private final boolean floatingPoint;

  DataType(int byteSize, boolean floatingPoint) {
    this.byteSize = byteSize;
    this.floatingPoint = floatingPoint;
  }

  public int byteSize() {
    return byteSize;
  }

  public boolean isFloatingPoint() {
    return floatingPoint;
  }
}
