#!/usr/bin/env bash
# On a GPU machine: build gc_test, gc_bench and the fatbin with that machine's nvcc, run the test
# program, then the benchmark; logs go to $OUT (or here). Exit status is gc_test's.
#   native-kernels/test/run-gpu.sh [--quick]
set -uo pipefail
cd "$(dirname "$0")"
# gc_test reads correctness-matrix.txt beside it (this folder): binaries copied elsewhere take it along.
out="${OUT:-.}"
make -j"$(nproc)" || exit 2
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
git rev-parse HEAD 2>/dev/null | tee -a "$out/gpu.txt"
./gc_test "$@" > "$out/gc_test.log" 2>&1
rc=$?
./gc_bench gpucoll_kernels.fatbin > "$out/gc_bench.log" 2>&1
grep -E "^FAIL|robustness|checks in|correctness matrix|gc_test:" "$out/gc_test.log" | tail -20
cat "$out/gc_bench.log"
tail -1 "$out/gc_test.log"
exit $rc
