package dev.gpucoll.core.host;

import dev.gpucoll.api.Collective;
import dev.gpucoll.core.Algorithm;

/** barrier over flat steps: one step without payload; every rank's header proves it arrived. */
final class BarrierRecipe {
  private final Steps steps;
  private final HostRoute route;

  BarrierRecipe(Steps steps, HostRoute route) {
    this.steps = steps;
    this.route = route;
  }

  Algorithm run(Signature sig) {
    steps.open(0);
    steps.exchange(Collective.BARRIER, sig);
    return route.barrier();
  }
}
