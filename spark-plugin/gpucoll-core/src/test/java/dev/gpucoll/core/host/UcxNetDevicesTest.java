package dev.gpucoll.core.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.NetworkInterface;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/** Which network devices a group's UCX workers may listen on: the executor address's interface, not every one. */
class UcxNetDevicesTest {
  @Test
  void theInterfaceHoldingTheAddressAndNoOther() throws Exception {
    Assumptions.assumeTrue(System.getenv("UCX_NET_DEVICES") == null, "UCX_NET_DEVICES is set: the user's choice stands");
    String lo = NetworkInterface.getByInetAddress(java.net.InetAddress.getLoopbackAddress()).getName();
    String devices = UcxTransport.netDevicesFor("127.0.0.1");
    assertTrue(devices.equals(lo) || devices.startsWith(lo + ","), devices);
    for (String d : devices.split(",")) {
      assertTrue(d.equals(lo) || d.contains(":"), "an interface other than the address's: " + d + " in " + devices);
    }
  }

  @Test
  void anAddressOnNoLocalInterfaceLeavesTheChoiceToUcx() {
    assertNull(UcxTransport.netDevicesFor("192.0.2.77")); // TEST-NET-1: on no interface of this machine
    assertNull(UcxTransport.netDevicesFor("no-such-host.invalid"));
    assertNull(UcxTransport.netDevicesFor(null));
  }

  @Test
  void tcpAloneSendsEagerAtEverySizeUnlessTheEnvironmentSaysOtherwise() {
    assertEquals(java.util.Map.of("NET_DEVICES", "eth0", "RNDV_THRESH", "inf"),
        UcxTransport.settingsFor("eth0", java.util.Map.of()));
    assertEquals(java.util.Map.of("NET_DEVICES", "eth0"),
        UcxTransport.settingsFor("eth0", java.util.Map.of("UCX_RNDV_THRESH", "64k")));
    assertEquals(java.util.Map.of("NET_DEVICES", "eth0,mlx5_0:1"),
        UcxTransport.settingsFor("eth0,mlx5_0:1", java.util.Map.of()), "an RDMA port keeps UCX's rendezvous");
    assertEquals(java.util.Map.of(), UcxTransport.settingsFor(null, java.util.Map.of()));
  }

  @Test
  void aWorkerOnTheLimitedContextHasAnAddress() {
    NeedsUcx.assume();
    UcxTransport t = UcxTransport.open(1, "127.0.0.1");
    try {
      assertTrue(t.address().length > 0);
    } finally {
      t.close();
    }
    assertEquals(UcxTransport.netDevicesFor("127.0.0.1"), UcxTransport.netDevicesFor("127.0.0.1"));
  }
}
