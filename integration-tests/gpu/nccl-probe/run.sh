#!/usr/bin/env bash
# Builds nccl_probe against the system nccl.h / libnccl and records NCCL's own INIT/ENV/TUNING log
# lines for the CTA-policy / symmetric-window / copy-engine cases. Output goes to $OUT (or ./out):
#   facts.txt   machine, driver, NCCL, topology
#   probe.txt   the probe's "PROBE ..." lines for every case
#   logs.tar.gz <case>.log per case: NCCL's log for that case (each process's NCCL_DEBUG_FILE)
# Usage (on the GPU machine, from the repository root): integration-tests/gpu/nccl-probe/run.sh
set -u
here="$(cd "$(dirname "$0")" && pwd)"
out="${OUT:-$PWD/out}"
mkdir -p "$out"
work="$(mktemp -d)"
export NCCL_NVLS_ENABLE=0

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi --query-gpu=name,driver_version,pci.bus_id,uuid,compute_cap --format=csv 2>&1
  nvidia-smi topo -m 2>&1
  echo "libnccl: $(ldconfig -p | grep -m1 'libnccl.so.2 ' || echo none)"
  grep -m3 -E '#define NCCL_(MAJOR|MINOR|PATCH)' /usr/include/nccl.h 2>&1
  nvcc --version 2>&1 | tail -2
} > "$out/facts.txt"

nvcc -O2 -o "$work/nccl_probe" "$here/nccl_probe.c" -lnccl 2>&1 | tee -a "$out/facts.txt"
[ -x "$work/nccl_probe" ] || { echo "build failed"; exit 1; }

ndev=$(nvidia-smi -L | wc -l)
run_case() {  # name policy alloc nranks [ENV=VALUE ...]
  local name=$1 policy=$2 alloc=$3 nranks=$4; shift 4
  mkdir -p "$work/$name"
  echo "=== case $name: policy=$policy alloc=$alloc nranks=$nranks env: $*" >> "$out/probe.txt"
  env NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV,TUNING \
      NCCL_DEBUG_FILE="$work/$name/nccl.%h.%p.log" "$@" \
      timeout 60 "$work/nccl_probe" "$policy" "$alloc" "$nranks" 1048576 >> "$out/probe.txt" 2>&1
  echo "exit=$?" >> "$out/probe.txt"
  for f in "$work/$name"/nccl.*.log; do
    [ -e "$f" ] || continue
    echo "### $(basename "$f") (case $name: policy=$policy alloc=$alloc nranks=$nranks env: $*)"
    cat "$f"
  done > "$work/logs/$name.log"
}
mkdir -p "$work/logs"

run_case zero-memalloc        zero    memalloc   1
run_case zero-cudamalloc      zero    cudamalloc 1
run_case env-zero-memalloc    default memalloc   1 NCCL_CTA_POLICY=ZERO
run_case zero-envzero         zero    memalloc   1 NCCL_CTA_POLICY=ZERO
run_case default-env2         default memalloc   1 NCCL_CTA_POLICY=2
run_case zero-nocumem         zero    memalloc   1 NCCL_CUMEM_ENABLE=0
run_case zero-nowin           zero    memalloc   1 NCCL_WIN_ENABLE=0
if [ "$ndev" -ge 2 ]; then
  # Two ranks (one GPU each) in one process: the CE path is only entered with more than one rank.
  run_case 2gpu-zero-memalloc     zero    memalloc   2
  run_case 2gpu-zero-cudamalloc   zero    cudamalloc 2
  run_case 2gpu-default-memalloc  default memalloc   2
  run_case 2gpu-zero-envzero      zero    memalloc   2 NCCL_CTA_POLICY=ZERO
  run_case 2gpu-default-env2      default memalloc   2 NCCL_CTA_POLICY=2
  run_case 2gpu-zero-nocumem      zero    memalloc   2 NCCL_CUMEM_ENABLE=0
  run_case 2gpu-zero-nowin        zero    memalloc   2 NCCL_WIN_ENABLE=0
  run_case 2gpu-zero-nop2p        zero    memalloc   2 NCCL_P2P_DISABLE=1
fi
tar -C "$work" -czf "$out/logs.tar.gz" logs
cat "$out/probe.txt"
