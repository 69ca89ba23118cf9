package dev.gpucoll.core.host;

import java.util.Optional;

/**
 * Whether this process can use UCX, asked without touching a JUCX type: {@link UcxTransport}
 * extends and calls JUCX classes, so without the JUCX jar on the class path that class fails to
 * link (a NoClassDefFoundError) before any of its code runs. This class looks for JUCX by name
 * first and only then asks {@link UcxTransport}, so a process without the jar still forms groups
 * inside one host, and a group across hosts relays (with its WARN naming this reason) or fails
 * naming the jar when {@code spark.gpucoll.host.crossHost=ucx}.
 */
final class UcxProbe {
  /** A JUCX class every use of UCX needs. */
  static final String JUCX_CLASS = "org.openucx.jucx.ucp.UcpContext";

  private UcxProbe() {}

  /**
   * A UCX transport for a communicator of {@code size} ranks whose rank runs at {@code host}; an
   * IllegalStateException saying why when this process cannot use UCX.
   */
  static PeerTransport open(int size, String host) {
    unavailableReason().ifPresent(why -> {
      throw new IllegalStateException(why);
    });
    return UcxTransport.open(size, host);
  }

  /** Empty when this process can use UCX, else why not (probed once per process, by {@link UcxTransport}). */
  static Optional<String> unavailableReason() {
    return unavailableReason(JUCX_CLASS);
  }

  /** {@link #unavailableReason()} with the JUCX class to look for (a test names one that is absent). */
  static Optional<String> unavailableReason(String jucxClass) {
    try {
      Class.forName(jucxClass, false, UcxProbe.class.getClassLoader());
    } catch (ClassNotFoundException | LinkageError e) {
      return Optional.of("JUCX, UCX's Java binding, is not on the class path (" + jucxClass + " not found): add the"
          + " jar org.openucx:jucx (the gpucoll-dist jar carries it; with gpucoll-core alone, add the dependency"
          + " org.openucx:jucx) and install UCX on every host (Debian/Ubuntu: apt-get install libucx0)");
    }
    try {
      return UcxTransport.unavailableReason();
    } catch (LinkageError e) { // a JUCX class of another version, or one missing from a partial jar
      return Optional.of("JUCX on the class path cannot be linked (" + e + "): use org.openucx:jucx as the"
          + " gpucoll-dist jar carries it");
    }
  }
}
