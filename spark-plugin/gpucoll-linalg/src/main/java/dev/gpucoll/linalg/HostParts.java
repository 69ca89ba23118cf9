package dev.gpucoll.linalg;

import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.ProcessGrid;
import java.time.Duration;

/**
 * One host routine's solver: {@link GridSolver} on a fresh {@link HostKernels}, with the routine's
 * {@link LocalMatrix} arguments copied into its memory and the results copied back. The host
 * kernels never wait for a stream, so the wait limit is never reached; the collectives bound their
 * own waits with the group's timeout.
 */
final class HostParts implements AutoCloseable {
  private final HostKernels kernels = new HostKernels();
  private final GridSolver solver;

  HostParts(ProcessGrid<? extends Communicator> grid) {
    solver = new GridSolver(grid, kernels, Duration.ofDays(1));
  }

  GridSolver solver() {
    return solver;
  }

  /** A copy of {@code m} in the kernels' memory (null: an argument every rank refuses alike). */
  Part in(LocalMatrix m) {
    if (m == null) {
      throw new IllegalArgumentException("a matrix argument is null");
    }
    Part p = new Part(m.descriptor(), m.prow(), m.pcol(), kernels.malloc(8L * m.data().length));
    kernels.upload(m.data(), p.address(), m.data().length);
    return p;
  }

  /** The part's values back into {@code m}. */
  void out(Part p, LocalMatrix m) {
    kernels.download(p.address(), m.data(), m.data().length);
  }

  @Override
  public void close() {
    solver.close();
    kernels.close();
  }
}
