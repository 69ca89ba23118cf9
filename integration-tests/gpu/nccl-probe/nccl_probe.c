/*
 * nccl_probe: records what NCCL itself says about the CTA policy, symmetric windows and the
 * copy-engine (Zero-CTA) path, for the eligibility detector and the log parser's tests.
 *
 * One process drives one communicator over the first N visible GPUs (N=1 on a one-GPU machine;
 * NCCL refuses two ranks on one GPU). Usage:
 *   nccl_probe <policy: default|efficiency|zero> <alloc: memalloc|cudamalloc> [nranks] [bytes]
 * Set NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV,TUNING NCCL_DEBUG_FILE=... outside; NCCL reads
 * its environment at its first call, so it must be set before the process starts.
 * Prints one "PROBE key=value" line per fact to stdout.
 */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXR 8

#define CUDA_OK(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) { \
    printf("PROBE fatal=%s:%d %s -> %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); exit(2); } } while (0)
#define NCCL_OK(call) do { ncclResult_t r_ = (call); if (r_ != ncclSuccess) { \
    printf("PROBE fatal=%s:%d %s -> %s\n", __FILE__, __LINE__, #call, ncclGetErrorString(r_)); exit(3); } } while (0)

static int policy_of(const char* s) {
  if (strcmp(s, "zero") == 0) return NCCL_CTA_POLICY_ZERO;
  if (strcmp(s, "efficiency") == 0) return NCCL_CTA_POLICY_EFFICIENCY;
  return NCCL_CTA_POLICY_DEFAULT;
}

int main(int argc, char** argv) {
  const char* policyName = argc > 1 ? argv[1] : "zero";
  const char* alloc = argc > 2 ? argv[2] : "memalloc";
  int nranks = argc > 3 ? atoi(argv[3]) : 1;
  size_t bytes = argc > 4 ? (size_t)atoll(argv[4]) : (size_t)1 << 20;  /* per-rank send bytes */
  int useMemAlloc = strcmp(alloc, "memalloc") == 0;

  int version = 0, driver = 0, runtime = 0, ndev = 0;
  NCCL_OK(ncclGetVersion(&version));
  CUDA_OK(cudaDriverGetVersion(&driver));
  CUDA_OK(cudaRuntimeGetVersion(&runtime));
  CUDA_OK(cudaGetDeviceCount(&ndev));
  printf("PROBE nccl_version=%d header_version=%d driver=%d runtime=%d devices=%d\n",
         version, NCCL_VERSION_CODE, driver, runtime, ndev);
  if (nranks < 1 || nranks > MAXR || nranks > ndev) {
    printf("PROBE fatal=nranks %d not in [1, min(%d, devices=%d)]\n", nranks, MAXR, ndev);
    return 1;
  }
  const char* envPolicy = getenv("NCCL_CTA_POLICY");
  printf("PROBE config_policy=%s(%d) env_NCCL_CTA_POLICY=%s alloc=%s nranks=%d bytes=%zu\n",
         policyName, policy_of(policyName), envPolicy ? envPolicy : "(unset)", alloc, nranks, bytes);

  ncclUniqueId id;
  NCCL_OK(ncclGetUniqueId(&id));
  ncclComm_t comms[MAXR];
  cudaStream_t streams[MAXR];
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.CTAPolicy = policy_of(policyName);
  NCCL_OK(ncclGroupStart());
  for (int r = 0; r < nranks; r++) {
    CUDA_OK(cudaSetDevice(r));
    NCCL_OK(ncclCommInitRankConfig(&comms[r], nranks, id, r, &config));
  }
  NCCL_OK(ncclGroupEnd());
  for (int r = 0; r < nranks; r++) {
    CUDA_OK(cudaSetDevice(r));
    CUDA_OK(cudaStreamCreateWithFlags(&streams[r], cudaStreamNonBlocking));
  }

  /* send: bytes; recv: nranks * bytes. Both are registered (2.28 needs both for CE). */
  size_t recvBytes = bytes * (size_t)nranks;
  void* send[MAXR];
  void* recv[MAXR];
  for (int r = 0; r < nranks; r++) {
    CUDA_OK(cudaSetDevice(r));
    if (useMemAlloc) {
      NCCL_OK(ncclMemAlloc(&send[r], recvBytes));
      NCCL_OK(ncclMemAlloc(&recv[r], recvBytes));
    } else {
      CUDA_OK(cudaMalloc(&send[r], recvBytes));
      CUDA_OK(cudaMalloc(&recv[r], recvBytes));
    }
    CUDA_OK(cudaMemset(send[r], r + 1, recvBytes));
    CUDA_OK(cudaMemset(recv[r], 0, recvBytes));
  }

  ncclWindow_t sendWin[MAXR], recvWin[MAXR];
  ncclResult_t regSend[MAXR], regRecv[MAXR];
  memset(sendWin, 0, sizeof(sendWin));
  memset(recvWin, 0, sizeof(recvWin));
  /* Window registration is collective: every rank in one group. */
  ncclGroupStart();
  for (int r = 0; r < nranks; r++) {
    cudaSetDevice(r);
    regSend[r] = ncclCommWindowRegister(comms[r], send[r], recvBytes, &sendWin[r], NCCL_WIN_COLL_SYMMETRIC);
    regRecv[r] = ncclCommWindowRegister(comms[r], recv[r], recvBytes, &recvWin[r], NCCL_WIN_COLL_SYMMETRIC);
  }
  ncclResult_t regGroup = ncclGroupEnd();
  for (int r = 0; r < nranks; r++) {
    printf("PROBE rank=%d window_register send_rc=%d(%s) send_win=%p recv_rc=%d(%s) recv_win=%p group_rc=%d(%s)\n",
           r, regSend[r], ncclGetErrorString(regSend[r]), (void*)sendWin[r], regRecv[r],
           ncclGetErrorString(regRecv[r]), (void*)recvWin[r], regGroup, ncclGetErrorString(regGroup));
  }
  for (int r = 0; r < nranks; r++) {
    ncclResult_t async = ncclSuccess;
    ncclCommGetAsyncError(comms[r], &async);
    if (async != ncclSuccess) {
      printf("PROBE rank=%d async_error_after_register=%d(%s) last=%s\n", r, async,
             ncclGetErrorString(async), ncclGetLastError(comms[r]));
    }
  }

  /* Collectives: allGather and allToAll (CE candidates), allReduce (symmetric kernel candidate). */
  const char* names[3] = {"allGather", "allToAll", "allReduce"};
  for (int c = 0; c < 3; c++) {
    ncclResult_t rc = ncclGroupStart();
    for (int r = 0; r < nranks && rc == ncclSuccess; r++) {
      cudaSetDevice(r);
      if (c == 0) rc = ncclAllGather(send[r], recv[r], bytes, ncclUint8, comms[r], streams[r]);
      else if (c == 1) rc = ncclAlltoAll(send[r], recv[r], bytes / nranks, ncclUint8, comms[r], streams[r]);
      else rc = ncclAllReduce(send[r], recv[r], bytes / 4, ncclFloat32, ncclSum, comms[r], streams[r]);
    }
    ncclResult_t end = ncclGroupEnd();
    for (int r = 0; r < nranks; r++) {
      cudaSetDevice(r);
      CUDA_OK(cudaStreamSynchronize(streams[r]));
    }
    /* Check allGather: block q of recv holds byte q+1. */
    int ok = 1;
    if (c == 0) {
      unsigned char* host = (unsigned char*)malloc(recvBytes);
      for (int r = 0; r < nranks && ok; r++) {
        CUDA_OK(cudaSetDevice(r));
        CUDA_OK(cudaMemcpy(host, recv[r], recvBytes, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < recvBytes; i++) {
          if (host[i] != (unsigned char)(i / bytes + 1)) { ok = 0; break; }
        }
      }
      free(host);
    }
    printf("PROBE collective=%s bytes=%zu rc=%d(%s) group_end=%d(%s) check=%s\n", names[c], bytes,
           rc, ncclGetErrorString(rc), end, ncclGetErrorString(end),
           c == 0 ? (ok ? "pass" : "FAIL") : "n/a");
  }

  for (int r = 0; r < nranks; r++) {
    cudaSetDevice(r);
    if (sendWin[r]) ncclCommWindowDeregister(comms[r], sendWin[r]);
    if (recvWin[r]) ncclCommWindowDeregister(comms[r], recvWin[r]);
  }
  for (int r = 0; r < nranks; r++) {
    cudaSetDevice(r);
    NCCL_OK(ncclCommDestroy(comms[r]));
    if (useMemAlloc) {
      ncclMemFree(send[r]);
      ncclMemFree(recv[r]);
    } else {
      cudaFree(send[r]);
      cudaFree(recv[r]);
    }
    cudaStreamDestroy(streams[r]);
  }
  printf("PROBE done\n");
  return 0;
}
