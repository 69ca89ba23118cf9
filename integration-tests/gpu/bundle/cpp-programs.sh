#!/usr/bin/env bash
# Builds the C++ programs of native-kernels/test for the GPU machine into DIR, gzip'ed (each links
# every kernel's SASS): gc_test (with correctness-matrix.txt beside it, where it looks for it) and/or
# gc_bench. nvcc here, static cudart, sm_90; the kernels are compiled once for all of them.
#   integration-tests/gpu/bundle/cpp-programs.sh DIR gc_test [gc_bench]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
DIR=${1:?usage: cpp-programs.sh DIR PROGRAM...}
shift
command -v nvcc >/dev/null || { echo "cpp-programs.sh: nvcc not found: the C++ programs need the CUDA toolkit" >&2; exit 1; }
mkdir -p "$DIR"
NVFLAGS=(-std=c++17 -O3 -I"$ROOT/native-kernels/include" -gencode arch=compute_90,code=sm_90 -Xcompiler -fno-fast-math)
kernels_o=$(mktemp --suffix=.o)
trap 'rm -f "$kernels_o"' EXIT
nvcc "${NVFLAGS[@]}" -c -o "$kernels_o" "$ROOT/native-kernels/test/all_kernels.cu"
for p in "$@"; do
  nvcc "${NVFLAGS[@]}" -o "$DIR/$p" "$ROOT/native-kernels/test/$p.cu" "$kernels_o"
  if [ "$p" = gc_test ]; then
    cp "$ROOT/native-kernels/test/correctness-matrix.txt" "$DIR/correctness-matrix.txt"
    "$DIR/gc_test" --list-cases | tail -1 | sed 's/^total /cpp-programs.sh: gc_test reads its matrix: cases, groups: /'
  fi
  gzip -9 -f "$DIR/$p"
done
