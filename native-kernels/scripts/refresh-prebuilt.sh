#!/usr/bin/env bash
# Rebuilds the checked-in prebuilt/gpucoll_kernels.fatbin with nvcc from the current kernel sources
# and records their hashes, so that machines without nvcc build the same jar. Run it after any
# change to src/, include/gpucoll/ or scripts/build-fatbin.sh, and commit both files in prebuilt/.
#   native-kernels/scripts/refresh-prebuilt.sh
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
if [ "${NVCC:-}" = none ]; then
  echo "refresh-prebuilt.sh compiles the fatbin: it needs nvcc, not NVCC=none" >&2
  exit 2
fi
mkdir -p "$here/prebuilt"
rm -f "$here/prebuilt/gpucoll_kernels.fatbin"
bash "$here/scripts/build-fatbin.sh" "$here/prebuilt/gpucoll_kernels.fatbin"
# build-fatbin.sh falls back to the prebuilt fatbin without nvcc; it was just removed, so a
# fatbin here was compiled.
bash "$here/scripts/kernel-sources.sh" record
