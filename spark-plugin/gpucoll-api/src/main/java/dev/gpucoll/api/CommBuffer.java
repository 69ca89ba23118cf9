package dev.gpucoll.api;

import java.nio.Buffer;
import java.nio.ByteBuffer;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.LongBuffer;
import java.nio.ShortBuffer;

/**
 * Memory a collective reads or writes: host memory (Java arrays, NIO buffers) for the host
 * backend, or a device address for the GPU backend. A buffer says where the elements are; the
 * element type and count come with each call, as in NCCL.
 */
public sealed interface CommBuffer permits CommBuffer.Host, CommBuffer.Device {

  /** Capacity in bytes from the buffer's start. */
  long byteCapacity();

  /**
   * Host memory. {@code nio} starts at its position; a {@link ByteBuffer} is read and written
   * in native byte order whatever its own order, like raw memory in NCCL. fp16/bf16 travel as
   * raw bits in {@code short[]} or a ByteBuffer.
   */
  record Host(Buffer nio) implements CommBuffer {
    public Host {
      if (nio == null) {
        throw new IllegalArgumentException("host buffer is null");
      }
      if (nio.isReadOnly()) {
        throw new IllegalArgumentException("host buffer is read-only: " + nio);
      }
    }

    @Override
    public long byteCapacity() {
      int unit = nio instanceof ByteBuffer ? 1
          : nio instanceof ShortBuffer ? 2
          : nio instanceof IntBuffer || nio instanceof FloatBuffer ? 4 : 8;
      return (long) nio.remaining() * unit;
    }
  }

  /** Device memory: a CUDA device pointer valid in this process, and its size in bytes. */
  record Device(long address, long byteCapacity) implements CommBuffer {
    public Device {
      if (address == 0) {
        throw new IllegalArgumentException("device buffer address is null (0)");
      }
      if (byteCapacity < 0) {
        throw new IllegalArgumentException("device buffer size is negative: " + byteCapacity);
      }
    }
  }

  static CommBuffer of(float[] a) {
    return new Host(FloatBuffer.wrap(a));
  }

  static CommBuffer of(double[] a) {
    return new Host(DoubleBuffer.wrap(a));
  }

  static CommBuffer of(int[] a) {
    return new Host(IntBuffer.wrap(a));
  }

  static CommBuffer of(long[] a) {
    return new Host(LongBuffer.wrap(a));
  }

  /** fp16 / bf16 raw bits. */
  static CommBuffer of(short[] a) {
    return new Host(ShortBuffer.wrap(a));
  }

  static CommBuffer of(byte[] a) {
    return new Host(ByteBuffer.wrap(a));
  }

  static CommBuffer of(Buffer nio) {
    return new Host(nio);
  }

  static CommBuffer device(long address, long byteCapacity) {
    return new Device(address, byteCapacity);
  }
}
