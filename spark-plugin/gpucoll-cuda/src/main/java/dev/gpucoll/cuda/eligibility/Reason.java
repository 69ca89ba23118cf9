package dev.gpucoll.cuda.eligibility;

/**
 * One named reason in an eligibility verdict: a stable code (for tests, metrics and JSON) and the
 * facts that triggered it (which ranks, which values).
 */
public record Reason(Code code, String detail) {

  /** Why a path is not (or may not be) taken. */
  public enum Code {
    COLLECTIVE_NEVER_CE("NCCL runs this collective on SM kernels only (copy engines do AllGather/AlltoAll)"),
    SINGLE_RANK("a 1-rank communicator: NCCL copies locally and never enters the CE or symmetric paths"),
    CUDA_UNAVAILABLE("CUDA is not usable on a rank"),
    NCCL_UNAVAILABLE("NCCL cannot be loaded on a rank"),
    NCCL_TOO_OLD("copy-engine collectives need NCCL >= 2.28.3"),
    NCCL_VERSIONS_DIFFER("ranks load different NCCL versions"),
    DRIVER_TOO_OLD("copy-engine collectives need a CUDA driver >= 12.5"),
    MULTI_HOST("the group spans hosts"),
    SHARED_GPU("two ranks use one GPU; NCCL refuses that"),
    NO_P2P("a pair of GPUs cannot reach each other by CUDA P2P, so NCCL has no symmetric memory"),
    NO_VMM("a GPU lacks virtual memory management (cuMem), which symmetric windows need"),
    WSL("Windows Subsystem for Linux: no CUDA IPC/P2P between processes"),
    POLICY_NOT_ZERO("the effective CTA policy lacks NCCL_CTA_POLICY_ZERO"),
    ENV_POLICY_NOT_UNDERSTOOD("NCCL_CTA_POLICY holds a name this NCCL reads as a number (0)"),
    ENV_WIN_DISABLED("NCCL_WIN_ENABLE=0 disables symmetric windows"),
    ENV_CUMEM_DISABLED("NCCL_CUMEM_ENABLE=0 disables cuMem, so symmetric memory"),
    ENV_P2P_DISABLED("NCCL_P2P_DISABLE=1 disables P2P, so symmetric memory"),
    ENV_DIFFERS("an NCCL variable differs between ranks"),
    BUFFER_NOT_REGISTERED("the buffers are not in a window registered with NCCL_WIN_COLL_SYMMETRIC"),
    BUFFER_NOT_VMM("the buffer is plain cudaMalloc memory, which cannot be registered"),
    SYMMETRIC_KERNEL_UNSUPPORTED("NCCL has no symmetric kernel for this collective/type/op"),
    UNVERIFIED("not checkable from the gathered facts; the runtime log decides");

    private final String meaning;

    Code(String meaning) {
      this.meaning = meaning;
    }

    public String meaning() {
      return meaning;
    }
  }

  public Reason {
    if (code == null || detail == null) {
      throw new IllegalArgumentException("reason code and detail are required");
    }
  }

  /** "NO_P2P: ranks 0 and 1 (GPU 0000:00:06.0, 0000:00:07.0): cudaDeviceCanAccessPeer = 0". */
  @Override
  public String toString() {
    return code + ": " + detail;
  }
}
