package dev.gpucoll.core.buffers;

import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.DataType;
import java.nio.Buffer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.LongBuffer;
import java.nio.ShortBuffer;

/**
 * The one place that handles user host buffers, for every backend: typed NIO views indexed from 0
 * (the buffer's position) and copies of element ranges between views of the same type (the host
 * backend), and the raw bytes of a buffer in and out (the GPU backend's staging through the device). Each {@link DataType} has one view class: float[]
 * / FloatBuffer for FLOAT32, short[] for the 16-bit floats (raw bits), byte[] for the 8-bit
 * integers, and so on; a ByteBuffer serves every type (read in native byte order).
 */
public final class HostBuffers {
  private HostBuffers() {}

  public static Class<? extends Buffer> viewClass(DataType type) {
    return switch (type) {
      case FLOAT32 -> FloatBuffer.class;
      case FLOAT64 -> DoubleBuffer.class;
      case FLOAT16, BFLOAT16 -> ShortBuffer.class;
      case INT32 -> IntBuffer.class;
      case INT64 -> LongBuffer.class;
      case INT8, UINT8 -> ByteBuffer.class;
    };
  }

  /**
   * The typed view of a user buffer, or a message saying why it cannot serve {@code type} (the
   * message is shown to the user, prefixed with the rank and collective).
   */
  public static Object view(CommBuffer buffer, DataType type, String role) {
    if (buffer == null) {
      return role + " buffer is null";
    }
    if (!(buffer instanceof CommBuffer.Host host)) {
      return role + " buffer is device memory; the host backend needs host buffers (arrays or NIO)";
    }
    Buffer nio = host.nio();
    Class<? extends Buffer> want = viewClass(type);
    if (nio instanceof ByteBuffer bytes) {
      ByteBuffer b = bytes.slice().order(ByteOrder.nativeOrder());
      return typedView(b, type);
    }
    if (!want.isInstance(nio)) {
      return role + " buffer is a " + simpleName(nio) + " but " + type + " needs a "
          + want.getSimpleName() + " (or a ByteBuffer)";
    }
    // Absolute indexing starts at index 0, so a buffer already at position 0 serves as it is.
    return nio.position() == 0 ? nio : nio.slice();
  }

  /** A typed view of a native-order byte buffer, indexed from its position. */
  public static Buffer typedView(ByteBuffer b, DataType type) {
    ByteBuffer bytes = b.slice().order(ByteOrder.nativeOrder());
    return switch (type) {
      case FLOAT32 -> bytes.asFloatBuffer();
      case FLOAT64 -> bytes.asDoubleBuffer();
      case FLOAT16, BFLOAT16 -> bytes.asShortBuffer();
      case INT32 -> bytes.asIntBuffer();
      case INT64 -> bytes.asLongBuffer();
      case INT8, UINT8 -> bytes;
    };
  }

  private static String simpleName(Buffer b) {
    for (Class<?> c : new Class<?>[] {FloatBuffer.class, DoubleBuffer.class, ShortBuffer.class,
        IntBuffer.class, LongBuffer.class, ByteBuffer.class}) {
      if (c.isInstance(b)) {
        return c.getSimpleName();
      }
    }
    return b.getClass().getSimpleName();
  }

  /** Copies {@code len} elements; both views have the same class. */
  public static void copy(Buffer dst, int dstIdx, Buffer src, int srcIdx, int len) {
    if (len == 0) {
      return;
    }
    if (dst instanceof FloatBuffer d) {
      d.put(dstIdx, (FloatBuffer) src, srcIdx, len);
    } else if (dst instanceof ByteBuffer d) {
      d.put(dstIdx, (ByteBuffer) src, srcIdx, len);
    } else if (dst instanceof ShortBuffer d) {
      d.put(dstIdx, (ShortBuffer) src, srcIdx, len);
    } else if (dst instanceof IntBuffer d) {
      d.put(dstIdx, (IntBuffer) src, srcIdx, len);
    } else if (dst instanceof LongBuffer d) {
      d.put(dstIdx, (LongBuffer) src, srcIdx, len);
    } else if (dst instanceof DoubleBuffer d) {
      d.put(dstIdx, (DoubleBuffer) src, srcIdx, len);
    } else {
      throw new IllegalArgumentException("unsupported buffer " + dst);
    }
  }

  /** The first {@code bytes} bytes of a host buffer, in native order, as a fresh ByteBuffer. */
  public static ByteBuffer bytes(CommBuffer.Host h, long bytes) {
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
  public static void write(CommBuffer.Host h, ByteBuffer src) {
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

  /** Typed views of one native-order byte buffer for every type, indexed from its position. */
  public static final class Views {
    private final ByteBuffer bytes;
    private final Buffer[] byType = new Buffer[DataType.values().length];

    public Views(ByteBuffer b) {
      this.bytes = b.slice().order(ByteOrder.nativeOrder());
      for (DataType t : DataType.values()) {
        byType[t.ordinal()] = typedView(bytes, t);
      }
    }

    public Buffer of(DataType t) {
      return byType[t.ordinal()];
    }

    /** The bytes every view reads, native order, indexed from 0. */
    public ByteBuffer bytes() {
      return bytes;
    }
  }
}
