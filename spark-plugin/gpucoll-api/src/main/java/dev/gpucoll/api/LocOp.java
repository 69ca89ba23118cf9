package dev.gpucoll.api;

/**
 * Reductions of value-index pairs ({@link PairType}), as MPI_MAXLOC and MPI_MINLOC: the result is
 * the largest (smallest) value and its index; among equal values the lowest index wins, on every
 * backend and path, so the result does not depend on the order of the ranks. Values compare as
 * numbers (-0.0 equals +0.0; the winning pair's value is returned as it was sent). NaN values are
 * refused: the call fails on every rank with a {@link CollectiveException} naming the rank and
 * element that holds one (MPI leaves NaN unspecified; a pivot search must not pick one).
 */
public enum LocOp {
  MAXLOC,
  MINLOC
}
