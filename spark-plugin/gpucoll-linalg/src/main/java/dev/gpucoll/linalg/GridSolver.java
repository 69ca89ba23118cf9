package dev.gpucoll.linalg;

import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.ProcessGrid;
import dev.gpucoll.linalg.FactorizationException.Reason;
import dev.gpucoll.linalg.Workspace.Slot;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

/**
 * The one schedule of each routine, getrf, getrs, potrf and potrs, over a {@link KernelSet}: the
 * steps of {@link FactorPlan} with the grid's collectives ({@link GridCalls}). {@link Lu} and
 * {@link Cholesky} run it on {@link HostKernels} (host parts), {@link DeviceSolver} on
 * {@link DeviceKernels} (device parts): one algorithm, one set of checks and errors.
 *
 * <ul>
 *   <li><b>getrf</b>: the panel's process column gathers the panel, rows [first, M), in global row
 *       order (one allGather down its column communicator; none when P = 1); the process of its
 *       diagonal block factors it whole (dgetf2 on the host, cuSOLVER's getrf on the device: the
 *       pivots are LAPACK's, ties to the lowest row, as the rows are in LAPACK's order), scans it for
 *       NaN and Inf, and broadcasts it with its pivots and status over the grid; every rank takes
 *       its own rows back, applies the interchanges to its other columns ({@link RowInterchanges}:
 *       only rows that move, bit for bit, around one allToAllv down the column), the diagonal
 *       process row solves U₁₂ and sends it down each column, and every rank updates its trailing
 *       part with one product.
 *   <li><b>potrf</b> (lower): the diagonal block factored and scanned, L₁₁ with its status down the
 *       panel column, L₂₁ = A₂₁ L₁₁⁻ᵀ, L₂₁ with the status along each row, the rows matching a rank's
 *       columns down each column (an allGather, then one gather kernel), and per local block column
 *       a symmetric update on the diagonal block and a product below it: nothing above the diagonal
 *       is written.
 *   <li>The solves send each block column of the triangle along the rows once; L and U's blocks of
 *       X go down the columns; Lᵀ's backward solve sums each process row's part down the column.
 *   <li>Where the kernel set says so ({@link KernelSet#oneCallOnOneProcess}), a 1 × 1 grid runs each
 *       routine as one call on the whole local array, with the same checks and errors.
 * </ul>
 * Every wait for the stream is bounded: one that expires names this rank (grid position and global
 * rank), the routine and the step.
 */
final class GridSolver implements AutoCloseable {
  /** Where the int lists a step hands the stream start, in the kernel set's host words. */
  private static final long HOST_ROWS_AT = 1 << 16;

  private final ProcessGrid<? extends Communicator> grid;
  private final KernelSet kernels;
  private final Workspace work;
  private final Duration waitLimit;
  /** 64 bytes of words for the statuses of one-call routines and the input scan. */
  private final long words;

  GridSolver(ProcessGrid<? extends Communicator> grid, KernelSet kernels, Duration waitLimit) {
    this.grid = grid;
    this.kernels = kernels;
    this.waitLimit = waitLimit;
    this.work = new Workspace(kernels);
    this.words = work.need(Slot.STATUS, 64);
  }

  KernelSet kernels() {
    return kernels;
  }

  /**
   * Waits for this rank's stream, at most the wait limit; {@code what}: the step it waits for, in
   * the words of the error that names this rank when the limit passes.
   */
  void await(String routine, String what) {
    if (!kernels.syncWithin(waitLimit.toNanos())) {
      throw new IllegalStateException(routine + " at grid position (" + grid.myRow() + ", " + grid.myCol()
          + "), global rank " + grid.all().rank() + " of the " + grid.rows() + " x " + grid.cols() + " grid: this"
          + " rank's stream did not finish within " + waitLimit.toMillis() + " ms waiting for " + what
          + " (a stop: a kernel or library call of this rank, or a peer's collective, never completed)");
    }
  }

  /** An operand of a routine, with its name in the routine's errors. */
  private record Operand(Part part, String name) {}

  /** A routine opened on every rank: its collectives over the grid and its plan. */
  private record Opened(GridCalls calls, FactorPlan plan) {}

  /**
   * Opens {@code routine} ({@link GridCalls#open}): its plan made by {@code plan}, then its operands
   * checked to be this rank's, on every rank, and {@code input} scanned for NaN and Inf.
   */
  private Opened open(String routine, Supplier<FactorPlan> plan, FiniteInput input, Operand... operands) {
    List<Descriptor> descriptors = new ArrayList<>();
    for (Operand o : operands) {
      descriptors.add(o.part().desc());
    }
    FactorPlan[] made = new FactorPlan[1];
    GridCalls calls = GridCalls.open(grid, routine, descriptors, () -> {
      made[0] = plan.get();
      for (Operand o : operands) {
        requireMine(o.part(), o.name());
      }
    }, List.of(input));
    return new Opened(calls, made[0]);
  }

  // ---- LU ----

  int[] getrf(Part a) {
    Descriptor d = a.desc();
    Opened opened = open("getrf", () -> FactorPlan.getrf(d), finite("getrf", "the input", a, false),
        new Operand(a, "A"));
    int[] pivots = new int[Math.min(d.m(), d.n())];
    if (pivots.length == 0) {
      return pivots;
    }
    if (oneCall(d)) {
      long ipiv = work.need(Slot.PIVOTS, 4L * pivots.length + 8);
      long fwork = work.need(Slot.FACTOR_WORK, 8L * kernels.getrfWorkspace(d.m(), d.n(), d.lld()));
      kernels.getrf(a.address(), d.lld(), d.m(), d.n(), fwork, ipiv, words);
      kernels.firstNonFinite(a.address(), d.lld(), d.m(), d.n(), false, words + 16);
      kernels.copyBytes(kernels.host(), words, 32);
      kernels.copyBytes(kernels.host() + HOST_ROWS_AT, ipiv, 4L * pivots.length);
      await("getrf", "the factorization's status");
      throwIfFailed(kernels.hostInt(0), kernels.hostLong(16), kernels.hostLong(24), d.m(), 0);
      for (int k = 0; k < pivots.length; k++) {
        pivots[k] = kernels.hostInt(HOST_ROWS_AT + 4L * k) - 1;
      }
      return pivots;
    }
    getrfSteps(opened.calls(), opened.plan(), a, pivots);
    return pivots;
  }

  private void getrfSteps(GridCalls calls, FactorPlan plan, Part a, int[] pivots) {
    Descriptor d = a.desc();
    int np = d.gridRows();
    int p = calls.prow();
    int q = calls.pcol();
    int lld = d.lld();
    int nb = d.nb();
    int most = d.numrocRows(d.rsrc());
    int trailerWords = nb / 2 + 4;
    long panel = work.need(Slot.PANEL, 8L * ((long) d.m() * nb + trailerWords));
    long mineBuf = work.need(Slot.PANEL_MINE, 8L * most * nb);
    PanelRowGather panelRows = new PanelRowGather(d);
    long u12 = work.need(Slot.U12, 8L * nb * a.cols());
    long fwork = work.need(Slot.FACTOR_WORK, 8L * kernels.getrfWorkspace(d.m(), nb, d.m()));
    reserveInterchanges(2 * nb, a.cols());
    int[] first = new int[np];
    int[] count = new int[np];
    for (FactorPlan.Step s : plan.steps()) {
      int w = s.width();
      int j0 = s.first();
      int rows = d.m() - j0; // the panel's rows, in global order: global row g at position g − j0
      int widest = 0;
      for (int pr = 0; pr < np; pr++) {
        first[pr] = d.localRowsBefore(j0, pr);
        count[pr] = d.numrocRows(pr) - first[pr];
        widest = Math.max(widest, count[pr]);
      }
      int wPad = (w + 1) & ~1;
      long ipiv = panel + 8L * rows * w;
      long status = ipiv + 4L * wPad; // info (int32, padded), then the first NaN and Inf (u64)
      long total = (long) rows * w + wPad / 2 + 3;
      int pc0 = s.panelLocalCols().from();
      if (q == s.panelCol()) {
        if (np == 1) {
          kernels.copy(panel, rows, a.at(first[p], pc0), lld, count[p], w);
        } else {
          long gathered = panelRows.gather(calls, a.at(first[p], pc0), lld, count[p], widest, w);
          if (p == s.diagRow()) {
            for (int pr = 0; pr < np; pr++) {
              long from = gathered + 8L * pr * widest * w;
              int base = first[pr];
              int ld = widest;
              forRunsOf(d, pr, j0, (g, l, len) -> kernels.copy(panel + 8L * (g - j0), rows, from + 8L * (l - base), ld,
                  len, w));
            }
          }
        }
        if (p == s.diagRow()) {
          kernels.getrf(panel, rows, rows, w, fwork, ipiv, status);
          kernels.firstNonFinite(panel, rows, rows, w, false, status + 8);
        }
      }
      calls.gridBroadcast(device(panel, 8 * total), total, s.diagRow(), s.panelCol());
      kernels.copyBytes(kernels.host(), ipiv, 4L * wPad + 24);
      await("getrf", "panel step " + s.index() + "'s status (columns " + j0 + ".." + (s.end() - 1) + ")");
      long statusAt = 4L * wPad;
      throwIfFailed(kernels.hostInt(statusAt), kernels.hostLong(statusAt + 8), kernels.hostLong(statusAt + 16), rows,
          j0);
      for (int k = 0; k < w; k++) {
        pivots[j0 + k] = j0 + kernels.hostInt(4L * k) - 1;
      }
      // This process row's rows of the factored panel, contiguous (leading dimension ldMine).
      long mine = panel;
      int ldMine = rows;
      if (np > 1) {
        mine = mineBuf;
        ldMine = Math.max(1, count[p]);
        int base = first[p];
        int ld = ldMine;
        forRunsOf(d, p, j0, (g, l, len) -> kernels.copy(mineBuf + 8L * (l - base), ld, panel + 8L * (g - j0), rows,
            len, w));
      }
      if (q == s.panelCol()) {
        kernels.copy(a.at(first[p], pc0), lld, mine, ldMine, count[p], w);
      }
      IndexRange panelCols = s.panelLocalCols();
      List<IndexRange> others = q == s.panelCol()
          ? List.of(new IndexRange(0, panelCols.from()), new IndexRange(panelCols.to(), a.cols()))
          : List.of(new IndexRange(0, a.cols()));
      interchange(calls, a, pivots, j0, j0 + w, others);
      IndexRange right = s.trailingLocalCols(q);
      int c1 = right.from();
      int cols = right.size();
      if (cols == 0) {
        continue;
      }
      if (p == s.diagRow()) {
        kernels.solveLower(mine, ldMine, true, a.at(first[p], c1), lld, w, cols);
      }
      if (s.end() < d.m()) {
        long u = a.at(first[p], c1);
        int ldu = lld;
        if (np > 1) {
          blockRowDown(calls, s, u, lld, cols, u12);
          u = u12;
          ldu = w;
        }
        IndexRange down = s.trailingLocalRows(p);
        kernels.subtractProduct(a.at(down.from(), c1), lld, down.size(), cols, mine + 8L * (down.from() - first[p]),
            ldMine, u, ldu, w);
      }
    }
  }

  /**
   * A column allGather of panel rows: each process row's rows of a w-column panel, padded to the
   * widest, down the process column. Its buffers are reserved before the first step, for the
   * largest: nb columns of the most rows a process row holds (the source process row's).
   */
  private final class PanelRowGather {
    private final int np;
    private final long send;
    private final long gathered;

    PanelRowGather(Descriptor d) {
      np = d.gridRows();
      long largest = (long) d.numrocRows(d.rsrc()) * d.nb();
      send = work.need(Slot.SEND, 8L * largest);
      gathered = work.need(Slot.GATHERED, 8L * np * largest);
    }

    /**
     * This process row's rows × w block at {@code src} (leading dimension ld) and every other
     * process row's: process row pr's is at the returned address + 8 * pr * widest * w (leading
     * dimension widest).
     */
    long gather(GridCalls calls, long src, int ld, int rows, int widest, int w) {
      kernels.copy(send, widest, src, ld, rows, w);
      calls.columnAllGather(device(send, 8L * widest * w), device(gathered, 8L * np * widest * w), (long) widest * w);
      return gathered;
    }
  }

  /**
   * Step s's block row of an operand, w × cols at {@code src} (leading dimension ld) on the diagonal
   * process row, into {@code dst} (leading dimension w) on every rank of the process column.
   */
  private void blockRowDown(GridCalls calls, FactorPlan.Step s, long src, int ld, int cols, long dst) {
    int w = s.width();
    if (calls.prow() == s.diagRow()) {
      kernels.copy(dst, w, src, ld, w, cols);
    }
    calls.columnBroadcast(device(dst, 8L * w * cols), (long) w * cols, s.diagRow());
  }

  /** A run of rows one process row holds: global rows [g, g + length), local rows [l, l + length). */
  private interface Run {
    void accept(int g, int l, int length);
  }

  /** Each run of global rows [from, M) that process row {@code prow} holds, in global order. */
  private static void forRunsOf(Descriptor d, int prow, int from, Run run) {
    for (int g = from; g < d.m(); ) {
      int end = Math.min(d.m(), (g / d.mb() + 1) * d.mb());
      if (d.indxg2pRow(g) == prow) {
        run.accept(g, d.indxg2lRow(g), end - g);
      }
      g = end;
    }
  }

  /**
   * getrf's verdict on a factored panel of {@code rows} rows whose first column is global column
   * column0 and whose position i is global row column0 + i: LAPACK's INFO, then its first NaN and Inf.
   */
  private static void throwIfFailed(int info, long nan, long inf, int rows, int column0) {
    if (info > 0) {
      int column = column0 + info - 1;
      throw new FactorizationException(Reason.SINGULAR, column, column, "getrf: the matrix is singular: column "
          + column + " has no nonzero pivot (U(" + column + "," + column + ") = 0; 0-based)");
    }
    throwIfOverflowed("getrf", nan, inf, rows, column0);
  }

  /**
   * A factored block's verdict once its input was found finite: its first NaN or Inf (nan, inf:
   * positions j * rows + i, ~0 when none; the block's first column is global column column0 and
   * its position i global row column0 + i) is an overflow.
   */
  private static void throwIfOverflowed(String routine, long nan, long inf, int rows, int column0) {
    long bad = Long.compareUnsigned(nan, inf) < 0 ? nan : inf;
    if (bad != -1) {
      int row = column0 + (int) (bad % rows);
      int column = column0 + (int) (bad / rows);
      throw new FactorizationException(Reason.OVERFLOW, row, column, routine + ": the elimination overflowed: column "
          + column + " holds a non-finite value at row " + row + " (0-based) although the input is finite;"
          + " scale the matrix");
    }
  }

  void getrs(Part lu, int[] pivots, Part b) {
    Descriptor d = lu.desc();
    Opened opened = open("getrs", () -> Lu.solvePlan(d, b.desc(), pivots), finite("getrs", "B", b, false),
        new Operand(lu, "the factors"), new Operand(b, "B"));
    if (d.n() == 0) {
      return;
    }
    if (oneCall(d)) {
      if (b.cols() == 0) {
        return;
      }
      long ipiv = work.need(Slot.PIVOTS, 4L * d.n() + 8);
      int[] oneBased = new int[d.n()];
      for (int k = 0; k < oneBased.length; k++) {
        oneBased[k] = pivots[k] + 1;
      }
      await("getrs", "earlier copies of the host words"); // the host words may still be in an earlier copy's flight
      kernels.putHostInts(HOST_ROWS_AT, oneBased, 0, oneBased.length);
      kernels.copyBytes(ipiv, kernels.host() + HOST_ROWS_AT, 4L * d.n());
      kernels.getrs(lu.address(), d.lld(), d.n(), ipiv, b.address(), b.desc().lld(), b.cols(), words);
      await("getrs", "the solve");
      return;
    }
    reserveInterchanges(d.n(), b.cols());
    interchange(opened.calls(), b, pivots, 0, d.n(), List.of(new IndexRange(0, b.cols())));
    solveLower(opened.calls(), opened.plan(), lu, b, true);
    solveUpper(opened.calls(), opened.plan(), lu, b);
  }

  // ---- Cholesky ----

  void potrf(Part a) {
    Descriptor d = a.desc();
    Opened opened = open("potrf", () -> FactorPlan.potrf(d), finite("potrf", "the input's lower triangle", a, true),
        new Operand(a, "A"));
    if (d.n() == 0) {
      return;
    }
    if (oneCall(d)) {
      int lwork = kernels.potrfWorkspace(d.n(), d.lld());
      long fwork = work.need(Slot.FACTOR_WORK, 8L * lwork);
      kernels.potrf(a.address(), d.lld(), d.n(), fwork, lwork, words);
      kernels.firstNonFinite(a.address(), d.lld(), d.n(), d.n(), true, words + 8);
      kernels.copyBytes(kernels.host(), words, 24);
      await("potrf", "the factorization's status");
      int info = kernels.hostInt(0);
      double pivot = Double.NaN;
      if (info > 0) {
        kernels.copyBytes(kernels.host() + 24, a.at(info - 1, info - 1), 8);
        await("potrf", "the failing pivot");
        pivot = kernels.hostDouble(24);
      }
      throwIfNotFactored(info, pivot, kernels.hostLong(8), kernels.hostLong(16), d.n(), 0);
      return;
    }
    potrfSteps(opened.calls(), opened.plan(), a);
  }

  /**
   * potrf's verdict on a factored diagonal block of order w from global column column0, the same on
   * every kernel set: INFO > 0 with a non-finite pivot, or a NaN or Inf in the factor, is an overflow
   * (the input was checked finite); INFO > 0 with a finite pivot is a matrix that is not positive
   * definite.
   */
  private static void throwIfNotFactored(int info, double pivot, long nan, long inf, int w, int column0) {
    if (info > 0) {
      int column = column0 + info - 1;
      if (!Double.isFinite(pivot)) {
        throw new FactorizationException(Reason.OVERFLOW, column, column, "potrf: the elimination overflowed: the"
            + " pivot of column " + column + " (0-based) is " + pivot + " although the input is finite; scale the"
            + " matrix");
      }
      throw new FactorizationException(Reason.NOT_POSITIVE_DEFINITE, column, column, "potrf: the matrix is not"
          + " positive definite: the pivot of column " + column + " (0-based) is " + pivot + ", not positive");
    }
    throwIfOverflowed("potrf", nan, inf, w, column0);
  }

  private void potrfSteps(GridCalls calls, FactorPlan plan, Part a) {
    Descriptor d = a.desc();
    int p = calls.prow();
    int q = calls.pcol();
    int lld = d.lld();
    int nb = d.nb();
    // L11, then its status: INFO, the first NaN and Inf of its lower triangle, its diagonal (w words).
    long diag = work.need(Slot.DIAGONAL, 8L * (nb * nb + 3 + nb));
    long panel = work.need(Slot.PANEL, 8L * ((long) d.numrocRows(d.rsrc()) * nb + 3 + nb));
    PanelRowGather panelRows = new PanelRowGather(d);
    long transposed = work.need(Slot.TRANSPOSED, 8L * nb * a.cols());
    long columnRows = work.need(Slot.ROW_LIST, 4L * a.cols() + 8);
    int lwork = kernels.potrfWorkspace(nb, lld);
    long fwork = work.need(Slot.FACTOR_WORK, 8L * lwork);
    for (FactorPlan.Step s : plan.steps()) {
      int w = s.width();
      int r1 = s.trailingLocalRows(p).from();
      int rows = a.rows() - r1;
      int c0 = s.panelLocalCols().from();
      int statusWords = 3 + w;
      long diagStatus = diag + 8L * w * w;
      long status = panel + 8L * rows * w;
      if (q == s.panelCol()) {
        if (p == s.diagRow()) {
          int r0 = s.diagLocalRows().from();
          kernels.potrf(a.at(r0, c0), lld, w, fwork, lwork, diagStatus);
          kernels.copy(diag, w, a.at(r0, c0), lld, w, w);
          kernels.firstNonFinite(diag, w, w, w, true, diagStatus + 8);
          kernels.copy(diagStatus + 24, 1, diag, w + 1, 1, w); // the diagonal, where a failing pivot stays
        }
        if (d.gridRows() > 1) {
          calls.columnBroadcast(device(diag, 8L * (w * w + statusWords)), (long) w * w + statusWords, s.diagRow());
        }
        kernels.solveRightLowerTransposed(diag, w, a.at(r1, c0), lld, rows, w);
        kernels.copy(panel, rows, a.at(r1, c0), lld, rows, w);
        kernels.copyBytes(status, diagStatus, 8L * statusWords);
      }
      if (d.gridCols() > 1) {
        calls.rowBroadcast(device(panel, 8L * ((long) rows * w + statusWords)), (long) rows * w + statusWords,
            s.panelCol());
      }
      kernels.copyBytes(kernels.host(), status, 8L * statusWords);
      await("potrf", "panel step " + s.index() + "'s status (columns " + s.first() + ".." + (s.end() - 1) + ")");
      int info = kernels.hostInt(0);
      throwIfNotFactored(info, info > 0 ? kernels.hostDouble(8L * (3 + info - 1)) : Double.NaN, kernels.hostLong(8),
          kernels.hostLong(16), w, s.first());
      if (s.end() == d.n()) {
        continue;
      }
      // The rows of L21 that match this rank's trailing columns come from the process rows holding them.
      int widest = 0;
      for (int pr = 0; pr < d.gridRows(); pr++) {
        widest = Math.max(widest, d.numrocRows(pr) - d.localRowsBefore(s.end(), pr));
      }
      long all = panel;
      int ldAll = rows;
      if (d.gridRows() > 1) {
        all = panelRows.gather(calls, panel, rows, rows, widest, w);
        ldAll = widest;
      }
      IndexRange right = s.trailingLocalCols(q);
      int c1 = right.from();
      int cols = right.size();
      int[] index = new int[cols];
      for (int lj = c1; lj < right.to(); lj++) {
        int g = d.indxg2pRow(d.indxl2gCol(lj, q));
        int gl = d.indxg2lRow(d.indxl2gCol(lj, q)) - d.localRowsBefore(s.end(), g);
        index[lj - c1] = (d.gridRows() > 1 ? g * widest * w : 0) + gl;
      }
      kernels.putHostInts(HOST_ROWS_AT, index, 0, cols);
      kernels.copyBytes(columnRows, kernels.host() + HOST_ROWS_AT, 4L * cols);
      kernels.gatherRows(all, ldAll, columnRows, cols, 0, w, transposed, w); // w × cols, leading dimension w
      for (int lj = c1; lj < right.to(); ) {
        int width = Math.min(nb - lj % nb, right.to() - lj); // one block column of this rank
        int g0 = d.indxl2gCol(lj, q);
        int from = d.localRowsBefore(g0, p);
        long t = transposed + 8L * (lj - c1) * w;
        if (d.indxg2pRow(g0) == p) {
          kernels.subtractSymmetricProduct(a.at(from, lj), lld, width, panel + 8L * (from - r1), rows, w);
          from += width;
        }
        kernels.subtractProduct(a.at(from, lj), lld, a.rows() - from, width, panel + 8L * (from - r1), rows, t, w, w);
        lj += width;
      }
    }
  }

  void potrs(Part l, Part b) {
    Descriptor d = l.desc();
    Opened opened = open("potrs", () -> Cholesky.solvePlan(d, b.desc()), finite("potrs", "B", b, false),
        new Operand(l, "the factor"), new Operand(b, "B"));
    if (d.n() == 0) {
      return;
    }
    if (oneCall(d)) {
      if (b.cols() > 0) {
        kernels.potrs(l.address(), d.lld(), d.n(), b.address(), b.desc().lld(), b.cols(), words);
      }
      await("potrs", "the solve");
      return;
    }
    solveLower(opened.calls(), opened.plan(), l, b, false);
    solveLowerTransposed(opened.calls(), opened.plan(), l, b);
  }

  /** B must have A's rows as A has them (the solves' check of their arguments). */
  static void requireRowsAligned(Descriptor a, Descriptor b) {
    if (b.m() != a.n() || b.mb() != a.mb() || b.rsrc() != a.rsrc()) {
      throw new IllegalArgumentException("B must have A's rows as A has them: M = " + a.n() + ", MB = "
          + a.mb() + ", RSRC = " + a.rsrc() + " (B has M = " + b.m() + ", MB = " + b.mb() + ", RSRC = " + b.rsrc()
          + ")");
    }
  }

  // ---- the block triangular solves ----

  /** Which block triangular solve: the order it takes the steps in, and its scratch block. */
  private enum Triangle {
    /** B = L⁻¹ B: forward, the block of X broadcast down the column. */
    LOWER(false, Slot.SOLVE_X),
    /** B = U⁻¹ B: backward, the block of X broadcast down the column. */
    UPPER(true, Slot.SOLVE_X),
    /** B = L⁻ᵀ B: backward, each process row's partial sums. */
    LOWER_TRANSPOSED(true, Slot.SOLVE_SUMS);

    final boolean backward;
    final Slot scratch;

    Triangle(boolean backward, Slot scratch) {
      this.backward = backward;
      this.scratch = scratch;
    }
  }

  /**
   * Step s of a block triangular solve on this rank: local rows [r0, r0 + rows) of the step's block
   * column of A in {@code column} (leading dimension rows), and the scratch block (w × B's columns).
   */
  private interface SolveStep {
    void run(FactorPlan.Step s, long column, int r0, int rows, long scratch);
  }

  /**
   * The loop of every block triangular solve: the plan's steps in the triangle's order, each given
   * the rows of its block column that the triangle reads ({@link #blockColumn}: U's above the step's
   * end, L's from the panel's rows down) and the triangle's scratch block, one for all steps.
   */
  private void solveSteps(GridCalls calls, FactorPlan plan, Part a, Part b, Triangle triangle, SolveStep step) {
    int p = calls.prow();
    long scratch = work.need(triangle.scratch, 8L * plan.descriptor().nb() * Math.max(1, b.cols()));
    List<FactorPlan.Step> steps = plan.steps();
    for (int k = 0; k < steps.size(); k++) {
      FactorPlan.Step s = steps.get(triangle.backward ? steps.size() - 1 - k : k);
      int r0 = triangle == Triangle.UPPER ? 0 : s.panelLocalRows(p).from();
      int r1 = triangle == Triangle.UPPER ? a.desc().localRowsBefore(s.end(), p) : a.rows();
      step.run(s, blockColumn(calls, a, s, r0, r1), r0, r1 - r0, scratch);
    }
  }

  /** B = L⁻¹ B, L below (unit: and not on) the diagonal of {@code a}. */
  private void solveLower(GridCalls calls, FactorPlan plan, Part a, Part b, boolean unit) {
    int nrhs = b.cols();
    int ldb = b.desc().lld();
    solveSteps(calls, plan, a, b, Triangle.LOWER, (s, column, r0, rows, x) -> {
      int w = s.width();
      if (calls.prow() == s.diagRow()) {
        kernels.solveLower(column, rows, unit, b.at(r0, 0), ldb, w, nrhs);
      }
      if (s.end() < plan.descriptor().m() && nrhs > 0) {
        blockRowDown(calls, s, b.at(r0, 0), ldb, nrhs, x);
        int r1 = s.trailingLocalRows(calls.prow()).from();
        kernels.subtractProduct(b.at(r1, 0), ldb, a.rows() - r1, nrhs, column + 8L * (r1 - r0), rows, x, w, w);
      }
    });
  }

  /** B = U⁻¹ B, U on and above the diagonal of {@code a}. */
  private void solveUpper(GridCalls calls, FactorPlan plan, Part a, Part b) {
    int nrhs = b.cols();
    int ldb = b.desc().lld();
    solveSteps(calls, plan, a, b, Triangle.UPPER, (s, column, r0, rows, x) -> {
      int above = a.desc().localRowsBefore(s.first(), calls.prow());
      int w = s.width();
      if (calls.prow() == s.diagRow()) {
        kernels.solveUpper(column + 8L * above, rows, b.at(above, 0), ldb, w, nrhs);
      }
      if (s.first() > 0 && nrhs > 0) {
        blockRowDown(calls, s, b.at(above, 0), ldb, nrhs, x);
        kernels.subtractProduct(b.at(0, 0), ldb, above, nrhs, column, rows, x, w, w);
      }
    });
  }

  /** B = L⁻ᵀ B, L on and below the diagonal of {@code a}. */
  private void solveLowerTransposed(GridCalls calls, FactorPlan plan, Part a, Part b) {
    int nrhs = b.cols();
    int ldb = b.desc().lld();
    solveSteps(calls, plan, a, b, Triangle.LOWER_TRANSPOSED, (s, column, r0, rows, sums) -> {
      int w = s.width();
      if (s.end() < plan.descriptor().m() && nrhs > 0) {
        int r1 = s.trailingLocalRows(calls.prow()).from();
        kernels.memset(sums, 0, 8L * w * nrhs);
        kernels.negatedTransposedProduct(sums, w, w, nrhs, column + 8L * (r1 - r0), rows, b.at(r1, 0), ldb,
            a.rows() - r1);
        calls.columnSum(device(sums, 8L * w * nrhs), (long) w * nrhs);
        if (calls.prow() == s.diagRow()) {
          kernels.add(b.at(r0, 0), ldb, sums, w, w, nrhs);
        }
      }
      if (calls.prow() == s.diagRow()) {
        kernels.solveLowerTransposed(column, rows, b.at(r0, 0), ldb, w, nrhs);
      }
    });
  }

  /** Local rows [from, to) of step s's block column, from its process column along each row (leading dimension to − from). */
  private long blockColumn(GridCalls calls, Part a, FactorPlan.Step s, int from, int to) {
    int rows = to - from;
    int w = s.width();
    long column = work.need(Slot.SOLVE_COLUMN, 8L * Math.max(1, a.rows()) * a.desc().nb());
    if (calls.pcol() == s.panelCol()) {
      kernels.copy(column, rows, a.at(from, s.panelLocalCols().from()), a.desc().lld(), rows, w);
    }
    if (rows > 0 && a.desc().gridCols() > 1) {
      calls.rowBroadcast(device(column, 8L * rows * w), (long) rows * w, s.panelCol());
    }
    return column;
  }

  // ---- row interchanges ----

  private void reserveInterchanges(int rows, int width) {
    work.need(Slot.SWAP_SEND, 8L * rows * Math.max(1, width));
    work.need(Slot.SWAP_RECV, 8L * rows * Math.max(1, width));
    work.need(Slot.ROW_LIST, 8L * rows + 8);
  }

  /**
   * LAPACK's dlaswp for rows [from, to) on local columns {@code columns} of {@code a}:
   * {@link RowInterchanges#plan}'s rows packed, one allToAllv down the column when rows cross
   * process rows, unpacked. Collective over the grid column.
   */
  void interchange(GridCalls calls, Part a, int[] pivots, int from, int to, List<IndexRange> columns) {
    int width = 0;
    for (IndexRange c : columns) {
      width += c.size();
    }
    RowInterchanges.Plan plan = RowInterchanges.plan(a.desc(), a.prow(), pivots, from, to, width);
    if (plan.empty()) {
      return;
    }
    int sends = plan.sendRows().length;
    int recvs = plan.recvRows().length;
    long send = work.need(Slot.SWAP_SEND, 8L * sends * width);
    long recv = work.need(Slot.SWAP_RECV, 8L * recvs * width);
    long rows = work.need(Slot.ROW_LIST, 4L * (sends + recvs) + 8);
    int lld = a.desc().lld();
    await(calls.routine(), "earlier copies of the host words"); // they may still be in an earlier copy's flight
    kernels.putHostInts(HOST_ROWS_AT, plan.sendRows(), 0, sends);
    kernels.putHostInts(HOST_ROWS_AT + 4L * sends, plan.recvRows(), 0, recvs);
    kernels.copyBytes(rows, kernels.host() + HOST_ROWS_AT, 4L * (sends + recvs));
    int at = 0;
    for (IndexRange c : columns) {
      kernels.gatherRows(a.address(), lld, rows, sends, c.from(), c.size(), send + 8L * at, width);
      at += c.size();
    }
    long arrived = send;
    if (plan.crosses()) {
      calls.columnAllToAllv(device(send, 8L * sends * width), plan.sendCounts(), plan.sendDispls(),
          device(recv, 8L * recvs * width), plan.recvCounts(), plan.recvDispls());
      arrived = recv;
    }
    at = 0;
    for (IndexRange c : columns) {
      kernels.scatterRows(a.address(), lld, rows + 4L * sends, recvs, c.from(), c.size(), arrived + 8L * at, width);
      at += c.size();
    }
  }

  // ---- checks ----

  private boolean oneCall(Descriptor d) {
    return d.gridRows() == 1 && d.gridCols() == 1 && kernels.oneCallOnOneProcess();
  }

  private void requireMine(Part a, String name) {
    GridCalls.requireMine(grid, a.prow(), a.pcol(), name);
  }

  private FiniteInput finite(String routine, String name, Part a, boolean lower) {
    return new FiniteInput(name, a.desc(), () -> {
      kernels.firstNonFinite(a.address(), a.desc(), a.prow(), a.pcol(), lower, words + 32);
      kernels.copyBytes(kernels.host(), words + 32, 16);
      await(routine, "the scan of " + name + " for NaN and Inf");
      long nan = kernels.hostLong(0);
      long inf = kernels.hostLong(8);
      return new long[] {nan == -1 ? FiniteInput.NONE : nan, inf == -1 ? FiniteInput.NONE : inf};
    });
  }

  private CommBuffer device(long address, long bytes) {
    return kernels.buffer(address, Math.max(8, bytes));
  }

  /** Frees the workspace (on the device: after the grid's last collective, as cudaFree waits for the device). */
  @Override
  public void close() {
    await("close", "the last routine's work");
    work.close();
  }
}
