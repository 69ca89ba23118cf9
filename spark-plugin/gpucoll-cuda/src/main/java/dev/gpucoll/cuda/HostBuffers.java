package dev.gpucoll.cuda;

import dev.gpucoll.api.CommBuffer;
import java.nio.Buffer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.LongBuffer;
import java.nio.ShortBuffer;

/** Copies between {@link CommBuffer.Host} buffers (any NIO type, from their position) and raw bytes. */
final class HostBuffers {
  private HostBuffers() {}

  /** The first {@code bytes} bytes of a host buffer, in native order, as a fresh ByteBuffer. */
  static ByteBuffer bytes(CommBuffer.Host h, long bytes) {
    ByteBuffer out = ByteBuffer.allocate(Math.toIntExact(bytes)).order(ByteOrder.nativeOrder());
    Buffer b = h.nio().duplicate();
    if (b instanceof ByteBuffer bb) {
      out.put(bb.slice().limit((int) bytes));
    } else if (b instanceof FloatBuffer f) {
      out.asFloatBuffer().put(f.slice().limit((int) (bytes / 4)));
    } else if (b instanceof DoubleBuffer d) {
      out.asDoubleBuffer().put(d.slice().limit((int) (bytes / 8)));
    } else if (b instanceof IntBuffer i) {
      out.asIntBuffer().put(i.slice().limit((int) (bytes / 4)));
    } else if (b instanceof LongBuffer l) {
      out.asLongBuffer().put(l.slice().limit((int) (bytes / 8)));
    } else if (b instanceof ShortBuffer s) {
      out.asShortBuffer().put(s.slice().limit((int) (bytes / 2)));
    } else {
      throw new IllegalArgumentException("unsupported host buffer " + b.getClass().getName());
    }
    out.clear();
    return out;
  }

  /** Writes {@code src} (native order, position to limit) into a host buffer from its position. */
  static void write(CommBuffer.Host h, ByteBuffer src) {
    ByteBuffer s = src.duplicate().order(ByteOrder.nativeOrder());
    Buffer b = h.nio().duplicate();
    if (b instanceof ByteBuffer bb) {
      bb.slice().put(s);
    } else if (b instanceof FloatBuffer f) {
      f.slice().put(s.asFloatBuffer());
    } else if (b instanceof DoubleBuffer d) {
      d.slice().put(s.asDoubleBuffer());
    } else if (b instanceof IntBuffer i) {
      i.slice().put(s.asIntBuffer());
    } else if (b instanceof LongBuffer l) {
      l.slice().put(s.asLongBuffer());
    } else if (b instanceof ShortBuffer sh) {
      sh.slice().put(s.asShortBuffer());
    } else {
      throw new IllegalArgumentException("unsupported host buffer " + b.getClass().getName());
    }
  }
}
