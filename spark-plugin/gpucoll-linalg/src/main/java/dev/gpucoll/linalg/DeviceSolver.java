package dev.gpucoll.linalg;

import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.Communicator;
import dev.gpucoll.api.GpuCommunicator;
import dev.gpucoll.api.ProcessGrid;
import dev.gpucoll.linalg.FactorizationException.Reason;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * LU (getrf, getrs) and Cholesky (potrf, potrs) of a block-cyclic matrix in device memory: the
 * device kernel set under the steps of {@link FactorPlan}, as {@link Lu} and {@link Cholesky} run
 * them on the host. One per rank, opened collectively over a grid of GPU communicators, like a
 * cuSOLVERMp handle: it puts the grid's row and column communicators on the whole grid's stream,
 * so that every kernel, copy and collective of a rank runs in order on one stream, and keeps its
 * workspace until {@link #close()}.
 *
 * <ul>
 *   <li>On a 1 × 1 grid a routine is one cuSOLVER call on the whole local array (what a library
 *       does locally), with the same argument checks and errors as on a larger grid.
 *   <li><b>getrf</b>: the panel's process column gathers the panel (rows [first, M), one allGather
 *       down its column communicator); the process of its diagonal block factors it with cuSOLVER's
 *       getrf (so the pivot search over the whole column costs one collective per panel, not one per
 *       column as on the host) and broadcasts the factored panel with its pivots and status over
 *       the grid; every rank applies the interchanges to its other columns (two kernels around one
 *       allToAllv down the column, only rows that move, bit for bit: {@link RowInterchanges#plan}),
 *       the diagonal process row solves U₁₂ (cuBLAS trsm) and sends it down each column, and every
 *       rank updates its trailing part with one dgemm. The panel's rows go to cuSOLVER with the
 *       diagonal process row's first, so the pivots are LAPACK's except where |values| tie exactly
 *       across process rows.
 *   <li><b>potrf</b> (lower): cuSOLVER's potrf on the diagonal block, L₁₁ down the panel column,
 *       trsm for L₂₁, L₂₁ along each row, the rows matching a rank's columns down each column (an
 *       allGather, then one gather kernel), and per local block column a dsyrk on the diagonal block
 *       and a dgemm below it: nothing above the diagonal is written.
 *   <li>The solves are {@link TriangularSolves}' recipe with trsm and dgemm.
 * </ul>
 * Errors are the host routines' ({@link FactorizationException}, refusals before any step on every
 * rank); each step reads its status back (one wait on this rank's stream per panel).
 */
public final class DeviceSolver implements AutoCloseable {
  private final ProcessGrid<? extends Communicator> grid;
  private final DeviceOps kernels;
  /** Workspace by purpose; grown by allocating anew (never freed before close: cudaFree waits for the device). */
  private final Map<String, long[]> scratch = new HashMap<>();
  private final List<Long> retired = new ArrayList<>();
  /** 64 bytes of device words for statuses and the non-finite scan. */
  private final long words;
  private static final long HOST_ROWS_AT = 1 << 16;

  /** Over {@code kernels}: CUDA's ({@link DeviceKernels}), or in tests one that emulates a device in host memory. */
  DeviceSolver(ProcessGrid<? extends Communicator> grid, DeviceOps kernels) {
    this.grid = grid;
    this.kernels = kernels;
    this.words = kernels.malloc(64);
  }

  /**
   * This rank's solver over {@code grid} (on this thread's current device, the grid's stream). Opens
   * cuBLAS and cuSOLVER handles and loads the kernels: call it on every rank before the first
   * routine, not between collectives of other ranks on the same GPU.
   */
  public static DeviceSolver open(ProcessGrid<? extends GpuCommunicator> grid) {
    if (grid == null) {
      throw new IllegalArgumentException("grid is null");
    }
    long stream = grid.all().stream();
    if (grid.row().stream() != stream) {
      grid.row().setStream(stream);
    }
    if (grid.column().stream() != stream) {
      grid.column().setStream(stream);
    }
    return new DeviceSolver(grid, DeviceKernels.open(stream));
  }

  /** The cudaStream_t every routine enqueues on (the grid's). */
  public long stream() {
    return kernels.stream();
  }

  /** Waits until everything enqueued so far on {@link #stream()} has run. */
  public void synchronize() {
    kernels.sync();
  }

  // ---- host ends ----

  /** A device copy of this rank's host part (waits for the copy). */
  public DeviceMatrix upload(LocalMatrix part) {
    DeviceMatrix a = DeviceMatrix.wrap(part.descriptor(), part.prow(), part.pcol(), kernels.malloc(8L
        * part.descriptor().lld() * part.cols()), kernels::free);
    copyIn(part, a);
    return a;
  }

  /** Copies this rank's host part into {@code a} (same descriptor and process), and waits. */
  public void copyIn(LocalMatrix part, DeviceMatrix a) {
    requireSameShape(part, a);
    try (org.bytedeco.javacpp.DoublePointer host = new org.bytedeco.javacpp.DoublePointer(part.data())) {
      kernels.copyBytes(a.address(), host.address(), a.bytes());
      kernels.sync();
    }
  }

  /** A host copy of {@code a} (waits for the copy). */
  public LocalMatrix download(DeviceMatrix a) {
    LocalMatrix part = LocalMatrix.allocate(a.descriptor(), a.prow(), a.pcol());
    try (org.bytedeco.javacpp.DoublePointer host = new org.bytedeco.javacpp.DoublePointer(part.data().length)) {
      kernels.copyBytes(host.address(), a.address(), a.bytes());
      kernels.sync();
      host.get(part.data());
    }
    return part;
  }

  private static void requireSameShape(LocalMatrix part, DeviceMatrix a) {
    if (!part.descriptor().equals(a.descriptor()) || part.prow() != a.prow() || part.pcol() != a.pcol()) {
      throw new IllegalArgumentException("the host part (process (" + part.prow() + ", " + part.pcol() + ") of "
          + part.descriptor() + ") is not the device matrix's (process (" + a.prow() + ", " + a.pcol() + ") of "
          + a.descriptor() + ")");
    }
  }

  // ---- LU ----

  /**
   * P A = L U in place, as {@link Lu#getrf(ProcessGrid, LocalMatrix)}: the pivots, the same on every
   * rank (LAPACK's IPIV, 0-based, global rows). Collective over the grid.
   */
  public int[] getrf(DeviceMatrix a) {
    Descriptor d = a.descriptor();
    FactorPlan[] plan = new FactorPlan[1];
    GridCalls calls = GridCalls.open(grid, "getrf", List.of(d), () -> {
      plan[0] = FactorPlan.getrf(d);
      requireMine(a, "A");
    }, List.of(finite("the input", a, false)));
    int[] pivots = new int[Math.min(d.m(), d.n())];
    if (pivots.length == 0) {
      return pivots;
    }
    if (d.gridRows() == 1 && d.gridCols() == 1) {
      long work = need("getrf.work", 8L * kernels.getrfWorkspace(d.m(), d.n(), d.lld()));
      long ipiv = need("getrf.ipiv", 4L * pivots.length + 8);
      kernels.getrf(a.address(), d.lld(), d.m(), d.n(), work, ipiv, words);
      kernels.firstNonFinite(a.address(), d.lld(), d.m(), d.n(), words + 16);
      kernels.copyBytes(kernels.host(), words, 32);
      kernels.copyBytes(kernels.host() + HOST_ROWS_AT, ipiv, 4L * pivots.length);
      kernels.sync();
      throwIfFailed(kernels.hostInt(0), kernels.hostLong(16), kernels.hostLong(24), d.m(), 0, pos -> pos);
      for (int k = 0; k < pivots.length; k++) {
        pivots[k] = kernels.hostInt(HOST_ROWS_AT + 4L * k) - 1;
      }
      return pivots;
    }
    getrfSteps(calls, plan[0], a, pivots);
    return pivots;
  }

  private void getrfSteps(GridCalls calls, FactorPlan plan, DeviceMatrix a, int[] pivots) {
    Descriptor d = a.descriptor();
    int np = d.gridRows();
    int p = calls.prow();
    int q = calls.pcol();
    int lld = d.lld();
    int nb = d.nb();
    int most = d.numrocRows(d.rsrc());
    int trailerWords = nb / 2 + 4;
    long panel = need("getrf.panel", 8L * ((long) d.m() * nb + trailerWords));
    long send = need("getrf.send", 8L * most * nb);
    long gathered = need("getrf.gathered", 8L * np * most * nb);
    long u12 = need("getrf.u12", 8L * nb * a.cols());
    long work = need("getrf.work", 8L * kernels.getrfWorkspace(d.m(), nb, d.m()));
    reserveInterchanges(2 * nb, a.cols());
    int[] count = new int[np];
    int[] first = new int[np];
    int[] offset = new int[np];
    for (FactorPlan.Step s : plan.steps()) {
      int w = s.width();
      int j0 = s.first();
      int rows = d.m() - j0; // the panel's rows, the diagonal process row's first
      int widest = 0;
      for (int k = 0, at = 0; k < np; k++) {
        int pr = (s.diagRow() + k) % np;
        first[pr] = d.localRowsBefore(j0, pr);
        count[pr] = d.numrocRows(pr) - first[pr];
        offset[pr] = at;
        at += count[pr];
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
          kernels.copy(send, widest, a.at(first[p], pc0), lld, count[p], w);
          calls.columnAllGather(device(send, 8L * widest * w), device(gathered, 8L * np * widest * w),
              (long) widest * w);
          if (p == s.diagRow()) {
            for (int pr = 0; pr < np; pr++) {
              kernels.copy(panel + 8L * offset[pr], rows, gathered + 8L * pr * widest * w, widest, count[pr], w);
            }
          }
        }
        if (p == s.diagRow()) {
          kernels.getrf(panel, rows, rows, w, work, ipiv, status);
          kernels.firstNonFinite(panel, rows, rows, w, status + 8);
        }
      }
      calls.gridBroadcast(device(panel, 8 * total), total, s.diagRow(), s.panelCol());
      kernels.copyBytes(kernels.host(), ipiv, 4L * wPad + 24);
      kernels.sync();
      long statusAt = 4L * wPad;
      throwIfFailed(kernels.hostInt(statusAt), kernels.hostLong(statusAt + 8), kernels.hostLong(statusAt + 16), rows,
          j0, pos -> globalRow(d, s.diagRow(), first, count, pos));
      for (int k = 0; k < w; k++) {
        pivots[j0 + k] = globalRow(d, s.diagRow(), first, count, kernels.hostInt(4L * k) - 1);
      }
      long mine = panel + 8L * offset[p]; // this process row's rows of the factored panel, leading dimension rows
      if (q == s.panelCol()) {
        kernels.copy(a.at(first[p], pc0), lld, mine, rows, count[p], w);
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
        kernels.solveLower(mine, rows, true, a.at(first[p], c1), lld, w, cols);
      }
      if (s.end() < d.m()) {
        long u = a.at(first[p], c1);
        int ldu = lld;
        if (np > 1) {
          if (p == s.diagRow()) {
            kernels.copy(u12, w, u, lld, w, cols);
          }
          calls.columnBroadcast(device(u12, 8L * w * cols), (long) w * cols, s.diagRow());
          u = u12;
          ldu = w;
        }
        IndexRange down = s.trailingLocalRows(p);
        kernels.subtractProduct(a.at(down.from(), c1), lld, down.size(), cols, mine + 8L * (down.from() - first[p]),
            rows, u, ldu, w);
      }
    }
  }

  /** The global row of position {@code pos} of a panel whose rows come process row by process row from the diagonal's. */
  private static int globalRow(Descriptor d, int diagRow, int[] first, int[] count, int pos) {
    int np = d.gridRows();
    for (int k = 0, at = 0; k < np; k++) {
      int pr = (diagRow + k) % np;
      if (pos < at + count[pr]) {
        return d.indxl2gRow(first[pr] + pos - at, pr);
      }
      at += count[pr];
    }
    throw new IllegalStateException("panel position " + pos + " is past the panel's rows");
  }

  private static void throwIfFailed(int info, long nan, long inf, int rows, int column0,
      java.util.function.IntUnaryOperator global) {
    if (info > 0) {
      int column = column0 + info - 1;
      throw new FactorizationException(Reason.SINGULAR, column, column, "getrf: the matrix is singular: column "
          + column + " has no nonzero pivot (U(" + column + "," + column + ") = 0; 0-based)");
    }
    long bad = Long.compareUnsigned(nan, inf) < 0 ? nan : inf;
    if (bad != -1) {
      int row = global.applyAsInt((int) (bad % rows));
      int column = column0 + (int) (bad / rows);
      throw new FactorizationException(Reason.OVERFLOW, row, column, "getrf: the elimination overflowed: column "
          + column + " holds a non-finite value at row " + row + " (0-based) although the input is finite;"
          + " scale the matrix");
    }
  }

  /**
   * Solves A X = B with getrf's factors and pivots, as {@link Lu#getrs}: {@code b} (A's row blocks;
   * its own NB and CSRC) is overwritten with X. Collective over the grid.
   */
  public void getrs(DeviceMatrix lu, int[] pivots, DeviceMatrix b) {
    Descriptor d = lu.descriptor();
    FactorPlan[] plan = new FactorPlan[1];
    GridCalls calls = GridCalls.open(grid, "getrs", List.of(d, b.descriptor()), () -> {
      plan[0] = Lu.solvePlan(d, b.descriptor(), pivots);
      requireMine(lu, "the factors");
      requireMine(b, "B");
    }, List.of(finite("B", b, false)));
    if (d.n() == 0) {
      return;
    }
    if (d.gridRows() == 1 && d.gridCols() == 1) {
      if (b.cols() == 0) {
        return;
      }
      long ipiv = need("getrs.ipiv", 4L * d.n() + 8);
      int[] oneBased = new int[d.n()];
      for (int k = 0; k < oneBased.length; k++) {
        oneBased[k] = pivots[k] + 1;
      }
      kernels.sync(); // the pinned words may still be in an earlier copy's flight
      kernels.putHostInts(HOST_ROWS_AT, oneBased, 0, oneBased.length);
      kernels.copyBytes(ipiv, kernels.host() + HOST_ROWS_AT, 4L * d.n());
      kernels.getrs(lu.address(), d.lld(), d.n(), ipiv, b.address(), b.descriptor().lld(), b.cols(), words);
      kernels.sync();
      return;
    }
    reserveInterchanges(d.n(), b.cols());
    interchange(calls, b, pivots, 0, d.n(), List.of(new IndexRange(0, b.cols())));
    solveLower(calls, plan[0], lu, b, true);
    solveUpper(calls, plan[0], lu, b);
  }

  // ---- Cholesky ----

  /** A = L Lᵀ in place (L on and below the diagonal; above it untouched), as {@link Cholesky#potrf}. */
  public void potrf(DeviceMatrix a) {
    Descriptor d = a.descriptor();
    FactorPlan[] plan = new FactorPlan[1];
    GridCalls calls = GridCalls.open(grid, "potrf", List.of(d), () -> {
      plan[0] = FactorPlan.potrf(d);
      requireMine(a, "A");
    }, List.of(finite("the input's lower triangle", a, true)));
    if (d.n() == 0) {
      return;
    }
    if (d.gridRows() == 1 && d.gridCols() == 1) {
      int lwork = kernels.potrfWorkspace(d.n(), d.lld());
      long work = need("potrf.work", 8L * lwork);
      kernels.potrf(a.address(), d.lld(), d.n(), work, lwork, words);
      kernels.copyBytes(kernels.host(), words, 4);
      kernels.sync();
      throwIfNotDefinite(kernels.hostInt(0), 0);
      return;
    }
    potrfSteps(calls, plan[0], a);
  }

  private static void throwIfNotDefinite(int info, int column0) {
    if (info > 0) {
      int column = column0 + info - 1;
      throw new FactorizationException(Reason.NOT_POSITIVE_DEFINITE, column, column, "potrf: the matrix is not"
          + " positive definite: the pivot of column " + column + " (0-based) is not positive");
    }
  }

  private void potrfSteps(GridCalls calls, FactorPlan plan, DeviceMatrix a) {
    Descriptor d = a.descriptor();
    int np = d.gridRows();
    int p = calls.prow();
    int q = calls.pcol();
    int lld = d.lld();
    int nb = d.nb();
    int most = d.numrocRows(d.rsrc());
    long diag = need("potrf.diag", 8L * (nb * nb + 1));
    long panel = need("potrf.panel", 8L * ((long) most * nb + 1));
    long send = need("potrf.send", 8L * most * nb);
    long gathered = need("potrf.gathered", 8L * np * most * nb);
    long transposed = need("potrf.transposed", 8L * nb * a.cols());
    long columnRows = need("potrf.rows", 4L * a.cols() + 8);
    int lwork = kernels.potrfWorkspace(nb, lld);
    long work = need("potrf.work", 8L * lwork);
    for (FactorPlan.Step s : plan.steps()) {
      int w = s.width();
      int r1 = s.trailingLocalRows(p).from();
      int rows = a.rows() - r1;
      int c0 = s.panelLocalCols().from();
      long status = panel + 8L * rows * w;
      if (q == s.panelCol()) {
        if (p == s.diagRow()) {
          int r0 = s.diagLocalRows().from();
          kernels.potrf(a.at(r0, c0), lld, w, work, lwork, diag + 8L * w * w);
          kernels.copy(diag, w, a.at(r0, c0), lld, w, w);
        }
        if (np > 1) {
          calls.columnBroadcast(device(diag, 8L * (w * w + 1)), (long) w * w + 1, s.diagRow());
        }
        kernels.solveRightLowerTransposed(diag, w, a.at(r1, c0), lld, rows, w);
        kernels.copy(panel, rows, a.at(r1, c0), lld, rows, w);
        kernels.copyBytes(status, diag + 8L * w * w, 8);
      }
      if (d.gridCols() > 1) {
        calls.rowBroadcast(device(panel, 8L * ((long) rows * w + 1)), (long) rows * w + 1, s.panelCol());
      }
      kernels.copyBytes(kernels.host(), status, 4);
      kernels.sync();
      throwIfNotDefinite(kernels.hostInt(0), s.first());
      if (s.end() == d.n()) {
        continue;
      }
      // The rows of L21 that match this rank's trailing columns come from the process rows holding them.
      int widest = 0;
      for (int pr = 0; pr < np; pr++) {
        widest = Math.max(widest, d.numrocRows(pr) - d.localRowsBefore(s.end(), pr));
      }
      long all = panel;
      int ldAll = rows;
      if (np > 1) {
        kernels.copy(send, widest, panel, rows, rows, w);
        calls.columnAllGather(device(send, 8L * widest * w), device(gathered, 8L * np * widest * w), (long) widest * w);
        all = gathered;
        ldAll = widest;
      }
      IndexRange right = s.trailingLocalCols(q);
      int c1 = right.from();
      int cols = right.size();
      int[] index = new int[cols];
      for (int lj = c1; lj < right.to(); lj++) {
        int g = d.indxg2pRow(d.indxl2gCol(lj, q));
        int gl = d.indxg2lRow(d.indxl2gCol(lj, q)) - d.localRowsBefore(s.end(), g);
        index[lj - c1] = (np > 1 ? g * widest * w : 0) + gl;
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

  /** Solves A X = B with L from {@link #potrf}, as {@link Cholesky#potrs}. */
  public void potrs(DeviceMatrix l, DeviceMatrix b) {
    Descriptor d = l.descriptor();
    FactorPlan[] plan = new FactorPlan[1];
    GridCalls calls = GridCalls.open(grid, "potrs", List.of(d, b.descriptor()), () -> {
      plan[0] = Cholesky.solvePlan(d, b.descriptor());
      requireMine(l, "the factor");
      requireMine(b, "B");
    }, List.of(finite("B", b, false)));
    if (d.n() == 0) {
      return;
    }
    if (d.gridRows() == 1 && d.gridCols() == 1) {
      if (b.cols() > 0) {
        kernels.potrs(l.address(), d.lld(), d.n(), b.address(), b.descriptor().lld(), b.cols(), words);
      }
      kernels.sync();
      return;
    }
    solveLower(calls, plan[0], l, b, false);
    solveLowerTransposed(calls, plan[0], l, b);
  }

  // ---- the block triangular solves (TriangularSolves' recipe on the device) ----

  private void solveLower(GridCalls calls, FactorPlan plan, DeviceMatrix a, DeviceMatrix b, boolean unit) {
    int p = calls.prow();
    int nrhs = b.cols();
    int ldb = b.descriptor().lld();
    long x = need("solve.x", 8L * plan.descriptor().nb() * Math.max(1, nrhs));
    for (FactorPlan.Step s : plan.steps()) {
      int w = s.width();
      int r0 = s.panelLocalRows(p).from();
      int rows = a.rows() - r0;
      long column = blockColumn(calls, a, s, r0, a.rows());
      if (p == s.diagRow()) {
        kernels.solveLower(column, rows, unit, b.at(r0, 0), ldb, w, nrhs);
      }
      if (s.end() < plan.descriptor().m() && nrhs > 0) {
        if (p == s.diagRow()) {
          kernels.copy(x, w, b.at(r0, 0), ldb, w, nrhs);
        }
        calls.columnBroadcast(device(x, 8L * w * nrhs), (long) w * nrhs, s.diagRow());
        int r1 = s.trailingLocalRows(p).from();
        kernels.subtractProduct(b.at(r1, 0), ldb, a.rows() - r1, nrhs, column + 8L * (r1 - r0), rows, x, w, w);
      }
    }
  }

  private void solveUpper(GridCalls calls, FactorPlan plan, DeviceMatrix a, DeviceMatrix b) {
    int p = calls.prow();
    int nrhs = b.cols();
    int ldb = b.descriptor().lld();
    long x = need("solve.x", 8L * plan.descriptor().nb() * Math.max(1, nrhs));
    for (int k = plan.steps().size() - 1; k >= 0; k--) {
      FactorPlan.Step s = plan.steps().get(k);
      int w = s.width();
      int above = a.descriptor().localRowsBefore(s.first(), p);
      int rows = a.descriptor().localRowsBefore(s.end(), p);
      long column = blockColumn(calls, a, s, 0, rows);
      if (p == s.diagRow()) {
        kernels.solveUpper(column + 8L * above, rows, b.at(above, 0), ldb, w, nrhs);
      }
      if (s.first() > 0 && nrhs > 0) {
        if (p == s.diagRow()) {
          kernels.copy(x, w, b.at(above, 0), ldb, w, nrhs);
        }
        calls.columnBroadcast(device(x, 8L * w * nrhs), (long) w * nrhs, s.diagRow());
        kernels.subtractProduct(b.at(0, 0), ldb, above, nrhs, column, rows, x, w, w);
      }
    }
  }

  private void solveLowerTransposed(GridCalls calls, FactorPlan plan, DeviceMatrix a, DeviceMatrix b) {
    int p = calls.prow();
    int nrhs = b.cols();
    int ldb = b.descriptor().lld();
    long sums = need("solve.sums", 8L * plan.descriptor().nb() * Math.max(1, nrhs));
    for (int k = plan.steps().size() - 1; k >= 0; k--) {
      FactorPlan.Step s = plan.steps().get(k);
      int w = s.width();
      int r0 = s.panelLocalRows(p).from();
      int rows = a.rows() - r0;
      long column = blockColumn(calls, a, s, r0, a.rows());
      if (s.end() < plan.descriptor().m() && nrhs > 0) {
        int r1 = s.trailingLocalRows(p).from();
        kernels.memset(sums, 0, 8L * w * nrhs);
        kernels.negatedTransposedProduct(sums, w, w, nrhs, column + 8L * (r1 - r0), rows, b.at(r1, 0), ldb,
            a.rows() - r1);
        calls.columnSum(device(sums, 8L * w * nrhs), (long) w * nrhs);
        if (p == s.diagRow()) {
          kernels.add(b.at(r0, 0), ldb, sums, w, w, nrhs);
        }
      }
      if (p == s.diagRow()) {
        kernels.solveLowerTransposed(column, rows, b.at(r0, 0), ldb, w, nrhs);
      }
    }
  }

  /** Local rows [from, to) of step s's block column, from its process column along each row (leading dimension to − from). */
  private long blockColumn(GridCalls calls, DeviceMatrix a, FactorPlan.Step s, int from, int to) {
    int rows = to - from;
    int w = s.width();
    long column = need("solve.column", 8L * Math.max(1, a.rows()) * a.descriptor().nb());
    if (calls.pcol() == s.panelCol()) {
      kernels.copy(column, rows, a.at(from, s.panelLocalCols().from()), a.descriptor().lld(), rows, w);
    }
    if (rows > 0 && a.descriptor().gridCols() > 1) {
      calls.rowBroadcast(device(column, 8L * rows * w), (long) rows * w, s.panelCol());
    }
    return column;
  }

  // ---- row interchanges ----

  private void reserveInterchanges(int rows, int width) {
    need("swap.send", 8L * rows * Math.max(1, width));
    need("swap.recv", 8L * rows * Math.max(1, width));
    need("swap.rows", 8L * rows + 8);
  }

  /** {@link RowInterchanges#apply}'s plan on the device: pack the rows that leave, one allToAllv, unpack. */
  private void interchange(GridCalls calls, DeviceMatrix a, int[] pivots, int from, int to, List<IndexRange> columns) {
    int width = 0;
    for (IndexRange c : columns) {
      width += c.size();
    }
    RowInterchanges.Plan plan = RowInterchanges.plan(a.descriptor(), a.prow(), pivots, from, to, width);
    if (plan.empty()) {
      return;
    }
    int sends = plan.sendRows().length;
    int recvs = plan.recvRows().length;
    long send = need("swap.send", 8L * sends * width);
    long recv = need("swap.recv", 8L * recvs * width);
    long rows = need("swap.rows", 4L * (sends + recvs) + 8);
    int lld = a.descriptor().lld();
    kernels.sync(); // the pinned words may still be in an earlier copy's flight
    kernels.putHostInts(HOST_ROWS_AT, plan.sendRows(), 0, sends);
    kernels.putHostInts(HOST_ROWS_AT + 4L * sends, plan.recvRows(), 0, recvs);
    kernels.copyBytes(rows, kernels.host() + HOST_ROWS_AT, 4L * (sends + recvs));
    int at = 0;
    for (IndexRange c : columns) {
      kernels.gatherRows(a.address(), lld, rows, sends, c.from(), c.size(), send + 8L * at, width);
      at += c.size();
    }
    long from2 = send;
    if (plan.crosses()) {
      calls.columnAllToAllv(device(send, 8L * sends * width), plan.sendCounts(), plan.sendDispls(),
          device(recv, 8L * recvs * width), plan.recvCounts(), plan.recvDispls());
      from2 = recv;
    }
    at = 0;
    for (IndexRange c : columns) {
      kernels.scatterRows(a.address(), lld, rows + 4L * sends, recvs, c.from(), c.size(), from2 + 8L * at, width);
      at += c.size();
    }
  }

  // ---- checks and workspace ----

  private void requireMine(DeviceMatrix a, String name) {
    if (a == null) {
      throw new IllegalArgumentException(name + " is null");
    }
    GridCalls.requireMine(grid, a.prow(), a.pcol(), name);
  }

  private FiniteInput finite(String name, DeviceMatrix a, boolean lower) {
    return new FiniteInput(name, a.descriptor(), () -> {
      kernels.firstNonFinite(a.address(), a.descriptor(), a.prow(), a.pcol(), lower, words + 32);
      kernels.copyBytes(kernels.host(), words + 32, 16);
      kernels.sync();
      long nan = kernels.hostLong(0);
      long inf = kernels.hostLong(8);
      return new long[] {nan == -1 ? FiniteInput.NONE : nan, inf == -1 ? FiniteInput.NONE : inf};
    });
  }

  /** Workspace {@code purpose} of at least {@code bytes}. */
  private long need(String purpose, long bytes) {
    long[] have = scratch.get(purpose);
    if (have != null && have[1] >= bytes) {
      return have[0];
    }
    if (have != null) {
      retired.add(have[0]);
    }
    long address = kernels.malloc(bytes);
    scratch.put(purpose, new long[] {address, bytes});
    return address;
  }

  private CommBuffer device(long address, long bytes) {
    return kernels.buffer(address, Math.max(8, bytes));
  }

  /** Frees the workspace and the handles (cudaFree waits for the device: after the grid's last collective). */
  @Override
  public void close() {
    kernels.sync();
    for (long[] s : scratch.values()) {
      kernels.free(s[0]);
    }
    for (long r : retired) {
      kernels.free(r);
    }
    scratch.clear();
    retired.clear();
    kernels.free(words);
    kernels.close();
  }
}
