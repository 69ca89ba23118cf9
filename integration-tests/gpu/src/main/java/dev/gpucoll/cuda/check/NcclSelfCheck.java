package dev.gpucoll.cuda.check;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.DataType;
import dev.gpucoll.core.rendezvous.LocalRendezvous;
import dev.gpucoll.core.spi.MemberInfo;
import dev.gpucoll.cuda.CudaNative;
import dev.gpucoll.cuda.eligibility.BufferRegistration;
import dev.gpucoll.cuda.nccl.NcclCapability;
import dev.gpucoll.cuda.nccl.NcclCommunicator;
import dev.gpucoll.cuda.nccl.NcclDebugLog;
import dev.gpucoll.cuda.nccl.NcclLibrary;
import dev.gpucoll.cuda.nccl.NcclLogParser;
import dev.gpucoll.cuda.nccl.NcclLogSummary;
import dev.gpucoll.cuda.nccl.PathProof;
import dev.gpucoll.cuda.eligibility.GroupFacts;
import dev.gpucoll.cuda.eligibility.LocalFacts;
import dev.gpucoll.cuda.eligibility.Reason;
import dev.gpucoll.cuda.eligibility.Verdict;
import dev.gpucoll.cuda.eligibility.ZeroCtaDetector;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import org.bytedeco.cuda.global.cudart;
import org.bytedeco.javacpp.PointerPointer;

/**
 * The NCCL / Zero-CTA check for a GPU machine (run from the GPU bundle): for each case a child JVM
 * is started with NCCL's log switched on (NCCL reads its environment once, at start, so every case
 * needs its own process), makes a communicator over the visible GPUs (one rank per GPU, threads of
 * one process), runs allGather and allToAll, and prints the detector's prediction next to what
 * NCCL's own log shows. Cases: CTA policy ZERO with ncclMemAlloc windows; ZERO with plain
 * cudaMalloc buffers (our guard must refuse to register them); NCCL_CTA_POLICY=ZERO in the
 * environment (NCCL 2.28 reads it as 0: the detector must say so); NCCL_CTA_POLICY=2. Prints one
 * PASS/FAIL line per check and exits with the number of failures.
 *
 * <p>Usage: {@code java -cp <jars> dev.gpucoll.cuda.check.NcclSelfCheck [logDir]}
 */
public final class NcclSelfCheck {
  private static final long BYTES = 1 << 20;

  private record Case(String name, String policy, boolean memAlloc, Map<String, String> env) {}

  private static final List<Case> CASES = List.of(
      new Case("zero-memalloc", "zero", true, Map.of()),
      new Case("zero-cudamalloc", "zero", false, Map.of()),
      new Case("env-ZERO", "zero", true, Map.of("NCCL_CTA_POLICY", "ZERO")),
      new Case("env-2", "default", true, Map.of("NCCL_CTA_POLICY", "2")));

  private NcclSelfCheck() {}

  public static void main(String[] args) throws Exception {
    if (args.length >= 2 && args[0].equals("--child")) {
      System.exit(child(args[1]));
    }
    Path logDir = Path.of(args.length > 0 ? args[0] : System.getProperty("java.io.tmpdir") + "/gpucoll-nccl-selfcheck");
    Files.createDirectories(logDir);
    Optional<String> why = NcclLibrary.unavailableReason();
    if (why.isPresent()) {
      System.out.println("FAIL nccl-load: " + why.get());
      System.exit(1);
    }
    NcclLibrary lib = NcclLibrary.get();
    System.out.println("NCCL " + lib.versionText() + " (" + lib.version() + "), capabilities " + lib.capabilities());
    System.out.println("missing here: " + java.util.Arrays.stream(NcclCapability.values())
        .filter(c -> !lib.has(c)).map(Enum::name).toList());
    int failures = 0;
    for (Case c : CASES) {
      failures += runChild(c, logDir.resolve(c.name()));
    }
    System.out.println(failures == 0 ? "NcclSelfCheck: all checks passed" : "NcclSelfCheck: " + failures + " check(s) FAILED");
    System.exit(Math.min(failures, 100));
  }

  private static int runChild(Case c, Path dir) throws IOException, InterruptedException {
    Files.createDirectories(dir);
    String java = ProcessHandle.current().info().command().orElse(System.getProperty("java.home") + "/bin/java");
    List<String> cmd = new ArrayList<>(List.of(java, "-cp", System.getProperty("java.class.path")));
    for (String k : System.getProperties().stringPropertyNames()) {
      if (k.startsWith("org.bytedeco.") || k.startsWith("gpucoll.")) {
        cmd.add(1, "-D" + k + "=" + System.getProperty(k));
      }
    }
    cmd.addAll(List.of(NcclSelfCheck.class.getName(), "--child", c.name()));
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
    Map<String, String> env = pb.environment();
    env.keySet().removeIf(k -> k.startsWith("NCCL_"));
    env.putAll(NcclDebugLog.environment(dir.toString(), 0));
    env.put("NCCL_NVLS_ENABLE", "0");
    env.putAll(c.env());
    System.out.println("=== case " + c.name() + ": CTA policy config " + c.policy() + ", buffers "
        + (c.memAlloc() ? "ncclMemAlloc" : "cudaMalloc") + ", env " + c.env() + ", NCCL log in " + dir);
    Process p = pb.start();
    int failures = 0;
    try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
      String line;
      while ((line = r.readLine()) != null) {
        System.out.println("  " + line);
        if (line.startsWith("FAIL")) {
          failures++;
        }
      }
    }
    if (!p.waitFor(5, TimeUnit.MINUTES)) {
      p.destroyForcibly();
      System.out.println("  FAIL " + c.name() + ": child did not finish in 5 minutes");
      return failures + 1;
    }
    if (p.exitValue() != 0 && failures == 0) {
      System.out.println("  FAIL " + c.name() + ": child exited with " + p.exitValue());
      failures++;
    }
    return failures;
  }

  /** One case in this process: every visible GPU is a rank, on its own thread. */
  private static int child(String caseName) throws Exception {
    Case c = CASES.stream().filter(x -> x.name().equals(caseName)).findFirst()
        .orElseThrow(() -> new IllegalArgumentException("unknown case " + caseName));
    int[] devices = new int[1];
    cudart.cudaGetDeviceCount(devices);
    int n = Math.max(1, Math.min(devices[0], 8));
    ConcurrentLinkedQueue<String> out = new ConcurrentLinkedQueue<>();
    List<Thread> threads = new ArrayList<>();
    List<Throwable> errors = new java.util.concurrent.CopyOnWriteArrayList<>();
    for (int r = 0; r < n; r++) {
      final int rank = r;
      Thread t = new Thread(() -> {
        try {
          rank(c, rank, n, out);
        } catch (Throwable e) {
          errors.add(e);
          out.add("FAIL " + c.name() + " rank " + rank + ": " + e);
        }
      }, "selfcheck-rank-" + r);
      threads.add(t);
      t.start();
    }
    for (Thread t : threads) {
      t.join();
    }
    out.forEach(System.out::println);
    return errors.isEmpty() ? 0 : 1;
  }

  private static void rank(Case c, int rank, int n, ConcurrentLinkedQueue<String> out) throws Exception {
    checkCuda(cudart.cudaSetDevice(rank), "cudaSetDevice");
    int policy = c.policy().equals("zero") ? ZeroCtaDetector.CTA_POLICY_ZERO : ZeroCtaDetector.CTA_POLICY_DEFAULT;
    LocalRendezvous rv = LocalRendezvous.join("nccl-selfcheck-" + c.name(), rank, n);
    Duration timeout = Duration.ofSeconds(60);
    // Facts as the rendezvous would carry them; here every rank is a thread of this process.
    Map<String, String> facts = new java.util.HashMap<>(LocalFacts.collect(rank));
    facts.putAll(NcclLibrary.facts());
    List<byte[]> all = rv.allGather(dev.gpucoll.core.spi.MemberInfoCodec.encode(
        new MemberInfo(rank, "localhost", ProcessHandle.current().pid() + "@localhost", facts)), timeout);
    List<MemberInfo> members = new ArrayList<>();
    for (byte[] b : all) {
      members.add(dev.gpucoll.core.spi.MemberInfoCodec.decode(b));
    }
    GroupFacts group = GroupFacts.of(members);
    try (NcclCommunicator comm = NcclCommunicator.create(rv, rank, policy, timeout)) {
      if (rank == 0) {
        out.add(verdictLine(comm.address() != 0, c.name() + ": raw ncclComm_t " + Long.toHexString(comm.address())
            + " for cuSOLVERMp-style users"));
        for (String line : group.describe()) {
          out.add("topology: " + line);
        }
      }
      long sendAddr;
      long recvAddr;
      NcclCommunicator.SymmetricBuffer sendSym = null;
      NcclCommunicator.SymmetricBuffer recvSym = null;
      BufferRegistration buffers;
      if (c.memAlloc()) {
        sendSym = comm.allocSymmetric(BYTES * n);
        recvSym = comm.allocSymmetric(BYTES * n);
        sendAddr = sendSym.address();
        recvAddr = recvSym.address();
        buffers = comm.registrationOf(sendAddr, BYTES, recvAddr, BYTES * n);
        if (rank == 0) {
          out.add(verdictLine(buffers == BufferRegistration.SEND_AND_RECV,
              c.name() + ": ncclMemAlloc buffers registered as symmetric windows (" + buffers + ")"));
        }
      } else {
        sendAddr = cudaMalloc(BYTES * n);
        recvAddr = cudaMalloc(BYTES * n);
        NcclCommunicator.Registration reg = comm.register(recvAddr, BYTES * n);
        buffers = reg.window().isPresent() ? BufferRegistration.RECV_ONLY : BufferRegistration.NOT_VMM;
        if (rank == 0) {
          out.add(verdictLine(reg.window().isEmpty() && reg.refusal().isPresent(),
              c.name() + ": cudaMalloc buffer refused before NCCL saw it: " + reg.refusal().orElse("(registered!)")));
        }
      }
      checkCuda(cudart.cudaMemset(CudaNative.ptr(sendAddr), rank + 1, BYTES * n), "cudaMemset");
      Map<Collective, Verdict> verdicts = new LinkedHashMap<>();
      for (Collective coll : List.of(Collective.ALL_GATHER, Collective.ALL_TO_ALL)) {
        Verdict v = ZeroCtaDetector.evaluate(group, policy, coll, buffers, DataType.UINT8, null);
        verdicts.put(coll, v);
      }
      comm.allGather(sendAddr, recvAddr, BYTES, DataType.UINT8, 0);
      comm.allToAll(sendAddr, recvAddr, BYTES, DataType.UINT8, 0);
      comm.allGather(sendAddr, recvAddr, BYTES, DataType.UINT8, 0);
      comm.synchronize(0, Collective.ALL_GATHER);
      byte[] host = new byte[(int) (BYTES * n)];
      org.bytedeco.javacpp.BytePointer back = new org.bytedeco.javacpp.BytePointer(host.length);
      checkCuda(cudart.cudaMemcpy(back, CudaNative.ptr(recvAddr), host.length, cudart.cudaMemcpyDeviceToHost),
          "cudaMemcpy");
      back.get(host);
      boolean ok = true;
      for (int i = 0; i < host.length && ok; i++) {
        ok = host[i] == (byte) (i / BYTES + 1);
      }
      out.add(verdictLine(ok, c.name() + " rank " + rank + ": allGather of " + BYTES + " B per rank is correct"));

      if (rank == 0) {
        report(c, comm, group, verdicts, out);
      }
      if (sendSym != null) {
        sendSym.close();
        recvSym.close();
        if (rank == 0) {
          out.add(verdictLine(comm.deregisterFailures().isEmpty(), c.name() + ": windows deregistered"
              + (comm.deregisterFailures().isEmpty() ? "" : ": " + comm.deregisterFailures())));
        }
      } else {
        cudart.cudaFree(CudaNative.ptr(sendAddr));
        cudart.cudaFree(CudaNative.ptr(recvAddr));
      }
      // ncclCommSplit: one color for all, so the "row" is the whole group; it must work and be distinct.
      // Its buffers are its own, and the window check runs first, so a window failure cannot be blamed on
      // the split (on the H200 deregistration failed either way: docs/zero-cta.md, "Known failure").
      long rowSend = cudaMalloc(16L * n);
      long rowRecv = cudaMalloc(16L * n);
      try (NcclCommunicator row = comm.split(0, rank)) {
        row.allGather(rowSend, rowRecv, 16, DataType.UINT8, 0);
        checkCuda(cudart.cudaDeviceSynchronize(), "cudaDeviceSynchronize");
        out.add(verdictLine(row.size() == n && row.rank() == rank && row.address() != comm.address(),
            c.name() + " rank " + rank + ": ncclCommSplit gave rank " + row.rank() + " of a " + row.size()
                + "-rank communicator " + Long.toHexString(row.address())));
      }
      cudart.cudaFree(CudaNative.ptr(rowSend));
      cudart.cudaFree(CudaNative.ptr(rowRecv));
    }
  }

  private static void report(Case c, NcclCommunicator comm, GroupFacts group, Map<Collective, Verdict> verdicts,
      ConcurrentLinkedQueue<String> out) {
    for (Verdict v : verdicts.values()) {
      out.add("prediction " + v.collective().apiName() + ": " + v.predicted().algorithm());
      v.zeroCtaFailing().forEach(r -> out.add("  zero-cta not eligible: " + r));
      v.unverified().forEach(r -> out.add("  unverified: " + r));
    }
    Optional<NcclDebugLog> log = NcclDebugLog.forThisProcess();
    if (log.isEmpty()) {
      out.add("FAIL " + c.name() + ": no NCCL log found for NCCL_DEBUG_FILE=" + System.getenv("NCCL_DEBUG_FILE"));
      return;
    }
    List<String> lines = log.get().lines();
    for (String line : lines) {
      // The lines the proof reads, so the run's output records them (the log file stays on the machine).
      if (line.matches(".*NCCL (INFO (NCCL version|Comm config|NCCL_CTA_POLICY|NCCL_CUMEM|NCCL_WIN|NCCL_P2P|comm 0x"
          + "|Init CE|\\w+ \\[(Symmetric|Copy Engine)\\]|Symmetric)|WARN).*")) {
        out.add("ncclLog: " + line);
      }
    }
    NcclLogSummary s = NcclLogParser.parse(lines);
    out.add("nccl log " + log.get().file() + ": version " + s.version() + ", CTA policy config " + s.configPolicies()
        + ", env " + s.environment() + ", Init CE ranks " + s.ceInitRanks() + ", symmetric " + s.symmetricKernels());
    long before = PathProof.contradictions();
    // The backend's path: predictions from the buffers the calls used, observation from this process's log.
    for (String f : comm.proveFromLog(group)) {
      out.add("proof: " + f);
    }
    out.add(verdictLine(PathProof.contradictions() == before,
        c.name() + ": NCCL's log agrees with every prediction (observed " + comm.pathProof().observedCounts() + ")"));
    String envPolicy = System.getenv("NCCL_CTA_POLICY");
    if (envPolicy != null) {
      Verdict ag = verdicts.get(Collective.ALL_GATHER);
      int effective = ZeroCtaDetector.effectivePolicy(comm.ctaPolicy(), Optional.of(envPolicy),
          comm.library().version()).value();
      boolean detected = ag.zeroCtaFailing().stream().anyMatch(r -> r.code() == Reason.Code.ENV_POLICY_NOT_UNDERSTOOD
          || r.code() == Reason.Code.POLICY_NOT_ZERO) == ((effective & ZeroCtaDetector.CTA_POLICY_ZERO) == 0);
      Integer seen = s.effectivePolicy();
      out.add(verdictLine(detected && seen != null && seen == effective, c.name()
          + ": NCCL_CTA_POLICY=" + envPolicy + " detected; detector says effective policy " + effective
          + ", NCCL's log says " + seen));
    }
  }

  private static String verdictLine(boolean pass, String what) {
    return (pass ? "PASS " : "FAIL ") + what;
  }

  private static long cudaMalloc(long bytes) {
    PointerPointer<org.bytedeco.javacpp.Pointer> p = new PointerPointer<>(1);
    checkCuda(cudart.cudaMalloc(p, bytes), "cudaMalloc");
    return p.get(0).address();
  }

  private static void checkCuda(int rc, String what) {
    if (rc != 0) {
      throw new IllegalStateException(what + " failed: " + cudart.cudaGetErrorString(rc).getString());
    }
  }
}
