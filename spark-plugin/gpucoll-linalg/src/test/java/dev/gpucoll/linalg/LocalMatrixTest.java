package dev.gpucoll.linalg;

import static dev.gpucoll.linalg.Dealt.same;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * Scatter and gather for every descriptor small enough to enumerate: each process's part holds
 * exactly the elements the hand-dealt blocks give it, every global element is held once, and the
 * gathers of all parts give back the matrix without touching anything else.
 */
class LocalMatrixTest {
  @Test
  void aGeneratedPartIsTheScatteredPartOfTheWholeMatrix() {
    int descriptors = 0;
    for (Descriptor minimal : DescriptorTest.everyDescriptor()) {
      Descriptor d = minimal.withLld(minimal.lld() + minimal.n() % 2);
      int m = d.m();
      double[] global = new double[Math.max(1, m) * d.n()];
      for (int k = 0; k < global.length; k++) {
        global[k] = k + 0.25;
      }
      for (int p = 0; p < d.gridRows(); p++) {
        for (int q = 0; q < d.gridCols(); q++) {
          LocalMatrix made = LocalMatrix.generate(d, p, q, (i, j) -> i + j * Math.max(1, m) + 0.25);
          assertTrue(java.util.Arrays.equals(LocalMatrix.scatter(global, Math.max(1, m), d, p, q).data(), made.data()),
              d + " at (" + p + ", " + q + ")");
        }
      }
      descriptors++;
    }
    assertTrue(descriptors > 1000, descriptors + " descriptors");
    assertThrows(IllegalArgumentException.class, () -> LocalMatrix.generate(Descriptor.of(2, 2, 1, 1, 1, 1), 0, 0, null));
  }

  @Test
  void scatterThenGatherIsTheIdentityAndEveryElementHasOneOwner() {
    int descriptors = 0;
    for (Descriptor minimal : DescriptorTest.everyDescriptor()) {
      // A larger LLD on some: its padding rows must stay out of every copy.
      Descriptor d = minimal.withLld(minimal.lld() + minimal.m() % 3);
      int m = d.m();
      int n = d.n();
      int ld = m + 2; // two rows of padding in the global array too
      double[] global = new double[ld * n];
      for (int k = 0; k < global.length; k++) {
        global[k] = k % ld < m ? k + 0.5 : -1;
      }
      double[] back = new double[ld * n];
      java.util.Arrays.fill(back, Double.NaN);
      int[] held = new int[ld * n];
      Dealt rows = Dealt.of(m, d.mb(), d.gridRows(), d.rsrc());
      Dealt cols = Dealt.of(n, d.nb(), d.gridCols(), d.csrc());
      for (int p = 0; p < d.gridRows(); p++) {
        for (int q = 0; q < d.gridCols(); q++) {
          LocalMatrix part = LocalMatrix.scatter(global, ld, d, p, q);
          assertEquals(rows.count[p], part.rows());
          assertEquals(cols.count[q], part.cols());
          assertEquals(d.lld() * part.cols(), part.data().length);
          for (int lj = 0; lj < part.cols(); lj++) {
            for (int li = 0; li < part.rows(); li++) {
              int at = rows.global[p][li] + cols.global[q][lj] * ld;
              same(global[at], part.get(li, lj), d, ": process (", p, ", ", q, ") local (", li, ", ", lj, ")");
              held[at]++;
            }
            for (int pad = part.rows(); pad < d.lld(); pad++) {
              same(0.0, part.data()[pad + lj * d.lld()], d, ": padding of process (", p, ", ", q, ")");
            }
          }
          part.gather(back, ld);
        }
      }
      for (int k = 0; k < global.length; k++) {
        boolean inMatrix = k % ld < m;
        same(inMatrix ? 1 : 0, held[k], d, ": processes holding global element ", k);
        if (inMatrix) {
          same(global[k], back[k], d, ": gathered element ", k);
        } else {
          same(1, Double.isNaN(back[k]) ? 1 : 0, d, ": gather wrote the global array's padding at ", k);
        }
      }
      descriptors++;
    }
    assertTrue(descriptors > 100_000, "descriptors " + descriptors);
  }

  @Test
  void localElementsAreColumnMajorWithTheLld() {
    Descriptor d = Descriptor.of(10, 7, 3, 2, 1, 0, 2, 3).withLld(8);
    LocalMatrix part = LocalMatrix.allocate(d, 0, 2);
    assertEquals(4, part.rows());
    assertEquals(2, part.cols());
    part.set(3, 1, 7.0);
    assertEquals(7.0, part.data()[3 + 8]);
    double[] mine = new double[16];
    LocalMatrix wrapped = LocalMatrix.wrap(d, 0, 2, mine);
    wrapped.set(1, 0, 2.0);
    assertEquals(2.0, mine[1], "wrap does not copy");
    assertThrows(IndexOutOfBoundsException.class, () -> part.get(4, 0));
    assertThrows(IndexOutOfBoundsException.class, () -> part.get(0, 2));
  }

  @Test
  void shortArraysAreRefusedWithWhatTheyNeed() {
    Descriptor d = Descriptor.of(10, 7, 3, 2, 1, 0, 2, 3);
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> LocalMatrix.wrap(d, 0, 2, new double[11]));
    assertEquals("process (0, 2)'s local array has 11 elements; LLD 6 x 2 local columns needs 12", e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> LocalMatrix.scatter(new double[100], 9, d, 0, 0));
    assertEquals("ldGlobal = 9 is below max(1, M = 10)", e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> LocalMatrix.scatter(new double[69], 10, d, 0, 0));
    assertEquals("the global array has 69 elements; 10 x 7 with leading dimension 10 needs 70", e.getMessage());
    LocalMatrix.scatter(new double[12 * 6 + 10], 12, d, 1, 1); // the last column needs M elements only, not ldGlobal
  }
}
