package dev.gpucoll.cuda.eligibility;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.cuda.eligibility.GroupFacts.Link;
import dev.gpucoll.cuda.eligibility.GroupFacts.Member;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;

/**
 * Decides, per group and per collective, whether NCCL will run the collective on copy engines
 * (Zero-CTA), on its symmetric-memory kernels, or on its ordinary kernels, and names every reason
 * a faster path is not taken. The criteria are NCCL's own (2.28-2.30 {@code enqueue.cc},
 * {@code ce_coll.cc}, {@code init.cc}; docs/zero-cta.md) plus what was observed on NCCL 2.28.3:
 * a 1-rank communicator never enters either path, and {@code NCCL_CTA_POLICY=ZERO} is read as 0
 * before 2.29. Pure Java over {@link GroupFacts}; the runtime log has the last word.
 */
public final class ZeroCtaDetector {
  /** NCCL version codes (major*10000 + minor*100 + patch). */
  public static final int NCCL_CE = 22803;
  public static final int NCCL_ENV_POLICY_NAMES = 22900;
  public static final int NCCL_RECV_ONLY_REGISTRATION = 22900;
  public static final int NCCL_LSA_TEAM = 23000;
  public static final int NCCL_HIERARCHICAL_CE = 23007;
  public static final int NCCL_SYMMETRIC_KERNELS = 22703;
  /** cudaDriverGetVersion 12050 = CUDA 12.5. */
  public static final int DRIVER_CE = 12050;

  public static final int CTA_POLICY_DEFAULT = 0;
  public static final int CTA_POLICY_EFFICIENCY = 1;
  public static final int CTA_POLICY_ZERO = 2;

  private static final Set<Collective> CE_COLLECTIVES = EnumSet.of(Collective.ALL_GATHER, Collective.ALL_TO_ALL);
  private static final Set<Collective> HIERARCHICAL_CE = EnumSet.of(Collective.ALL_GATHER, Collective.ALL_TO_ALL);

  private ZeroCtaDetector() {}

  /**
   * @param topology     the group
   * @param configPolicy the CTAPolicy this group's communicator is created with (ncclConfig_t)
   * @param collective   the collective
   * @param buffers      what the call's buffers are; UNKNOWN for a group-level prediction
   * @param type         element type, or null when unknown (symmetric kernels depend on it)
   * @param op           reduction, or null (symmetric reductions are SUM only)
   */
  public static Verdict evaluate(GroupFacts topology, int configPolicy, Collective collective,
      BufferRegistration buffers, DataType type, ReduceOp op) {
    List<Reason> unverified = new ArrayList<>();
    List<Reason> shared = new ArrayList<>();   // fail both CE and symmetric kernels
    List<Reason> ceOnly = new ArrayList<>();
    List<Reason> symOnly = new ArrayList<>();

    int n = topology.size();
    boolean oneRank = n == 1;
    if (oneRank) {
      shared.add(new Reason(Reason.Code.SINGLE_RANK, "the group has 1 rank (observed on NCCL 2.28.3:"
          + " no 'Init CE' and no '[Symmetric]' line for a 1-rank communicator)"));
    }
    if (collective == Collective.BARRIER) {
      shared.add(new Reason(Reason.Code.COLLECTIVE_NEVER_CE, "barrier is not an NCCL collective"));
    } else if (!CE_COLLECTIVES.contains(collective)) {
      ceOnly.add(new Reason(Reason.Code.COLLECTIVE_NEVER_CE, collective.apiName()
          + " always runs on SM kernels in NCCL (CE implements AllGather, AlltoAll, Gather, Scatter)"
          + (collective == Collective.ALL_TO_ALLV ? "; allToAllv is grouped send/recv" : "")));
    }

    int nccl = versions(topology, shared);
    driver(topology, ceOnly, unverified);
    hosts(topology, nccl, collective, buffers, ceOnly, symOnly, unverified);
    sharedGpu(topology, shared);
    symmetricSupport(topology, shared, unverified);
    environment(topology, nccl, shared, unverified);
    policy(topology, configPolicy, nccl, ceOnly);
    buffers(nccl, buffers, shared, unverified);
    symmetricKernel(collective, type, op, symOnly, unverified);

    List<Reason> ceFailing = new ArrayList<>(shared);
    ceFailing.addAll(ceOnly);
    List<Reason> symFailing = new ArrayList<>(shared);
    symFailing.addAll(symOnly);
    if (nccl > 0 && nccl < NCCL_SYMMETRIC_KERNELS) {
      symFailing.add(new Reason(Reason.Code.NCCL_TOO_OLD, "symmetric kernels need NCCL >= 2.27.3, loaded "
          + versionText(nccl)));
    }
    NcclPath predicted = oneRank ? NcclPath.ONE_RANK
        : ceFailing.isEmpty() ? NcclPath.ZERO_CTA
        : symFailing.isEmpty() ? NcclPath.SYMMETRIC : NcclPath.DEFAULT;
    return new Verdict(collective, predicted, ceFailing, symFailing, unverified);
  }

  /** Group-level prediction (buffers, type and op not known yet). */
  public static Verdict evaluate(GroupFacts topology, int configPolicy, Collective collective) {
    return evaluate(topology, configPolicy, collective, BufferRegistration.UNKNOWN, null, null);
  }

  private static int versions(GroupFacts g, List<Reason> out) {
    Map<Integer, List<Integer>> byVersion = new TreeMap<>();
    List<Integer> noCuda = new ArrayList<>();
    for (Member m : g.members()) {
      byVersion.computeIfAbsent(m.ncclVersion(), v -> new ArrayList<>()).add(m.rank());
      if (m.driverVersion() == 0 && m.fact(FactKeys.CUDA_DRIVER_VERSION).isPresent()) {
        noCuda.add(m.rank());
      }
    }
    if (!noCuda.isEmpty()) {
      out.add(new Reason(Reason.Code.CUDA_UNAVAILABLE, "ranks " + noCuda + " report no CUDA driver"));
    }
    List<Integer> missing = byVersion.remove(0);
    if (missing != null) {
      String why = g.member(missing.get(0)).fact(FactKeys.NCCL_PROBLEM).orElse("no NCCL version fact");
      out.add(new Reason(Reason.Code.NCCL_UNAVAILABLE, "ranks " + missing + ": " + why));
    }
    if (byVersion.size() > 1) {
      StringBuilder sb = new StringBuilder();
      byVersion.forEach((v, ranks) -> sb.append(sb.length() == 0 ? "" : ", ").append(versionText(v))
          .append(" on ranks ").append(ranks));
      out.add(new Reason(Reason.Code.NCCL_VERSIONS_DIFFER, sb.toString()));
    }
    int min = byVersion.isEmpty() ? 0 : byVersion.keySet().iterator().next();
    if (min > 0 && min < NCCL_CE) {
      out.add(new Reason(Reason.Code.NCCL_TOO_OLD, "loaded NCCL " + versionText(min) + " on ranks "
          + byVersion.get(min) + "; copy-engine collectives arrived in 2.28.3"));
    }
    return min;
  }

  private static void driver(GroupFacts g, List<Reason> out, List<Reason> unverified) {
    List<String> old = new ArrayList<>();
    List<Integer> unknown = new ArrayList<>();
    for (Member m : g.members()) {
      int d = m.driverVersion();
      if (d == 0) {
        unknown.add(m.rank());
      } else if (d < DRIVER_CE) {
        old.add("rank " + m.rank() + " " + cudaText(d));
      }
    }
    if (!old.isEmpty()) {
      out.add(new Reason(Reason.Code.DRIVER_TOO_OLD, String.join(", ", old) + " (need >= 12.5)"));
    }
    if (!unknown.isEmpty()) {
      unverified.add(new Reason(Reason.Code.UNVERIFIED, "CUDA driver version of ranks " + unknown + " unknown"));
    }
  }

  private static void hosts(GroupFacts g, int nccl, Collective c, BufferRegistration buffers,
      List<Reason> ceOut, List<Reason> symOut, List<Reason> unverified) {
    if (g.singleHost()) {
      return;
    }
    String hosts = g.byHost().keySet().toString();
    if (nccl >= NCCL_HIERARCHICAL_CE && HIERARCHICAL_CE.contains(c)
        && buffers != BufferRegistration.NONE && buffers != BufferRegistration.RECV_ONLY
        && buffers != BufferRegistration.NOT_VMM) {
      unverified.add(new Reason(Reason.Code.UNVERIFIED, "the group spans hosts " + hosts + ": NCCL "
          + versionText(nccl) + " can run hierarchical CE if both buffers are registered and the network"
          + " has host RMA support (ncclCommQueryProperties.hostRmaSupport)"));
      symOut.add(new Reason(Reason.Code.MULTI_HOST, "the group spans hosts " + hosts));
      return;
    }
    String why = nccl >= NCCL_LSA_TEAM
        ? "NCCL " + versionText(nccl) + " needs every rank in one NVLink (LSA) team; hierarchical CE"
            + " (>= 2.30.7, AllGather/AlltoAll, both buffers registered) is not possible here"
        : "NCCL " + (nccl > 0 ? versionText(nccl) : "2.28-2.29") + " takes the CE path only in a 1-node communicator";
    ceOut.add(new Reason(Reason.Code.MULTI_HOST, "the group spans hosts " + hosts + ": " + why));
    symOut.add(new Reason(Reason.Code.MULTI_HOST, "the group spans hosts " + hosts));
  }

  private static void sharedGpu(GroupFacts g, List<Reason> out) {
    for (List<Member> same : g.sharedGpus()) {
      out.add(new Reason(Reason.Code.SHARED_GPU, "ranks " + same.stream().map(Member::rank).toList()
          + " on host " + same.get(0).host() + " share GPU " + same.get(0).gpuUuid().or(same.get(0)::busId).orElse("?")));
    }
  }

  private static void symmetricSupport(GroupFacts g, List<Reason> out, List<Reason> unverified) {
    for (List<Member> onHost : g.byHost().values()) {
      for (int i = 0; i < onHost.size(); i++) {
        for (int j = i + 1; j < onHost.size(); j++) {
          Member a = onHost.get(i);
          Member b = onHost.get(j);
          if (a.busId().isPresent() && a.busId().equals(b.busId())) {
            continue; // same GPU: SHARED_GPU says it
          }
          Optional<Link> link = g.link(a, b);
          if (link.isEmpty()) {
            unverified.add(new Reason(Reason.Code.UNVERIFIED, "P2P between " + a.label() + " and " + b.label()
                + " unknown: neither process can see the other's GPU (container or CUDA_VISIBLE_DEVICES"
                + " isolation); NCCL may still connect them through NVML and cuMem handles"));
          } else if (!link.get().p2p()) {
            out.add(new Reason(Reason.Code.NO_P2P, a.label() + " and " + b.label()
                + ": cudaDeviceCanAccessPeer = 0"));
          }
        }
      }
    }
    List<Integer> noVmm = new ArrayList<>();
    List<Integer> vmmUnknown = new ArrayList<>();
    List<Integer> wsl = new ArrayList<>();
    for (Member m : g.members()) {
      Optional<Boolean> vmm = m.vmm();
      if (vmm.isEmpty()) {
        vmmUnknown.add(m.rank());
      } else if (!vmm.get()) {
        noVmm.add(m.rank());
      }
      if (m.wsl()) {
        wsl.add(m.rank());
      }
    }
    if (!noVmm.isEmpty()) {
      out.add(new Reason(Reason.Code.NO_VMM, "ranks " + noVmm
          + ": CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 0"));
    }
    if (!vmmUnknown.isEmpty()) {
      unverified.add(new Reason(Reason.Code.UNVERIFIED, "VMM support of ranks " + vmmUnknown + " unknown"));
    }
    if (!wsl.isEmpty()) {
      out.add(new Reason(Reason.Code.WSL, "ranks " + wsl + " run under WSL"));
    }
  }

  private static void environment(GroupFacts g, int nccl, List<Reason> out, List<Reason> unverified) {
    for (String var : List.of("NCCL_CTA_POLICY", "NCCL_WIN_ENABLE", "NCCL_CUMEM_ENABLE", "NCCL_P2P_DISABLE")) {
      Map<String, List<Integer>> values = new TreeMap<>();
      for (Member m : g.members()) {
        values.computeIfAbsent(m.env(var).orElse("(unset)"), v -> new ArrayList<>()).add(m.rank());
      }
      if (values.size() > 1) {
        out.add(new Reason(Reason.Code.ENV_DIFFERS, var + " differs: " + values
            + " (ranks that take different paths can hang each other)"));
      }
    }
    List<Integer> win = ranksWhere(g, "NCCL_WIN_ENABLE", "0");
    if (!win.isEmpty()) {
      out.add(new Reason(Reason.Code.ENV_WIN_DISABLED, "NCCL_WIN_ENABLE=0 on ranks " + win));
    }
    List<Integer> cumem = ranksWhere(g, "NCCL_CUMEM_ENABLE", "0");
    if (!cumem.isEmpty()) {
      out.add(new Reason(Reason.Code.ENV_CUMEM_DISABLED, "NCCL_CUMEM_ENABLE=0 on ranks " + cumem));
    }
    List<Integer> p2p = ranksWhere(g, "NCCL_P2P_DISABLE", "1");
    if (!p2p.isEmpty()) {
      out.add(new Reason(Reason.Code.ENV_P2P_DISABLED, "NCCL_P2P_DISABLE=1 on ranks " + p2p));
    }
  }

  private static List<Integer> ranksWhere(GroupFacts g, String var, String value) {
    return g.members().stream().filter(m -> m.env(var).map(v -> v.trim().equals(value)).orElse(false))
        .map(Member::rank).toList();
  }

  private static void policy(GroupFacts g, int configPolicy, int nccl, List<Reason> out) {
    Map<String, List<Integer>> problems = new TreeMap<>();
    for (Member m : g.members()) {
      Optional<String> env = m.env("NCCL_CTA_POLICY");
      int version = m.ncclVersion() > 0 ? m.ncclVersion() : nccl;
      EffectivePolicy p = effectivePolicy(configPolicy, env, version);
      if (p.nameNotUnderstood()) {
        problems.computeIfAbsent(Reason.Code.ENV_POLICY_NOT_UNDERSTOOD + "|NCCL_CTA_POLICY=" + env.get()
            + " is read as " + p.value() + " by NCCL " + versionText(version)
            + " (names are understood from 2.29; use NCCL_CTA_POLICY=2)", k -> new ArrayList<>()).add(m.rank());
      }
      if ((p.value() & CTA_POLICY_ZERO) == 0) {
        String detail = env.isPresent()
            ? "NCCL_CTA_POLICY=" + env.get() + " overrides the config's " + policyText(configPolicy)
                + ": effective " + policyText(p.value())
            : "config CTAPolicy " + policyText(configPolicy) + " (set spark.gpucoll.nccl.ctaPolicy=zero)";
        problems.computeIfAbsent(Reason.Code.POLICY_NOT_ZERO + "|" + detail, k -> new ArrayList<>()).add(m.rank());
      }
    }
    problems.forEach((key, ranks) -> {
      int bar = key.indexOf('|');
      out.add(new Reason(Reason.Code.valueOf(key.substring(0, bar)), key.substring(bar + 1) + " on ranks " + ranks));
    });
  }

  /** The CTA policy NCCL will use, and whether an environment name was misread as 0. */
  public record EffectivePolicy(int value, boolean fromEnvironment, boolean nameNotUnderstood) {}

  /**
   * NCCL's rule: NCCL_CTA_POLICY, when set, replaces the config's CTAPolicy. From 2.29 it takes names
   * (DEFAULT, EFFICIENCY, ZERO), numbers and "A|B"; 2.28 parses a number only, so "ZERO" becomes 0
   * (seen on 2.28.3: "NCCL_CTA_POLICY set by environment to 0.").
   */
  public static EffectivePolicy effectivePolicy(int configPolicy, Optional<String> env, int ncclVersion) {
    if (env.isEmpty() || env.get().isBlank()) {
      return new EffectivePolicy(configPolicy, false, false);
    }
    String raw = env.get().trim();
    if (ncclVersion >= NCCL_ENV_POLICY_NAMES || ncclVersion == 0) {
      int value = 0;
      for (String part : raw.split("\\|")) {
        String p = part.trim().toUpperCase(Locale.ROOT);
        switch (p) {
          case "DEFAULT" -> value |= CTA_POLICY_DEFAULT;
          case "EFFICIENCY" -> value |= CTA_POLICY_EFFICIENCY;
          case "ZERO" -> value |= CTA_POLICY_ZERO;
          default -> value |= leadingInt(p);
        }
      }
      return new EffectivePolicy(value, true, false);
    }
    int value = leadingInt(raw);
    boolean misread = !raw.isEmpty() && !Character.isDigit(raw.charAt(0)) && raw.charAt(0) != '-';
    return new EffectivePolicy(value, true, misread);
  }

  private static int leadingInt(String s) {
    int i = 0;
    int sign = 1;
    if (i < s.length() && (s.charAt(i) == '-' || s.charAt(i) == '+')) {
      sign = s.charAt(i) == '-' ? -1 : 1;
      i++;
    }
    long v = 0;
    while (i < s.length() && Character.isDigit(s.charAt(i)) && v < Integer.MAX_VALUE) {
      v = v * 10 + (s.charAt(i++) - '0');
    }
    return (int) (sign * v);
  }

  private static void buffers(int nccl, BufferRegistration buffers, List<Reason> out, List<Reason> unverified) {
    boolean recvOnlyEnough = nccl >= NCCL_RECV_ONLY_REGISTRATION;
    switch (buffers) {
      case UNKNOWN -> unverified.add(new Reason(Reason.Code.UNVERIFIED, recvOnlyEnough
          ? "the receive buffer must lie in a symmetric window (ncclMemAlloc + ncclCommWindowRegister)"
          : "send and receive buffers must lie in symmetric windows (ncclMemAlloc + ncclCommWindowRegister)"));
      case NONE -> out.add(new Reason(Reason.Code.BUFFER_NOT_REGISTERED, "neither buffer is registered"));
      case RECV_ONLY -> {
        if (!recvOnlyEnough) {
          out.add(new Reason(Reason.Code.BUFFER_NOT_REGISTERED, "only the receive buffer is registered; NCCL "
              + (nccl > 0 ? versionText(nccl) : "< 2.29") + " needs both"));
        }
      }
      case SEND_AND_RECV -> { }
      case NOT_VMM -> out.add(new Reason(Reason.Code.BUFFER_NOT_VMM, "a buffer is plain cudaMalloc memory;"
          + " NCCL 2.28.3 fails to register it and the communicator then fails every collective"));
    }
  }

  private static void symmetricKernel(Collective c, DataType type, ReduceOp op, List<Reason> out,
      List<Reason> unverified) {
    switch (c) {
      case ALL_GATHER -> { }
      case ALL_REDUCE, REDUCE_SCATTER -> {
        if (op != null && op != ReduceOp.SUM) {
          out.add(new Reason(Reason.Code.SYMMETRIC_KERNEL_UNSUPPORTED, c.apiName() + " with " + op
              + ": symmetric kernels reduce with SUM only"));
        }
        if (type != null && (!type.isFloatingPoint() || type == DataType.FLOAT64)) {
          out.add(new Reason(Reason.Code.SYMMETRIC_KERNEL_UNSUPPORTED, c.apiName() + " of " + type
              + ": symmetric kernels take 32-bit and smaller floating-point types"));
        }
        if (type == null || op == null) {
          unverified.add(new Reason(Reason.Code.UNVERIFIED, "symmetric " + c.apiName()
              + " needs SUM on a 32-bit or smaller float type"));
        }
      }
      default -> out.add(new Reason(Reason.Code.SYMMETRIC_KERNEL_UNSUPPORTED, "NCCL has no symmetric kernel for "
          + c.apiName()));
    }
  }

  public static String versionText(int v) {
    return v <= 0 ? "none" : (v / 10000) + "." + (v % 10000) / 100 + "." + (v % 100);
  }

  static String cudaText(int v) {
    return (v / 1000) + "." + (v % 1000) / 10;
  }

  public static String policyText(int p) {
    if (p == CTA_POLICY_DEFAULT) {
      return "DEFAULT(0)";
    }
    List<String> names = new ArrayList<>();
    if ((p & CTA_POLICY_EFFICIENCY) != 0) {
      names.add("EFFICIENCY");
    }
    if ((p & CTA_POLICY_ZERO) != 0) {
      names.add("ZERO");
    }
    return (names.isEmpty() ? "?" : String.join("|", names)) + "(" + p + ")";
  }
}
