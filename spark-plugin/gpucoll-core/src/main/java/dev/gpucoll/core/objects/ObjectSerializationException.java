package dev.gpucoll.core.objects;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CollectiveException;
import java.util.List;

/**
 * An object collective could not serialize the object of one or more ranks. Raised on every rank
 * of the group (the ranks agree on the failure before any object bytes move), naming each failed
 * rank and the class of its object.
 */
public class ObjectSerializationException extends CollectiveException {
  private final List<Integer> failedRanks;

  public ObjectSerializationException(int rank, Collective collective, String problem,
      List<Integer> failedRanks) {
    super(rank, collective, problem);
    this.failedRanks = List.copyOf(failedRanks);
  }

  /** The ranks whose object could not be serialized, in rank order. */
  public List<Integer> failedRanks() {
    return failedRanks;
  }
}
