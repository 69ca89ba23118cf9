package dev.gpucoll.core.spi;

import dev.gpucoll.api.Collective;

/**
 * A communicator that takes part in a call its caller refused before making it (the caller's own
 * checks of its arguments, as the Python package's): the call goes out refused, as one the
 * communicator's own checks refuse, so every peer fails at once, told that this rank refused its
 * call and why, and the group goes on.
 */
public interface RefusingCommunicator {
  /**
   * Takes part in {@code collective} (MAXLOC / MINLOC for {@code pairs}) refused for {@code reason};
   * throws this rank's {@link dev.gpucoll.api.InvalidArgumentException} once every peer has seen it.
   */
  void refuse(Collective collective, boolean pairs, String reason);
}
