package dev.gpucoll.cuda;

import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.core.spi.GroupContext;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.bytedeco.javacpp.BytePointer;

/**
 * This rank's peer-visible workspace and every peer's, mapped here. One cudaMalloc per communicator:
 * the kernels' workspace (kernel_abi.h layout, at the allocation base, which the ABI wants 4 KiB
 * aligned) followed by a 256-byte header (magic, rank, nonce).
 * Ranks of this process share raw pointers (one CUDA context per device, peer access enabled
 * between devices); ranks of other processes send a cudaIpcMemHandle. After mapping, each rank
 * reads every peer's header through the mapped pointer and checks rank and nonce, so a wrong
 * mapping fails at creation rather than as a hang in the first collective.
 */
final class GpuWorkspace implements AutoCloseable {
  static final int HEADER_BYTES = 256;
  private static final int MAGIC = 0x67637773; // "gcws"
  private static final int PAYLOAD_BYTES = 4 + 4 + 8 + 8 + 1 + 64;

  private final int rank;
  private final long base;
  private final long bytes;
  private final long[] peers;
  private final List<Long> opened = new ArrayList<>();
  private final int ipcPeers;
  private final int sameProcessPeers;

  private GpuWorkspace(int rank, long base, long bytes, long[] peers, List<Long> opened, int ipcPeers,
      int sameProcessPeers) {
    this.rank = rank;
    this.base = base;
    this.bytes = bytes;
    this.peers = peers;
    this.opened.addAll(opened);
    this.ipcPeers = ipcPeers;
    this.sameProcessPeers = sameProcessPeers;
  }

  /** This rank's kernel workspace base. */
  long own() {
    return base;
  }

  /** Workspace base of every rank as mapped in this process (GcArgs.peers). */
  long[] peers() {
    return peers;
  }

  long kernelBytes() {
    return bytes;
  }

  String describe() {
    return (bytes >> 10) + " KiB per rank; peers: " + sameProcessPeers + " in this process (shared pointers), "
        + ipcPeers + " through CUDA IPC handles";
  }

  /**
   * Allocates and initialises this rank's workspace, exchanges it with the group (two rendezvous
   * rounds: publish, then confirm the mapping), and returns the mapped view.
   */
  static GpuWorkspace exchange(GroupContext g, GroupTopology topo, int device, Duration timeout, long stream) {
    int rank = g.rank();
    int size = g.size();
    long kernelBytes = KernelTable.WORKSPACE_BYTES;
    long total = kernelBytes + HEADER_BYTES;
    long base = CudaNative.malloc(total);
    if (base % KernelTable.WORKSPACE_ALIGN != 0) {
      CudaNative.free(base);
      throw new CollectiveException(rank, null, "cudaMalloc returned a workspace not aligned to "
          + KernelTable.WORKSPACE_ALIGN + " bytes");
    }
    long nonce = new SecureRandom().nextLong();
    List<Long> opened = new ArrayList<>();
    try {
      BytePointer header = new BytePointer(HEADER_BYTES);
      header.fill(0);
      header.putInt(0, MAGIC);
      header.putInt(4, rank);
      header.putLong(8, nonce);
      CudaNative.memcpyAsync(base + kernelBytes, header.address(), HEADER_BYTES, stream);
      KernelAbi.initWorkspace(base, stream);
      CudaNative.streamSynchronize(stream);

      boolean needIpc = false;
      for (int r = 0; r < size; r++) {
        needIpc |= topo.access(rank, r) == GroupTopology.PeerAccess.IPC;
      }
      byte[] handle = needIpc ? CudaNative.ipcGetMemHandle(base) : new byte[64];
      ByteBuffer p = ByteBuffer.allocate(PAYLOAD_BYTES).order(ByteOrder.LITTLE_ENDIAN);
      p.putInt(MAGIC).putInt(device).putLong(base).putLong(nonce).put((byte) (needIpc ? 1 : 0)).put(handle);
      List<byte[]> all = g.rendezvous().allGather(p.array(), timeout);

      long[] peers = new long[size];
      long[] nonces = new long[size];
      int ipc = 0;
      int local = 0;
      for (int r = 0; r < size; r++) {
        ByteBuffer q = ByteBuffer.wrap(all.get(r)).order(ByteOrder.LITTLE_ENDIAN);
        if (all.get(r).length != PAYLOAD_BYTES || q.getInt() != MAGIC) {
          throw new CollectiveException(rank, null, "rank " + r + " sent a malformed workspace message");
        }
        int peerDevice = q.getInt();
        long peerBase = q.getLong();
        nonces[r] = q.getLong();
        boolean hasHandle = q.get() != 0;
        byte[] h = new byte[64];
        q.get(h);
        switch (topo.access(rank, r)) {
          case SELF -> peers[r] = base;
          case SAME_PROCESS -> {
            if (peerDevice != device) {
              if (!CudaNative.canAccessPeer(device, peerDevice)) {
                throw new CollectiveException(rank, null, "device " + device + " cannot access rank " + r
                    + "'s device " + peerDevice + " (no CUDA peer access)");
              }
              CudaNative.enablePeerAccess(peerDevice);
            }
            peers[r] = peerBase;
            local++;
          }
          case IPC -> {
            if (!hasHandle) {
              throw new CollectiveException(rank, null, "rank " + r + " sent no CUDA IPC handle");
            }
            long mapped = CudaNative.ipcOpenMemHandle(h);
            opened.add(mapped);
            peers[r] = mapped;
            ipc++;
          }
          default -> throw new IllegalStateException();
        }
      }
      // Read every peer's header through the mapping we just made.
      BytePointer seen = new BytePointer((long) HEADER_BYTES * size);
      for (int r = 0; r < size; r++) {
        CudaNative.memcpyAsync(seen.address() + (long) r * HEADER_BYTES, peers[r] + kernelBytes, HEADER_BYTES, stream);
      }
      CudaNative.streamSynchronize(stream);
      String problem = null;
      for (int r = 0; r < size && problem == null; r++) {
        long off = (long) r * HEADER_BYTES;
        if (seen.getInt(off) != MAGIC || seen.getInt(off + 4) != r || seen.getLong(off + 8) != nonces[r]) {
          problem = "rank " + r + "'s workspace does not hold its header through the "
              + topo.access(rank, r) + " mapping";
        }
      }
      // Confirm: every rank learns whether every other mapped the group, so all fail together.
      byte[] status = (problem == null ? "ok" : problem).getBytes(java.nio.charset.StandardCharsets.UTF_8);
      List<byte[]> statuses = g.rendezvous().allGather(status, timeout);
      for (int r = 0; r < size; r++) {
        String s = new String(statuses.get(r), java.nio.charset.StandardCharsets.UTF_8);
        if (!s.equals("ok")) {
          throw new CollectiveException(rank, null, "workspace exchange failed on rank " + r + ": " + s);
        }
      }
      return new GpuWorkspace(rank, base, kernelBytes, peers, opened, ipc, local);
    } catch (RuntimeException e) {
      for (long o : opened) {
        try {
          CudaNative.ipcCloseMemHandle(o);
        } catch (RuntimeException ignored) {
          // keep the first failure
        }
      }
      CudaNative.free(base);
      throw e;
    }
  }

  @Override
  public void close() {
    for (long o : opened) {
      CudaNative.ipcCloseMemHandle(o);
    }
    opened.clear();
    CudaNative.free(base);
  }
}
