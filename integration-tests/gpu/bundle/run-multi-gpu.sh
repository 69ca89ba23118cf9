#!/usr/bin/env bash
# The multi-GPU proof. One process per GPU (as Spark executors would be), meeting through a
# FileRendezvous: topology facts, the group's path/eligibility report, the correctness matrix, a
# latency table against NCCL (default and CTA policy ZERO), and a peer that never arrives.
# Runs degenerate on one GPU (1 rank: NCCL one-rank, no missing-peer check).
#
# Needs the GPU bundle (integration-tests/gpu/bundle/build.sh). On the GPU machine, from the repo root:
#   bash integration-tests/gpu/bundle/run-multi-gpu.sh [NGPUS] [--quick]
# Logs: $OUT when set, else /tmp/gpucoll-multi; rank 0's tables print last.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
BUNDLE="$ROOT/.gpu-bundle"
LOGS=${OUT:-/tmp/gpucoll-multi}
mkdir -p "$LOGS"
export NCCL_NVLS_ENABLE=0   # keep NVLink multicast off
QUICK=""
N=""
for a in "$@"; do
  case "$a" in
    --quick) QUICK=--quick ;;
    [0-9]*) N=$a ;;
    *) echo "run-multi-gpu.sh: unknown argument $a" >&2; exit 2 ;;
  esac
done
if [ ! -x "$BUNDLE/jre/bin/java" ]; then
  echo "run-multi-gpu.sh: no bundle at $BUNDLE; build it with integration-tests/gpu/bundle/build.sh and upload .gpu-bundle" >&2
  exit 2
fi
VISIBLE=$(nvidia-smi -L | grep -c '^GPU ')
N=${N:-$VISIBLE}
if [ "$N" -gt "$VISIBLE" ]; then
  echo "run-multi-gpu.sh: $N GPUs asked, $VISIBLE visible" >&2
  exit 2
fi

echo "== multi-GPU run: $N of $VISIBLE GPU(s), $(date -u +%FT%TZ), bundle $(head -1 "$BUNDLE/COMMIT")"
nvidia-smi --query-gpu=index,name,driver_version,uuid,pci.bus_id --format=csv,noheader
echo "== nvidia-smi topo -m"
nvidia-smi topo -m 2>&1 | tee "$LOGS/topo-m.txt"
echo "== P2P read capability (nvidia-smi topo -p2p r)"
nvidia-smi topo -p2p r 2>&1 | tee "$LOGS/topo-p2p.txt"

DIR=$(mktemp -d /tmp/gpucoll-rdv.XXXXXX)
JAVA="$BUNDLE/jre/bin/java"
PIDS=()
for ((r = 0; r < N; r++)); do
  # Every process sees every GPU (P2P facts need the peers) and uses GPU r.
  "$JAVA" -Xmx8g -Dorg.bytedeco.javacpp.cachedir=/tmp/javacpp-cache -cp "$BUNDLE/lib/*" \
    dev.gpucoll.cuda.check.MultiGpuRank "$DIR" "$r" "$N" "$r" $QUICK > "$LOGS/rank$r.log" 2>&1 &
  PIDS+=($!)
done
RC=0
for ((r = 0; r < N; r++)); do
  if ! wait "${PIDS[$r]}"; then
    echo "rank $r exited with an error (see rank$r.log)"
    RC=1
  fi
done
rm -rf "$DIR"
for ((r = 1; r < N; r++)); do
  echo "== rank $r: $(grep -E 'done:|FAIL' "$LOGS/rank$r.log" | head -5 | tr '\n' ' ')"
done
echo "== rank 0"
cat "$LOGS/rank0.log"
exit $RC
