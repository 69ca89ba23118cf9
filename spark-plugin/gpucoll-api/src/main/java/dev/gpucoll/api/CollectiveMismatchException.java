package dev.gpucoll.api;

/** Ranks called the same collective with different arguments (count, type, op, root...). */
public class CollectiveMismatchException extends CollectiveException {
  public CollectiveMismatchException(int rank, Collective collective, String problem) {
    super(rank, collective, problem);
  }
}
