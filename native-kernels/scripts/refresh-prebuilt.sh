#!/usr/bin/env bash
# Rebuilds the checked-in prebuilt/gpucoll_kernels.fatbin.xz with nvcc from the current kernel sources
# and records their hashes, so that machines without nvcc build the same jar. xz -9e, one thread (the
# same bytes for the same fatbin): 15 MB of SASS pack to a ninth (gzip -9: a fifth), and every upload
# of the working tree to the GPU machine carries it. Run it after any change to src/, include/gpucoll/
# or scripts/build-fatbin.sh, and commit both files in prebuilt/.
#   native-kernels/scripts/refresh-prebuilt.sh
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
if [ "${NVCC:-}" = none ]; then
  echo "refresh-prebuilt.sh compiles the fatbin: it needs nvcc, not NVCC=none" >&2
  exit 2
fi
mkdir -p "$here/prebuilt"
built=$(mktemp --suffix=.fatbin)
trap 'rm -f "$built" "$built.tmp"' EXIT
rm -f "$built" "$here/prebuilt/gpucoll_kernels.fatbin.xz"
bash "$here/scripts/build-fatbin.sh" "$built"
# build-fatbin.sh falls back to the prebuilt fatbin without nvcc; it was just removed, so a
# fatbin here was compiled.
xz -9e -T1 -c "$built" > "$here/prebuilt/gpucoll_kernels.fatbin.xz"
bash "$here/scripts/kernel-sources.sh" record
