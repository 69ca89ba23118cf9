#!/usr/bin/env bash
# Says whether the GPU code at HEAD has passed the GPU acceptance command (docs/gpu-acceptance.md):
# the last PASS row's commit must have the same GPU files as HEAD. Exit 0 when it has, 1 when not.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
# python/gpucoll whole: the python column runs the package's channel and communicator.py (GPU arrays) too.
GPU_PATHS=(spark-plugin/gpucoll-cuda spark-plugin/gpucoll-cudf native-kernels spark-plugin/gpucoll-linalg
  spark-plugin/gpucoll-cusolvermp python/gpucoll integration-tests/gpu)
ROW=$(grep -E '^\| [0-9]{4}-[0-9]{2}-[0-9]{2} \|' "$ROOT/docs/gpu-acceptance.md" | grep -E '\| PASS[^|]*\|$' | tail -1 || true)
if [ -z "$ROW" ]; then
  echo "no PASS row in docs/gpu-acceptance.md: the GPU code at HEAD has not passed the acceptance command"
  exit 1
fi
COMMIT=$(echo "$ROW" | awk -F'|' '{gsub(/ /, "", $3); print $3}')
if [[ "$COMMIT" == *+uncommitted ]]; then
  echo "the last PASS row ($COMMIT) was built from uncommitted changes: it proves no commit"
  exit 1
fi
if ! git -C "$ROOT" cat-file -e "$COMMIT^{commit}" 2>/dev/null; then
  echo "the last PASS row names $COMMIT, which is not a commit of this repository"
  exit 1
fi
if git -C "$ROOT" diff --quiet "$COMMIT" HEAD -- "${GPU_PATHS[@]}"; then
  echo "GPU code at HEAD = GPU code at $COMMIT, which passed: $ROW"
  exit 0
fi
echo "GPU files changed since $COMMIT (the last PASS row):"
git -C "$ROOT" diff --stat "$COMMIT" HEAD -- "${GPU_PATHS[@]}" | tail -20
exit 1
