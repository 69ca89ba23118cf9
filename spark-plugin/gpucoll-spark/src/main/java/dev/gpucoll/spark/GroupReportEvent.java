package dev.gpucoll.spark;

import org.apache.spark.scheduler.SparkListenerEvent;

/**
 * A group's merged path report as a Spark listener event: listeners see it in {@code onOtherEvent},
 * and with {@code spark.eventLog.enabled} it lands in the event log (Spark writes events it does not
 * know with Jackson), so the History Server's log keeps which path every group took.
 *
 * @param endedAtMillis when the driver had the group's report (epoch milliseconds), i.e. when its
 *     stage's tasks had ended; 0 in event logs written before it was recorded
 */
public record GroupReportEvent(GroupReport report, long endedAtMillis) implements SparkListenerEvent {
  public GroupReportEvent(GroupReport report) {
    this(report, 0);
  }
}
