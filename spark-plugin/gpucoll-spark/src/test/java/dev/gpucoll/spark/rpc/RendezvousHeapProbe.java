package dev.gpucoll.spark.rpc;

import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;

/**
 * Fills a driver rendezvous to its budget with abandoned 1 MiB payloads and prints "HEAP <heap bytes
 * they hold after a full GC> <bytes charged> <payloads>", for {@link RendezvousServiceTest} (run in
 * its own JVM, so the heap and its G1 region size are a driver's).
 */
public final class RendezvousHeapProbe {
  public static void main(String[] args) {
    MemoryMXBean memory = ManagementFactory.getMemoryMXBean();
    RendezvousService service = new RendezvousService(new GroupCredential.Issuer(), new Freshness.Guard(System::nanoTime), System::nanoTime, RendezvousService.MAX_RETAINED_BYTES);
    long before = usedAfterGc(memory);
    int accepted = 0;
    while (service.arrive("probe", new RpcMessages.Arrive("heap-" + accepted, 0, 0, 2,
        new byte[RendezvousService.MAX_PAYLOAD_BYTES], 600_000, false)).failure() == null) {
      accepted++;
    }
    long used = usedAfterGc(memory) - before;
    System.out.println("HEAP " + used + " " + service.retainedBytes() + " " + accepted + " (rounds "
        + service.openRounds() + ")");
  }

  private static long usedAfterGc(MemoryMXBean memory) {
    for (int i = 0; i < 3; i++) {
      System.gc();
    }
    return memory.getHeapMemoryUsage().getUsed();
  }
}
