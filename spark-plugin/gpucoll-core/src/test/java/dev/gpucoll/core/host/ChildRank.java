package dev.gpucoll.core.host;

import dev.gpucoll.core.buffers.HostBuffers;
import dev.gpucoll.api.CollectiveTimeoutException;
import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.core.CommunicatorFactory;
import dev.gpucoll.core.config.GpuCollConf;
import dev.gpucoll.core.rendezvous.FileRendezvous;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.Map;
import java.util.zip.CRC32;

/**
 * One rank in its own JVM, for {@link HostProcessesTest}: {@code ChildRank <rendezvousDir> <shmDir>
 * <rank> <size> <scenario>}. Prints "DIGEST <crc of all results>" or "TIMEOUT <missing ranks>" and
 * exits 0; any failure exits 1 with the error on stderr.
 */
public final class ChildRank {
  public static void main(String[] args) throws Exception {
    Path dir = Path.of(args[0]);
    int rank = Integer.parseInt(args[2]);
    int size = Integer.parseInt(args[3]);
    String scenario = args[4];
    GpuCollConf conf = GpuCollConf.of(Map.of("spark.gpucoll.timeout", "30s",
        "spark.gpucoll.host.shmDir", args[1]));
    try (FileRendezvous rv = new FileRendezvous(dir, "procs", rank, size);
        Communicator comm = CommunicatorFactory.create(rv, conf, "localhost")) {
      if (!comm.backend().equals("host-shm")) {
        throw new AssertionError("backend " + comm.backend());
      }
      switch (scenario) {
        case "collectives" -> System.out.println("DIGEST " + collectives(comm));
        case "missing" -> {
          if (rank == size - 1) {
            Runtime.getRuntime().halt(0); // dies without closing: its peers must time out naming it
          }
          long t0 = System.nanoTime();
          try {
            comm.allReduce(new float[16], ReduceOp.SUM);
            throw new AssertionError("no timeout");
          } catch (CollectiveTimeoutException e) {
            System.out.println("TIMEOUT " + e.missingRanks() + " " + (System.nanoTime() - t0) / 1_000_000 + " ms "
                + e.getMessage());
          }
        }
        default -> throw new IllegalArgumentException(scenario);
      }
    } catch (Throwable t) {
      t.printStackTrace();
      System.exit(1);
    }
  }

  private static long collectives(Communicator comm) {
    CRC32 crc = new CRC32();
    int n = comm.size();
    int seed = 0;
    for (DataType t : DataType.values()) {
      for (ReduceOp op : ReduceOp.values()) {
        for (int count : new int[] {1, 7, 997, (1 << 20) / t.byteSize()}) {
          if (count > 997 && op != ReduceOp.SUM && op != ReduceOp.AVG) {
            continue;
          }
          seed++;
          Object a = TypedData.alloc(t, count);
          TypedData.fill(t, op, seed, comm.rank(), a, 0, count);
          comm.allReduce(TypedData.buf(a), TypedData.buf(a), count, t, op);
          TypedData.checkReduced(t, op, seed, n, a, 0, 0, count, "process allReduce " + t + " " + op + " " + count);
          digest(crc, t, a, count);
        }
      }
    }
    int count = (64 << 20) / 4;
    float[] big = new float[count];
    TypedData.fill(DataType.FLOAT32, ReduceOp.SUM, 999, comm.rank(), big, 0, count);
    comm.allReduce(big, ReduceOp.SUM);
    TypedData.checkReduced(DataType.FLOAT32, ReduceOp.SUM, 999, n, big, 0, 0, count, "64 MiB");
    digest(crc, DataType.FLOAT32, big, count);
    int per = 1001;
    double[] send = new double[per * n];
    for (int i = 0; i < send.length; i++) {
      send[i] = comm.rank() * 1e6 + i;
    }
    double[] recv = new double[per * n];
    comm.allToAll(CommBuffer.of(send), CommBuffer.of(recv), per, DataType.FLOAT64);
    for (int p = 0; p < n; p++) {
      if (recv[p * per + 5] != p * 1e6 + comm.rank() * per + 5) {
        throw new AssertionError("allToAll from " + p);
      }
    }
    double[] all = new double[per * n];
    comm.allGather(CommBuffer.of(send), CommBuffer.of(all), per, DataType.FLOAT64);
    comm.broadcast(CommBuffer.of(send), CommBuffer.of(recv), per * n, DataType.FLOAT64, 0);
    if (recv[3] != 3) {
      throw new AssertionError("broadcast");
    }
    digest(crc, DataType.FLOAT64, all, all.length);
    for (int k = 0; k < 500; k++) {
      int[] v = {k + comm.rank()};
      comm.allReduce(v, ReduceOp.SUM);
      if (v[0] != n * k + n * (n - 1) / 2) {
        throw new AssertionError("call " + k);
      }
    }
    comm.barrier();
    return crc.getValue();
  }

  private static void digest(CRC32 crc, DataType t, Object a, int count) {
    ByteBuffer b = ByteBuffer.allocate(count * t.byteSize()).order(ByteOrder.nativeOrder());
    HostBuffers.copy(HostBuffers.typedView(b, t), 0, (java.nio.Buffer) ((CommBuffer.Host) TypedData.buf(a)).nio(),
        0, count);
    crc.update(b.array());
  }
}
