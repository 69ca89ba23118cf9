package dev.gpucoll.core.host;

import java.util.Optional;
import org.junit.jupiter.api.Assumptions;

/**
 * The one rule for the tests of {@code host-ucx}: they run where this JVM can use UCX (the probe the
 * backend itself asks, {@link UcxTransport#unavailableReason()}) and are skipped elsewhere, naming what
 * failed to load and the package to install. With GPUCOLL_REQUIRE_UCX set (CI, which installs libucx0)
 * a missing UCX fails them instead.
 */
final class NeedsUcx {
  /** Set (to anything but "0") where the UCX tests must run: a missing UCX then fails them. */
  static final String REQUIRE_ENV = "GPUCOLL_REQUIRE_UCX";

  private NeedsUcx() {}

  /** Returns where UCX is usable; otherwise skips the calling test, or fails it with {@link #REQUIRE_ENV} set. */
  static void assume() {
    Optional<String> why = UcxTransport.unavailableReason();
    if (why.isEmpty()) {
      return;
    }
    if (required()) {
      throw new AssertionError(REQUIRE_ENV + " is set but " + why.get());
    }
    // The reason names the library that did not load and the install line (apt-get install libucx0).
    Assumptions.abort("skipped: host-ucx needs UCX, and " + why.get() + "; set " + REQUIRE_ENV
        + "=1 to fail instead");
  }

  private static boolean required() {
    String v = System.getenv(REQUIRE_ENV);
    return v != null && !v.isBlank() && !v.equals("0");
  }
}
