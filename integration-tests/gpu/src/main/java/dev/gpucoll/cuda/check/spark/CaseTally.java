package dev.gpucoll.cuda.check.spark;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * What one stage's checks report from one rank: a "FAIL" line for each of the first wrong cases and
 * one "CHECKS stage=... memory=... rank=... cases=... failures=..." line, which the driver's summary
 * reads. Shared by the device-buffer checks (RankChecks) and the cuDF ones (CudfRankChecks).
 */
final class CaseTally {
  private final String where;
  private final int maxFailLines;
  private final List<String> lines = new ArrayList<>();
  private int cases;
  private int failures;

  CaseTally(String stage, String memory, int rank, int maxFailLines) {
    this.where = "stage=" + stage + " memory=" + memory + " rank=" + rank;
    this.maxFailLines = maxFailLines;
  }

  /** One case ran: {@code bad} is null when it was right, else what was wrong. */
  void ran(String what, String bad) {
    cases++;
    if (bad != null) {
      failures++;
      if (failures <= maxFailLines) {
        lines.add("FAIL " + where + " " + what + ": " + bad);
      }
    }
  }

  /** A problem outside any case (a stage cut short, buffers not released). */
  void fail(String what) {
    lines.add("FAIL " + where + " " + what);
  }

  /** A line of the report that is not a case (a note, a measurement). */
  void add(String line) {
    lines.add(line);
  }

  int failures() {
    return failures;
  }

  /** The report: the CHECKS line first when {@code checksFirst}, else last. */
  List<String> finish(boolean checksFirst) {
    String checks = "CHECKS " + where + " cases=" + cases + " failures=" + failures;
    if (checksFirst) {
      lines.add(0, checks);
    } else {
      lines.add(checks);
    }
    return lines;
  }

  /** Null when {@code bytes} bytes of {@code got} at {@code gotAt} equal {@code want}'s at {@code wantAt}, else the first difference. */
  static String sameBytes(ByteBuffer want, long wantAt, ByteBuffer got, long gotAt, long bytes) {
    for (long i = 0; i < bytes; i++) {
      byte w = want.get(Math.toIntExact(wantAt + i));
      byte g = got.get(Math.toIntExact(gotAt + i));
      if (w != g) {
        return "byte " + i + " is 0x" + Integer.toHexString(g & 0xFF) + ", expected 0x" + Integer.toHexString(w & 0xFF);
      }
    }
    return null;
  }
}
