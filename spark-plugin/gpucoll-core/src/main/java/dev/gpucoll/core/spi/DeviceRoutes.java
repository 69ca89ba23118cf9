package dev.gpucoll.core.spi;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.PathChoice;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.core.config.GpuCollConf;
import java.util.List;
import java.util.Map;

/**
 * The routes of a group whose device work runs in other processes than this one: a Python task's,
 * whose process launches our kernels (and calls NCCL) on its own arrays while its executor decides. Found with
 * {@link java.util.ServiceLoader} in the GPU backend's jar; the answers come from the same route and
 * the same kernel table as that backend's own communicator, so there is one decider.
 */
public interface DeviceRoutes {

  /**
   * The layout the launching process writes and reads, name to value: the kernels' argument block
   * (ARGS_*), workspace (WORKSPACE_*, WS_*), error record (ERR_*), control block (CONTROL_*) and
   * block size, from the one kernel table.
   */
  Map<String, Long> abi();

  /** The kernel image (a fatbin) the launching process loads. */
  byte[] kernelImage();

  /**
   * The routes of one group.
   *
   * @param members every rank's facts as its launching process reports them (its GPU, its process id)
   * @throws dev.gpucoll.api.CollectiveException when our kernels cannot serve the group, naming why
   */
  Group group(int rank, List<MemberInfo> members, GpuCollConf conf);

  /** One group's answers. */
  interface Group {
    /**
     * True when the launching processes form the group's NCCL communicator (rank 0's unique id
     * shared through the group): some calls route to NCCL. Every rank reaches the same answer.
     */
    boolean formsNccl();

    /**
     * True when our kernels may run: the launching processes map each other's workspaces. False
     * for a group across hosts or beyond the kernels' rank limit (a peer's handle cannot open there).
     */
    boolean kernelsOn();

    /** The NCCL_CTA_POLICY_* value the communicator is configured with when it forms. */
    int ncclCtaPolicy();

    /** How one call runs; count as the GPU communicator takes it (per peer for data movement). */
    Launch route(Collective c, long count, DataType type, ReduceOp op);

    /** The algorithm a call of {@code bytes} would take, and why. */
    PathChoice explain(Collective c, long bytes);

    /** What the route found while forming (topology, why spinning is off, ...). */
    List<String> findings();

    /**
     * The exception for an error record the kernels filled (its bytes, little-endian): the GPU
     * communicator's own words, naming peer, epoch and kernel.
     */
    RuntimeException error(byte[] record, Collective c);
  }

  /** How a call runs: NCCL on the launching process's NCCL communicator of the group. */
  enum Kind { KERNEL, ONE_RANK, STAGED, NCCL }

  /**
   * One call's answer.
   *
   * @param kernel the fatbin's function name when {@code kind} is KERNEL, else empty
   * @param grid   gridDim.x; {@code block} blockDim.x
   */
  record Launch(Kind kind, String algorithm, String kernel, int grid, int block) {}
}
