package dev.gpucoll.core.report;

/** A communicator that can describe its group for the path report. */
public interface ReportingCommunicator {
  RankReport report();
}
