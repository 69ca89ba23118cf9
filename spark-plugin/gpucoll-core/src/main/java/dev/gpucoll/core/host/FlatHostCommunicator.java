package dev.gpucoll.core.host;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.core.Algorithm;
import dev.gpucoll.core.config.GpuCollConf;
import java.nio.Buffer;
import java.util.function.Function;

/**
 * A host communicator whose collectives are flat exchanges: every collective is one recipe over
 * the group's {@link Steps}, with the algorithms {@link HostRoute} decides. A rank whose own
 * arguments are bad refuses the call in a step of its own, so every peer fails alike.
 *
 * @param <S> the steps: what the subclass knows of its transport beyond the seam
 */
abstract class FlatHostCommunicator<S extends Steps> extends AbstractHostCommunicator {
  final S steps;
  private final HostRoute route;
  private final AllReduceRecipe allReduce;
  private final AllGatherRecipe allGather;
  private final ReduceScatterRecipe reduceScatter;
  private final AllToAllRecipe allToAll;
  private final AllToAllvRecipe allToAllv;
  private final BroadcastRecipe broadcast;
  private final BarrierRecipe barrier;

  /** {@code steps} builds the steps over this communicator (they read its call's bounds and label). */
  FlatHostCommunicator(int rank, int size, String groupId, String host, String rendezvousKind, GpuCollConf conf,
      HostRoute route, Function<AbstractHostCommunicator, S> steps) {
    super(rank, size, groupId, host, rendezvousKind, conf);
    this.route = route;
    this.steps = steps.apply(this);
    this.allReduce = new AllReduceRecipe(this.steps, route, reducer);
    this.allGather = new AllGatherRecipe(this.steps, route);
    this.reduceScatter = new ReduceScatterRecipe(this.steps, route, reducer);
    this.allToAll = new AllToAllRecipe(this.steps, route);
    this.allToAllv = new AllToAllvRecipe(this.steps, route);
    this.broadcast = new BroadcastRecipe(this.steps, route);
    this.barrier = new BarrierRecipe(this.steps, route);
  }

  @Override
  final HostRoute route() {
    return route;
  }

  @Override
  final Algorithm runAllReduce(Signature sig, String problem, Buffer send, Buffer recv, int count, DataType type,
      ReduceOp op) {
    return problem != null ? steps.refuse(Collective.ALL_REDUCE, sig, problem)
        : allReduce.run(sig, send, recv, count, type, op);
  }

  @Override
  final Algorithm runAllGather(Signature sig, String problem, Buffer send, Buffer recv, int count, DataType type) {
    return problem != null ? steps.refuse(Collective.ALL_GATHER, sig, problem)
        : allGather.run(sig, send, recv, count, type);
  }

  @Override
  final Algorithm runReduceScatter(Signature sig, String problem, Buffer send, Buffer recv, int count,
      DataType type, ReduceOp op) {
    return problem != null ? steps.refuse(Collective.REDUCE_SCATTER, sig, problem)
        : reduceScatter.run(sig, send, recv, count, type, op);
  }

  @Override
  final Algorithm runAllToAll(Signature sig, String problem, Buffer send, Buffer recv, int count, DataType type) {
    return problem != null ? steps.refuse(Collective.ALL_TO_ALL, sig, problem)
        : allToAll.run(sig, send, recv, count, type);
  }

  @Override
  final Algorithm runAllToAllv(Signature sig, String problem, Buffer send, int[] sendCounts, int[] sendDispls,
      Buffer recv, int[] recvCounts, int[] recvDispls, DataType type) {
    return problem != null ? steps.refuse(Collective.ALL_TO_ALLV, sig, problem)
        : allToAllv.run(sig, send, sendCounts, sendDispls, recv, recvCounts, recvDispls, type);
  }

  @Override
  final Algorithm runBroadcast(Signature sig, String problem, Buffer send, Buffer recv, int count, DataType type,
      int root) {
    return problem != null ? steps.refuse(Collective.BROADCAST, sig, problem)
        : broadcast.run(sig, send, recv, count, type, root);
  }

  @Override
  final Algorithm runBarrier(Signature sig) {
    return barrier.run(sig);
  }
}
