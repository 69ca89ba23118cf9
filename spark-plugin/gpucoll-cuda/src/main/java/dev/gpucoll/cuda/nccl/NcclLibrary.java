package dev.gpucoll.cuda.nccl;

import dev.gpucoll.cuda.eligibility.FactKeys;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The libnccl.so.2 this process loaded through JavaCPP: loaded once, guardedly (no driver, no
 * library, no device: a clean {@link NcclUnavailableException} "NCCL unavailable: why", never a
 * crash), with its version and the {@link NcclCapability capabilities} that version has.
 *
 * <p>Loading {@code org.bytedeco.cuda.global.nccl} first initialises {@code global.cudart}, whose
 * JNI library needs libcuda.so.1: on a machine without a driver that fails as
 * UnsatisfiedLinkError, then as NoClassDefFoundError on every later touch. Both are caught here and
 * nowhere else.
 */
public final class NcclLibrary {
  /** Set to "true" to behave as if NCCL were absent (tests, debugging). */
  public static final String DISABLE_PROPERTY = "gpucoll.nccl.disable";

  private final int version;

  private NcclLibrary(int version) {
    this.version = version;
  }

  /** The loaded library; throws {@link NcclUnavailableException} naming why it cannot be used. */
  public static NcclLibrary get() {
    Object l = state();
    if (l instanceof NcclLibrary lib) {
      return lib;
    }
    throw new NcclUnavailableException((String) l);
  }

  /**
   * This process's NCCL facts for the group's route: {@link FactKeys#NCCL_VERSION} (0 when NCCL is
   * unusable) and then {@link FactKeys#NCCL_PROBLEM} saying why.
   */
  public static Map<String, String> facts() {
    Map<String, String> facts = new LinkedHashMap<>();
    unavailableReason().ifPresentOrElse(
        why -> {
          facts.put(FactKeys.NCCL_VERSION, "0");
          facts.put(FactKeys.NCCL_PROBLEM, why);
        },
        () -> facts.put(FactKeys.NCCL_VERSION, Integer.toString(get().version())));
    return facts;
  }

  /** Empty when NCCL is usable here, else why not. */
  public static Optional<String> unavailableReason() {
    Object l = state();
    return l instanceof String why ? Optional.of("NCCL unavailable: " + why) : Optional.empty();
  }

  /** NcclLibrary or String (the reason), loaded on first use, once per process. */
  private static Object state() {
    return Loaded.STATE;
  }

  private static final class Loaded {
    static final Object STATE = load();
  }

  private static Object load() {
    if (Boolean.getBoolean(DISABLE_PROPERTY)) {
      return "disabled by -D" + DISABLE_PROPERTY + "=true";
    }
    try {
      int v = Native.version();
      if (v <= 0) {
        return "ncclGetVersion returned " + v;
      }
      if (v < NcclCapability.COMM_INIT_RANK_CONFIG.since()) {
        return "libnccl " + versionText(v) + " is older than 2.14, the oldest this backend drives";
      }
      return new NcclLibrary(v);
    } catch (UnsatisfiedLinkError | NoClassDefFoundError | ExceptionInInitializerError e) {
      Throwable root = e;
      while (root.getCause() != null && root.getCause() != root) {
        root = root.getCause(); // the loader's own message names the missing library
      }
      return "the CUDA/NCCL libraries cannot be loaded: " + (root.getMessage() == null ? root : root.getMessage());
    } catch (RuntimeException e) {
      return "ncclGetVersion failed: " + e;
    }
  }

  /** Keeps every touch of the JavaCPP classes out of NcclLibrary's own class initialisation. */
  private static final class Native {
    static int version() {
      int[] v = new int[1];
      int rc = org.bytedeco.cuda.global.nccl.ncclGetVersion(v);
      if (rc != 0) {
        throw new IllegalStateException("ncclGetVersion: error " + rc);
      }
      return v[0];
    }
  }

  /** NCCL version code, e.g. 22803 for 2.28.3. */
  public int version() {
    return version;
  }

  public String versionText() {
    return versionText(version);
  }

  public boolean has(NcclCapability c) {
    return c.availableIn(version);
  }

  public Set<NcclCapability> capabilities() {
    Set<NcclCapability> out = EnumSet.noneOf(NcclCapability.class);
    for (NcclCapability c : NcclCapability.values()) {
      if (has(c)) {
        out.add(c);
      }
    }
    return out;
  }

  /** Throws a clear error instead of calling an entry point this libnccl lacks (which kills the JVM). */
  public void require(NcclCapability c) {
    if (!has(c)) {
      throw new UnsupportedOperationException(c.what() + " needs NCCL >= " + versionText(c.since())
          + "; the loaded libnccl.so.2 is " + versionText());
    }
  }

  /** "2.28.3" from 22803 (NCCL >= 2.9 codes major*10000 + minor*100 + patch; older major*1000 + minor*100 + patch). */
  public static String versionText(int v) {
    if (v <= 0) {
      return "none";
    }
    if (v < 10000) {
      return (v / 1000) + "." + (v % 1000) / 100 + "." + (v % 100);
    }
    return (v / 10000) + "." + (v % 10000) / 100 + "." + (v % 100);
  }
}
