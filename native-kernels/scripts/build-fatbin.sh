#!/usr/bin/env bash
# Compiles src/gpucoll_kernels.cu into ONE fatbin: SASS for sm_80, sm_90, sm_100 plus compute_100 PTX
# (newer GPUs JIT the PTX). Called by Maven (generate-resources) and usable by hand:
#   native-kernels/scripts/build-fatbin.sh <output.fatbin>
# nvcc is taken from $NVCC, else $CUDA_HOME/bin/nvcc, else PATH, else /usr/local/cuda/bin/nvcc.
# Without nvcc (or with NVCC=none) the checked-in prebuilt/gpucoll_kernels.fatbin.xz is used, provided
# the kernel sources still hash to what prebuilt/gpucoll_kernels.sha256 recorded when it was built
# (scripts/refresh-prebuilt.sh rebuilds both).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:?usage: build-fatbin.sh <output.fatbin>}"

looked=()
nvcc_bin=""
if [ "${NVCC:-}" != none ]; then
  for cand in "${NVCC:-}" "${CUDA_HOME:+$CUDA_HOME/bin/nvcc}" "$(command -v nvcc 2>/dev/null || true)" /usr/local/cuda/bin/nvcc; do
    [ -z "$cand" ] && continue
    looked+=("$cand")
    if [ -x "$cand" ]; then nvcc_bin="$cand"; break; fi
  done
fi
if [ -z "$nvcc_bin" ]; then
  why="no nvcc found (looked in \$NVCC, \$CUDA_HOME/bin/nvcc, PATH, /usr/local/cuda/bin/nvcc${looked:+; tried: ${looked[*]}})"
  [ "${NVCC:-}" = none ] && why="NVCC=none"
  bash "$here/scripts/kernel-sources.sh" check "$why"
  mkdir -p "$(dirname "$out")"
  xz -dc "$here/prebuilt/gpucoll_kernels.fatbin.xz" > "$out.tmp"
  mv "$out.tmp" "$out"
  echo "Using the prebuilt gpucoll_kernels.fatbin ($why; the kernel sources match the ones it was built from)"
  exit 0
fi

# The ABI header must stay plain C (the Java side and any C host include or parse it): check it.
if command -v "${CC:-cc}" >/dev/null 2>&1; then
  "${CC:-cc}" -std=c11 -Wall -Werror -fsyntax-only -x c "$here/include/gpucoll/kernel_abi.h"
fi

if [ -f "$out" ]; then
  stale=0
  while read -r s; do [ "$here/$s" -nt "$out" ] && stale=1; done < <(bash "$here/scripts/kernel-sources.sh" list)
  if [ "$stale" = 0 ]; then echo "gpucoll_kernels.fatbin is up to date"; exit 0; fi
fi
mkdir -p "$(dirname "$out")"
echo "Compiling gpucoll_kernels.fatbin with $nvcc_bin ($("$nvcc_bin" --version | tail -1))"
# --threads 0: one compilation thread per target architecture (2 cores in CI keeps this ~1 minute).
"$nvcc_bin" -std=c++17 -O3 --threads 0 -I"$here/include" \
  -gencode arch=compute_80,code=sm_80 \
  -gencode arch=compute_90,code=sm_90 \
  -gencode arch=compute_100,code=sm_100 \
  -gencode arch=compute_100,code=compute_100 \
  -fatbin -o "$out.tmp" "$here/src/gpucoll_kernels.cu"
mv "$out.tmp" "$out"
ls -l "$out"
