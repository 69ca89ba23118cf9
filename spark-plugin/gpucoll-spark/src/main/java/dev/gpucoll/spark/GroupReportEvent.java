package dev.gpucoll.spark;

import org.apache.spark.scheduler.SparkListenerEvent;

/**
 * A group's merged path report as a Spark listener event: listeners see it in {@code onOtherEvent},
 * and with {@code spark.eventLog.enabled} it lands in the event log (Spark writes events it does not
 * know with Jackson), so the History Server's log keeps which path every group took.
 */
public record GroupReportEvent(GroupReport report) implements SparkListenerEvent {}
