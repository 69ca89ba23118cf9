package dev.gpucoll.core;

/**
 * The cause a CollectiveException carries for an unexpected error (an InternalError from a memory
 * fault, an OutOfMemoryError, a CUDA library's Error): the original's class name, message, stack
 * trace and causes, but no Error in the cause chain. Spark ends the executor JVM when a failed
 * task's exception has a fatal error among its first causes ({@code
 * spark.executor.killOnFatalError.depth}); this way the task fails and the executor lives on.
 */
public final class UnexpectedError extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private UnexpectedError(Throwable original) {
    super(original.toString(), original.getCause() == null || original.getCause() == original ? null
        : new UnexpectedError(original.getCause()), false, true);
    setStackTrace(original.getStackTrace());
  }

  /**
   * {@code t} itself when its cause chain holds no Error (LinkageError aside, which Spark does not
   * count as fatal), else its stand-in.
   */
  public static Throwable causeFor(Throwable t) {
    int depth = 0;
    for (Throwable c = t; c != null && depth < 32; c = c.getCause(), depth++) {
      if (c instanceof Error && !(c instanceof LinkageError)) {
        return new UnexpectedError(t);
      }
    }
    return t;
  }
}
