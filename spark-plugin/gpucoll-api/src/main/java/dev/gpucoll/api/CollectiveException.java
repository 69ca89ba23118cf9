package dev.gpucoll.api;

/**
 * A collective failed. The message names the rank that saw the failure, the collective and the
 * cause; {@link #rank()} and {@link #collective()} carry the same for code.
 */
public class CollectiveException extends RuntimeException {
  private final int rank;
  private final Collective collective;

  public CollectiveException(int rank, Collective collective, String problem) {
    this(rank, collective, problem, null);
  }

  public CollectiveException(int rank, Collective collective, String problem, Throwable cause) {
    super(format(rank, collective, problem), cause);
    this.rank = rank;
    this.collective = collective;
  }

  private static String format(int rank, Collective collective, String problem) {
    String where = collective == null ? "communicator setup" : collective.apiName();
    return "rank " + rank + ", " + where + ": " + problem;
  }

  /** The rank that raised this error. */
  public int rank() {
    return rank;
  }

  /** The collective in progress, or null during communicator setup. */
  public Collective collective() {
    return collective;
  }
}
