#!/usr/bin/env bash
# On a GPU machine: gc_test (correctness first), then gc_bench on GPU 0 and, with 2+ GPUs, gc_bench2
# (one process per GPU, NCCL in the same run). Uses binaries in this folder when present (built
# elsewhere with `make`), else builds them. Logs and JSON records go to $OUT (or here).
#   native-kernels/test/run-bench-gpu.sh [--quick]   (--quick: gc_test --quick, gc_bench --floor-only)
#   GC_TEST_ARGS / GC_BENCH_ARGS override the arguments of gc_test (--skip: do not run it) / gc_bench,
#   e.g. GC_BENCH_ARGS="--before reference.fatbin" times every kernel against an older build's.
set -uo pipefail
cd "$(dirname "$0")"
# gc_test reads correctness-matrix.txt beside it (this folder): binaries copied elsewhere take it along.
out="${OUT:-.}"
export OUT="$out" NCCL_NVLS_ENABLE=0
export GC_DATE="${GC_DATE:-$(date -u +%F)}" GC_COMMIT="${GC_COMMIT:-$(git rev-parse HEAD 2>/dev/null || cat commit.txt 2>/dev/null)}"
{ nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm --format=csv; nvidia-smi topo -m; echo "commit $GC_COMMIT"; } > "$out/gpu.txt" 2>&1
cat "$out/gpu.txt"
missing=()
for b in gc_test gc_bench gc_bench2; do
  if [ ! -x "$b" ] || ldd "./$b" 2>&1 | grep -q "not found"; then rm -f "$b"; missing+=("$b"); fi
done
if [ ${#missing[@]} -gt 0 ]; then
  start=$(date +%s)
  make -k -j"$(nproc)" "${missing[@]}" > "$out/build.log" 2>&1 || { grep -E "error|Error" "$out/build.log" | head -20; }
  echo "built ${missing[*]} in $(( $(date +%s) - start )) s"
fi
quick="${1:-}"
test_args="${GC_TEST_ARGS-$quick}"
bench_args="${GC_BENCH_ARGS-${quick:+--floor-only}}"
[ -x gc_test ] || exit 2
if [ "$test_args" != "--skip" ]; then timeout 240 ./gc_test $test_args > "$out/gc_test.log" 2>&1; fi
rc=$?
grep -E "^FAIL|graph of|robustness|checks in|correctness matrix|gc_test:" "$out/gc_test.log" | tail -30
CUDA_VISIBLE_DEVICES=0 timeout 150 ./gc_bench $bench_args > "$out/gc_bench.log" 2>&1
sed -n '/against the floor/,/wrote/p;/before (/,/wrote/p' "$out/gc_bench.log"
grep -E "CHECK FAILED|ERROR" "$out/gc_bench.log" | head
if [ "$(nvidia-smi -L | wc -l)" -ge 2 ]; then
  timeout 150 ./gc_bench2 2 > "$out/gc_bench2.log" 2>&1
  echo "gc_bench2 rc=$?"
  cat "$out/gc_bench2.log"
fi
tail -1 "$out/gc_test.log" 2>/dev/null
exit $rc
