package dev.gpucoll.cuda;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Frees a closed communicator's memory only once no gpu communicator of this process is open on the
 * same device. cudaFree / cudaFreeHost wait for the whole device; a rank thread freeing while another
 * group's kernel spins waiting for that very thread's next launch would stall until the kernel's
 * timeout (seen on the H200: split children closed while the parent's next allReduce was already
 * waiting for them). Deferred memory is bounded by the communicators closed while others stay open.
 */
final class DeviceMemoryReaper {
  private static final Logger LOG = Logger.getLogger(DeviceMemoryReaper.class.getName());
  private static final Map<Integer, Integer> OPEN = new HashMap<>();
  private static final Map<Integer, List<Runnable>> PENDING = new HashMap<>();

  private DeviceMemoryReaper() {}

  /** A communicator on {@code device} was formed. */
  static synchronized void opened(int device) {
    OPEN.merge(device, 1, Integer::sum);
  }

  /**
   * A communicator on {@code device} closed; {@code frees} run now if it was the last open one there,
   * else when the last one closes.
   */
  static void closed(int device, List<Runnable> frees) {
    List<Runnable> run = null;
    synchronized (DeviceMemoryReaper.class) {
      PENDING.computeIfAbsent(device, d -> new ArrayList<>()).addAll(frees);
      int open = OPEN.merge(device, -1, Integer::sum);
      if (open <= 0) {
        OPEN.remove(device);
        run = PENDING.remove(device);
      }
    }
    if (run != null) {
      for (Runnable r : run) {
        try {
          r.run();
        } catch (RuntimeException e) {
          LOG.log(Level.WARNING, "freeing gpucoll memory on device " + device + " failed", e);
        }
      }
    }
  }

  /** Frees waiting on {@code device} (for tests and reports). */
  static synchronized int pending(int device) {
    List<Runnable> p = PENDING.get(device);
    return p == null ? 0 : p.size();
  }
}
