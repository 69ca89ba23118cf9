package dev.gpucoll.cudf;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.rapids.cudf.DType;
import dev.gpucoll.api.DataType;
import org.junit.jupiter.api.Test;

/** What runs without cuDF's natives or a GPU: DType mapping, refusals, partition arithmetic. */
class CudfTypesTest {

  @Test
  void reducibleTypesMapToTheSameNumbers() {
    assertEquals(DataType.INT8, CudfTypes.reduceType("c", DType.INT8));
    assertEquals(DataType.UINT8, CudfTypes.reduceType("c", DType.UINT8));
    assertEquals(DataType.INT32, CudfTypes.reduceType("c", DType.INT32));
    assertEquals(DataType.INT64, CudfTypes.reduceType("c", DType.INT64));
    assertEquals(DataType.FLOAT32, CudfTypes.reduceType("c", DType.FLOAT32));
    assertEquals(DataType.FLOAT64, CudfTypes.reduceType("c", DType.FLOAT64));
  }

  @Test
  void fixedWidthTypesWithoutAMatchingElementTypeMoveButDoNotReduce() {
    for (DType t : new DType[] {DType.UINT32, DType.INT16, DType.UINT64, DType.BOOL8,
        DType.TIMESTAMP_DAYS, DType.DURATION_NANOSECONDS, DType.create(DType.DTypeEnum.DECIMAL64, -2)}) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> CudfTypes.reduceType("column 3", t));
      assertTrue(e.getMessage().startsWith("column 3 has type " + t + ", which collectives cannot"
          + " reduce (reducible: INT8, UINT8, INT32, INT64, FLOAT32, FLOAT64)"), e.getMessage());
      assertEquals(t.getSizeInBytes(), CudfTypes.requireFixedWidth("column 3", t));
    }
    assertEquals(16, CudfTypes.requireFixedWidth("c", DType.create(DType.DTypeEnum.DECIMAL128, 0)));
    assertEquals(4, CudfTypes.requireFixedWidth("c", DType.TIMESTAMP_DAYS));
  }

  @Test
  void stringsListsStructsAndEmptyAreRefusedByName() {
    for (DType t : new DType[] {DType.STRING, DType.LIST, DType.STRUCT, DType.EMPTY}) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> CudfTypes.requireFixedWidth("column 1", t));
      assertTrue(e.getMessage().startsWith("column 1 has type " + t + ", which is not fixed-width"),
          e.getMessage());
      assertThrows(IllegalArgumentException.class, () -> CudfTypes.reduceType("column 1", t));
    }
    assertThrows(IllegalArgumentException.class, () -> CudfTypes.requireFixedWidth("c", null));
  }

  @Test
  void nullMasksAreRefused() {
    CudfTypes.requireNoNullMask("c", false, 0);
    IllegalArgumentException withNulls = assertThrows(IllegalArgumentException.class,
        () -> CudfTypes.requireNoNullMask("column 2", true, 5));
    assertTrue(withNulls.getMessage().startsWith("column 2 has a null mask (5 nulls)"), withNulls.getMessage());
    // a mask without nulls is refused too: the received column would have none
    assertThrows(IllegalArgumentException.class, () -> CudfTypes.requireNoNullMask("c", true, 0));
  }

  @Test
  void partitionOffsetsBecomeRowCountsAndDisplacements() {
    long[] rows = CudfTypes.partitionRows(new int[] {0, 3, 3, 10}, 12, 4);
    assertArrayEquals(new long[] {3, 0, 7, 2}, rows);
    assertArrayEquals(new long[] {0, 3, 3, 10}, CudfTypes.displacements(rows));
    assertArrayEquals(new long[] {24, 0, 56, 16}, CudfTypes.times(rows, 8));
    assertArrayEquals(new long[] {0, 0}, CudfTypes.partitionRows(new int[] {0, 0}, 0, 2));
    assertThrows(IllegalArgumentException.class, () -> CudfTypes.partitionRows(new int[] {0, 5}, 3, 2));
    assertThrows(IllegalArgumentException.class, () -> CudfTypes.partitionRows(new int[] {4, 2}, 6, 2));
    assertThrows(IllegalArgumentException.class, () -> CudfTypes.partitionRows(new int[] {0}, 6, 2));
    // cuDF 26.x also gives the end of the last partition, which must be the row count.
    assertArrayEquals(new long[] {3, 0, 7, 2}, CudfTypes.partitionRows(new int[] {0, 3, 3, 10, 12}, 12, 4));
    assertArrayEquals(new long[] {0, 0}, CudfTypes.partitionRows(new int[] {0, 0, 0}, 0, 2));
    IllegalArgumentException end = assertThrows(IllegalArgumentException.class,
        () -> CudfTypes.partitionRows(new int[] {0, 3, 11}, 12, 2));
    assertTrue(end.getMessage().startsWith("the partition offsets end at 11, the table has 12 rows"), end.getMessage());
    assertThrows(IllegalArgumentException.class, () -> CudfTypes.partitionRows(new int[] {0, 1, 2, 3}, 3, 2));
  }
}
