package dev.gpucoll.cuda;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.CollectiveException;
import dev.gpucoll.api.CommBuffer;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.LocOp;
import dev.gpucoll.api.PairType;
import dev.gpucoll.api.PathChoice;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.core.Algorithm;
import dev.gpucoll.core.batch.RecordedBatch;
import dev.gpucoll.core.config.GpuCollConf;
import dev.gpucoll.core.report.RankReport;
import dev.gpucoll.core.spi.MemberInfo;
import dev.gpucoll.cuda.KernelTable.Protocol;
import dev.gpucoll.cuda.eligibility.BufferRegistration;
import dev.gpucoll.cuda.eligibility.FactKeys;
import dev.gpucoll.cuda.eligibility.GroupFacts;
import dev.gpucoll.cuda.eligibility.GroupFacts.Link;
import dev.gpucoll.cuda.eligibility.GroupFacts.Member;
import dev.gpucoll.cuda.eligibility.Reason;
import dev.gpucoll.cuda.eligibility.Verdict;
import dev.gpucoll.cuda.eligibility.ZeroCtaDetector;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.Function;

/**
 * Which path every call of one GPU group takes, and why: the one place that decides it. Built once
 * per group from the gathered facts (hosts, processes, GPUs, P2P links, NCCL versions), the
 * settings and any forced algorithm; pure Java, so every rank reaches the same answers without
 * another exchange, and it is tested without a GPU. {@link #route} answers each call; the
 * communicator only executes the answer; {@link #explain} and the path report read the same code.
 *
 * <p>The decisions, in order:
 * <ol>
 *   <li>A group of one rank copies (nothing runs in place), unless an algorithm or kernel variant is forced.
 *   <li>Ranks that share a GPU must not spin: ranks of different processes would time-slice (a
 *       handshake costs milliseconds), and ranks of one process (Spark's fractional GPUs) would
 *       deadlock when user code calls a device-synchronising function such as cudaFree between
 *       collectives while a peer's kernel spins. Such groups take {@code gpu-staged-host} (device
 *       to pinned host, the host backend, back), unless our kernels are forced.
 *   <li>Our kernels serve up to {@value KernelTable#MAX_RANKS} ranks of one host; larger groups, groups
 *       across hosts, and {@code spark.gpucoll.algorithm=nccl*} run every collective on NCCL.
 *   <li>Otherwise our kernels up to {@code gpu.twoShotMaxBytes} when every pair of GPUs has CUDA
 *       P2P, NCCL above (on the path {@link ZeroCtaDetector} predicts for the buffers). Our kernel
 *       for allReduce: LL128-atomic from {@code gpu.ll128MinRanks} ranks with their own GPUs (SUM,
 *       AVG; not 8-bit types), LL one-shot up to {@code gpu.oneShotMaxBytes}, sentinel two-shot up to the kernel's
 *       capacity, the credit pipe above; data movement: LL slots up to a per-peer size, the pipe above.
 * </ol>
 * A forced algorithm the group cannot run is an error naming why, never a silent fallback.
 *
 * <p>A {@code group()} batch ({@link #group}): consecutive allReduces that would each take the LL
 * one-shot kernel, with one type and op and device buffers, fuse into one launch of the batch kernel
 * (up to {@value KernelTable#MAX_BATCH_CALLS} calls whose slot-aligned payloads fit the LL inbox's
 * {@value KernelTable#LL_MAX_BYTES} bytes per peer); every other call runs on its own route.
 */
final class GroupRoute {
  /** How one call runs. */
  enum Kind { STAGED, NCCL, KERNEL, ONE_RANK }

  /**
   * The answer for one call.
   *
   * @param plan the kernel launch when {@code kind} is KERNEL, else null
   */
  record Route(Kind kind, Algorithm algorithm, LaunchPlan plan) {
    static final Route STAGED = new Route(Kind.STAGED, Algorithm.GPU_STAGED_HOST, null);
    static final Route ONE_RANK = new Route(Kind.ONE_RANK, Algorithm.ONE_RANK_COPY, null);
  }

  /**
   * Largest per-peer payload that data movement sends over LL slots when every rank has its own GPU.
   * Measured on 2 H200s over NVLink (docs/gpu-multi.md): LL allGather/allToAll took 5 us at 16 KB
   * per peer but ~105 us at 64 KB per peer, while the pipe took 8 us at 256 KB per peer.
   */
  static final long LL_MOVEMENT_MAX_ACROSS_GPUS = 16 << 10;

  private final int rank;
  private final int size;
  private final GroupTopology topology;
  /** The eligibility facts; null when they cannot be parsed (then NCCL is never chosen by size). */
  private final GroupFacts facts;
  private final Optional<Algorithm> forced;
  /** The protocol every collective runs (the GPU checks' kernel variant), or null. */
  private final Protocol forcedVariant;
  private final int ctaPolicy;
  private final long oneShotMax;
  private final long twoShotMax;
  private final int ll128MinRanks;
  private final long llMovementMax;
  /** Why our kernels cannot serve the group (every call on NCCL); null when they can. */
  private final String kernelsOff;
  /** Why the group must not spin (every call staged through the host); null when it may. */
  private final String stagedWhy;
  /** Why some pair of GPUs cannot run our kernels (large and small calls then go to NCCL); empty when all can. */
  private final List<String> kernelBlockers;
  /** Null when the group forms an NCCL communicator; else why not. */
  private final String noNccl;
  private final List<String> findings = new ArrayList<>();
  /**
   * Answers of {@link #route} by packed call key, direct-mapped: every decision depends only on the
   * call's arguments and on state fixed at construction, so a repeated call reuses its Route instead
   * of re-deciding (allocation-free on the launch path). Entries are immutable, so a racing reader
   * sees either a whole entry or a miss.
   */
  private final RouteMemo[] routes = new RouteMemo[ROUTE_MEMO_SLOTS];

  private static final int ROUTE_MEMO_SLOTS = 256;

  static {
    // routeKey packs each ordinal in 3 bits.
    if (Collective.values().length > 8 || DataType.values().length > 8 || ReduceOp.values().length > 8
        || BufferRegistration.values().length > 8) {
      throw new AssertionError("routeKey's bit widths no longer hold every enum ordinal");
    }
  }

  private record RouteMemo(long key, Route route) {}

  /** The last {@link #pairRoute} answer per pair type (a pivot search repeats one count). */
  private final PairRoute[] pairRoutes = new PairRoute[PairType.values().length];

  /**
   * The GPU checks' internal settings also shape the route: {@code spark.gpucoll.internal.kernelVariant}
   * (a kernel variant for every collective) and {@code spark.gpucoll.internal.spinOnSharedGpu} (our
   * kernels even when ranks of this process share a GPU; user code that synchronises the device
   * between calls can then deadlock).
   *
   * @throws CollectiveException when the gpu backend cannot serve the group, naming why
   */
  GroupRoute(int rank, List<MemberInfo> members, GpuCollConf conf) {
    this.rank = rank;
    this.size = members.size();
    this.topology = new GroupTopology(members);
    this.forcedVariant = conf.get(GpuCollConf.INTERNAL_KERNEL_VARIANT).map(this::variantNamed).orElse(null);
    boolean spinOnSharedGpu = conf.get(GpuCollConf.INTERNAL_SPIN_ON_SHARED_GPU);
    this.forced = forcedVariant != null ? Optional.empty() : conf.get(GpuCollConf.ALGORITHM);
    if (!topology.problems().isEmpty()) {
      throw fail("the gpu backend cannot serve this group: " + topology.problems());
    }
    if (forced.isPresent() && forced.get().id().startsWith("host-")) {
      throw fail(GpuCollConf.ALGORITHM.key() + "=" + forced.get() + " runs on the host backend only; the gpu backend"
          + " runs " + Algorithm.settingValues().stream().filter(v -> !v.startsWith("host-")).toList());
    }
    GroupFacts parsed = null;
    try {
      parsed = GroupFacts.of(members);
    } catch (RuntimeException e) {
      findings.add("eligibility facts unreadable (" + e.getMessage() + "): our kernels serve every size");
    }
    this.facts = parsed;
    this.ctaPolicy = ctaPolicy(conf.get(GpuCollConf.NCCL_CTA_POLICY));
    long oneShot = conf.get(GpuCollConf.GPU_ONE_SHOT_MAX_BYTES);
    this.twoShotMax = conf.get(GpuCollConf.GPU_TWO_SHOT_MAX_BYTES);
    if (oneShot > twoShotMax) {
      throw fail(GpuCollConf.GPU_ONE_SHOT_MAX_BYTES.key() + " (" + oneShot + ") is larger than "
          + GpuCollConf.GPU_TWO_SHOT_MAX_BYTES.key() + " (" + twoShotMax + ")");
    }
    this.oneShotMax = oneShot; // the LL kernels' own capacity is the kernel table's, checked per call

    String ncclMissing = ncclMissing(members);
    boolean ncclEverywhere = ncclMissing == null;
    boolean distinctGpus = topology.gpuCount() == size;
    boolean ncclForced = forced.map(Algorithm::isNccl).orElse(false);
    boolean kernelsForced = forcedVariant != null || forced.isPresent() && !ncclForced;
    this.kernelsOff = !topology.singleHost()
        ? "the group spans hosts " + members.stream().map(MemberInfo::host).distinct().toList()
            + " and our kernels serve ranks of one host"
        : size > KernelTable.MAX_RANKS ? "our kernels serve at most " + KernelTable.MAX_RANKS + " ranks; this group has "
            + size
        : ncclForced ? GpuCollConf.ALGORITHM.key() + "=" + forced.get() : null;
    if (kernelsOff != null && (!ncclEverywhere || !distinctGpus || kernelsForced)) {
      throw fail("the gpu backend cannot serve this group: " + kernelsOff + ", and "
          + (kernelsForced ? "our kernels are forced (" + (forcedVariant != null ? "variant " + forcedVariant.abiName()
              : GpuCollConf.ALGORITHM.key() + "=" + forced.get()) + ")"
          : !ncclEverywhere ? ncclMissing : "ranks share a GPU (NCCL refuses that)"));
    }

    List<String> sameProcessShared = topology.sameProcessSharedGpus();
    if (topology.mustNotSpin()) {
      stagedWhy = String.join("; ", topology.crossProcessSharedGpus())
          + ": spinning kernels of different processes on one GPU time-slice";
    } else if (!sameProcessShared.isEmpty() && !kernelsForced && !spinOnSharedGpu) {
      stagedWhy = String.join("; ", sameProcessShared) + ": a peer's spinning kernel would deadlock any"
          + " device-wide synchronisation (cudaFree, cudaDeviceSynchronize) between collectives";
    } else {
      stagedWhy = null;
    }

    boolean acrossGpus = size > 1 && distinctGpus;
    this.llMovementMax = acrossGpus ? LL_MOVEMENT_MAX_ACROSS_GPUS : Long.MAX_VALUE; // else up to the LL capacity
    // Measured on one H200 (docs/gpu-results.md): with ranks sharing a GPU the LL128-atomic kernel is
    // slower than one-shot LL at every size, so it is chosen only when each rank has its own GPU.
    this.ll128MinRanks = distinctGpus ? conf.get(GpuCollConf.GPU_LL128_MIN_RANKS) : Integer.MAX_VALUE;
    this.kernelBlockers = facts == null ? List.of() : kernelBlockers(facts.members());

    findings.add("topology: " + topology.describe());
    if (stagedWhy != null) {
      findings.add("spin kernels disabled: " + stagedWhy + "; collectives take " + Algorithm.GPU_STAGED_HOST);
    } else if (!sameProcessShared.isEmpty()) {
      findings.add("our kernels spin on shared GPUs (" + String.join("; ", sameProcessShared) + ") because they are"
          + " forced; a device-wide synchronisation between collectives can deadlock");
    }
    if (kernelsOff != null) {
      findings.add("our kernels are off: " + kernelsOff + "; every collective runs on NCCL");
    } else if (stagedWhy == null) {
      if (acrossGpus) {
        findings.add("data movement over LL slots up to " + llMovementMax
            + " B per peer, the credit pipe above (LL measured slower from 64 KB per peer across GPUs)");
      }
      if (!distinctGpus) {
        findings.add("LL128-atomic not chosen by size: ranks share a GPU (" + topology.gpuCount() + " GPUs for "
            + size + " ranks)");
      }
    }
    this.noNccl = kernelsOff != null ? null
        : !ncclEverywhere ? ncclMissing
        : !distinctGpus ? "ranks share a GPU (NCCL refuses that)" + (stagedWhy == null ? "; our kernels serve every size" : "")
        : stagedWhy != null ? "staged path"
        : forcedVariant != null ? "kernel variant forced to " + forcedVariant.abiName()
        : facts == null ? "eligibility facts unreadable"
        : null;
    findings.add(noNccl == null ? "NCCL communicator formed (CTA policy " + ctaPolicy + ")"
        : "no NCCL communicator: " + noNccl);
    if (stagedWhy == null) {
      summary().forEach(line -> findings.add("route: " + line));
    }
  }

  /** A kernel variant is a protocol with an allReduce kernel in the table, named as in its kernel names. */
  private Protocol variantNamed(String name) {
    List<Protocol> variants = new ArrayList<>();
    for (Protocol p : Protocol.values()) {
      KernelTable.Kernel k = KernelTable.kernel(Collective.ALL_REDUCE, p);
      if (k != null && !k.pairs()) {
        if (p.abiName().equals(name)) {
          return p;
        }
        variants.add(p);
      }
    }
    throw fail(GpuCollConf.INTERNAL_KERNEL_VARIANT.key() + "=" + name + " names no kernel variant; the variants are "
        + variants.stream().map(Protocol::abiName).toList());
  }

  private CollectiveException fail(String message) {
    return new CollectiveException(rank, null, message);
  }

  /**
   * Null when every rank loaded NCCL; else "NCCL is not loadable on every rank" with each such rank's
   * own reason (a Python process says what to install), so a refusal tells the user what to do.
   */
  private static String ncclMissing(List<MemberInfo> members) {
    List<String> why = new ArrayList<>();
    for (MemberInfo m : members) {
      if (version(m.facts().get(FactKeys.NCCL_VERSION)) <= 0) {
        why.add("rank " + m.rank() + ": " + m.facts().getOrDefault(FactKeys.NCCL_PROBLEM, "no NCCL version reported"));
      }
    }
    if (why.isEmpty()) {
      return null;
    }
    List<String> distinct = why.stream().map(w -> w.substring(w.indexOf(": ") + 2)).distinct().toList();
    return "NCCL is not loadable on every rank (" + (distinct.size() == 1 && why.size() > 1
        ? why.size() + " ranks: " + distinct.get(0) : String.join("; ", why.subList(0, Math.min(4, why.size()))))
        + (why.size() > 4 && distinct.size() > 1 ? "; ..." : "") + ")";
  }

  private static int version(String s) {
    try {
      return s == null ? 0 : Integer.parseInt(s.trim());
    } catch (NumberFormatException e) {
      return 0;
    }
  }

  /** CTAPolicy value for {@code spark.gpucoll.nccl.ctaPolicy}. */
  static int ctaPolicy(String name) {
    return switch (name) {
      case "zero" -> ZeroCtaDetector.CTA_POLICY_ZERO;
      case "efficiency" -> ZeroCtaDetector.CTA_POLICY_EFFICIENCY;
      default -> ZeroCtaDetector.CTA_POLICY_DEFAULT;
    };
  }

  /** Why our kernels cannot run between some pair of GPUs; empty when they can. */
  private static List<String> kernelBlockers(List<Member> ms) {
    List<String> out = new ArrayList<>();
    boolean oneProcess = ms.stream().map(Member::processId).distinct().count() == 1;
    for (int i = 0; i < ms.size(); i++) {
      for (int j = i + 1; j < ms.size(); j++) {
        Member a = ms.get(i);
        Member b = ms.get(j);
        if (a.gpuUuid().or(a::busId).isPresent() && a.gpuUuid().or(a::busId).equals(b.gpuUuid().or(b::busId))) {
          continue; // the same GPU: staged or spinning, decided above
        }
        Optional<Link> link = a.busId().isEmpty() || b.busId().isEmpty() ? Optional.empty()
            : Optional.ofNullable(a.peers().get(b.busId().get())).or(() -> Optional.ofNullable(b.peers().get(a.busId().get())));
        if (link.isEmpty()) {
          if (!oneProcess) {
            out.add("P2P between " + a.label() + " and " + b.label() + " unknown (peer GPU not visible)");
          }
        } else if (!link.get().p2p()) {
          out.add(a.label() + " and " + b.label() + " have no CUDA P2P");
        }
      }
    }
    return out;
  }

  // ---- what the communicator needs to form ----

  /** True when our kernels may run: the communicator maps the peers' workspaces and loads the fatbin. */
  boolean kernelsOn() {
    return kernelsOff == null;
  }

  /** True when every call is staged through the host backend. */
  boolean staged() {
    return stagedWhy != null;
  }

  /** True when the group forms an NCCL communicator (every rank reaches the same answer). */
  boolean formsNccl() {
    return noNccl == null;
  }

  int ctaPolicy() {
    return ctaPolicy;
  }

  GroupTopology topology() {
    return topology;
  }

  /**
   * One step of a grouped batch: calls {@code first .. first + calls - 1} of the batch fused into
   * one launch of {@code plan} (a batch kernel), or, with {@code plan} null, call {@code first}
   * alone through its own {@link #route}.
   */
  record GroupStep(int first, int calls, LaunchPlan plan) {
    boolean fused() {
      return plan != null;
    }
  }

  /**
   * Which calls of a recorded batch fuse: runs of consecutive allReduces whose own route is the LL
   * one-shot kernel, of one type and op, on device buffers, none of whose buffers overlap another
   * call's of the run in a way that would make its result depend on the order (an in-place call is
   * fine); a run ends where the next call would pass {@value KernelTable#MAX_BATCH_CALLS} calls or
   * the LL inbox's slots. A run of one call still takes the batch kernel: its signature lets every
   * rank see a peer whose batch differs. Every rank recording the same batch gets the same steps.
   *
   * @param registration the NCCL registration of a call's buffers (it can decide NCCL over our kernels)
   */
  List<GroupStep> group(List<RecordedBatch.Call> calls, Function<RecordedBatch.Call, BufferRegistration> registration) {
    List<GroupStep> steps = new ArrayList<>();
    int i = 0;
    while (i < calls.size()) {
      RecordedBatch.Call head = calls.get(i);
      if (!fusable(head, registration)) {
        steps.add(new GroupStep(i, 1, null));
        i++;
        continue;
      }
      long slots = KernelAbi.slotsOf(head.count(), head.type());
      int end = i + 1;
      while (end < calls.size() && end - i < KernelTable.MAX_BATCH_CALLS) {
        RecordedBatch.Call next = calls.get(end);
        long more = slots + KernelAbi.slotsOf(next.count(), next.type());
        if (next.type() != head.type() || next.op() != head.op() || more > KernelTable.LL_SLOTS
            || !fusable(next, registration) || overlapsRun(calls, i, end)) {
          break;
        }
        slots = more;
        end++;
      }
      steps.add(new GroupStep(i, end - i, batchPlan(head.type(), head.op(), slots)));
      i = end;
    }
    return steps;
  }

  private boolean fusable(RecordedBatch.Call c, Function<RecordedBatch.Call, BufferRegistration> registration) {
    if (c.collective() != Collective.ALL_REDUCE || c.count() <= 0 || !(c.send() instanceof CommBuffer.Device)
        || !(c.recv() instanceof CommBuffer.Device)) {
      return false;
    }
    Route r = route(c.collective(), c.count(), c.type(), c.op(), registration.apply(c));
    return r.kind() == Kind.KERNEL && r.plan().entry().protocol() == Protocol.LL;
  }

  /** Whether call {@code j} writes what an earlier call of the run [from, j) reads or writes, or reads what one writes. */
  private static boolean overlapsRun(List<RecordedBatch.Call> calls, int from, int j) {
    RecordedBatch.Call c = calls.get(j);
    long bytes = c.count() * c.type().byteSize();
    long send = ((CommBuffer.Device) c.send()).address();
    long recv = ((CommBuffer.Device) c.recv()).address();
    for (int i = from; i < j; i++) {
      RecordedBatch.Call o = calls.get(i);
      long ob = o.count() * o.type().byteSize();
      long oSend = ((CommBuffer.Device) o.send()).address();
      long oRecv = ((CommBuffer.Device) o.recv()).address();
      if (overlap(recv, bytes, oSend, ob) || overlap(recv, bytes, oRecv, ob) || overlap(send, bytes, oRecv, ob)) {
        return true;
      }
    }
    return false;
  }

  private static boolean overlap(long a, long aBytes, long b, long bBytes) {
    return a < b + bBytes && b < a + aBytes;
  }

  /**
   * The path of a MAXLOC / MINLOC call: {@code plan}, the pair kernel's launch, or, with {@code plan}
   * null, through the host (the communicator gathers the pairs with its allGather and folds them),
   * {@code throughHost} saying why.
   */
  record PairRoute(PairType type, LocOp op, long count, LaunchPlan plan, String throughHost) {}

  /**
   * MAXLOC / MINLOC on the pair kernel when our kernels spin for this group and the pairs fit its LL
   * inbox; else through the host. A forced algorithm or variant does not apply (there is one pair
   * kernel), and a group of one rank takes the kernel too: it checks for NaN without a host wait.
   */
  PairRoute pairRoute(PairType t, LocOp op, long count) {
    PairRoute last = pairRoutes[t.ordinal()];
    if (last != null && last.count() == count && last.op() == op) {
      return last;
    }
    KernelTable.Kernel k = KernelTable.kernel(Collective.ALL_REDUCE, Protocol.LL_PAIR);
    String host = kernelsOff != null ? "our kernels are off: " + kernelsOff
        : stagedWhy != null ? "this group takes " + Algorithm.GPU_STAGED_HOST.id() + " (" + stagedWhy + ")"
        : !kernelBlockers.isEmpty() ? "our kernels cannot run: " + String.join("; ", kernelBlockers)
        : count > k.capacityPairs(t) ? count + " " + t + " pairs are more than the " + k.capacityPairs(t)
            + " the pair kernel takes (" + KernelTable.LL_MAX_BYTES + " bytes)"
        : !k.supports(op) ? "the pair kernel does not take " + op
        : null;
    long bytes = count * t.byteSize();
    PairRoute r = new PairRoute(t, op, count, host != null ? null
        : new LaunchPlan(Collective.ALL_REDUCE, k, k.name(t), k.grid(bytes), count, bytes, k.algorithm()), host);
    pairRoutes[t.ordinal()] = r;
    return r;
  }

  /** The batch kernel's launch for {@code slots} packed slots of {@code t} reduced with {@code op}. */
  static LaunchPlan batchPlan(DataType t, ReduceOp op, long slots) {
    KernelTable.Kernel k = KernelTable.kernel(Collective.ALL_REDUCE, Protocol.LL_BATCH);
    long bytes = slots * 8;
    if (!k.supports(op) || bytes > k.capacityElements(DataType.UINT8)) {
      throw new IllegalArgumentException(k + " takes " + op + " up to " + k.capacityElements(DataType.UINT8)
          + " packed bytes; asked " + bytes);
    }
    return new LaunchPlan(Collective.ALL_REDUCE, k, k.name(t), k.grid(bytes), bytes / t.byteSize(), bytes,
        k.algorithm());
  }

  /** What the route found while forming, for the path report. */
  List<String> findings() {
    return List.copyOf(findings);
  }

  // ---- per call ----

  /**
   * The path of one call.
   *
   * @param count the per-rank count in elements of {@code type} (per peer for data movement); for
   *              allToAllv the largest per-peer block
   * @throws CollectiveException when a forced algorithm or variant cannot take the call
   */
  Route route(Collective c, long count, DataType type, ReduceOp op, BufferRegistration registration) {
    long key = routeKey(c, count, type, op, registration);
    if (key < 0) {
      return decide(c, count, type, op, registration, Reasons.NONE); // negative or too large to pack: not memoized
    }
    int slot = (int) (mix(key) & (ROUTE_MEMO_SLOTS - 1));
    RouteMemo m = routes[slot];
    if (m != null && m.key() == key) {
      return m.route();
    }
    Route r = decide(c, count, type, op, registration, Reasons.NONE); // a failure (forced variant) is not memoized
    routes[slot] = new RouteMemo(key, r);
    return r;
  }

  /** The call packed into a non-negative long: the count above 12 bits of enum ordinals; -1 when it does not fit. */
  static long routeKey(Collective c, long count, DataType type, ReduceOp op, BufferRegistration registration) {
    if (count < 0 || count >= 1L << 50 || c == null || type == null || op == null || registration == null) {
      return -1;
    }
    return (((count << 3 | c.ordinal()) << 3 | type.ordinal()) << 3 | op.ordinal()) << 3 | registration.ordinal();
  }

  private static long mix(long key) {
    long h = key * 0x9E3779B97F4A7C15L;
    return h ^ (h >>> 29);
  }

  /** The path a call of {@code bytes} would take, with every reason (as fp32 SUM: bytes / 4 elements, rounded up). */
  PathChoice explain(Collective c, long bytes) {
    List<String> why = new ArrayList<>();
    try {
      long count = bytes < 0 ? bytes : (bytes + 3) / 4;
      Route r = decide(c, count, DataType.FLOAT32, ReduceOp.SUM, BufferRegistration.UNKNOWN, new Reasons(why));
      return new PathChoice(c, bytes, r.algorithm().id(), why);
    } catch (CollectiveException e) {
      return new PathChoice(c, bytes, "unsupported", List.of(e.getMessage()));
    }
  }

  /** One line per collective: where the algorithm changes over the report sizes. */
  List<String> summary() {
    List<String> lines = new ArrayList<>();
    for (Collective c : Collective.values()) {
      if (c == Collective.BARRIER) {
        continue;
      }
      StringBuilder sb = new StringBuilder(c.apiName()).append(':');
      String last = null;
      for (long s : RankReport.PREDICTED_SIZES) {
        String alg = explain(c, s).algorithm();
        if (!alg.equals(last)) {
          sb.append(' ').append(s).append("B->").append(alg);
          last = alg;
        }
      }
      lines.add(sb.toString());
    }
    return lines;
  }

  /**
   * Where {@link #decide} says why it chose: {@link #explain}'s list, or nowhere for {@link #route},
   * which builds no text (a reason that must be built is a Supplier, called only for a list).
   */
  private static final class Reasons {
    static final Reasons NONE = new Reasons(null);
    private final List<String> lines;

    Reasons(List<String> lines) {
      this.lines = lines;
    }

    void add(String reason) {
      if (lines != null) {
        lines.add(reason);
      }
    }

    void add(java.util.function.Supplier<String> reason) {
      if (lines != null) {
        lines.add(reason.get());
      }
    }

    void addAll(List<String> reasons) {
      if (lines != null) {
        lines.addAll(reasons);
      }
    }
  }

  private Route decide(Collective c, long count, DataType type, ReduceOp op, BufferRegistration registration,
      Reasons why) {
    if (count < 0) {
      throw new CollectiveException(rank, c, "negative count " + count);
    }
    long bytes = count * type.byteSize();
    if (size == 1 && forced.isEmpty() && forcedVariant == null) {
      why.add("one rank: the result is the input, so one cudaMemcpyAsync on the stream (nothing in place;"
          + " a barrier waits for the stream only)");
      return Route.ONE_RANK;
    }
    if (stagedWhy != null) {
      why.add(() -> stagedWhy + ": copy to pinned host memory and run the host backend");
      return Route.STAGED;
    }
    if (kernelsOff != null) {
      why.add(() -> "our kernels are off: " + kernelsOff);
      if (c == Collective.BARRIER) {
        why.add("a 1-element NCCL allReduce");
        return new Route(Kind.NCCL, Algorithm.NCCL_BARRIER, null);
      }
      Algorithm a = c == Collective.ALL_TO_ALLV ? Algorithm.NCCL : ncclAlgorithm(c, bytes, registration, why);
      return new Route(Kind.NCCL, a == null ? Algorithm.NCCL : a, null);
    }
    if (noNccl == null && c != Collective.BARRIER && c != Collective.ALL_TO_ALLV) {
      Algorithm a = ncclAlgorithm(c, bytes, registration, why);
      if (a != null) {
        return new Route(Kind.NCCL, a, null);
      }
    }
    LaunchPlan plan = kernelPlan(c, count, type, op, why);
    why.add(() -> "kernel " + plan.kernel() + ", grid " + plan.grid() + " x " + KernelTable.BLOCK_THREADS);
    return new Route(Kind.KERNEL, plan.algorithm(), plan);
  }

  /** The NCCL algorithm for this call, or null when our kernels take it. */
  private Algorithm ncclAlgorithm(Collective c, long bytes, BufferRegistration registration, Reasons why) {
    Algorithm a = ncclDecision(c, bytes, registration, why);
    return a == Algorithm.GPU_LL ? null : a;
  }

  /** NCCL's algorithm for the call, or GPU_LL meaning "our kernels". */
  private Algorithm ncclDecision(Collective c, long bytes, BufferRegistration registration, Reasons why) {
    if (forced.isPresent()) {
      Algorithm a = forced.get();
      if (!a.isNccl()) {
        return Algorithm.GPU_LL;
      }
      List<String> blockers = ncclBlockers(a, c, registration);
      if (!blockers.isEmpty()) {
        throw new CollectiveException(rank, c, GpuCollConf.ALGORITHM.key() + "=" + a + " cannot run " + c.apiName()
            + " on this group (" + size + " ranks): " + String.join("; ", blockers));
      }
      why.add(() -> "forced by " + GpuCollConf.ALGORITHM.key() + "=" + a);
      return a;
    }
    if (facts == null) {
      return Algorithm.GPU_LL;
    }
    if (kernelsOff == null) {
      if (!kernelBlockers.isEmpty()) {
        why.add(() -> "our kernels cannot run: " + String.join("; ", kernelBlockers));
      } else if (bytes <= twoShotMax) {
        return Algorithm.GPU_LL;
      } else {
        why.add(() -> bytes + " B > gpu.twoShotMaxBytes " + twoShotMax + " B: NCCL moves large messages");
      }
    }
    Verdict v = ZeroCtaDetector.evaluate(facts, ctaPolicy, c, registration, null, null);
    why.addAll(v.findings());
    return Algorithm.ofId(v.predicted().algorithm());
  }

  /** Why the forced NCCL algorithm {@code a} cannot run {@code c} here; empty when it can. */
  private List<String> ncclBlockers(Algorithm a, Collective c, BufferRegistration registration) {
    List<String> out = new ArrayList<>();
    if (facts == null) {
      return out;
    }
    Verdict v = ZeroCtaDetector.evaluate(facts, ctaPolicy, c, registration, null, null);
    if (a == Algorithm.NCCL_ZERO_CTA) {
      v.zeroCtaFailing().stream().map(Reason::toString).forEach(out::add);
    } else if (a == Algorithm.NCCL_SYMMETRIC) {
      v.symmetricFailing().stream().map(Reason::toString).forEach(out::add);
    }
    return out;
  }

  // ---- our kernels: the plan, from the kernel table ----

  private Protocol forcedProtocol() {
    if (forcedVariant != null) {
      return forcedVariant;
    }
    return forced.map(a -> switch (a) {
      case GPU_LL_ONESHOT -> Protocol.LL;
      case GPU_SENTINEL_TWOSHOT -> Protocol.SENTINEL;
      case GPU_LL128_ATOMIC -> Protocol.LL128;
      default -> null;
    }).orElse(null);
  }

  private LaunchPlan kernelPlan(Collective c, long count, DataType t, ReduceOp op, Reasons why) {
    Protocol forcedProtocol = forcedProtocol();
    Protocol p;
    if (c == Collective.BARRIER) {
      why.add("flag barrier kernel: every rank enters before any leaves");
      p = Protocol.FLAG_BARRIER;
    } else if (forcedProtocol != null) {
      why.add(() -> "protocol forced to " + forcedProtocol.name().toLowerCase(java.util.Locale.ROOT));
      p = forcedProtocol;
    } else {
      p = switch (c) {
        case ALL_REDUCE -> allReduceProtocol(t, op, count, why);
        case ALL_TO_ALLV -> {
          why.add(() -> "allToAllv: per-peer counts differ between ranks and are not known to all, so every rank"
              + " takes the credit pipe (any size); the LL kernel only when forced");
          yield Protocol.PIPE;
        }
        default -> movementProtocol(c, t, count, why);
      };
    }
    return plan(rank, c, p, t, op, count);
  }

  /**
   * The launch of {@code c} on protocol {@code p}: kernel, grid and capacity from the kernel table.
   * Type, op and capacity are checked here, once; the kernels keep only a guard that records an error.
   *
   * @param count elements of {@code t} per rank (per peer for data movement; allToAllv: the largest block)
   * @throws CollectiveException when the table has no kernel that takes the call, naming the limit
   */
  static LaunchPlan plan(int rank, Collective c, Protocol p, DataType t, ReduceOp op, long count) {
    KernelTable.Kernel k = KernelTable.kernel(c, p);
    if (k == null) {
      List<String> has = new ArrayList<>();
      for (Protocol q : Protocol.values()) {
        KernelTable.Kernel other = KernelTable.kernel(c, q);
        if (other != null) {
          has.add(q.name().toLowerCase(java.util.Locale.ROOT));
        }
      }
      throw new CollectiveException(rank, c, c.apiName() + " has no kernel on the "
          + p.name().toLowerCase(java.util.Locale.ROOT) + " protocol; it has " + has);
    }
    String name = k.name(t);
    if (name == null) {
      throw new CollectiveException(rank, c, "the " + k + " kernels have no " + t + " variant");
    }
    boolean reduces = c == Collective.ALL_REDUCE || c == Collective.REDUCE_SCATTER;
    if (reduces && !k.supports(op)) {
      List<ReduceOp> ops = new ArrayList<>();
      for (ReduceOp o : ReduceOp.values()) {
        if (k.supports(o)) {
          ops.add(o);
        }
      }
      throw new CollectiveException(rank, c, "the " + k + " kernels reduce with " + ops + " only, not " + op);
    }
    long capacity = k.capacityElements(t);
    if (count > capacity) {
      throw new CollectiveException(rank, c, "the " + k + " kernels take at most " + capacity + " " + t
          + " elements (" + capacity * t.byteSize() + " bytes); this call has " + count);
    }
    long bytes = count * t.byteSize();
    return new LaunchPlan(c, k, name, k.grid(bytes), count, bytes, k.algorithm());
  }

  private Protocol allReduceProtocol(DataType t, ReduceOp op, long count, Reasons why) {
    long bytes = count * t.byteSize();
    KernelTable.Kernel ll = KernelTable.kernel(Collective.ALL_REDUCE, Protocol.LL);
    KernelTable.Kernel sentinel = KernelTable.kernel(Collective.ALL_REDUCE, Protocol.SENTINEL);
    KernelTable.Kernel ll128 = KernelTable.kernel(Collective.ALL_REDUCE, Protocol.LL128);
    boolean twoShot = bytes <= twoShotMax && count <= sentinel.capacityElements(t);
    if (size >= ll128MinRanks && ll128.supports(t) && ll128.supports(op) && twoShot
        && count <= ll128.capacityElements(t)) {
      why.add(() -> size + " ranks >= gpu.ll128MinRanks " + ll128MinRanks + ", " + op + ", " + bytes + " B <= "
          + twoShotMax + " B: LL128-atomic reduce-scatter + all-gather (float sums in arrival order:"
          + " identical on all ranks, last bits may vary between runs)");
      return Protocol.LL128;
    }
    if (bytes <= oneShotMax && count <= ll.capacityElements(t)) {
      why.add(() -> bytes + " B <= " + Math.min(oneShotMax, ll.capacityElements(t) * t.byteSize())
          + " B: one-shot over LL slots, barrier-free");
      return Protocol.LL;
    }
    if (twoShot) {
      why.add(() -> bytes + " B <= " + Math.min(twoShotMax, sentinel.capacityElements(t) * t.byteSize())
          + " B: two-shot with sentinel prefill, double-buffered");
      return Protocol.SENTINEL;
    }
    why.add(() -> bytes + " B > " + Math.min(twoShotMax, sentinel.capacityElements(t) * t.byteSize())
        + " B: reduce-scatter + all-gather through the credit pipe");
    return Protocol.PIPE;
  }

  /** LL up to the per-peer limit and the LL kernel's capacity, else the pipe. */
  private Protocol movementProtocol(Collective c, DataType t, long perPeerCount, Reasons why) {
    long perPeerBytes = perPeerCount * t.byteSize();
    long llMax = Math.min(llMovementMax, KernelTable.kernel(c, Protocol.LL).capacityElements(t) * t.byteSize());
    if (perPeerBytes <= llMax) {
      why.add(() -> perPeerBytes + " B per peer <= " + llMax + " B: LL slots, barrier-free");
      return Protocol.LL;
    }
    why.add(() -> perPeerBytes + " B per peer > " + llMax + " B: credit pipe"
        + (llMovementMax == LL_MOVEMENT_MAX_ACROSS_GPUS ? " (LL is slower from here across GPUs, measured)" : ""));
    return Protocol.PIPE;
  }
}
