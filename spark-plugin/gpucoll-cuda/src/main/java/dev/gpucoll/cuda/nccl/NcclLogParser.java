package dev.gpucoll.cuda.nccl;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reads NCCL's own INFO log (NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS=INIT[,ENV][,TUNING]) for the lines
 * that prove which path ran. Line formats as NCCL 2.28.3 prints them (recorded on an H200, see
 * src/test/resources/nccl-logs) and as later versions add them:
 * <pre>
 * host:pid:tid [dev] NCCL INFO NCCL version 2.28.3+cuda13.0
 * host:pid:tid [dev] NCCL INFO Comm config CTA policy flags set to 2
 * host:pid:tid [dev] NCCL INFO NCCL_CTA_POLICY set by environment to 0.
 * host:pid:tid [dev] NCCL INFO Comm config CTAPolicy reset to NCCL_CTA_POLICY=2          (2.29+)
 * host:pid:tid [dev] NCCL INFO comm 0x55.. rank 0 nRanks 2 nNodes 1 localRanks 2 localRank 0 MNNVL 0
 * host:pid:tid [dev] NCCL INFO Init CE, rank 0 baseUCSymReadyPtr 0x7f.., baseUCSymComplPtr 0x7f.., seq num 0
 * host:pid:tid [dev] NCCL INFO AllGather [Copy Engine]: 1048576 Bytes -> cudaMemcpy ...   (2.29.2+, rank 0)
 * host:pid:tid [dev] NCCL INFO AllGather [Symmetric]: 1048576 Bytes -> Kernel AllGather_ST nchannels 8 ...
 * host:pid:tid [dev] NCCL INFO Symmetric memory is not supported. cuMemEnable 0, ...
 * [date] host:pid:tid [dev] file.cc:578 NCCL WARN Cuda failure 1 'invalid argument'
 * </pre>
 */
public final class NcclLogParser {
  private static final Pattern VERSION = Pattern.compile("NCCL INFO NCCL version (\\S+)");
  private static final Pattern POLICY = Pattern.compile("NCCL INFO Comm config CTA policy flags set to (-?\\d+)");
  private static final Pattern POLICY_RESET =
      Pattern.compile("NCCL INFO Comm config CTAPolicy reset to NCCL_CTA_POLICY=(-?\\d+)");
  private static final Pattern ENV = Pattern.compile("NCCL INFO (NCCL_[A-Z0-9_]+) set by environment to (.*?)\\.?\\s*$");
  private static final Pattern COMM = Pattern.compile(
      "NCCL INFO comm (0x[0-9a-fA-F]+) rank (\\d+) nRanks (\\d+) nNodes (\\d+)");
  private static final Pattern CE_INIT = Pattern.compile("NCCL INFO Init CE, rank (\\d+)");
  private static final Pattern COPY_ENGINE =
      Pattern.compile("NCCL INFO (\\w+) \\[(?:Copy Engine|Hierarchical CE)\\]: (\\d+) Bytes");
  private static final Pattern SYMMETRIC =
      Pattern.compile("NCCL INFO (\\w+) \\[Symmetric\\]: (\\d+) Bytes -> Kernel (\\S+)");
  private static final Pattern NO_SYMMETRIC = Pattern.compile("NCCL INFO (Symmetric memory is not supported.*)$");
  private static final Pattern WARN = Pattern.compile("NCCL WARN (.*)$");

  private NcclLogParser() {}

  public static NcclLogSummary parse(Path file) {
    try {
      return parse(Files.readAllLines(file, StandardCharsets.UTF_8));
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read NCCL log " + file, e);
    }
  }

  public static NcclLogSummary parse(List<String> lines) {
    String version = null;
    List<Integer> policies = new ArrayList<>();
    List<Integer> resets = new ArrayList<>();
    Map<String, String> env = new LinkedHashMap<>();
    List<NcclLogSummary.Comm> comms = new ArrayList<>();
    TreeSet<Integer> ceRanks = new TreeSet<>();
    Map<String, List<Long>> ce = new LinkedHashMap<>();
    Map<String, Map<String, Long>> sym = new LinkedHashMap<>();
    List<String> noSym = new ArrayList<>();
    List<String> warnings = new ArrayList<>();
    for (String line : lines) {
      if (line.indexOf("NCCL ") < 0) {
        continue;
      }
      Matcher m;
      if (version == null && (m = VERSION.matcher(line)).find()) {
        version = m.group(1);
      } else if ((m = POLICY.matcher(line)).find()) {
        policies.add(Integer.parseInt(m.group(1)));
      } else if ((m = POLICY_RESET.matcher(line)).find()) {
        resets.add(Integer.parseInt(m.group(1)));
      } else if ((m = ENV.matcher(line)).find()) {
        env.put(m.group(1), m.group(2).trim());
      } else if ((m = COMM.matcher(line)).find()) {
        comms.add(new NcclLogSummary.Comm(m.group(1), Integer.parseInt(m.group(2)),
            Integer.parseInt(m.group(3)), Integer.parseInt(m.group(4))));
      } else if ((m = CE_INIT.matcher(line)).find()) {
        ceRanks.add(Integer.parseInt(m.group(1)));
      } else if ((m = COPY_ENGINE.matcher(line)).find()) {
        ce.computeIfAbsent(m.group(1), k -> new ArrayList<>()).add(Long.parseLong(m.group(2)));
      } else if ((m = SYMMETRIC.matcher(line)).find()) {
        sym.computeIfAbsent(m.group(1), k -> new LinkedHashMap<>()).merge(m.group(3), 1L, Long::sum);
      } else if ((m = NO_SYMMETRIC.matcher(line)).find()) {
        noSym.add(m.group(1));
      } else if ((m = WARN.matcher(line)).find()) {
        warnings.add(m.group(1).trim());
      }
    }
    return new NcclLogSummary(version, policies, resets, env, comms, ceRanks, ce, sym, noSym, warnings);
  }
}
