package dev.gpucoll.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class DeviceMemoryReaperTest {
  @Test
  void freesWaitForTheLastOpenCommunicatorOfTheDevice() {
    int device = 4242; // a device no other test uses
    List<String> freed = new ArrayList<>();
    DeviceMemoryReaper.opened(device);
    DeviceMemoryReaper.opened(device);
    DeviceMemoryReaper.opened(device + 1);
    DeviceMemoryReaper.closed(device, List.of(() -> freed.add("a1"), () -> freed.add("a2")));
    assertEquals(List.of(), freed, "another communicator is still open on the device");
    assertEquals(2, DeviceMemoryReaper.pending(device));
    DeviceMemoryReaper.closed(device + 1, List.of(() -> freed.add("other device")));
    assertEquals(List.of("other device"), freed);
    DeviceMemoryReaper.closed(device, List.of(() -> { throw new IllegalStateException("one free fails"); },
        () -> freed.add("b")));
    assertEquals(List.of("other device", "a1", "a2", "b"), freed, "a failing free does not stop the others");
    assertEquals(0, DeviceMemoryReaper.pending(device));
  }
}
