package dev.gpucoll.spark.rpc;

/**
 * How a barrier stage's group is named at the rendezvous: by its application, stage and attempt
 * ("app-20261204-0001-stage3.0"), so every rank of one attempt names the same group, and the driver
 * reads the stage back from the name.
 *
 * <p>Internal: public for the other packages of gpucoll-spark, not for users.
 */
public final class GroupId {
  private static final String STAGE_MARK = "-stage";

  private GroupId() {}

  /** The group of a barrier stage's attempt: "app-20261204-0001-stage3.0". */
  public static String of(String appId, int stageId, int stageAttempt) {
    return sanitize(appId) + STAGE_MARK + stageId + "." + stageAttempt;
  }

  /** The stage ("stage 3.0") a group id of {@link #of} names, or "" for another id. */
  public static String stageOf(String groupId) {
    int at = groupId.lastIndexOf(STAGE_MARK);
    String rest = at < 0 ? "" : groupId.substring(at + STAGE_MARK.length());
    return rest.matches("[0-9]+\\.[0-9]+") ? "stage " + rest : "";
  }

  private static String sanitize(String s) {
    return s == null ? "app" : s.replaceAll("[^A-Za-z0-9._-]", "_");
  }
}
