package dev.gpucoll.cusolvermp;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.linalg.Descriptor;
import org.junit.jupiter.api.Test;

/** Descriptor to cuSOLVERMp's arguments, and the checks made before any call. */
class ArgumentsTest {

  @Test
  void aDescriptorMapsFieldForFieldWithOneBasedSubmatrixIndices() {
    // 1000 x 700 in 64 x 32 blocks over 2 x 3, first block on process (1, 2), a padded LLD
    Descriptor d = new Descriptor(1000, 700, 64, 32, 1, 2, 2, 3, 520);
    MatrixArguments x = MatrixArguments.of(d);
    assertEquals(new MatrixArguments(1000, 700, 64, 32, 1, 2, 520, 1, 1), x);
  }

  @Test
  void theSmallestLldIsTheLargestProcessRowsLocalRows() {
    // 1000 rows in blocks of 64 over 2 process rows from row 0: 16 blocks (the last of 40 rows), 8 + 8
    Descriptor d = Descriptor.of(1000, 1000, 64, 64, 2, 2);
    assertEquals(512, MatrixArguments.of(d).lld());
    // one process: the whole column
    assertEquals(2048, MatrixArguments.of(Descriptor.of(2048, 2048, 256, 256, 1, 1)).lld());
  }

  @Test
  void theGridMappingIsRowMajorAsProcessGrid() {
    // cusolverMp.h 0.8: CUSOLVERMP_GRID_MAPPING_ROW_MAJOR = 1, COL_MAJOR = 0
    assertEquals(1, CuSolverMp.GRID_MAPPING_ROW_MAJOR);
    Descriptor d = Descriptor.of(8, 8, 2, 2, 2, 3);
    assertEquals(4, d.rank(1, 1), "rank = prow * Q + pcol: what ROW_MAJOR means for cuSOLVERMp's grid");
  }

  @Test
  void typesAndTrianglesAreTheHeadersValues() {
    assertEquals(1, CuSolverMp.CUDA_R_64F);
    assertEquals(0, CuSolverMp.CUBLAS_OP_N);
    assertEquals(0, CuSolverMp.Fill.LOWER.cublas);
    assertEquals(1, CuSolverMp.Fill.UPPER.cublas);
  }

  @Test
  void pivotArraysHoldTheLocalRowsAndOneBlock() {
    Descriptor d = Descriptor.of(1000, 1000, 64, 64, 2, 2);
    assertEquals(512 + 64, CuSolverMp.pivotCount(d, 0));
    assertEquals(488 + 64, CuSolverMp.pivotCount(d, 1));
  }

  @Test
  void solvesNeedASquareAAndBWithItsOrder() {
    Descriptor a = Descriptor.of(100, 100, 32, 32, 1, 1);
    assertDoesNotThrow(() -> CuSolverMp.checkSolve(a, Descriptor.of(100, 3, 32, 32, 1, 1), "getrs"));
    IllegalArgumentException rows = assertThrows(IllegalArgumentException.class,
        () -> CuSolverMp.checkSolve(a, Descriptor.of(99, 1, 32, 32, 1, 1), "getrs"));
    assertTrue(rows.getMessage().contains("B has 99 rows"), rows.getMessage());
    IllegalArgumentException square = assertThrows(IllegalArgumentException.class,
        () -> CuSolverMp.checkSolve(Descriptor.of(100, 90, 32, 32, 1, 1), a, "potrs"));
    assertTrue(square.getMessage().startsWith("potrs: A must be square"), square.getMessage());
    IllegalArgumentException grid = assertThrows(IllegalArgumentException.class,
        () -> CuSolverMp.checkSolve(a, Descriptor.of(100, 1, 32, 32, 1, 2), "getrs"));
    assertTrue(grid.getMessage().contains("1 x 2 grid"), grid.getMessage());
  }

  @Test
  void statusesAreNamed() {
    assertEquals("CUSOLVER_STATUS_INVALID_VALUE", CuSolverMp.statusName(3));
    assertEquals("CUSOLVER_STATUS_INTERNAL_ERROR", CuSolverMp.statusName(7));
    assertEquals("cusolverStatus_t 99", CuSolverMp.statusName(99));
  }
}
