package dev.gpucoll.cuda.check;

import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.GpuCommunicator;
import dev.gpucoll.core.CommunicatorFactory;
import dev.gpucoll.core.config.GpuCollConf;
import dev.gpucoll.core.rendezvous.LocalRendezvous;
import dev.gpucoll.cuda.CudaNative;
import dev.gpucoll.cuda.GpuBackend;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import org.bytedeco.javacpp.BytePointer;

/**
 * R ranks as threads of this JVM on one device: one fixed thread per rank (the CUDA current device
 * is per thread, and a communicator is driven by one thread), each with its communicator, a device
 * send and recv buffer and pinned host copies of both.
 */
final class RankGroup implements AutoCloseable {
  private static final AtomicInteger GROUPS = new AtomicInteger();

  /** One rank's state, touched only from its own thread. */
  static final class Rank {
    final int rank;
    /** The group's host barrier (see {@link #awaitPeers}). */
    private final java.util.concurrent.CyclicBarrier peers;
    GpuCommunicator comm;
    long send;
    long recv;
    long capacity;
    ByteBuffer hostIn;
    ByteBuffer hostOut;
    private long hostInAddr;
    private long hostOutAddr;

    Rank(int rank, java.util.concurrent.CyclicBarrier peers) {
      this.rank = rank;
      this.peers = peers;
    }

    /**
     * Waits on the host until every rank's thread is here. Ranks of one process share the GPU: a
     * rank whose kernels spin for a peer keeps the device busy, and a peer inside a call that waits
     * for the device (cudaGraphInstantiate of a large graph, cudaGraphExecDestroy, cudaFree) then
     * never returns. Capture or free before this, launch after it.
     */
    void awaitPeers() {
      try {
        peers.await(2, java.util.concurrent.TimeUnit.MINUTES);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("rank " + rank + " interrupted at the host barrier", e);
      } catch (java.util.concurrent.BrokenBarrierException | java.util.concurrent.TimeoutException e) {
        throw new IllegalStateException("rank " + rank + ": the other ranks did not reach the host barrier", e);
      }
    }

    long stream() {
      return comm.stream();
    }

    /** Copies hostIn[0, bytes) to the device send buffer and poisons the recv buffer. */
    void upload(long bytes, long recvBytes) {
      CudaNative.memcpyAsync(send, hostInAddr, bytes, stream());
      CudaNative.memsetAsync(recv, Poison.BYTE, recvBytes, stream());
    }

    /** Copies the device recv buffer to hostOut and waits (raising the collective's error, if any). */
    void download(long bytes) {
      CudaNative.memcpyAsync(hostOutAddr, recv, bytes, stream());
      comm.synchronize();
    }
  }

  final int size;
  final String name;
  /** The kernel variant every call runs ({@code spark.gpucoll.internal.kernelVariant}), or null: by size. */
  final String variant;
  final Rank[] ranks;
  private final ExecutorService[] threads;
  /** Each rank's thread, for the stack a harness timeout reports. */
  private final Thread[] rankThreads;

  private RankGroup(int size, String name, String variant) {
    this.size = size;
    this.name = name;
    this.variant = variant;
    this.ranks = new Rank[size];
    this.threads = new ExecutorService[size];
    this.rankThreads = new Thread[size];
    java.util.concurrent.CyclicBarrier peers = new java.util.concurrent.CyclicBarrier(size);
    for (int r = 0; r < size; r++) {
      ranks[r] = new Rank(r, peers);
      final int rr = r;
      threads[r] = Executors.newSingleThreadExecutor(task -> {
        Thread t = new Thread(task, name + "-rank" + rr);
        t.setDaemon(true);
        rankThreads[rr] = t;
        return t;
      });
    }
  }

  /**
   * Forms the group: every rank thread sets the device, joins a local rendezvous and forms its
   * communicator through the factory on the gpu backend, with our kernels spinning although the
   * ranks share this GPU, and every call on {@code variant} (a kernel variant's name; null: by size).
   */
  static RankGroup create(int size, int device, String variant, Duration timeout, long capacity) {
    return create(size, device, variant, timeout, capacity, Map.of());
  }

  /** As above, with more spark.gpucoll settings (e.g. spark.gpucoll.algorithm). */
  static RankGroup create(int size, int device, String variant, Duration timeout, long capacity,
      Map<String, String> settings) {
    Map<String, String> all = new HashMap<>(settings);
    all.put(GpuCollConf.INTERNAL_SPIN_ON_SHARED_GPU.key(), "true");
    if (variant != null) {
      all.put(GpuCollConf.INTERNAL_KERNEL_VARIANT.key(), variant);
    }
    return form(size, device, variant, timeout, capacity, all);
  }

  /**
   * A group formed as a Spark job's ranks are, without the checks' internal settings: ranks sharing
   * this GPU get the default route (the staged path), not spinning kernels.
   */
  static RankGroup createDefaultRoute(int size, int device, Duration timeout, long capacity) {
    return form(size, device, null, timeout, capacity, Map.of());
  }

  private static RankGroup form(int size, int device, String variant, Duration timeout, long capacity,
      Map<String, String> settings) {
    String id = "suite-" + GROUPS.incrementAndGet() + "-n" + size + "-" + (variant == null ? "auto" : variant);
    RankGroup g = new RankGroup(size, id, variant);
    Map<String, String> all = new HashMap<>(settings);
    all.put(GpuCollConf.TIMEOUT.key(), timeout.toMillis() + "ms");
    all.put(GpuCollConf.BACKEND.key(), GpuBackend.NAME);
    GpuCollConf conf = GpuCollConf.of(all).validate();
    try {
      g.onAll(Duration.ofSeconds(60), r -> {
        CudaNative.setDevice(device);
        LocalRendezvous rdv = LocalRendezvous.join(id, r.rank, size);
        Communicator c = CommunicatorFactory.create(rdv, conf, "localhost");
        if (!(c instanceof GpuCommunicator gpu)) {
          c.close();
          throw new IllegalStateException("the factory formed a " + c.backend() + " communicator, not a gpu one");
        }
        r.comm = gpu;
        r.capacity = capacity;
        r.send = CudaNative.malloc(capacity);
        r.recv = CudaNative.malloc(capacity);
        r.hostInAddr = CudaNative.hostAlloc(capacity);
        r.hostOutAddr = CudaNative.hostAlloc(capacity);
        r.hostIn = view(r.hostInAddr, capacity);
        r.hostOut = view(r.hostOutAddr, capacity);
        return null;
      });
    } catch (RuntimeException e) {
      g.close();
      throw e;
    }
    return g;
  }

  static ByteBuffer view(long address, long bytes) {
    return new BytePointer(CudaNative.ptr(address)).capacity(bytes).asByteBuffer().order(ByteOrder.nativeOrder());
  }

  interface RankTask<T> {
    T run(Rank r) throws Exception;
  }

  /** Runs {@code task} on every rank's thread at once; the first failure (by rank) is thrown after all finish. */
  <T> List<T> onAll(Duration limit, RankTask<T> task) {
    List<Future<T>> futures = new ArrayList<>();
    for (Rank r : ranks) {
      futures.add(threads[r.rank].submit(() -> task.run(r)));
    }
    List<T> out = new ArrayList<>();
    RuntimeException first = null;
    long deadline = System.nanoTime() + limit.toNanos();
    for (int r = 0; r < size; r++) {
      try {
        out.add(futures.get(r).get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS));
      } catch (ExecutionException e) {
        Throwable c = e.getCause();
        if (first == null) {
          first = c instanceof RuntimeException re ? re : new RuntimeException("rank " + r + ": " + c, c);
        }
        out.add(null);
      } catch (TimeoutException e) {
        if (first == null) {
          first = new HarnessTimeout("rank " + r + " of " + name + " did not finish within " + limit + "; it is at"
              + stackOf(rankThreads[r]));
          // Said at once: what runs next (closing the group) may wait on the stuck rank too.
          System.out.println(first.getMessage());
          for (int other = 0; other < size; other++) {
            if (other != r) {
              System.out.println("  rank " + other + " is at" + stackOf(rankThreads[other]));
            }
          }
          System.out.flush();
        }
        out.add(null);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new RuntimeException(e);
      }
    }
    if (first != null) {
      throw first;
    }
    return out;
  }

  /** Where {@code t} is now: its top frames, one per line (where a stuck rank waits). */
  private static String stackOf(Thread t) {
    if (t == null) {
      return " (no thread)";
    }
    StringBuilder b = new StringBuilder();
    StackTraceElement[] frames = t.getStackTrace();
    for (int i = 0; i < Math.min(frames.length, 14); i++) {
      b.append("\n    at ").append(frames[i]);
    }
    return b.toString();
  }

  /** A rank thread did not come back: the harness itself is stuck, not just a collective. */
  static final class HarnessTimeout extends RuntimeException {
    HarnessTimeout(String m) {
      super(m);
    }
  }

  @Override
  public void close() {
    try {
      onAll(Duration.ofSeconds(60), r -> {
        if (r.comm != null) {
          try {
            r.comm.close();
          } catch (RuntimeException e) {
            // a broken group still frees what it can; the failure was reported where it happened
          }
        }
        CudaNative.free(r.send);
        CudaNative.free(r.recv);
        CudaNative.freeHost(r.hostInAddr);
        CudaNative.freeHost(r.hostOutAddr);
        return null;
      });
    } catch (RuntimeException e) {
      System.out.println("  (closing " + name + ": " + e.getMessage() + ")");
    } finally {
      for (ExecutorService t : threads) {
        t.shutdownNow();
      }
    }
  }

  /** The poison pattern written into every output before a run. */
  static final class Poison {
    static final int BYTE = 0xA5;

    private Poison() {}
  }
}
