package dev.gpucoll.cuda;

import dev.gpucoll.core.buffers.HostBuffers;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.CommBuffer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.LongBuffer;
import java.nio.ShortBuffer;
import org.junit.jupiter.api.Test;

/** Host-buffer staging (what the gpu backend copies to and from the device) and allToAllv checks. */
class HostBuffersTest {

  @Test
  void bytesStartAtThePositionInNativeOrder() {
    FloatBuffer f = FloatBuffer.wrap(new float[] {9f, 1.5f, -2f, 7f});
    f.position(1);
    ByteBuffer b = HostBuffers.bytes((CommBuffer.Host) CommBuffer.of(f), 8);
    assertEquals(ByteOrder.nativeOrder(), b.order());
    assertEquals(1.5f, b.getFloat(0));
    assertEquals(-2f, b.getFloat(4));
    assertEquals(8, b.remaining());
  }

  @Test
  void writeFillsFromThePositionForEveryBufferType() {
    ByteBuffer src = ByteBuffer.allocate(16).order(ByteOrder.nativeOrder());
    src.putLong(0, 42L).putLong(8, -7L);
    long[] longs = new long[3];
    LongBuffer lb = LongBuffer.wrap(longs);
    lb.position(1);
    HostBuffers.write((CommBuffer.Host) CommBuffer.of(lb), src);
    assertArrayEquals(new long[] {0, 42, -7}, longs);

    short[] shorts = new short[8];
    HostBuffers.write((CommBuffer.Host) CommBuffer.of(ShortBuffer.wrap(shorts)), src);
    ByteBuffer check = ByteBuffer.allocate(16).order(ByteOrder.nativeOrder());
    check.asShortBuffer().put(shorts);
    assertEquals(42L, check.getLong(0));

    // A ByteBuffer is raw memory: its own byte order does not matter.
    ByteBuffer bigEndian = ByteBuffer.allocate(16).order(ByteOrder.BIG_ENDIAN);
    HostBuffers.write((CommBuffer.Host) CommBuffer.of(bigEndian), src);
    assertEquals(42L, bigEndian.order(ByteOrder.nativeOrder()).getLong(0));
  }

  @Test
  void allToAllvArgumentsAreChecked() {
    long[] ok = {1, 2};
    CollectiveException e = assertThrows(CollectiveException.class,
        () -> AllToAllvPlan.check(1, 2, ok, new long[] {0}, ok, ok));
    assertTrue(e.getMessage().contains("sendDispls must have one entry per rank (2), has 1"), e.getMessage());
    assertEquals(Collective.ALL_TO_ALLV, e.collective());
    e = assertThrows(CollectiveException.class, () -> AllToAllvPlan.check(1, 2, ok, ok, new long[] {3, -1}, ok));
    assertTrue(e.getMessage().contains("recvCounts[1] is negative"), e.getMessage());
    assertEquals(7, dev.gpucoll.core.spi.AllToAllvLayout.extent(new long[] {2, 0, 3}, new long[] {0, 100, 4}));
    assertEquals(5, AllToAllvPlan.maxBlock(new long[] {1, 5}, new long[] {4, 2}));
  }
}
