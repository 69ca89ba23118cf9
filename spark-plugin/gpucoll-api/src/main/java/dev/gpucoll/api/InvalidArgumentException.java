package dev.gpucoll.api;

/**
 * This rank's own arguments were refused (a root outside the group, a buffer smaller than the call
 * needs, counts out of range...). The call went out refused, so every peer failed too, told which
 * rank refused its call and why; nothing moved and the group goes on.
 */
public class InvalidArgumentException extends CollectiveException {
  public InvalidArgumentException(int rank, Collective collective, String problem) {
    super(rank, collective, problem);
  }

  public InvalidArgumentException(int rank, Collective collective, String problem, Throwable cause) {
    super(rank, collective, problem, cause);
  }
}
