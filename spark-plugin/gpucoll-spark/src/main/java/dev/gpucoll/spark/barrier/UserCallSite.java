package dev.gpucoll.spark.barrier;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;
import org.apache.spark.SparkContext;

/**
 * The user's line as the call site of the RDDs our barrier API creates, so the Spark UI's stage
 * list and DAG say {@code barrierMapPartitions at Train.java:42} rather than naming our code
 * (Spark's own rule skips only Spark and Scala frames). A call site the user set with
 * {@code sc.setCallSite} stays in force.
 *
 * <p>Internal: public for the other packages of gpucoll-spark, not for users.
 */
public final class UserCallSite {
  /** Spark's local property keys (org.apache.spark.util.CallSite.SHORT_FORM / LONG_FORM). */
  public static final String SHORT_FORM = "callSite.short";
  public static final String LONG_FORM = "callSite.long";
  /**
   * The barrier API's classes, whose frames are ours, not the user's: named, since they stand above
   * this class (PublicNamesTest holds them to their classes).
   */
  public static final String JAVA_API = "dev.gpucoll.spark.GpuCollectives";
  public static final String SCALA_API = "dev.gpucoll.spark.syntax";
  /** Frames in the long form, as Spark's spark.callstack.depth default. */
  private static final int LONG_FORM_DEPTH = 20;

  private UserCallSite() {}

  /** Runs {@code createRdd} with the call site set to the caller of {@code apiMethod}. */
  public static <T> T around(SparkContext sc, String apiMethod, Supplier<T> createRdd) {
    String userShort = sc.getLocalProperty(SHORT_FORM);
    String userLong = sc.getLocalProperty(LONG_FORM);
    if (userShort != null) {
      return createRdd.get();
    }
    List<StackTraceElement> frames = userFrames(new Throwable().getStackTrace());
    if (frames.isEmpty()) {
      return createRdd.get();
    }
    StackTraceElement first = frames.get(0);
    sc.setLocalProperty(SHORT_FORM, apiMethod + " at " + first.getFileName() + ":" + first.getLineNumber());
    StringBuilder longForm = new StringBuilder();
    for (StackTraceElement f : frames.subList(0, Math.min(LONG_FORM_DEPTH, frames.size()))) {
      longForm.append(longForm.length() == 0 ? "" : "\n").append(f);
    }
    sc.setLocalProperty(LONG_FORM, longForm.toString());
    try {
      return createRdd.get();
    } finally {
      sc.setLocalProperty(SHORT_FORM, null);
      sc.setLocalProperty(LONG_FORM, userLong);
    }
  }

  /** The stack from the first frame outside our barrier API, Spark, Scala and the JDK. */
  static List<StackTraceElement> userFrames(StackTraceElement[] stack) {
    int i = 0;
    while (i < stack.length && !isUserFrame(stack[i].getClassName())) {
      i++;
    }
    return new ArrayList<>(List.of(stack).subList(i, stack.length));
  }

  static boolean isUserFrame(String className) {
    return !(isClassOrNested(className, UserCallSite.class.getName())
        || isClassOrNested(className, JAVA_API)
        || isClassOrNested(className, SCALA_API)
        || className.startsWith("org.apache.spark.")
        || className.startsWith("scala.")
        || className.startsWith("java.")
        || className.startsWith("jdk.internal.")
        || className.startsWith("sun."));
  }

  /** {@code name} is {@code outer} or one of its nested, lambda or module classes. */
  private static boolean isClassOrNested(String name, String outer) {
    return name.equals(outer) || name.startsWith(outer + "$");
  }
}
