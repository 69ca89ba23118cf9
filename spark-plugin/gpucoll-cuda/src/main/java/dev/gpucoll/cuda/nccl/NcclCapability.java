package dev.gpucoll.cuda.nccl;

/**
 * NCCL entry points and behaviours by the version that brought them. The JavaCPP bindings
 * (org.bytedeco cuda 1.5.13) are built from the NCCL 2.29.3 header and bind lazily: calling an
 * entry point the loaded libnccl.so.2 lacks ends the JVM with "undefined symbol" and no Java
 * exception. Every call of a function newer than 2.9 goes through {@link NcclLibrary#require}.
 */
public enum NcclCapability {
  COMM_INIT_RANK_CONFIG(21400, "ncclCommInitRankConfig / ncclConfig_t"),
  COMM_GET_ASYNC_ERROR(20400, "ncclCommGetAsyncError"),
  NON_BLOCKING_INIT(21400, "non-blocking communicators (config.blocking = 0)"),
  COMM_SPLIT(21800, "ncclCommSplit"),
  COMM_FINALIZE(21400, "ncclCommFinalize"),
  MEM_ALLOC(21900, "ncclMemAlloc / ncclMemFree"),
  AVG_OP(21000, "ncclAvg"),
  BFLOAT16(21000, "ncclBfloat16"),
  GET_LAST_ERROR(21300, "ncclGetLastError"),
  WINDOW_REGISTER(22703, "ncclCommWindowRegister / NCCL_WIN_COLL_SYMMETRIC"),
  CTA_POLICY(22703, "ncclConfig_t.CTAPolicy"),
  ALL_TO_ALL(22803, "ncclAlltoAll"),
  COPY_ENGINE_COLLECTIVES(22803, "copy-engine (Zero-CTA) AllGather/AlltoAll, 'Init CE' log line"),
  CTA_POLICY_ENV_NAMES(22900, "NCCL_CTA_POLICY=ZERO|EFFICIENCY names (2.28 reads a number only)"),
  RECV_ONLY_REGISTRATION(22902, "CE with only the receive buffer registered; NULL window when unsupported"),
  COMM_QUERY_PROPERTIES(22902, "ncclCommQueryProperties"),
  COPY_ENGINE_TUNING_LOG(22902, "'<Coll> [Copy Engine]' TUNING log line per call (rank 0)"),
  HIERARCHICAL_CE(23007, "hierarchical copy-engine AllGather/AlltoAll across nodes");

  private final int since;
  private final String what;

  NcclCapability(int since, String what) {
    this.since = since;
    this.what = what;
  }

  /** The first NCCL version code (major*10000 + minor*100 + patch) that has it. */
  public int since() {
    return since;
  }

  public String what() {
    return what;
  }

  public boolean availableIn(int ncclVersion) {
    return ncclVersion >= since;
  }
}
