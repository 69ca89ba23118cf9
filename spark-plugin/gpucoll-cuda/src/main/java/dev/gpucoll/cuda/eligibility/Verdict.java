package dev.gpucoll.cuda.eligibility;

import dev.gpucoll.api.Collective;
import java.util.ArrayList;
import java.util.List;

/**
 * The detector's answer for one collective on one group: the NCCL path it predicts, whether
 * Zero-CTA (copy engines) and NCCL's symmetric kernels are eligible, and every reason they are not.
 *
 * @param zeroCtaFailing   every reason the copy-engine path is not taken (empty = eligible)
 * @param symmetricFailing every reason NCCL's symmetric kernels are not taken (empty = eligible)
 * @param unverified       conditions the facts cannot settle; the runtime log confirms or refutes
 */
public record Verdict(
    Collective collective,
    NcclPath predicted,
    List<Reason> zeroCtaFailing,
    List<Reason> symmetricFailing,
    List<Reason> unverified) {

  public Verdict {
    zeroCtaFailing = List.copyOf(zeroCtaFailing);
    symmetricFailing = List.copyOf(symmetricFailing);
    unverified = List.copyOf(unverified);
  }

  public boolean zeroCtaEligible() {
    return zeroCtaFailing.isEmpty();
  }

  public boolean symmetricEligible() {
    return symmetricFailing.isEmpty();
  }

  public boolean hasReason(Reason.Code code) {
    return zeroCtaFailing.stream().anyMatch(r -> r.code() == code)
        || symmetricFailing.stream().anyMatch(r -> r.code() == code);
  }

  /** Report lines: "zero-cta allGather: eligible" or "zero-cta allReduce: not eligible: CODE: detail". */
  public List<String> findings() {
    List<String> out = new ArrayList<>();
    String c = collective.apiName();
    if (zeroCtaEligible()) {
      out.add("zero-cta " + c + ": eligible" + (unverified.isEmpty() ? "" : " (unverified: "
          + String.join("; ", unverified.stream().map(Reason::toString).toList()) + ")"));
    } else {
      for (Reason r : zeroCtaFailing) {
        out.add("zero-cta " + c + ": not eligible: " + r);
      }
    }
    if (!zeroCtaEligible()) {
      if (symmetricEligible()) {
        out.add("nccl-symmetric " + c + ": eligible");
      } else {
        out.add("nccl-symmetric " + c + ": not eligible: "
            + String.join("; ", symmetricFailing.stream().map(r -> r.code().name()).toList()));
      }
    }
    out.add("predicted " + c + ": " + predicted.algorithm());
    return out;
  }
}
