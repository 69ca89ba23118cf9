package dev.gpucoll.cuda.check.spark;

import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.GpuCommunicator;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * Where one rank's send and receive buffers live for a case: Java heap (host arrays), device
 * memory allocated once per stage, device memory allocated before and freed after every call
 * (cudaMalloc/cudaFree between collectives), or NCCL symmetric windows.
 */
abstract class Memory implements AutoCloseable {
  /** A case's buffer: what the collective gets, and its size. */
  record Buf(CommBuffer comm, long bytes) {}

  static final byte POISON = (byte) 0xA5;

  abstract String name();

  /** A send buffer holding {@code data}. */
  abstract Buf send(ByteBuffer data);

  /** A receive buffer of {@code bytes}, poisoned so that an element left unwritten is caught. */
  abstract Buf recv(long bytes);

  /** The receive buffer's content once every collective enqueued so far has completed. */
  abstract ByteBuffer read(Buf recv);

  /** The case is over (buffers of the fresh mode are freed here). */
  void caseDone() {}

  @Override
  public void close() {}

  static Memory host() {
    return new Memory() {
      @Override
      String name() {
        return "host";
      }

      @Override
      Buf send(ByteBuffer data) {
        ByteBuffer copy = ByteBuffer.allocate(data.capacity()).order(ByteOrder.nativeOrder());
        copy.put(data.duplicate().clear()).clear();
        return new Buf(CommBuffer.of(copy), data.capacity());
      }

      @Override
      Buf recv(long bytes) {
        byte[] a = new byte[Math.toIntExact(bytes)];
        Arrays.fill(a, POISON);
        return new Buf(CommBuffer.of(ByteBuffer.wrap(a).order(ByteOrder.nativeOrder())), bytes);
      }

      @Override
      ByteBuffer read(Buf recv) {
        return ((ByteBuffer) ((CommBuffer.Host) recv.comm()).nio()).duplicate().order(ByteOrder.nativeOrder());
      }
    };
  }

  /** Device memory: {@code capacity} bytes for send and for receive, allocated once. */
  static Memory devicePooled(GpuCommunicator comm, long capacity) {
    long send = Cuda.malloc(capacity);
    long recv;
    try {
      recv = Cuda.malloc(capacity);
    } catch (RuntimeException e) {
      Cuda.free(send);
      throw e;
    }
    return new Device(comm, "device", send, recv, capacity) {
      @Override
      public void close() {
        Cuda.free(send);
        Cuda.free(recv);
      }
    };
  }

  /** Device memory from two NCCL symmetric windows of {@code capacity} bytes each. */
  static Memory symmetric(GpuCommunicator comm, long capacity) {
    GpuCommunicator.SymmetricMemory send = comm.allocSymmetric(capacity);
    GpuCommunicator.SymmetricMemory recv;
    try {
      recv = comm.allocSymmetric(capacity);
    } catch (RuntimeException e) {
      send.close();
      throw e;
    }
    return new Device(comm, "symmetric", send.buffer().address(), recv.buffer().address(), capacity) {
      @Override
      public void close() {
        recv.close();
        send.close();
      }
    };
  }

  /** Device memory cudaMalloc'ed for every case and cudaFree'd after it. */
  static Memory deviceFresh(GpuCommunicator comm) {
    return new Memory() {
      private long send;
      private long recv;

      @Override
      String name() {
        return "device-fresh";
      }

      @Override
      Buf send(ByteBuffer data) {
        send = Cuda.malloc(Math.max(1, data.capacity()));
        Cuda.upload(send, data, data.capacity(), comm.stream());
        return new Buf(CommBuffer.device(send, data.capacity()), data.capacity());
      }

      @Override
      Buf recv(long bytes) {
        recv = Cuda.malloc(Math.max(1, bytes));
        Cuda.memset(recv, POISON, bytes, comm.stream());
        return new Buf(CommBuffer.device(recv, bytes), bytes);
      }

      @Override
      ByteBuffer read(Buf b) {
        return download(comm, b);
      }

      @Override
      void caseDone() {
        Cuda.free(send);
        Cuda.free(recv);
        send = 0;
        recv = 0;
      }
    };
  }

  /** A device buffer's bytes, once the communicator's stream has run up to here. */
  private static ByteBuffer download(GpuCommunicator comm, Buf b) {
    comm.synchronize();
    return Cuda.download(((CommBuffer.Device) b.comm()).address(), b.bytes(), comm.stream());
  }

  /** Two fixed device regions: send and receive. */
  private abstract static class Device extends Memory {
    private final GpuCommunicator comm;
    private final String name;
    private final long send;
    private final long recv;
    private final long capacity;

    Device(GpuCommunicator comm, String name, long send, long recv, long capacity) {
      this.comm = comm;
      this.name = name;
      this.send = send;
      this.recv = recv;
      this.capacity = capacity;
    }

    @Override
    String name() {
      return name;
    }

    @Override
    Buf send(ByteBuffer data) {
      fits(data.capacity());
      Cuda.upload(send, data, data.capacity(), comm.stream());
      return new Buf(CommBuffer.device(send, data.capacity()), data.capacity());
    }

    @Override
    Buf recv(long bytes) {
      fits(bytes);
      Cuda.memset(recv, POISON, bytes, comm.stream());
      return new Buf(CommBuffer.device(recv, bytes), bytes);
    }

    @Override
    ByteBuffer read(Buf b) {
      return download(comm, b);
    }

    private void fits(long bytes) {
      if (bytes > capacity) {
        throw new IllegalArgumentException(name + " buffers hold " + capacity + " bytes, the case needs " + bytes);
      }
    }
  }
}
