package dev.gpucoll.core.report;

/** A communicator that can describe its group for the path report. */
public interface ReportingCommunicator {
  RankReport report();

  /**
   * Why this communicator can no longer run collectives (an earlier timeout, a peer gone, a
   * cancelled call), or null while it can. A cache must not lend such a communicator again.
   */
  default String unusableReason() {
    return null;
  }
}
