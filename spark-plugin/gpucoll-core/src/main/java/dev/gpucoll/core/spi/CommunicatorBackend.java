package dev.gpucoll.core.spi;

import dev.gpucoll.api.Communicator;
import java.util.Optional;

/**
 * A backend that can serve a group, found with {@link java.util.ServiceLoader}: the host backend
 * lives in this module, the GPU backend in gpucoll-cuda (an optional jar, as in XGBoost's GPU
 * extras).
 */
public interface CommunicatorBackend {

  /** "host" or "gpu": the values of spark.gpucoll.backend. */
  String name();

  /** Empty when this process can use the backend; otherwise why not (said once in the log). */
  Optional<String> unavailableReason();

  /**
   * What a person needs to know about this process's environment for this backend (library
   * versions, device count, why an optional part is missing), without touching any device: safe
   * at executor start. Empty by default.
   */
  default java.util.Map<String, String> environment() {
    return java.util.Map.of();
  }

  /** Facts about this process that the group needs to decide (GPU UUID, device ordinal...). */
  default java.util.Map<String, String> localFacts() {
    return java.util.Map.of();
  }

  /**
   * Makes device {@code ordinal} (e.g. a Spark task's GPU address) the one this thread's next
   * communicator uses; backends without devices ignore it. Fails when the device cannot be used.
   */
  default void useDevice(int ordinal) {}

  /** Builds this rank's communicator; may use {@code group.rendezvous()} for more exchanges. */
  Communicator create(GroupContext group);
}
