package dev.gpucoll.spark;

import java.util.List;
import java.util.Map;
import org.apache.spark.scheduler.SparkListenerEvent;

/**
 * One executor's check, at plugin start, of the backend {@code spark.gpucoll.backend} requires, as a
 * Spark listener event (in the event log too, so the History Server has it): whether the backend can
 * run there, why not, the executor's GPU addresses and what the backend found (CUDA driver and
 * runtime versions, device count, NCCL).
 *
 * @param unavailableReason empty when the backend can run on the executor
 */
public record BackendCheckEvent(String executorId, String host, String backend, String unavailableReason,
    List<String> gpus, Map<String, String> environment) implements SparkListenerEvent {
  public boolean usable() {
    return unavailableReason.isEmpty();
  }
}
