package dev.gpucoll.core.wait;

/** The host's cores, and the one rule of whether the waits of a host may spin on them. */
public final class HostCores {
  private HostCores() {}

  /**
   * The host's online CPUs (/sys/devices/system/cpu/online), not this process's share of them:
   * the ranks of a host are separate processes, each limited to its own share by its container or
   * affinity, but they compete for the same cores.
   */
  public static int online() {
    try {
      int n = 0;
      for (String range : java.nio.file.Files.readString(java.nio.file.Path.of("/sys/devices/system/cpu/online"))
          .trim().split(",")) {
        String[] ends = range.split("-");
        n += ends.length == 1 ? 1 : Integer.parseInt(ends[1]) - Integer.parseInt(ends[0]) + 1;
      }
      return Math.max(1, n);
    } catch (java.io.IOException | RuntimeException e) {
      return Runtime.getRuntime().availableProcessors();
    }
  }

  /**
   * More threads of this host wait than it has cores: a spinning waiter then takes the very core
   * the one it waits for needs, so waits must not spin.
   */
  public static boolean oversubscribed(int waitersOnHost, int cores) {
    return waitersOnHost > cores;
  }
}
