package dev.gpucoll.core.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * UCX's "UCP API version is incompatible" warning (JUCX 1.15 on UCX 1.13.1) stays off in a plain
 * JVM, outside Spark and without UCX_LOG_LEVEL in its environment, and a UCX_LOG_LEVEL that is set
 * stands. Each case runs in a child JVM: UCX's log level is its process's.
 */
class UcxLogLevelTest {
  private static final String WARNING = "UCP API version is incompatible";

  /** The child: the probe's context, then one limited to loopback, as a group across hosts makes them. */
  public static void main(String[] args) {
    if (UcxTransport.unavailableReason().isPresent()) {
      System.exit(3);
    }
    UcxTransport.quietContext("lo").close();
    System.out.println("contexts made");
  }

  @Test
  void theVersionWarningIsOffWithoutUcxLogLevelAndAUcxLogLevelThatIsSetStands() throws Exception {
    NeedsUcx.assume();
    String loud = child("warn");
    Assumptions.assumeTrue(loud.contains(WARNING), "this UCX warns of no API version: nothing to silence");
    assertEquals(2, count(loud), "one warning per context at UCX_LOG_LEVEL=warn: " + loud);
    String quiet = child(null);
    assertTrue(quiet.contains("contexts made"), quiet);
    assertFalse(quiet.contains(WARNING), quiet);
    assertFalse(quiet.contains("UCX  WARN"), quiet);
  }

  private static int count(String out) {
    return out.split(WARNING, -1).length - 1;
  }

  /** The child's stdout and stderr (UCX logs to stdout), with UCX_LOG_LEVEL as given (null: unset). */
  private static String child(String ucxLogLevel) throws Exception {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    ProcessBuilder pb = new ProcessBuilder(List.of(java, "-Xmx128m", "-cp",
        System.getProperty("surefire.test.class.path", System.getProperty("java.class.path")),
        UcxLogLevelTest.class.getName())).redirectErrorStream(true);
    pb.environment().remove("UCX_LOG_LEVEL");
    if (ucxLogLevel != null) {
      pb.environment().put("UCX_LOG_LEVEL", ucxLogLevel);
    }
    Process p = pb.start();
    byte[] out = p.getInputStream().readAllBytes();
    assertTrue(p.waitFor(60, TimeUnit.SECONDS));
    String text = new String(out, StandardCharsets.UTF_8);
    assertEquals(0, p.exitValue(), text);
    return text;
  }
}
